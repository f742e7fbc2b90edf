import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, expect, it, onTestFinished } from "vitest";
import { withMachineLock } from "cable-test-servers";
import { INFRA_DIR } from "../src/image/stage";

const outDir = mkdtempSync(path.join(os.tmpdir(), "cable-cdk-out-"));
afterAll(() => rmSync(outDir, { recursive: true, force: true }));

// The real CLI, through cdk.json (its build hook builds and stages the image), with no AWS
// credentials in sight: every stack is region-only, so synthesis needs none.
it("`npx cdk synth -c regions=eu-west-2,us-east-1` succeeds offline and writes both templates (x86_64); with `-c arch=arm64`, an ARM64 task definition and a linux/arm64 image asset", async () => {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("AWS_") && !k.startsWith("CDK_")) env[k] = v;
  // The build hook restages infra/image: one cdk at a time on this machine (readme-commands.test.ts runs it too).
  const result = await withMachineLock("cdk", () => spawnSync("npx", ["cdk", "synth", "-c", "regions=eu-west-2,us-east-1", "--quiet", "--no-notices", "-o", outDir], {
    cwd: INFRA_DIR,
    env: { ...env, AWS_EC2_METADATA_DISABLED: "true", CDK_DISABLE_CLI_TELEMETRY: "true" },
    encoding: "utf8",
    timeout: 240_000,
  }));
  expect(result.status, `${result.stdout}\n${result.stderr}`).toBe(0);
  for (const region of ["eu-west-2", "us-east-1"]) {
    const file = path.join(outDir, `CableLoadtest-${region}.template.json`);
    expect(existsSync(file), file).toBe(true);
    const template = JSON.parse(readFileSync(file, "utf8"));
    expect(Object.keys(template.Outputs).sort()).toEqual(["AssignPublicIp", "BucketName", "ClusterArn", "ContainerName", "LogGroupName", "LogStreamPrefix", "OperatorPolicyArn", "SecurityGroupId", "SubnetIds", "TaskArch", "TaskCpu", "TaskDefinitionArn", "TaskMemory"]);
    expect(template.Outputs.TaskArch.Value).toBe("x86_64");
  }
  // The image asset was staged and copied into the cloud assembly.
  const assets = JSON.parse(readFileSync(path.join(outDir, "CableLoadtest-eu-west-2.assets.json"), "utf8"));
  const [image] = Object.values(assets.dockerImages) as Array<{ source: { directory: string; platform?: string } }>;
  expect(image.source.platform).toBe("linux/amd64");
  expect(existsSync(path.join(outDir, image.source.directory, "packages/artillery-engine-cable/dist/index.js"))).toBe(true);
  const taskDefinition = (region: string, dir = outDir) => {
    const template = JSON.parse(readFileSync(path.join(dir, `CableLoadtest-${region}.template.json`), "utf8"));
    return (Object.values(template.Resources) as Array<{ Type: string; Properties: Record<string, unknown> }>).find((r) => r.Type === "AWS::ECS::TaskDefinition")!.Properties;
  };
  expect(taskDefinition("eu-west-2").RuntimePlatform).toEqual({ CpuArchitecture: "X86_64", OperatingSystemFamily: "LINUX" });

  // Graviton: the image asset is built for linux/arm64 and the task definition runs on ARM64 (synthesis
  // only: this machine builds and runs no arm64 image).
  const armOut = mkdtempSync(path.join(os.tmpdir(), "cable-cdk-out-arm64-"));
  onTestFinished(() => rmSync(armOut, { recursive: true, force: true }));
  const arm = await withMachineLock("cdk", () => spawnSync("npx", ["cdk", "synth", "-c", "regions=eu-west-2", "-c", "arch=arm64", "--quiet", "--no-notices", "-o", armOut], {
    cwd: INFRA_DIR,
    env: { ...env, AWS_EC2_METADATA_DISABLED: "true", CDK_DISABLE_CLI_TELEMETRY: "true" },
    encoding: "utf8",
    timeout: 240_000,
  }));
  expect(arm.status, `${arm.stdout}\n${arm.stderr}`).toBe(0);
  expect(taskDefinition("eu-west-2", armOut).RuntimePlatform).toEqual({ CpuArchitecture: "ARM64", OperatingSystemFamily: "LINUX" });
  const armTemplate = JSON.parse(readFileSync(path.join(armOut, "CableLoadtest-eu-west-2.template.json"), "utf8"));
  expect(armTemplate.Outputs.TaskArch.Value).toBe("arm64");
  const armAssets = JSON.parse(readFileSync(path.join(armOut, "CableLoadtest-eu-west-2.assets.json"), "utf8"));
  expect((Object.values(armAssets.dockerImages) as Array<{ source: { platform?: string } }>).map((i) => i.source.platform)).toEqual(["linux/arm64"]);
}, 600_000);

import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { CloudFormationClient } from "@aws-sdk/client-cloudformation";
import { DescribeTaskDefinitionCommand, ECSClient } from "@aws-sdk/client-ecs";
import { startTarget, type LocalTarget } from "cable-local-target";
import { startMoto, type Moto, violations } from "cable-test-servers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AwsRegion, defaultClients } from "../src/aws/aws-backend";
import { describeRegionStack, type RegionStack } from "../src/aws/discovery";
import { runCli } from "./cli";
import { emulateEcs } from "./ecs-emulator";
import { deployStack, holdTasksRunning, motoRecorder, type RecordedRequest, registerFullTaskDefinition, synthesizeTemplates, taskDefinitionOutput } from "./moto";

// Graviton on the AWS path, against moto and through the real CLI (every AWS call held to AWS's
// documented limits by the strict double, RegisterTaskDefinition's runtime platform and RunTask's
// Spot strategy among them): eu-west-2's stack synthesized with `-c arch=arm64`, us-east-1's with
// the default x86_64.
// - `run --arch arm64` in eu-west-2 starts its task with the ARM64 task definition, and the run
//   completes (the worker, pure JavaScript, runs on this x86 machine: no ARM64 throughput is measured
//   here);
// - with --spot, the RunTask the runner would send for that stack asks for FARGATE_SPOT on the ARM64
//   revision, at the default platform version (LATEST, 1.4.0: what ARM64 on Spot needs), and the strict
//   double takes it. It is not sent to moto: moto 5.2.1 takes a RunTask with a capacity provider
//   strategy for EC2 and answers HTTP 500 ("No instances found in cluster") whatever the architecture;
// - `run --arch arm64` in us-east-1 is refused before any RunTask, naming the region and the
//   redeploy (`-c arch=arm64`).
// moto's CloudFormation drops a task definition's RuntimePlatform (moto.ts registerFullTaskDefinition),
// so the ARM64 stack's TaskDefinitionArn output names the revision registered in full.

const ARM = "eu-west-2";
const X86 = "us-east-1";

/** A two-second scenario of one user a second. */
function writeScenario(dir: string): string {
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, "package.json"), "{}");
  const file = path.join(dir, "arch.yml");
  writeFileSync(
    file,
    ["config:", "  target: ws://127.0.0.1:1/cable", "  engines: { cable: {} }", "  phases: [{ duration: 2, arrivalRate: 1 }]", "scenarios:", "  - engine: cable", "    flow:", "      - connect: { cookies: { uid: \"u{{ $uuid }}\" } }", "      - think: 1", ""].join("\n"),
  );
  return file;
}

const target = (r: RecordedRequest) => Object.entries(r.headers).find(([name]) => name.toLowerCase() === "x-amz-target")?.[1] ?? "";
/** The RunTask calls moto received, their JSON bodies (the recorder base64-encodes what it takes for binary). */
const runTasks = (requests: RecordedRequest[]) =>
  requests
    .filter((r) => /\.RunTask$/.test(target(r)))
    .map((r) => {
      const { body, body_encoded } = r as RecordedRequest & { body: string; body_encoded?: boolean };
      return JSON.parse(body_encoded ? Buffer.from(body, "base64").toString("utf8") : body) as Record<string, unknown>;
    });

describe("--arch arm64 on the AWS path (moto)", () => {
  let moto: Moto;
  let work: string;
  let local: LocalTarget;
  const stacks = new Map<string, RegionStack>();

  beforeAll(async () => {
    work = mkdtempSync(path.join(os.tmpdir(), "cable-arch-moto-"));
    moto = await startMoto({ recordTo: path.join(work, "moto-recording") });
    expect(await holdTasksRunning(moto)).toBe(true);
    local = await startTarget({ port: 0 });

    const arm = synthesizeTemplates([ARM], { arch: "arm64" }).get(ARM)!;
    const armTaskDefinition = Object.values(arm.Resources as Record<string, { Type: string; Properties: Record<string, unknown> }>).find((r) => r.Type === "AWS::ECS::TaskDefinition")!;
    expect(armTaskDefinition.Properties.RuntimePlatform).toEqual({ CpuArchitecture: "ARM64", OperatingSystemFamily: "LINUX" });
    // Revision 1 is moto's CloudFormation's (no runtime platform); 2 the full one, which the output names.
    expect(await deployStack(ARM, taskDefinitionOutput(arm, 2))).toBe("CREATE_COMPLETE");
    const full = await registerFullTaskDefinition(ARM, arm);
    expect(full.revision).toBe(2);
    expect(full.runtimePlatform).toEqual({ cpuArchitecture: "ARM64", operatingSystemFamily: "LINUX" });

    expect(await deployStack(X86, synthesizeTemplates([X86]).get(X86)!)).toBe("CREATE_COMPLETE");
    for (const region of [ARM, X86]) stacks.set(region, await describeRegionStack(new CloudFormationClient({ region }), region));
  }, 240_000);
  afterAll(async () => {
    await local?.close();
    await moto?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it("reads each stack's TaskArch output", () => {
    expect(stacks.get(ARM)!.taskArch).toBe("arm64");
    expect(stacks.get(X86)!.taskArch).toBe("x86_64");
    expect(stacks.get(ARM)!.taskDefinitionArn).toMatch(/:task-definition\/CableLoadtest-eu-west-2:2$/);
  });

  it("runs `--arch arm64` with the ARM64 task definition, and the run completes", async () => {
    const dir = path.join(work, "arm");
    const scenario = writeScenario(path.join(dir, "app"));
    const out = path.join(dir, "results");
    const recorder = motoRecorder(moto);
    const ecs = await emulateEcs([stacks.get(ARM)!], moto.env, dir);
    await recorder.start();
    let result: Awaited<ReturnType<typeof runCli>>;
    try {
      result = await runCli(["run", scenario, "--regions", ARM, "--arch", "arm64", "--target", local.cableUrl, "--start-delay", "1", "--out", out], { cwd: dir, env: moto.env, timeoutMs: 180_000 });
      await ecs.settled(30_000);
    } finally {
      await recorder.stop();
      await ecs.stop();
    }
    const tasks = [...ecs.tasks.values()];
    expect(tasks, result.stderr).toHaveLength(1);
    expect(result.code, `${result.stderr}\n${tasks[0].output.slice(-2_000)}`).toBe(0);
    expect(result.stderr).not.toMatch(/its stack runs/);

    // RunTask named the stack's ARM64 revision, at the default platform version.
    const started = runTasks(await recorder.requests());
    expect(started).toEqual([expect.objectContaining({ taskDefinition: stacks.get(ARM)!.taskDefinitionArn, launchType: "FARGATE" })]);
    expect(started[0]).not.toHaveProperty("platformVersion");
    expect(tasks[0].runtimePlatform).toEqual({ cpuArchitecture: "ARM64", operatingSystemFamily: "LINUX" });
    const { taskDefinition } = await new ECSClient({ region: ARM }).send(new DescribeTaskDefinitionCommand({ taskDefinition: stacks.get(ARM)!.taskDefinitionArn }));
    expect(taskDefinition?.runtimePlatform).toEqual({ cpuArchitecture: "ARM64", operatingSystemFamily: "LINUX" });
    expect(taskDefinition).toMatchObject({ cpu: "4096", memory: "8192" });

    const [runId] = readdirSync(out).filter((d) => !d.startsWith("."));
    expect(runId).toBe(tasks[0].runId);
    const counters = (JSON.parse(readFileSync(path.join(out, runId, "merged.json"), "utf8")) as { all: { counters: Record<string, number> } }).all.counters;
    expect(counters["vusers.completed"]).toBeGreaterThan(0);
    expect(counters["vusers.failed"] ?? 0).toBe(0);
  }, 300_000);

  it("with --spot, would ask FARGATE_SPOT for the ARM64 revision at the default platform version, which the strict double takes", () => {
    const region = new AwsRegion(stacks.get(ARM)!, defaultClients(ARM), { sleep: async () => undefined, log: () => undefined }, {}, { arch: "arm64" });
    const input = region.runTaskInput("20261129-000000-abcdef", [0], { spot: true, secretRefs: {}, secretValues: {}, abort: new AbortController().signal });
    expect(input).toMatchObject({ taskDefinition: stacks.get(ARM)!.taskDefinitionArn, capacityProviderStrategy: [{ capacityProvider: "FARGATE_SPOT", weight: 1 }] });
    expect(input).not.toHaveProperty("launchType");
    expect(input).not.toHaveProperty("platformVersion");
    expect(violations("ECSClient", "RunTaskCommand", input as unknown as Record<string, unknown>)).toEqual([]);
    // A platform version before Spot's is what the double refuses.
    expect(violations("ECSClient", "RunTaskCommand", { ...input, platformVersion: "1.2.0" }).map((v) => v.constraint.rule)).toEqual([expect.stringContaining("FARGATE_SPOT runs Linux tasks on platform version 1.3.0 or later")]);
  });

  it("refuses `--arch arm64` against an x86_64 stack before any RunTask, naming the region and -c arch=arm64", async () => {
    const dir = path.join(work, "x86");
    const scenario = writeScenario(path.join(dir, "app"));
    const out = path.join(dir, "results");
    const recorder = motoRecorder(moto);
    // The recording keeps the earlier tests' requests.
    const earlier = runTasks(await recorder.requests()).length;
    await recorder.start();
    let result: Awaited<ReturnType<typeof runCli>>;
    try {
      result = await runCli(["run", scenario, "--regions", `${ARM},${X86}`, "--arch", "arm64", "--target", local.cableUrl, "--out", out], { cwd: dir, env: moto.env });
    } finally {
      await recorder.stop();
    }
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toContain(
      "not starting any task:\n  region us-east-1: its stack runs x86_64 tasks, not arm64 (--arch), and RunTask cannot change a task definition's architecture; redeploy it with: cd infra && npx cdk deploy -c regions=us-east-1 -c arch=arm64 CableLoadtest-us-east-1, or drop --arch to run on x86_64",
    );
    // eu-west-2's ARM64 stack is no problem; nothing was started in either region.
    expect(result.stderr).not.toContain("region eu-west-2: its stack runs");
    expect(runTasks(await recorder.requests()).slice(earlier)).toEqual([]);
  }, 120_000);
});

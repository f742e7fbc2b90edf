// The CDK stacks deployed into moto (cable-test-servers' startMoto), and moto's request recorder.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { CloudFormationClient, CreateStackCommand, DescribeStacksCommand } from "@aws-sdk/client-cloudformation";
import { DescribeTaskDefinitionCommand, ECSClient, RegisterTaskDefinitionCommand, type TaskDefinition } from "@aws-sdk/client-ecs";
import { PutParameterCommand, SSMClient } from "@aws-sdk/client-ssm";
import { stackNameFor } from "cable-infra/contract";
import type { Moto } from "cable-test-servers";

/**
 * The synthesized CableLoadtest-<region> templates, from the CDK app in infra (built into infra/dist).
 * In a Node process of its own: vitest's processes resolve the workspace packages to their
 * TypeScript sources (the "development" condition), which the built app cannot load.
 */
export function synthesizeTemplates(regions: string[], context: Record<string, string> = {}): Map<string, Record<string, unknown>> {
  const infra = path.resolve(__dirname, "../../../infra");
  // The image's build context, staged as `cdk synth` would (a clean clone has none in infra/image).
  const dir = mkdtempSync(path.join(os.tmpdir(), "cable-image-"));
  const out = path.join(dir, "templates.json");
  const script = `
    const { App } = require(require.resolve("aws-cdk-lib", { paths: [${JSON.stringify(infra)}] }));
    const { buildApp } = require(${JSON.stringify(path.join(infra, "dist/cdk/app.js"))});
    const { stageImage } = require(${JSON.stringify(path.join(infra, "dist/image/stage.js"))});
    const imageDir = ${JSON.stringify(path.join(dir, "image"))};
    stageImage(imageDir);
    const app = new App({ context: ${JSON.stringify({ ...context, regions: regions.join(",") })} });
    const stacks = buildApp(app, imageDir);
    const assembly = app.synth();
    require("node:fs").writeFileSync(${JSON.stringify(out)}, JSON.stringify(stacks.map((s) => [s.region, assembly.getStackArtifact(s.artifactId).template])));
  `;
  try {
    execFileSync(process.execPath, ["-e", script], { stdio: ["ignore", "ignore", "pipe"] });
    return new Map(JSON.parse(readFileSync(out, "utf8")) as Array<[string, Record<string, unknown>]>);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** CreateStack of the real template, after seeding what the CDK bootstrap rule reads. */
export async function deployStack(region: string, template: Record<string, unknown>): Promise<string> {
  await new SSMClient({ region }).send(new PutParameterCommand({ Name: "/cdk-bootstrap/hnb659fds/version", Value: "30", Type: "String", Overwrite: true }));
  const cfn = new CloudFormationClient({ region });
  const name = stackNameFor(region);
  await cfn.send(new CreateStackCommand({ StackName: name, TemplateBody: JSON.stringify(template), Capabilities: ["CAPABILITY_IAM", "CAPABILITY_NAMED_IAM"] }));
  const { Stacks } = await cfn.send(new DescribeStacksCommand({ StackName: name }));
  return Stacks?.[0]?.StackStatus ?? "unknown";
}

/**
 * moto's CloudFormation registers a task definition with its family, containers, volumes and memory
 * only: the template's RuntimePlatform, Cpu, NetworkMode and RequiresCompatibilities are dropped, so
 * an ARM64 stack would run tasks of no architecture. registerFullTaskDefinition registers the next
 * revision of the stack's family with its runtime platform and size (RegisterTaskDefinition, through the strict double: the
 * runtime platform is held to what AWS documents); deploy the template with
 * `taskDefinitionOutput(template, that revision)` so that the stack's TaskDefinitionArn names it.
 */
export function taskDefinitionOutput(template: Record<string, unknown>, revision: number): Record<string, unknown> {
  const resources = template.Resources as Record<string, { Type: string; Properties: Record<string, unknown> }>;
  const family = Object.values(resources).find((r) => r.Type === "AWS::ECS::TaskDefinition")!.Properties.Family as string;
  const outputs = template.Outputs as Record<string, { Value: unknown }>;
  return {
    ...template,
    Outputs: { ...outputs, TaskDefinitionArn: { ...outputs.TaskDefinitionArn, Value: { "Fn::Sub": `arn:\${AWS::Partition}:ecs:\${AWS::Region}:\${AWS::AccountId}:task-definition/${family}:${revision}` } } },
  };
}

/** Registers the template's task definition with its runtime platform and size (see taskDefinitionOutput) after moto's CloudFormation registered its partial one; returns the new revision's description. */
export async function registerFullTaskDefinition(region: string, template: Record<string, unknown>): Promise<TaskDefinition> {
  const resources = template.Resources as Record<string, { Type: string; Properties: Record<string, any> }>;
  const properties = Object.values(resources).find((r) => r.Type === "AWS::ECS::TaskDefinition")!.Properties;
  const ecs = new ECSClient({ region });
  // The containers as moto resolved them (the template's are full of Ref and Fn::Join).
  const { taskDefinition: partial } = await ecs.send(new DescribeTaskDefinitionCommand({ taskDefinition: properties.Family }));
  const { taskDefinition } = await ecs.send(
    new RegisterTaskDefinitionCommand({
      family: properties.Family,
      containerDefinitions: partial!.containerDefinitions!,
      cpu: String(properties.Cpu),
      memory: String(properties.Memory),
      // Not networkMode (awsvpc) nor requiresCompatibilities (FARGATE, which makes moto take awsvpc):
      // moto 5.2.1's RunTask fails on an awsvpc task definition (HTTP 500, AttributeError building the
      // task's network interface), so they are left out as moto's CloudFormation leaves them.
      runtimePlatform: { cpuArchitecture: properties.RuntimePlatform.CpuArchitecture, operatingSystemFamily: properties.RuntimePlatform.OperatingSystemFamily },
    }),
  );
  return taskDefinition!;
}

/**
 * moto walks a task from RUNNING to STOPPED on its own as time passes; as on Fargate, a test's task
 * should run until its container exits or StopTask (the test's workers do both). Returns whether
 * moto took the setting.
 */
export async function holdTasksRunning(moto: Moto): Promise<boolean> {
  const res = await fetch(`${moto.endpoint}/moto-api/state-manager/set-transition`, {
    method: "POST",
    body: JSON.stringify({ model_name: "ecs::task", transition: { progression: "time", seconds: 86_400 } }),
  });
  return res.ok;
}

/** One request moto received while recording, as its recorder keeps it. */
export interface RecordedRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
}

/**
 * moto's request recorder: every request it receives from any process (the CLI, the workers, the
 * Artillery they run), so a test sees calls made outside its own process. Each request names its
 * caller by the access key id in its signature.
 */
export const motoRecorder = (moto: Moto) => ({
  start: () => motoApi(moto, "recorder/start-recording"),
  stop: () => motoApi(moto, "recorder/stop-recording"),
  async requests(): Promise<RecordedRequest[]> {
    return jsonObjects(await motoApi(moto, "recorder/download-recording")).map((entry) => entry as RecordedRequest);
  },
});

/**
 * The top-level JSON objects of a text. moto's threaded server writes each request as one JSON
 * text and then its newline separately, so two requests at once can come out as `{…}{…}\n\n`.
 */
export function jsonObjects(text: string): unknown[] {
  const out: unknown[] = [];
  let depth = 0;
  let start = -1;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === "\\") i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === "{") {
      if (depth++ === 0) start = i;
    } else if (c === "}" && --depth === 0) out.push(JSON.parse(text.slice(start, i + 1)));
    else if (depth === 0 && c.trim() !== "") throw new Error(`moto's recording has "${c}" between requests at ${i}`);
  }
  if (depth !== 0) throw new Error("moto's recording ends inside a request");
  return out;
}

async function motoApi(moto: Moto, path: string): Promise<string> {
  const response = await fetch(`${moto.endpoint}/moto-api/${path}`, { method: "POST" });
  if (!response.ok) throw new Error(`moto ${path}: HTTP ${response.status}`);
  return response.text();
}

/** The access key id a recorded request was signed with (SigV4's Credential=<key>/<date>/<region>/<service>/aws4_request). */
export function signedBy(request: RecordedRequest): { accessKeyId: string; service: string } | undefined {
  const authorization = Object.entries(request.headers).find(([name]) => name.toLowerCase() === "authorization")?.[1];
  const match = authorization && /Credential=([^/]+)\/[^/]+\/[^/]+\/([^/]+)\//.exec(authorization);
  return match ? { accessKeyId: match[1], service: match[2] } : undefined;
}

import type { ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { CloudFormationClient, ListStackResourcesCommand } from "@aws-sdk/client-cloudformation";
import { DescribeTasksCommand, ECSClient } from "@aws-sdk/client-ecs";
import { GetPolicyCommand, GetPolicyVersionCommand, IAMClient, ListPoliciesCommand } from "@aws-sdk/client-iam";
import { CreateSecretCommand, SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import { DeleteParameterCommand, PutParameterCommand, SSMClient } from "@aws-sdk/client-ssm";
import { runSimulation } from "@cloud-copilot/iam-simulate";
import { operatorPolicyNameFor, stackNameFor } from "cable-infra/contract";
import { startTarget, type LocalTarget } from "cable-local-target";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AwsBackend, defaultClients } from "../src/aws/aws-backend";
import { describeRegionStack, type RegionStack } from "../src/aws/discovery";
import { collectCommand, stopCommand } from "../src/commands";
import { LineProgress } from "../src/progress";
import { runFanout } from "../src/run/runner";
import { runCli } from "./cli";
import { emulateEcs } from "./ecs-emulator";
import { type Deployment, iamRequests, type RecordedCall, recordCalls } from "./iam-calls";
import { startMoto, type Moto, waitFor } from "cable-test-servers";
import { deployStack, holdTasksRunning, synthesizeTemplates } from "./moto";

// The first real run, against moto: the synthesized stacks deployed by CloudFormation in two regions,
// real workers playing the Fargate tasks (test/ecs-emulator.ts), and
// - every AWS call the runner makes in run, stop and collect, recorded at the SDK, checked against the
//   operator policy *as CloudFormation created it* with an IAM policy simulator (moto allows every call);
// - SIGTERM to the runner, and a runner killed outright (its heartbeat goes stale), leave no task running;
// - a secret missing in one region stops the run before any task starts, naming region and secret.
const ROOT = path.resolve(__dirname, "../../..");
const REGIONS = ["eu-west-2", "us-east-1"];
const ACCOUNT = "123456789012";
const SECRET = "/cable-loadtest/pusher-secret";
const phases = (duration: number) => JSON.stringify({ config: { phases: [{ duration, arrivalRate: 1 }] } });

describe("the first AWS run (moto)", () => {
  let moto: Moto;
  let work: string;
  let target: LocalTarget;
  let stacks: RegionStack[];
  let deployment: Deployment;
  let policies: Array<{ name: string; policy: unknown }>;

  beforeAll(async () => {
    moto = await startMoto();
    expect(await holdTasksRunning(moto)).toBe(true);
    work = mkdtempSync(path.join(os.tmpdir(), "cable-first-run-"));
    target = await startTarget({ port: 0 });
    for (const [region, template] of synthesizeTemplates(REGIONS)) expect(await deployStack(region, template)).toBe("CREATE_COMPLETE");
    stacks = await Promise.all(REGIONS.map((r) => describeRegionStack(new CloudFormationClient({ region: r }), r)));
    deployment = { account: ACCOUNT, roles: new Map() };
    for (const stack of stacks) {
      // The roles RunTask passes: those of the task definition (moto's CloudFormation leaves them out of it, so by the stack's resources).
      const { StackResourceSummaries = [] } = await new CloudFormationClient({ region: stack.region }).send(new ListStackResourcesCommand({ StackName: stackNameFor(stack.region) }));
      const role = (prefix: string) => `arn:aws:iam::${ACCOUNT}:role/${StackResourceSummaries.find((r) => r.ResourceType === "AWS::IAM::Role" && r.LogicalResourceId!.startsWith(prefix))?.PhysicalResourceId}`;
      deployment.roles.set(stack.region, { taskRoleArn: role("TaskDefinitionTaskRole"), executionRoleArn: role("TaskDefinitionExecutionRole") });
      expect(deployment.roles.get(stack.region)).toEqual({ taskRoleArn: expect.stringMatching(/^arn:aws:iam::\d{12}:role\/.*TaskDefinitionTaskRole/), executionRoleArn: expect.stringMatching(/^arn:aws:iam::\d{12}:role\/.*TaskDefinitionExecutionRole/) });
      await new SSMClient({ region: stack.region }).send(new PutParameterCommand({ Name: SECRET, Value: "s3cr3t-value", Type: "SecureString", Overwrite: true }));
      await new SecretsManagerClient({ region: stack.region }).send(new CreateSecretCommand({ Name: "cable-loadtest/cookie", SecretString: "cookie-value" }));
    }
    // The operator policies as IAM holds them: CloudFormation resolved every reference to a real ARN.
    const iam = new IAMClient({ region: "us-east-1" });
    const { Policies = [] } = await iam.send(new ListPoliciesCommand({ Scope: "Local" }));
    policies = [];
    for (const region of REGIONS) {
      const listed = Policies.find((p) => p.PolicyName === operatorPolicyNameFor(region));
      expect(listed, `operator policy of ${region}`).toBeDefined();
      const { Policy } = await iam.send(new GetPolicyCommand({ PolicyArn: listed!.Arn }));
      const { PolicyVersion } = await iam.send(new GetPolicyVersionCommand({ PolicyArn: listed!.Arn, VersionId: Policy!.DefaultVersionId }));
      const document = PolicyVersion!.Document!;
      policies.push({ name: listed!.PolicyName!, policy: JSON.parse(document.startsWith("%7B") ? decodeURIComponent(document) : document) });
    }
  }, 240_000);
  afterAll(async () => {
    await target?.close();
    await moto?.stop();
    rmSync(work, { recursive: true, force: true });
  });

  const simulate = async (action: string, resource: string, context: Record<string, string> = {}) => {
    const result = await runSimulation(
      {
        identityPolicies: policies as Parameters<typeof runSimulation>[0]["identityPolicies"],
        serviceControlPolicies: [],
        resourceControlPolicies: [],
        request: { action, principal: `arn:aws:iam::${ACCOUNT}:role/operator`, resource: { accountId: ACCOUNT, resource }, contextVariables: context },
      },
      {},
    );
    if (result.resultType === "error") throw new Error(`${action} on ${resource}: ${JSON.stringify(result.errors)}`);
    // A call that names no resource (GetMetricData on classic metrics: its one resource type, a
    // dataset, is optional) is authorized against "*": every resource type the action has, simulated.
    if (result.resultType === "wildcard" && resource === "*") return result.overallResult;
    if (result.resultType !== "single") throw new Error(`${action} on ${resource}: a concrete resource is needed, not a pattern`);
    return result.overallResult;
  };

  it("run, stop and collect make only calls the operator policy allows, and the policy allows nothing beyond the stack", async () => {
    const calls: RecordedCall[] = [];
    const ecs = await emulateEcs(stacks, moto.env, work);
    const backend = new AwsBackend({
      timing: { pollMs: 300, goPollMs: 200, startDelayMs: 1_000, heartbeatMs: 500, readyTimeoutMs: 90_000, stopGraceMs: 20_000 },
      clients: (region) => recordCalls(defaultClients(region), region, calls),
      retry: { sleep: (ms) => new Promise((r) => setTimeout(r, ms)), log: () => undefined },
    });
    const log = (line: string) => void line;
    const out = path.join(work, "policy");
    const abort = new AbortController();
    let runId = "";
    try {
      // Stopped once load runs, as Ctrl-C would, so StopTask is among the calls.
      const stopWhenStarted = waitFor(() => startedLoad(out), 150_000, "the run to pass the barrier").then(() => abort.abort());
      const result = await runFanout(
        {
          scenarioFile: path.join(ROOT, "scenarios/chat.yml"),
          regions: REGIONS,
          count: 1,
          outDir: out,
          target: target.cableUrl,
          overrides: JSON.parse(phases(300)),
          spot: false,
          // moto's CloudFormation leaves the task definition's CPU out; the size override puts the quota check in play.
          cpu: 4096,
          memory: 8192,
          secretRefs: { PUSHER_APP_SECRET: SECRET, SESSION_COOKIE: "secretsmanager:cable-loadtest/cookie" },
          secretValues: {},
        },
        { backend, now: Date.now, sleep: abortableSleep, log, abort, progress: (clock) => new LineProgress(log, { ...clock, now: Date.now }) },
      );
      await stopWhenStarted;
      runId = result.runId;
      const record = JSON.parse(readFileSync(path.join(result.runDir, "fanout.json"), "utf8"));
      expect(record.barrier).toMatchObject({ outcome: "go", ready: 2, expected: 2 });
      // moto marks a task STOPPED at StopTask, before its container has exited; let the workers finish uploading.
      await ecs.settled(30_000);
    } finally {
      await ecs.stop();
    }
    await stopCommand({ runId, outDir: out }, backend, log, { now: Date.now, sleep: (ms) => new Promise((r) => setTimeout(r, ms)), waitMs: 5_000 });
    const collected = await collectCommand({ runId, outDir: out }, backend, {}, log);
    // Both tasks read both secrets in their own region, passed the barrier, ran load and were stopped.
    expect(collected.tasks.map((t) => t.reason)).toEqual([expect.stringContaining("the task was stopped (SIGTERM) before artillery finished"), expect.stringContaining("the task was stopped (SIGTERM) before artillery finished")]);

    // Every command the runner sent, each mapped to what IAM authorizes.
    expect([...new Set(calls.map((c) => `${c.client}.${c.command}`))].sort()).toEqual([
      "CloudFormationClient.DescribeStacksCommand",
      "CloudWatchClient.GetMetricDataCommand",
      "EC2Client.DescribeSubnetsCommand",
      "ECSClient.DescribeTasksCommand",
      "ECSClient.ListTasksCommand",
      "ECSClient.RunTaskCommand",
      "ECSClient.StopTaskCommand",
      "S3Client.GetObjectCommand",
      "S3Client.ListObjectsV2Command",
      "S3Client.PutObjectCommand",
      "SSMClient.DescribeParametersCommand",
      "SecretsManagerClient.DescribeSecretCommand",
      // moto has no applied Fargate quota (NoSuchResourceException): the preflight asks for AWS's default.
      "ServiceQuotasClient.GetAWSDefaultServiceQuotaCommand",
      "ServiceQuotasClient.GetServiceQuotaCommand",
    ]);
    const requests = calls.flatMap((c) => iamRequests(c, deployment));
    const denied: string[] = [];
    const seen = new Set<string>();
    for (const r of requests) {
      const key = `${r.action} ${r.resource} ${JSON.stringify(r.context)}`;
      if (seen.has(key)) continue;
      seen.add(key);
      const outcome = await simulate(r.action, r.resource, r.context);
      if (outcome !== "Allowed") denied.push(`${r.call} → ${key}: ${outcome}`);
    }
    expect(denied).toEqual([]);
    expect(seen.size).toBeGreaterThan(20);

    // The log stream the runner names for each task (DescribeTasks) is one its operator may read.
    const started = JSON.parse(readFileSync(path.join(out, runId, "fanout.json"), "utf8")).started as Record<string, string[]>;
    const pointers = (await Promise.all(REGIONS.map(async (r) => (await (await backend.openRegion(r)).describeTasks(started[r])).map((t) => [r, t.log ?? ""] as const)))).flat();
    expect(pointers).toHaveLength(2);
    for (const [region, pointer] of pointers) {
      const m = /^CloudWatch Logs (\S+) (\S+)$/.exec(pointer);
      expect(m, pointer).not.toBeNull();
      const group = `arn:aws:logs:${region}:${ACCOUNT}:log-group:${m![1]}`;
      expect(await simulate("logs:GetLogEvents", `${group}:log-stream:${m![2]}`), pointer).toBe("Allowed");
      expect(await simulate("logs:FilterLogEvents", group), pointer).toBe("Allowed");
    }

    // Nothing outside the stacks' bucket, roles, cluster and task definition.
    const [london] = stacks;
    const roles = deployment.roles.get("eu-west-2")!;
    const outside: Array<[string, string, Record<string, string>?]> = [
      ["s3:PutObject", "arn:aws:s3:::someone-elses-bucket/runs/x"],
      ["s3:GetObject", "arn:aws:s3:::someone-elses-bucket/runs/x"],
      ["s3:PutObject", `arn:aws:s3:::${london.bucketName}/not-runs/x`],
      ["s3:DeleteObject", `arn:aws:s3:::${london.bucketName}/runs/x`],
      ["s3:PutBucketPolicy", `arn:aws:s3:::${london.bucketName}`],
      ["iam:PassRole", `arn:aws:iam::${ACCOUNT}:role/Admin`, { "iam:PassedToService": "ecs-tasks.amazonaws.com" }],
      ["iam:PassRole", roles.taskRoleArn, { "iam:PassedToService": "lambda.amazonaws.com" }],
      ["iam:CreateRole", `arn:aws:iam::${ACCOUNT}:role/x`],
      ["ecs:RunTask", `arn:aws:ecs:eu-west-2:${ACCOUNT}:task-definition/other:1`, { "ecs:cluster": london.clusterArn }],
      ["ecs:RunTask", london.taskDefinitionArn, { "ecs:cluster": `arn:aws:ecs:eu-west-2:${ACCOUNT}:cluster/other` }],
      ["ecs:StopTask", `arn:aws:ecs:eu-west-2:${ACCOUNT}:task/other/abc`, { "ecs:cluster": `arn:aws:ecs:eu-west-2:${ACCOUNT}:cluster/other` }],
      ["ecs:ListTasks", `arn:aws:ecs:eu-west-2:${ACCOUNT}:container-instance/other/0123456789abcdef`, { "ecs:cluster": `arn:aws:ecs:eu-west-2:${ACCOUNT}:cluster/other` }],
      ["ecs:DeleteCluster", london.clusterArn],
      // Other applications' task definitions hold their plaintext environments.
      ["ecs:DescribeTaskDefinition", "*"],
      ["logs:GetLogEvents", `arn:aws:logs:eu-west-2:${ACCOUNT}:log-group:/payments/api:log-stream:web/1`],
      ["cloudformation:DescribeStacks", `arn:aws:cloudformation:eu-west-2:${ACCOUNT}:stack/OtherStack/x`],
      ["cloudformation:DeleteStack", `arn:aws:cloudformation:eu-west-2:${ACCOUNT}:stack/CableLoadtest-eu-west-2/x`],
      // The operator checks that secrets exist; it never reads them (only the task role does).
      ["ssm:GetParameter", `arn:aws:ssm:eu-west-2:${ACCOUNT}:parameter${SECRET}`],
      ["secretsmanager:GetSecretValue", `arn:aws:secretsmanager:eu-west-2:${ACCOUNT}:secret:cable-loadtest/cookie-AbCdEf`],
      ["secretsmanager:DescribeSecret", `arn:aws:secretsmanager:eu-west-2:${ACCOUNT}:secret:prod/db-AbCdEf`],
    ];
    const allowed: string[] = [];
    for (const [action, resource, context] of outside) if ((await simulate(action, resource, context)) === "Allowed") allowed.push(`${action} ${resource}`);
    expect(allowed).toEqual([]);
  }, 240_000);

  it("stops every task when the runner gets SIGTERM: none is left running", async () => {
    const ecs = await emulateEcs(stacks, moto.env, work);
    const out = path.join(work, "sigterm");
    let cli: ChildProcess | undefined;
    try {
      const run = runCli(
        ["run", path.join(ROOT, "scenarios/chat.yml"), "--regions", REGIONS.join(","), "--target", target.cableUrl, "--overrides", phases(300), "--start-delay", "1", "--out", out],
        { cwd: work, env: moto.env, timeoutMs: 200_000, onSpawn: (c) => (cli = c) },
      );
      await waitFor(() => startedLoad(out), 150_000, "the run to pass the barrier").catch((err) => {
        throw new Error(`${err.message}\n${[...ecs.tasks.values()].map((t) => `${t.region} ${t.taskId}: ${t.output}`).join("\n")}\nnot yet: ${ecs.tasks.size} task(s)`);
      });
      cli!.kill("SIGTERM");
      const result = await run;
      expect(result.stderr).toContain("SIGTERM: stopping every task");
      expect(result.code).toBe(4);
      await ecs.settled(30_000);
      expect(await ecs.running()).toEqual([]);
      const tasks = [...ecs.tasks.values()];
      expect(tasks).toHaveLength(2);
      for (const t of tasks) {
        expect(t.exitCode, t.output).toBe(1);
        expect(t.output).toContain("received SIGTERM");
      }
    } finally {
      cli?.kill("SIGKILL");
      await ecs.stop();
    }
  }, 240_000);

  it("a runner killed outright leaves tasks that stop themselves once its heartbeat is stale", async () => {
    const ecs = await emulateEcs(stacks, moto.env, work);
    const out = path.join(work, "stale");
    let cli: ChildProcess | undefined;
    try {
      const run = runCli(
        ["run", path.join(ROOT, "scenarios/chat.yml"), "--regions", REGIONS.join(","), "--target", target.cableUrl, "--overrides", phases(300), "--start-delay", "1", "--heartbeat-timeout", "6s", "--out", out],
        { cwd: work, env: moto.env, timeoutMs: 200_000, onSpawn: (c) => (cli = c) },
      );
      await waitFor(() => startedLoad(out), 150_000, "the run to pass the barrier");
      // No signal handler runs: nothing stops the tasks but the tasks themselves.
      cli!.kill("SIGKILL");
      await run;
      expect(await ecs.running()).toHaveLength(2);
      await ecs.settled(60_000);
      expect(await ecs.running()).toEqual([]);
      for (const t of ecs.tasks.values()) {
        expect(t.output).toMatch(/stopping: the runner's heartbeat has not changed for \d+ s/);
        expect(t.exitCode).toBe(1);
      }
      const described = await new ECSClient({ region: "eu-west-2" }).send(new DescribeTasksCommand({ cluster: stacks[0].clusterArn, tasks: [...ecs.tasks.values()].filter((t) => t.region === "eu-west-2").map((t) => t.arn) }));
      expect(described.tasks?.map((t) => t.lastStatus)).toEqual(["STOPPED"]);
    } finally {
      cli?.kill("SIGKILL");
      await ecs.stop();
    }
  }, 240_000);

  it("refuses to start when a secret is missing in one region, naming the region and the secret", async () => {
    await new SSMClient({ region: "us-east-1" }).send(new DeleteParameterCommand({ Name: SECRET }));
    const ecs = await emulateEcs(stacks, moto.env, work);
    try {
      const before = ecs.tasks.size;
      const result = await runCli(
        ["run", path.join(ROOT, "scenarios/chat.yml"), "--regions", REGIONS.join(","), "--secret", `PUSHER_APP_SECRET=ssm:${SECRET}`, "--secret", "COOKIE=secretsmanager:cable-loadtest/nope", "--out", path.join(work, "secrets")],
        { cwd: work, env: moto.env },
      );
      expect(result.code).toBe(2);
      expect(result.stderr).toContain(
        `region us-east-1: secret PUSHER_APP_SECRET (${SECRET}): no SSM parameter ${SECRET} in us-east-1; create it there: aws ssm put-parameter --region us-east-1 --name ${SECRET} --type SecureString --value …`,
      );
      expect(result.stderr).not.toContain("region eu-west-2: secret PUSHER_APP_SECRET");
      for (const region of REGIONS) expect(result.stderr).toContain(`region ${region}: secret COOKIE (secretsmanager:cable-loadtest/nope): no Secrets Manager secret cable-loadtest/nope in ${region}`);
      expect(await ecs.running()).toEqual([]);
      expect(ecs.tasks.size).toBe(before);
    } finally {
      await ecs.stop();
      await new SSMClient({ region: "us-east-1" }).send(new PutParameterCommand({ Name: SECRET, Value: "s3cr3t-value", Type: "SecureString", Overwrite: true }));
    }
  }, 60_000);
});

const abortableSleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => (clearTimeout(timer), resolve()), { once: true });
  });

/** The run's record has a common start, and it has passed: the tasks' Artillery runs. */
function startedLoad(out: string): boolean {
  if (!existsSync(out)) return false;
  const [runId] = readdirSync(out).filter((d) => !d.startsWith("."));
  const file = runId && path.join(out, runId, "fanout.json");
  if (!file || !existsSync(file)) return false;
  const record = JSON.parse(readFileSync(file, "utf8")) as { startAt: number | null };
  return record.startAt !== null && Date.now() > record.startAt + 2_000;
}

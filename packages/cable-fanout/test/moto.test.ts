import { type Dirent, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { DescribeTasksCommand, ECSClient, StopTaskCommand, paginateListTasks } from "@aws-sdk/client-ecs";
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { PutParameterCommand, SSMClient } from "@aws-sdk/client-ssm";
import { startTarget } from "cable-local-target";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { describeRegionStack, type RegionStack } from "../src/aws/discovery";
import { CloudFormationClient } from "@aws-sdk/client-cloudformation";
import { runCli } from "./cli";
import { startMoto, type Moto } from "cable-test-servers";
import { deployStack, holdTasksRunning, synthesizeTemplates } from "./moto";

// The AWS backend against moto's server: the real synthesized stacks deployed by CloudFormation in
// two regions, the real CLI, and workers simulated by writing genuine Artillery reports into each
// region's bucket as soon as ECS lists the task (moto runs no container).
const ROOT = path.resolve(__dirname, "../../..");
const REGIONS = ["eu-west-2", "us-east-1"];

const cli = (args: string[], env: Record<string, string>, cwd: string) => runCli(args, { cwd, env, timeoutMs: 100_000 });

/** What one genuine task left: a real artillery run through the local backend. */
function genuineTaskFiles(work: string, cableUrl: string): Promise<Record<string, Buffer>> {
  const out = path.join(work, "genuine");
  return cli(["run", path.join(ROOT, "scenarios/chat.yml"), "--local", "--regions", "local-seed", "--target", cableUrl, "--overrides", JSON.stringify({ config: { phases: [{ duration: 1, arrivalRate: 2 }] } }), "--start-delay", "1", "--out", out], {}, work).then((r) => {
    if (r.code !== 0) throw new Error(`seed run failed: ${r.stderr}`);
    const [runId] = readdirSync(out).filter((d) => !d.startsWith("."));
    const dir = path.join(out, runId, "local-seed", "task-1");
    // Every file at any depth (live/ holds the periods the task streamed), by its path in the task's folder.
    const files = (readdirSync(dir, { recursive: true, withFileTypes: true }) as Dirent[]).filter((e) => e.isFile()).map((e) => path.relative(dir, path.join(e.parentPath, e.name)));
    return Object.fromEntries(files.map((f) => [f, readFileSync(path.join(dir, f))]));
  });
}

/** Each task ran its own Artillery: its sidecar names its own test run (cable-report counts copies of one run once). */
function asTask(name: string, body: Buffer, taskId: string): Buffer {
  if (!name.endsWith(".sketches.json")) return body;
  const sidecar = JSON.parse(body.toString()) as { testRunId: string };
  return Buffer.from(JSON.stringify({ ...sidecar, testRunId: `${sidecar.testRunId}-${taskId}` }));
}

/**
 * Plays the worker for every task ECS lists: writes its ready marker at once, and once the runner's
 * go marker is there, the files and a status.json under the task's id.
 */
function simulateWorkers(stacks: RegionStack[], files: Record<string, Buffer>) {
  const seen = new Set<string>();
  const waiting: Array<{ stack: RegionStack; runId: string; taskId: string; taskArn: string }> = [];
  const bundles = new Map<string, string[]>();
  const overrides: unknown[] = [];
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      for (const stack of stacks) {
        const ecs = new ECSClient({ region: stack.region });
        const s3 = new S3Client({ region: stack.region });
        const arns: string[] = [];
        for await (const page of paginateListTasks({ client: ecs }, { cluster: stack.clusterArn })) arns.push(...(page.taskArns ?? []));
        const fresh = arns.filter((a) => !seen.has(a));
        if (fresh.length > 0) {
          const { tasks = [] } = await ecs.send(new DescribeTasksCommand({ cluster: stack.clusterArn, tasks: fresh }));
          for (const task of tasks) {
            seen.add(task.taskArn!);
            overrides.push(task.overrides);
            const runId = task.startedBy!;
            const taskId = task.taskArn!.split("/").pop()!;
            const listed = await s3.send(new ListObjectsV2Command({ Bucket: stack.bucketName, Prefix: `runs/${runId}/bundle/` }));
            bundles.set(stack.region, (listed.Contents ?? []).map((o) => o.Key!.slice(`runs/${runId}/bundle/`.length)).sort());
            await s3.send(new PutObjectCommand({ Bucket: stack.bucketName, Key: `runs/${runId}/${stack.region}/${taskId}/ready.json`, Body: JSON.stringify({ runId, region: stack.region, taskId, readyAt: Date.now() }) }));
            waiting.push({ stack, runId, taskId, taskArn: task.taskArn! });
          }
        }
      }
      for (const w of waiting.splice(0)) {
        const s3 = new S3Client({ region: w.stack.region });
        const go = await s3.send(new GetObjectCommand({ Bucket: w.stack.bucketName, Key: `runs/${w.runId}/control/go.json` })).then(
          async (r) => JSON.parse(await r.Body!.transformToString()) as { startAt: number },
          () => undefined,
        );
        if (!go) {
          waiting.push(w);
          continue;
        }
        const prefix = `runs/${w.runId}/${w.stack.region}/${w.taskId}/`;
        for (const [name, body] of Object.entries(files)) await s3.send(new PutObjectCommand({ Bucket: w.stack.bucketName, Key: prefix + name, Body: asTask(name, body, w.taskId) }));
        const status = { runId: w.runId, region: w.stack.region, taskId: w.taskId, exitCode: 0, reason: null, startedAt: new Date().toISOString(), endedAt: new Date().toISOString(), startLagMs: 3, artilleryExitCode: 0, loadStartedAt: go.startAt + 3, firstMetricAt: go.startAt + 40 };
        await s3.send(new PutObjectCommand({ Bucket: w.stack.bucketName, Key: `${prefix}status.json`, Body: JSON.stringify(status) }));
        // The worker exited: ECS stops the task.
        await new ECSClient({ region: w.stack.region }).send(new StopTaskCommand({ cluster: w.stack.clusterArn, task: w.taskArn, reason: "Essential container in task exited" }));
      }
      await new Promise((r) => setTimeout(r, 250));
    }
  })();
  return { seen, bundles, overrides, stop: async () => ((stopped = true), await loop) };
}

describe("cable-fanout run against moto", () => {
  let moto: Moto;
  let work: string;
  let stacks: RegionStack[];
  let files: Record<string, Buffer>;

  beforeAll(async () => {
    moto = await startMoto();
    expect(await holdTasksRunning(moto)).toBe(true);
    work = mkdtempSync(path.join(os.tmpdir(), "cable-fanout-moto-"));
    const target = await startTarget({ port: 0 });
    try {
      files = await genuineTaskFiles(work, target.cableUrl);
    } finally {
      await target.close();
    }
    // Every resource of the synthesized template deploys into moto: nothing is left out.
    for (const [region, template] of synthesizeTemplates(REGIONS)) expect(await deployStack(region, template)).toBe("CREATE_COMPLETE");
    // The secret the run names, in every region (checked before any task starts).
    for (const region of REGIONS) await new SSMClient({ region }).send(new PutParameterCommand({ Name: "/cable-loadtest/pusher-secret", Value: "x", Type: "SecureString", Overwrite: true }));
    stacks = await Promise.all(REGIONS.map((r) => describeRegionStack(new CloudFormationClient({ region: r }), r)));
  }, 180_000);
  afterAll(async () => {
    await moto?.stop();
    rmSync(work, { recursive: true, force: true });
  });

  it("runs 12 tasks in each of two regions at once, collects every report and writes the comparison", async () => {
    const workers = simulateWorkers(stacks, files);
    const out = path.join(work, "results");
    const result = await cli(
      ["run", path.join(ROOT, "scenarios/pubsub-rooms.yml"), "--regions", REGIONS.join(","), "--count", "12", "--start-delay", "1", "--secret", "PUSHER_APP_SECRET=ssm:/cable-loadtest/pusher-secret", "--out", out, "--title", "moto run"],
      moto.env,
      work,
    ).finally(() => workers.stop());
    expect(result.code, result.stderr).toBe(0);

    // The bundle reached each region's bucket: the scenario, its processor, and the manifest.
    for (const region of REGIONS) expect(workers.bundles.get(region)).toEqual(["processors/rooms.js", "run.json", "scenarios/pubsub-rooms.yml"]);
    // The secret travelled by name only.
    expect(workers.overrides).toHaveLength(24);
    const text = JSON.stringify(workers.overrides);
    expect(text).toContain('"CABLE_SECRETS"');
    expect(text).toContain("/cable-loadtest/pusher-secret");

    const [runId] = readdirSync(out);
    const runDir = path.join(out, runId);
    for (const region of REGIONS) {
      const tasks = readdirSync(path.join(runDir, region));
      expect(tasks).toHaveLength(12);
      for (const task of tasks) expect(readdirSync(path.join(runDir, region, task)).sort()).toEqual(["artillery.log", "report.json", "report.json.sketches.json"]);
    }
    const record = JSON.parse(readFileSync(path.join(runDir, "fanout.json"), "utf8"));
    expect(record.tasks).toHaveLength(24);
    expect(record.tasks.every((t: { state: string; log: string }) => t.state === "ok" && /^CloudWatch Logs CableLoadtest-.*-Logs\S+ loadgen\/loadgen\/[0-9a-f-]+$/.test(t.log))).toBe(true);
    const merged = JSON.parse(readFileSync(path.join(runDir, "merged.json"), "utf8"));
    const perTask = JSON.parse(files["report.json"].toString()).aggregate.counters["vusers.created"];
    expect(merged.regions.map((r: { name: string; tasks: number; counters: Record<string, number> }) => [r.name, r.tasks, r.counters["vusers.created"]])).toEqual([
      ["eu-west-2", 12, 12 * perTask],
      ["us-east-1", 12, 12 * perTask],
    ]);
    const report = readFileSync(path.join(runDir, "report.md"), "utf8");
    expect(report).toContain("## moto run");
    expect(report).toContain("| Metric | eu-west-2 | us-east-1 | **all regions** |");
    expect(report).toContain(`| Created | ${12 * perTask} | ${12 * perTask} | ${24 * perTask} |`);
    // All 24 tasks passed the ready barrier; their first virtual users came 40 ms after the common start.
    expect(report).toContain("Ready barrier: 24 of 24 task(s) ready after");
    expect(report).toContain("| eu-west-2 | 12/12 | +40 ms | +40 ms | 0 ms | – |");
  }, 120_000);

  it("names a region that is not deployed and the command that fixes it, and starts nothing", async () => {
    const countTasks = async () => {
      let n = 0;
      for await (const page of paginateListTasks({ client: new ECSClient({ region: "eu-west-2" }) }, { cluster: stacks[0].clusterArn })) n += page.taskArns?.length ?? 0;
      return n;
    };
    const before = await countTasks();
    const result = await cli(["run", path.join(ROOT, "scenarios/chat.yml"), "--regions", "eu-west-2,ap-south-1", "--out", path.join(work, "undeployed")], moto.env, work);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("cable-fanout: region ap-south-1 is not deployed (no CloudFormation stack CableLoadtest-ap-south-1); deploy it with: cd infra && npx cdk deploy -c regions=ap-south-1 CableLoadtest-ap-south-1");
    expect(await countTasks()).toBe(before);
  });
});

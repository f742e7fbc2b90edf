import { type Dirent, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
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
      [
        "run",
        path.join(ROOT, "scenarios/pubsub-rooms.yml"),
        "--regions",
        REGIONS.join(","),
        "--count",
        "12",
        "--start-delay",
        "1",
        "--secret",
        "PUSHER_APP_SECRET=ssm:/cable-loadtest/pusher-secret",
        "--out",
        out,
        "--title",
        "moto run",
        // Above the estimate: the run goes on, and says what it cost.
        "--max-cost",
        "100",
      ],
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
    // The plan's estimate, before the first RunTask, kept in fanout.json and in report.md.
    expect(result.stderr.indexOf("plan: 12 task(s) in each of eu-west-2, us-east-1 (24 in all)")).toBeGreaterThan(-1);
    expect(result.stderr.indexOf("  cost: about $")).toBeLessThan(result.stderr.search(/^run /m));
    expect(record.estimate).toMatchObject({ cpu: 4096, memoryMiB: 8192, peakUsersPerTask: 4000, workload: "chat", pricesAsOf: expect.stringMatching(/^\d{4}-\d\d-\d\d$/) });
    expect(record.estimate.usd).toBeGreaterThan(0);
    expect(report).toContain("### Cost");
    expect(report).toMatch(new RegExp(`\\| Estimate before the run \\| 24 \\| 24 × [\\d.]+ min \\| \\$${record.estimate.usd.toFixed(2)}( \\(up to [^)]*\\))? \\|`));
  }, 120_000);

  const countTasks = async (region: string) => {
    let n = 0;
    const stack = stacks.find((s) => s.region === region)!;
    for await (const page of paginateListTasks({ client: new ECSClient({ region }) }, { cluster: stack.clusterArn })) n += page.taskArns?.length ?? 0;
    return n;
  };

  it("plan prints the block for two regions, from the stacks' size, quotas and subnets, and starts nothing", async () => {
    const before = await Promise.all(REGIONS.map(countTasks));
    const out = path.join(work, "planned");
    const result = await cli(["plan", path.join(ROOT, "scenarios/pubsub-rooms.yml"), "--regions", REGIONS.join(","), "--count", "3", "--out", out], moto.env, work);
    expect(result.code, result.stderr).toBe(0);
    const lines = result.stdout.split("\n");
    expect(lines[0]).toBe("plan: 3 task(s) in each of eu-west-2, us-east-1 (6 in all), 4 vCPU / 8 GiB x86_64 each (stack), on-demand");
    expect(result.stdout).toContain("users: about 4,000 at once per task at the peak (6,500 arrive over 90 s; a user stays about 40 s), 24,000 in all; each user sends and receives, each sending");
    expect(result.stdout).toMatch(/one 4 vCPU task holds about [\d,]+ users at once/);
    // moto serves no Fargate quota: said, not guessed; its subnets' free addresses are read.
    expect(result.stdout).toMatch(/eu-west-2: 3 task\(s\), 12 vCPU; on-demand quota unknown; [\d,]+ addresses free; \$\d+\.\d\d/);
    expect(result.stdout).toMatch(/cost: about \$\d+\.\d\d( \(up to [^)]*\))? for about \d+ min a task/);
    expect(result.stdout).toContain("not checked: eu-west-2: Fargate On-Demand vCPU quota:");
    expect(result.stderr).toContain("warning: region eu-west-2: could not read the Fargate On-Demand vCPU quota");
    expect(result.stdout.trim().split("\n").at(-1)).toBe("plan: nothing was started");
    expect(await Promise.all(REGIONS.map(countTasks))).toEqual(before);
    expect(existsSync(out)).toBe(false);
  });

  it("--max-cost below the estimate refuses with exit 2 before anything is uploaded or started", async () => {
    const before = await Promise.all(REGIONS.map(countTasks));
    const out = path.join(work, "too-dear");
    const result = await cli(
      ["run", path.join(ROOT, "scenarios/pubsub-rooms.yml"), "--regions", REGIONS.join(","), "--count", "50", "--secret", "PUSHER_APP_SECRET=ssm:/cable-loadtest/pusher-secret", "--out", out, "--max-cost", "0.50"],
      moto.env,
      work,
    );
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/cable-fanout: not starting any task: the estimate \$\d+\.\d\d( \([^)]*\))? is above --max-cost \$0\.50/);
    expect(result.stderr).not.toContain("bundled ");
    expect(await Promise.all(REGIONS.map(countTasks))).toEqual(before);
    expect(existsSync(out)).toBe(false);
    // Above the asking threshold, where nobody can answer (no terminal), a run needs --yes.
    const unasked = await cli(["run", path.join(ROOT, "scenarios/soak.yml"), "--regions", REGIONS.join(","), "--count", "200", "--out", out], moto.env, work);
    expect(unasked.code).toBe(2);
    expect(unasked.stderr).toMatch(/not starting any task: the estimate \$[\d,]+\.\d\d( \([^)]*\))? is above \$25\.00; add --yes, or --max-cost <usd>, to start it without asking/);
    expect(await Promise.all(REGIONS.map(countTasks))).toEqual(before);
  });

  it("plan without a reachable account still prices the run, and says what it could not check", async () => {
    const result = await cli(["plan", path.join(ROOT, "scenarios/soak.yml"), "--regions", "eu-west-2", "--count", "2", "--cpu", "2048", "--memory", "4096"], { ...moto.env, AWS_ENDPOINT_URL: "http://127.0.0.1:9", AWS_MAX_ATTEMPTS: "1" }, work);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain("plan: 2 task(s) in each of eu-west-2 (2 in all), 2 vCPU / 4 GiB x86_64 each (flags), on-demand");
    expect(result.stdout).toContain("eu-west-2: 2 task(s), 4 vCPU; quota not checked; addresses not checked;");
    expect(result.stdout).toMatch(/cost: about \$\d+\.\d\d( \(up to [^)]*\))? for about 33 min a task/);
    expect(result.stdout).toMatch(/not checked: the regions could not be reached, so no quota, address or stack size was read \(region eu-west-2: DescribeStacks CableLoadtest-eu-west-2 failed: /);
  });

  it("names a region that is not deployed and the command that fixes it, and starts nothing", async () => {
    const before = await countTasks("eu-west-2");
    const result = await cli(["run", path.join(ROOT, "scenarios/chat.yml"), "--regions", "eu-west-2,ap-south-1", "--out", path.join(work, "undeployed")], moto.env, work);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("cable-fanout: region ap-south-1 is not deployed (no CloudFormation stack CableLoadtest-ap-south-1); deploy it with: cd infra && npx cdk deploy -c regions=ap-south-1 CableLoadtest-ap-south-1");
    expect(await countTasks("eu-west-2")).toBe(before);
  });
});

// `cable-fanout run --abort-on` through the AWS backend, against moto: the synthesized stacks deployed
// by CloudFormation in two regions, real workers playing the Fargate tasks (test/ecs-emulator.ts),
// each running the real Artillery with the cable-live plugin that streams its periods into the
// region's bucket, the real CLI without --local, and the local target given a known capacity (above
// 50 open connections every broadcast is delivered 400 ms late). scenarios/spike.yml, scaled down as
// in over-time-cli.test.ts, takes the two regions past it in the spike; the runner's LiveFeed reads
// the live files from both buckets, judges the condition on the merged figures, stops every task
// (StopTask → SIGTERM), collects and exits 7. The tasks are "aborted", not failed; their figures
// are rebuilt from the live periods they streamed; and every S3 call, recorded by moto and told
// apart by the key that signed it, is one the signer's policy allows as IAM holds it, in a policy
// simulator (moto allows every call): the runner's reads of the live files under the operator
// policy, the tasks' writes of them under the task role.
//
// One thing moto does unlike Fargate: it marks a task STOPPED the moment StopTask is called, while
// Fargate keeps its lastStatus short of STOPPED (DEACTIVATING, STOPPING…) until the container has
// exited (after SIGTERM, within the task definition's stopTimeout). The runner collects once every
// task reads STOPPED, so on bare moto it would collect before the workers uploaded their status.json.
// The CLI therefore talks to moto through fargateView(), which reports a stopped task whose worker
// still runs as DEACTIVATING, as Fargate would; every other byte passes through unchanged.
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { DescribeTasksCommand, ECSClient } from "@aws-sdk/client-ecs";
import { GetObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { startTarget, type LocalTarget } from "cable-local-target";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RegionStack } from "../src/aws/discovery";
import { runCli } from "./cli";
import { emulateEcs } from "./ecs-emulator";
import { ACCOUNT, deployRegions, simulate, type PolicyDocument } from "./iam-policies";
import { startMoto, type Moto } from "cable-test-servers";
import { holdTasksRunning, motoRecorder, type RecordedRequest, signedBy } from "./moto";

const ROOT = path.resolve(__dirname, "../../..");
const SPIKE = path.join(ROOT, "scenarios/spike.yml");
const REGIONS = ["eu-west-2", "us-east-1"];
// The tasks sign with their own key, so that moto's recording tells their calls from the runner's.
const TASK_KEY = "TASKROLETESTING";
const RUNNER_KEY = "testing";
const CAPACITY = 50;
const DELAY_MS = 400;
const CONDITION = `cable.broadcast_latency.p95>${DELAY_MS / 2} for 10s`;
// Per task; two regions of one task each: ~20 connections, then ~100, then ~20 again (10 s sessions).
const PHASES = [
  { name: "normal", duration: 20, arrivalRate: 1 },
  { name: "spike", duration: 20, arrivalRate: 5 },
  { name: "recovery", duration: 40, arrivalRate: 1 },
];
const PHASES_MS = PHASES.reduce((a, p) => a + p.duration * 1000, 0);

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const json = (file: string) => JSON.parse(readFileSync(file, "utf8")) as Json;

describe("cable-fanout run --abort-on on the AWS backend (moto)", () => {
  let moto: Moto;
  let work: string;
  let target: LocalTarget;
  let stacks: RegionStack[];
  let taskPolicies: Map<string, PolicyDocument[]>;
  let operatorPolicies: PolicyDocument[];

  beforeAll(async () => {
    work = mkdtempSync(path.join(os.tmpdir(), "cable-abort-moto-"));
    moto = await startMoto({ recordTo: path.join(work, "moto-recording") });
    expect(await holdTasksRunning(moto)).toBe(true);
    target = await startTarget({ port: 0, faults: { capacityConnections: CAPACITY, overCapacityDelayMs: DELAY_MS } });
    ({ stacks, taskPolicies, operatorPolicies } = await deployRegions(REGIONS));
  }, 120_000);
  afterAll(async () => {
    await target?.close();
    await moto?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it("stops every task in the spike from the live files in both buckets, keeps what they measured, says why, exits 7, and every S3 call is one its signer's policy allows", async () => {
    const recorder = motoRecorder(moto);
    const ecs = await emulateEcs(stacks, { ...moto.env, AWS_ACCESS_KEY_ID: TASK_KEY }, work);
    const out = path.join(work, "aborted");
    const view = await fargateView(moto.endpoint, (arn) => ecs.tasks.get(arn)?.exitCode === undefined);
    let result: Awaited<ReturnType<typeof runCli>>;
    try {
      await recorder.start();
      result = await runCli(
        ["run", SPIKE, "--regions", REGIONS.join(","), "--target", target.cableUrl, "--overrides", JSON.stringify({ config: { phases: PHASES } }), "--start-delay", "1", "--out", out, "--abort-on", CONDITION],
        { cwd: work, env: { ...moto.env, AWS_ENDPOINT_URL: view.url }, timeoutMs: 150_000 },
      );
      // Through fargateView the runner collected only once every worker had exited; a bounded guard all the same.
      await ecs.settled(30_000);
      await recorder.stop();
      // No task is left running in either region, and each worker exited.
      expect(await ecs.running()).toEqual([]);
    } finally {
      await ecs.stop();
      await view.close();
    }
    const tasks = [...ecs.tasks.values()];
    const context = `${result.stderr}\n${tasks.map((t) => `${t.region} ${t.taskId}: ${t.output.slice(-2_000)}`).join("\n")}`;
    expect(result.code, context).toBe(7);
    expect(result.stderr).toMatch(/⛔ --abort-on cable\.broadcast_latency\.p95>200 for 10s: cable\.broadcast_latency\.p95 [\d,.]+ ms > 200 in \d+ periods? \(\d+:\d\d–\d+:\d\d\); stopping every task/);

    // One task per region, each stopped from outside (SIGTERM) and exited; ECS holds them all STOPPED.
    expect(tasks.map((t) => t.region).sort()).toEqual(REGIONS.slice().sort());
    for (const t of tasks) {
      expect(t.exitCode, t.output.slice(-2_000)).not.toBeUndefined();
      expect(t.output).toContain("received SIGTERM");
    }
    for (const stack of stacks) {
      const arns = tasks.filter((t) => t.region === stack.region).map((t) => t.arn);
      const { tasks: described = [] } = await new ECSClient({ region: stack.region }).send(new DescribeTasksCommand({ cluster: stack.clusterArn, tasks: arns }));
      expect(described.map((t) => `${t.lastStatus}/${t.desiredStatus}`), stack.region).toEqual(["STOPPED/STOPPED"]);
    }

    const runDir = path.join(out, readdirSync(out).filter((d) => !d.startsWith("."))[0]);
    const runId = path.basename(runDir);
    const record = json(path.join(runDir, "fanout.json"));
    expect(record.backend).toBe("aws");
    expect(record.barrier).toMatchObject({ outcome: "go", ready: 2, expected: 2 });
    expect(record.aborted).toMatchObject({ condition: CONDITION, at: expect.any(Number), figure: expect.stringMatching(/^cable\.broadcast_latency\.p95 [\d,.]+ ms > 200 in /) });
    expect(record.tasks.map((t: Json) => `${t.region} ${t.state}`)).toEqual(REGIONS.map((r) => `${r} aborted`));
    for (const t of record.tasks) expect(t.reason).toMatch(/^the task was stopped/);
    expect(record.regionFailures).toEqual({});
    // Stopped early: in the spike (plus the 10 s sessions it started), long before the phases' end.
    const merged = json(path.join(runDir, "merged.json"));
    // The recovery phase, if it began at all, was cut short.
    expect(merged.timeline.phases.map((p: Json) => p.name).slice(0, 2)).toEqual(["normal", "spike"]);
    const spikeStart = merged.timeline.phases[1].startTime;
    expect(merged.timeline.aborted.condition).toBe(CONDITION);
    expect(merged.timeline.aborted.at).toBeGreaterThan(spikeStart);
    expect(merged.timeline.aborted.at).toBeLessThan(spikeStart + 40_000);
    expect(merged.timeline.aborted.at).toBeLessThan(record.startAt + PHASES_MS - 20_000);
    // Each worker wrote its status.json before its task read STOPPED: stopped from outside after its load began, long before the phases' end.
    for (const stack of stacks) {
      const taskId = record.tasks.find((t: Json) => t.region === stack.region).taskId;
      const { Body } = await new S3Client({ region: stack.region }).send(new GetObjectCommand({ Bucket: stack.bucketName, Key: `runs/${runId}/${stack.region}/${taskId}/status.json` }));
      const status = JSON.parse(await Body!.transformToString()) as Json;
      expect(status, stack.region).toMatchObject({ exitCode: 1, artilleryExitCode: 143, reason: expect.stringMatching(/^the task was stopped \(SIGTERM\)/), loadStartedAt: expect.any(Number) });
      expect(Date.parse(status.endedAt), stack.region).toBeLessThan(record.startAt + PHASES_MS - 20_000);
    }

    // Each task's figures come from the periods it streamed: no Artillery report, its downloaded live
    // periods add up to its region's counters, and the spike's late broadcasts are in the histogram.
    for (const t of record.tasks) {
      const taskDir = path.join(runDir, t.region, t.taskId);
      expect(existsSync(path.join(taskDir, "report.json")), taskDir).toBe(false);
      const periods = readdirSync(path.join(taskDir, "live")).filter((f) => /^period-\d+\.live$/.test(f));
      expect(periods.length, taskDir).toBeGreaterThanOrEqual(2);
      const created = periods.reduce((a, f) => a + ((json(path.join(taskDir, "live", f)).counters["vusers.created"] as number | undefined) ?? 0), 0);
      const region = merged.regions.find((r: Json) => r.name === t.region);
      expect(region.tasks, t.region).toBe(1);
      expect(region.counters["vusers.created"]).toBeGreaterThan(0);
      expect(region.counters["vusers.created"]).toBe(created);
      expect(region.histograms["cable.broadcast_latency"].count).toBeGreaterThan(0);
    }
    expect(merged.all.counters["vusers.created"]).toBeGreaterThan(30);
    // The late broadcasts (sketches are within 1%: 400 ms can read 399.5).
    expect(merged.all.histograms["cable.broadcast_latency"].p99).toBeGreaterThan(DELAY_MS * 0.95);
    expect(merged.notes.filter((n: string) => n.includes("stopped before Artillery wrote its report"))).toHaveLength(2);
    const report = readFileSync(path.join(runDir, "report.md"), "utf8");
    expect(report).toMatch(/⛔ Stopped early at \d+:\d\d\*\* by `--abort-on cable.broadcast_latency.p95>200 for 10s`: `cable\.broadcast_latency\.p95 [\d,.]+ ms > 200 in /);
    expect(report).toContain("stopped before Artillery wrote its report");
    expect(target.counters().connectionsOpen).toBe(0);

    // Every S3 call, by whom it was signed, against the policy that signer holds.
    const requests = await recorder.requests();
    const buckets = new Map(stacks.map((s) => [s.bucketName, s.region]));
    const s3 = requests.filter((r) => signedBy(r)?.service === "s3").map((r) => ({ signer: signedBy(r)!.accessKeyId, ...s3Request(r, buckets) }));
    const taskCalls = s3.filter((r) => r.signer === TASK_KEY);
    const runnerCalls = s3.filter((r) => r.signer === RUNNER_KEY);
    expect(taskCalls.length + runnerCalls.length).toBe(s3.length);
    for (const region of REGIONS) {
      const live = new RegExp(`^arn:aws:s3:::[^/]+/runs/${runId}/${region}/[^/]+/live/`);
      // The tasks wrote their periods and phases into their own region's bucket…
      expect(taskCalls.some((r) => r.region === region && r.action === "s3:PutObject" && live.test(r.resource) && /\/period-\d+\.live$/.test(r.resource)), region).toBe(true);
      expect(taskCalls.some((r) => r.region === region && r.action === "s3:PutObject" && live.test(r.resource) && r.resource.endsWith("/phases.live")), region).toBe(true);
      // …and the runner listed them and read them there.
      expect(runnerCalls.some((r) => r.region === region && r.action === "s3:ListBucket" && r.context["s3:prefix"] === `runs/${runId}/${region}/`), region).toBe(true);
      expect(runnerCalls.some((r) => r.region === region && r.action === "s3:GetObject" && live.test(r.resource) && /\/period-\d+\.live$/.test(r.resource)), region).toBe(true);
      expect(runnerCalls.some((r) => r.region === region && r.action === "s3:GetObject" && live.test(r.resource) && r.resource.endsWith("/phases.live")), region).toBe(true);
    }
    // The runner read the live periods of both regions while the tasks ran: before either stopped and wrote its status.json.
    const firstStatus = s3.findIndex((r) => r.signer === TASK_KEY && r.action === "s3:PutObject" && r.resource.endsWith("/status.json"));
    expect(firstStatus).toBeGreaterThan(0);
    for (const region of REGIONS) {
      const firstRead = s3.findIndex((r) => r.signer === RUNNER_KEY && r.region === region && r.action === "s3:GetObject" && /\/live\/period-\d+\.live$/.test(r.resource));
      expect(firstRead, region).toBeGreaterThanOrEqual(0);
      expect(firstRead, region).toBeLessThan(firstStatus);
    }
    const denied: string[] = [];
    const seen = new Set<string>();
    for (const r of s3) {
      // Period keys differ only by time: one of each shape is enough.
      const key = `${r.signer} ${r.action} ${r.resource.replace(/period-\d+/, "period-N")} ${JSON.stringify(r.context)}`;
      if (seen.has(key)) continue;
      seen.add(key);
      const outcome =
        r.signer === TASK_KEY
          ? await simulate(taskPolicies.get(r.region)!, `arn:aws:iam::${ACCOUNT}:role/task`, r)
          : await simulate(operatorPolicies, `arn:aws:iam::${ACCOUNT}:role/operator`, r);
      if (outcome !== "Allowed") denied.push(`${key}: ${outcome}`);
    }
    expect(denied).toEqual([]);
    expect(seen.size).toBeGreaterThan(10);
  }, 240_000);
});

/** What IAM authorizes for one recorded S3 request (path-style: moto's endpoint is an IP address). */
function s3Request(request: RecordedRequest, buckets: Map<string, string>): { region: string; action: string; resource: string; context: Record<string, string> } {
  const url = new URL(request.url);
  const [bucket, ...keyParts] = url.pathname.slice(1).split("/");
  const region = buckets.get(bucket);
  if (!region) throw new Error(`S3 request outside the stacks' buckets: ${request.method} ${request.url}`);
  const key = keyParts.map(decodeURIComponent).join("/");
  if (request.method === "GET" && url.searchParams.get("list-type") === "2") {
    return { region, action: "s3:ListBucket", resource: `arn:aws:s3:::${bucket}`, context: { "s3:prefix": url.searchParams.get("prefix") ?? "" } };
  }
  if (request.method === "GET" && key) return { region, action: "s3:GetObject", resource: `arn:aws:s3:::${bucket}/${key}`, context: {} };
  if (request.method === "PUT" && key) return { region, action: "s3:PutObject", resource: `arn:aws:s3:::${bucket}/${key}`, context: {} };
  throw new Error(`no IAM mapping for the S3 request ${request.method} ${request.url}`);
}

/**
 * A pass-through proxy to moto that answers DescribeTasks as Fargate would: a task moto already calls
 * STOPPED (it does so at StopTask) whose container (here: worker) has not exited yet is DEACTIVATING.
 */
async function fargateView(upstream: string, containerRunning: (taskArn: string) => boolean): Promise<{ url: string; close: () => Promise<void> }> {
  const target = new URL(upstream);
  const agent = new http.Agent({ keepAlive: true });
  const server = http.createServer((req, res) => {
    const describeTasks = String(req.headers["x-amz-target"] ?? "").endsWith(".DescribeTasks");
    const forward = http.request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers, agent }, (answer) => {
      if (!describeTasks || answer.statusCode !== 200 || answer.headers["content-encoding"]) {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
        return;
      }
      const chunks: Buffer[] = [];
      answer.on("data", (c: Buffer) => chunks.push(c));
      answer.on("end", () => {
        const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { tasks?: Array<Record<string, unknown>> };
        for (const task of body.tasks ?? []) {
          if (task.lastStatus !== "STOPPED" || !containerRunning(String(task.taskArn))) continue;
          task.lastStatus = "DEACTIVATING";
          delete task.stoppedAt;
          for (const container of (task.containers ?? []) as Array<Record<string, unknown>>) container.lastStatus = "RUNNING";
        }
        const text = Buffer.from(JSON.stringify(body));
        const headers = { ...answer.headers, "content-length": String(text.length) };
        delete headers["transfer-encoding"];
        res.writeHead(200, headers);
        res.end(text);
      });
    });
    forward.on("error", (err) => {
      res.writeHead(502);
      res.end(String(err));
    });
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => {
      agent.destroy();
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

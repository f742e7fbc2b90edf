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
import { existsSync, readFileSync, readdirSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { DescribeTasksCommand, ECSClient } from "@aws-sdk/client-ecs";
import { GetObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { describe, expect, it } from "vitest";
import { runCli } from "./cli";
import { emulateEcs } from "./ecs-emulator";
import { motoRecorder } from "./moto";
import { deniedCalls, motoRegions, RUNNER_KEY, s3Calls, TASK_KEY } from "./moto-regions";

const ROOT = path.resolve(__dirname, "../../..");
const SPIKE = path.join(ROOT, "scenarios/spike.yml");
const REGIONS = ["eu-west-2", "us-east-1"];
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

type Json = Record<string, any>;

const json = (file: string) => JSON.parse(readFileSync(file, "utf8")) as Json;

describe("cable-fanout run --abort-on on the AWS backend (moto)", () => {
  const aws = motoRegions(REGIONS, { capacityConnections: CAPACITY, overCapacityDelayMs: DELAY_MS }, 120_000);

  it("stops every task in the spike from the live files in both buckets, keeps what they measured, says why, exits 7, and every S3 call is one its signer's policy allows", async () => {
    const { moto, work, target, stacks } = aws;
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
    // The runner's record says why it stopped each task: what makes them "aborted", not the words of their status.
    for (const t of record.tasks) expect(record.stops[t.region][t.taskId], t.region).toEqual({ by: "abort" });
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
      expect(status, stack.region).toMatchObject({ exitCode: 1, artilleryExitCode: 143, reason: expect.stringMatching(/^the task was stopped \(SIGTERM\)/), loadStartedAt: expect.any(Number), end: { by: "stop-signal", signal: "SIGTERM" } });
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
    const s3 = s3Calls(await recorder.requests(), stacks);
    const taskCalls = s3.filter((r) => r.signer === TASK_KEY);
    const runnerCalls = s3.filter((r) => r.signer === RUNNER_KEY);
    expect(taskCalls.length + runnerCalls.length).toBe(s3.length);
    for (const region of REGIONS) {
      const period = new RegExp(`^arn:aws:s3:::[^/]+/runs/${runId}/${region}/live/\\d+/[^/]+\\.live$`);
      const phases = new RegExp(`^arn:aws:s3:::[^/]+/runs/${runId}/${region}/live/phases/[^/]+\\.live$`);
      // The tasks wrote their periods and phases into their own region's live folder…
      expect(taskCalls.some((r) => r.region === region && r.action === "s3:PutObject" && period.test(r.resource)), region).toBe(true);
      expect(taskCalls.some((r) => r.region === region && r.action === "s3:PutObject" && phases.test(r.resource)), region).toBe(true);
      // …and the runner listed its period folders (one delimited listing, not the whole region) and read them there.
      expect(runnerCalls.some((r) => r.region === region && r.action === "s3:ListBucket" && r.context["s3:prefix"] === `runs/${runId}/${region}/live/`), region).toBe(true);
      expect(runnerCalls.some((r) => r.region === region && r.action === "s3:GetObject" && period.test(r.resource)), region).toBe(true);
      expect(runnerCalls.some((r) => r.region === region && r.action === "s3:GetObject" && phases.test(r.resource)), region).toBe(true);
    }
    // The runner read the live periods of both regions while the tasks ran: before either stopped and wrote its status.json.
    const firstStatus = s3.findIndex((r) => r.signer === TASK_KEY && r.action === "s3:PutObject" && r.resource.endsWith("/status.json"));
    expect(firstStatus).toBeGreaterThan(0);
    for (const region of REGIONS) {
      const firstRead = s3.findIndex((r) => r.signer === RUNNER_KEY && r.region === region && r.action === "s3:GetObject" && /\/live\/\d+\/[^/]+\.live$/.test(r.resource));
      expect(firstRead, region).toBeGreaterThanOrEqual(0);
      expect(firstRead, region).toBeLessThan(firstStatus);
    }
    const { denied, shapes } = await deniedCalls(s3, aws);
    expect(denied).toEqual([]);
    expect(shapes).toBeGreaterThan(10);
  }, 240_000);
});

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

// The capacity search through the AWS backend, against moto: the synthesized stacks deployed by
// CloudFormation in two regions, real workers playing the Fargate tasks (test/ecs-emulator.ts), each
// running the real Artillery with the probe found in the worker's own directory, the real
// `cable-fanout capacity` CLI without --local, and the local target given a known capacity (above
// N open connections it delivers every broadcast 800 ms late). The search must find N within one
// step from both regions in one stair, stop early, end every user once and leave no task running;
// and every S3 call the tasks made (the probe's live files and stop marker included), recorded by
// moto, must be one the task role allows, as IAM holds it, in a policy simulator (moto allows every
// call); the runner's S3 calls likewise under the operator policy.
import type { ChildProcess } from "node:child_process";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { GetObjectCommand, ListObjectsV2Command, S3Client } from "@aws-sdk/client-s3";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "./cli";
import { emulateEcs } from "./ecs-emulator";
import { ACCOUNT, simulate } from "./iam-policies";
import { waitFor } from "cable-test-servers";
import { motoRecorder } from "./moto";
import { deniedCalls, motoRegions, RUNNER_KEY, s3Calls, TASK_KEY } from "./moto-regions";

const ROOT = path.resolve(__dirname, "../../..");
const RAILS = path.join(ROOT, "scenarios/capacity-rails.yml");
const REGIONS = ["eu-west-2", "us-east-1"];
const CAPACITY = 30;

type Json = Record<string, any>;

describe("cable-fanout capacity on the AWS backend (moto)", () => {
  const aws = motoRegions(REGIONS, { capacityConnections: CAPACITY, overCapacityDelayMs: 800 }, 240_000);

  it("finds the known capacity within one step from two regions, stops early, ends every user and task, and the tasks' S3 calls are all the task role allows", async () => {
    const { moto, work, target, stacks, taskPolicies } = aws;
    const recorder = motoRecorder(moto);
    const ecs = await emulateEcs(stacks, { ...moto.env, AWS_ACCESS_KEY_ID: TASK_KEY }, work);
    const out = path.join(work, "out");
    let result: Awaited<ReturnType<typeof runCli>>;
    try {
      await recorder.start();
      result = await runCli(
        [
          "capacity",
          RAILS,
          "--regions",
          REGIONS.join(","),
          "--target",
          target.cableUrl,
          "--slo",
          "cable.broadcast_latency.p95<250",
          "--slo",
          "errors<1%",
          "--start",
          "20",
          "--step",
          "20",
          "--max",
          "100",
          "--hold",
          "20",
          "--climb",
          "2",
          "--start-delay",
          "1",
          "--out",
          out,
        ],
        { cwd: work, env: moto.env, timeoutMs: 400_000 },
      );
      // moto marks a task STOPPED at StopTask, before its container has exited; let the workers finish uploading.
      await ecs.settled(60_000);
      await recorder.stop();
      // Every task ended: none is left running in either region, and each worker exited.
      expect(await ecs.running()).toEqual([]);
    } finally {
      await ecs.stop();
    }
    const tasks = [...ecs.tasks.values()];
    expect(result.code, `${result.stderr}\n${tasks.map((t) => `${t.region} ${t.taskId}: ${t.output.slice(-2_000)}`).join("\n")}`).toBe(0);
    for (const t of tasks) expect(t.exitCode, t.output.slice(-2_000)).not.toBeUndefined();

    const markdownFile = path.resolve(work, result.stdout.trim());
    const a = JSON.parse(readFileSync(path.join(path.dirname(markdownFile), "capacity.json"), "utf8")) as Json;
    expect(a.backend).toBe("aws");
    // 20 users sit below the capacity of 30 connections, 40 above it: found within one step.
    expect(a).toMatchObject({ held: 20, firstFailing: 40, mostTried: false, generatorBound: null });
    const judged = a.steps.filter((s: Json) => s.verdict !== "incomplete");
    expect(judged.map((s: Json) => `${s.level} ${s.verdict}`)).toEqual(["20 held", "40 breached", "40 breached"]);
    expect(a.breached.map((b: Json) => b.region).sort()).toEqual(REGIONS.slice().sort());
    // Early stop: the stair's run ended long before --max 100.
    const stair = a.runs.find((run: Json) => run.attempt === "stair");
    expect(stair.stoppedEarly).toBe(true);
    expect(stair.users.created).toBeLessThanOrEqual(60);
    // Both regions in one stair, each adding its half of every step.
    for (const region of REGIONS) expect(a.regions[region].steps.filter((s: Json) => s.verdict !== "incomplete").map((s: Json) => s.users)).toEqual([10, 20, 20]);
    // Every user ended its flow once, in every run, and the server holds no connection.
    for (const run of a.runs) {
      expect(run.users, JSON.stringify(run)).not.toBeNull();
      expect(run.users.completed + run.users.failed).toBe(run.users.created);
    }
    expect(target.counters().connectionsOpen).toBe(0);
    // One task per region per run: two runs (the stair and the repeat).
    expect(tasks).toHaveLength(REGIONS.length * a.runs.length);
    const md = readFileSync(markdownFile, "utf8");
    for (const region of REGIONS) expect(md).toContain(`### ${region}`);

    // The probe's CPU beside the report plugin's, from the same periods of the same task.
    const cpu = await probeBesideSidecar(path.dirname(markdownFile), stacks);
    expect(cpu.length).toBeGreaterThan(0);
    for (const { probePeak, sidecarPeak } of cpu) expect(Math.abs(probePeak - sidecarPeak)).toBeLessThanOrEqual(Math.max(2, sidecarPeak * 0.2));

    // Every S3 call, by whom it was signed, against the policy that signer holds.
    const s3 = s3Calls(await recorder.requests(), stacks);
    const taskCalls = s3.filter((r) => r.signer === TASK_KEY);
    const runnerCalls = s3.filter((r) => r.signer === RUNNER_KEY);
    // The probe's own calls are among them: its live periods, and looks for the region's stop marker (a LIST of that one key).
    expect(taskCalls.some((r) => r.action === "s3:PutObject" && /\/live\/\d+\/[^/]+\.live$/.test(r.resource))).toBe(true);
    expect(taskCalls.some((r) => r.action === "s3:ListBucket" && r.context["s3:prefix"]?.endsWith("/capacity-stop.live"))).toBe(true);
    expect(runnerCalls.some((r) => r.action === "s3:PutObject" && r.resource.endsWith("/capacity-stop.live"))).toBe(true);
    const { denied } = await deniedCalls([...taskCalls, ...runnerCalls], aws);
    expect(denied).toEqual([]);
    // And nothing beyond: a task sees whether its own region's stop marker exists, never another
    // region's; it reads neither the marker nor the other tasks' live files, and never writes the marker.
    const [london] = stacks;
    const task = (action: string, key: string, context: Record<string, string> = {}) => simulate(taskPolicies.get("eu-west-2")!, `arn:aws:iam::${ACCOUNT}:role/task`, { action, resource: `arn:aws:s3:::${london.bucketName}${key}`, context });
    const outside: Array<[string, string, Record<string, string>?]> = [
      ["s3:GetObject", "/runs/r1/eu-west-2/capacity-stop.live"],
      ["s3:GetObject", "/runs/r1/us-east-1/capacity-stop.live"],
      ["s3:GetObject", "/runs/r1/eu-west-2/live/1/other-task.live"],
      ["s3:GetObject", "/runs/r1/eu-west-2/live/phases/other-task.live"],
      ["s3:GetObject", "/runs/r1/eu-west-2/other-task/report.json"],
      ["s3:PutObject", "/runs/r1/eu-west-2/capacity-stop.live"],
      ["s3:PutObject", "/runs/r1/us-east-1/live/1/t1.live"],
      ["s3:ListBucket", "", { "s3:prefix": "runs/r1/eu-west-2/" }],
      ["s3:ListBucket", "", { "s3:prefix": "runs/r1/us-east-1/capacity-stop.live" }],
    ];
    const allowed: string[] = [];
    for (const [action, key, context] of outside) if ((await task(action, key, context)) === "Allowed") allowed.push(`${action} ${key} ${JSON.stringify(context ?? {})}`);
    expect(allowed).toEqual([]);
  }, 480_000);

  it("stops every task when the runner gets SIGTERM mid-search: none is left running", async () => {
    const { moto, work, target, stacks } = aws;
    const ecs = await emulateEcs(stacks, { ...moto.env, AWS_ACCESS_KEY_ID: TASK_KEY }, work);
    const out = path.join(work, "sigterm");
    let cli: ChildProcess | undefined;
    try {
      const run = runCli(
        ["capacity", RAILS, "--regions", REGIONS.join(","), "--target", target.cableUrl, "--slo", "errors<1%", "--start", "20", "--step", "20", "--max", "100", "--hold", "60", "--start-delay", "1", "--out", out],
        { cwd: work, env: moto.env, timeoutMs: 200_000, onSpawn: (c) => (cli = c) },
      );
      await waitFor(() => loadStarted(out), 150_000, "the search's first run to pass the barrier");
      cli!.kill("SIGTERM");
      const r = await run;
      expect(r.stderr).toContain("stopping the search and every task");
      // No verdict: the search was interrupted.
      expect(r.code, r.stderr).toBe(4);
      await ecs.settled(60_000);
      expect(await ecs.running()).toEqual([]);
      const tasks = [...ecs.tasks.values()];
      expect(tasks).toHaveLength(REGIONS.length);
      for (const t of tasks) expect(t.output).toContain("received SIGTERM");
    } finally {
      cli?.kill("SIGKILL");
      await ecs.stop();
    }
  }, 240_000);

  it("names a region that is not deployed and the command that fixes it, and starts nothing", async () => {
    const { moto, work, stacks } = aws;
    const ecs = await emulateEcs(stacks, { ...moto.env, AWS_ACCESS_KEY_ID: TASK_KEY }, work);
    try {
      const before = ecs.tasks.size;
      const r = await runCli(["capacity", RAILS, "--regions", "eu-west-2,ap-south-1", "--slo", "errors<1%", "--start", "20", "--step", "20", "--max", "40", "--out", path.join(work, "undeployed")], { cwd: work, env: moto.env });
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toContain("region ap-south-1 is not deployed (no CloudFormation stack CableLoadtest-ap-south-1); deploy it with: cd infra && npx cdk deploy -c regions=ap-south-1 CableLoadtest-ap-south-1");
      expect(await ecs.running()).toEqual([]);
      expect(ecs.tasks.size).toBe(before);
    } finally {
      await ecs.stop();
    }
  }, 60_000);
});

/** A run of the search has a common start, and it has passed: the tasks' Artillery runs. */
function loadStarted(out: string): boolean {
  if (!existsSync(out)) return false;
  for (const search of readdirSync(out).filter((d) => !d.startsWith("."))) {
    for (const runId of existsSync(path.join(out, search)) ? readdirSync(path.join(out, search)) : []) {
      const file = path.join(out, search, runId, "fanout.json");
      if (!existsSync(file)) continue;
      const record = JSON.parse(readFileSync(file, "utf8")) as { startAt: number | null };
      if (record.startAt !== null && Date.now() > record.startAt + 2_000) return true;
    }
  }
  return false;
}

/**
 * Per task of the search: the highest period CPU its probe wrote and the one cable-report's sidecar
 * kept. The probe's periods are read from the task's region's bucket: collect downloads no live
 * file of a task that left its report.
 */
async function probeBesideSidecar(searchDir: string, stacks: Array<{ region: string; bucketName: string }>): Promise<Array<{ task: string; probePeak: number; sidecarPeak: number }>> {
  const out: Array<{ task: string; probePeak: number; sidecarPeak: number }> = [];
  const walk = (dir: string): string[] => readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(path.join(dir, e.name)) : [path.join(dir, e.name)]));
  for (const sidecarFile of walk(searchDir).filter((f) => f.endsWith("report.json.sketches.json"))) {
    // <search>/<runId>/<region>/<taskId>/report.json.sketches.json
    const taskDir = path.dirname(sidecarFile);
    const [runId, region, taskId] = taskDir.split(path.sep).slice(-3);
    const stack = stacks.find((s) => s.region === region);
    if (!stack) continue;
    const s3 = new S3Client({ region });
    const listed = await s3.send(new ListObjectsV2Command({ Bucket: stack.bucketName, Prefix: `runs/${runId}/${region}/live/` }));
    const keys = (listed.Contents ?? []).map((o) => o.Key!).filter((k) => new RegExp(`/live/\\d+/${taskId}\\.live$`).test(k));
    const probe: number[] = [];
    for (const key of keys) {
      const { Body } = await s3.send(new GetObjectCommand({ Bucket: stack.bucketName, Key: key }));
      const cpu = (JSON.parse(await Body!.transformToString()) as { cpuPercent?: number }).cpuPercent;
      if (cpu !== undefined) probe.push(cpu);
    }
    const sidecar = JSON.parse(readFileSync(sidecarFile, "utf8")) as { generator?: { cpuPeak: number | null } };
    if (probe.length === 0 || sidecar.generator?.cpuPeak == null) continue;
    out.push({ task: taskDir, probePeak: Math.max(...probe), sidecarPeak: sidecar.generator.cpuPeak });
  }
  return out;
}

import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { spawn } from "node:child_process";
import { mkdtemp, readFile, readdir, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { cleanEnv, writeTree } from "cable-test-servers";
import { WORKER_MAIN, httpBundle, requireBuiltWorker, runWorker, startRecordingServer } from "./helpers";

// The real entrypoint (dist/main.js) running the real Artillery against a loopback server,
// with a local directory standing in for the bucket.
describe("worker entrypoint against a local directory store", () => {
  let store: string;
  let server: Awaited<ReturnType<typeof startRecordingServer>>;

  beforeAll(async () => {
    requireBuiltWorker();
    server = await startRecordingServer();
  });
  afterAll(() => server.close());
  beforeEach(async () => {
    store = await mkdtemp(path.join(os.tmpdir(), "cable-store-"));
  });
  afterEach(() => rm(store, { recursive: true, force: true }));

  const env = (runId: string, extra: Record<string, string> = {}) =>
    cleanEnv({ CABLE_RUN_ID: runId, CABLE_REGION: "eu-west-2", CABLE_TASK_ID: "task-1", CABLE_STORE: store, CABLE_WORK_DIR: path.join(store, ".work"), ...extra });

  it("fetches the bundle, waits for startAt, runs artillery and uploads the results tree", async () => {
    const startAt = Date.now() + 2_000;
    await writeTree(path.join(store, "runs/r1/bundle"), httpBundle({ startAt, extraManifest: { overrides: { config: { target: server.url } } } }));
    const before = server.paths.length;

    const result = await runWorker(env("r1"));

    expect(result.stderr).toContain("[cable-worker] done");
    expect(result.code).toBe(0);
    const results = path.join(store, "runs/r1/eu-west-2/task-1");
    expect((await readdir(results)).sort()).toEqual(["artillery.log", "report.json", "report.json.sketches.json", "status.json"]);
    // The live plugin wrote into the region's live folder: its phases, and its periods a folder each.
    const live = path.join(store, "runs/r1/eu-west-2/live");
    expect(await readdir(path.join(live, "phases"))).toEqual(["task-1.live"]);
    expect((await readdir(live)).some((name) => /^\d+$/.test(name))).toBe(true);
    const report = JSON.parse(await readFile(path.join(results, "report.json"), "utf8"));
    expect(report.aggregate.counters["http.codes.200"]).toBe(3);
    // The worker switched the report plugin on although the scenario does not list it.
    const sidecar = JSON.parse(await readFile(path.join(results, "report.json.sketches.json"), "utf8"));
    expect(sidecar.format).toBe("artillery-cable-report-sidecar");
    expect(sidecar.aggregate.counters["http.codes.200"]).toBe(3);
    // The payload file and the manifest's env reached the scenario; the overrides set the target.
    expect(server.paths.slice(before).sort()).toEqual(["/hello?user=alice", "/hello?user=bob", "/hello?user=carol"]);
    const status = JSON.parse(await readFile(path.join(results, "status.json"), "utf8"));
    expect(status).toMatchObject({ runId: "r1", region: "eu-west-2", taskId: "task-1", exitCode: 0, reason: null, artilleryExitCode: 0, end: { by: "phases-done" } });
    expect(Date.parse(status.endedAt)).toBeGreaterThan(startAt);
    // Artillery loaded while the worker waited, and the start gate released it at startAt (or, when
    // loading took longer than the wait on a busy machine, as soon as it had loaded).
    expect(status.startAt).toBe(startAt);
    expect(status.loadStartedAt).toBeGreaterThanOrEqual(startAt);
    expect(status.startLagMs).toBe(status.loadStartedAt - startAt);
    expect(status.firstMetricAt).toBeGreaterThanOrEqual(status.loadStartedAt);
    expect(await readFile(path.join(results, "artillery.log"), "utf8")).toContain("http.codes.200");
  });

  it("accepts a file:// store URL and uploads results even when artillery fails, then exits 1", async () => {
    // An ensure threshold that cannot hold makes artillery exit non-zero after writing its report.
    const bundle = httpBundle({ extraManifest: { overrides: { config: { target: server.url, ensure: { thresholds: [{ "http.codes.200": 0 }] } } } } });
    bundle["scenarios/smoke.yml"] = bundle["scenarios/smoke.yml"].replace("config:\n", "config:\n  plugins:\n    ensure: {}\n");
    await writeTree(path.join(store, "runs/r2/bundle"), bundle);

    const result = await runWorker(env("r2", { CABLE_STORE: pathToFileURL(store).href }));

    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/\[cable-worker\] FAILED \(exit 1\): artillery exited with code 1 \(see artillery.log\)\n/);
    const results = path.join(store, "runs/r2/eu-west-2/task-1");
    expect((await readdir(results)).sort()).toEqual(["artillery.log", "report.json", "report.json.sketches.json", "status.json"]);
    const status = JSON.parse(await readFile(path.join(results, "status.json"), "utf8"));
    expect(status).toMatchObject({ exitCode: 1, artilleryExitCode: 1, reason: "artillery exited with code 1 (see artillery.log)", end: { by: "artillery-failed", exitCode: 1, signal: null } });
  });

  it("passes SIGTERM (ECS StopTask) on to artillery and still uploads what there is", async () => {
    const bundle = httpBundle({ extraManifest: { overrides: { config: { target: server.url, phases: [{ duration: 60, arrivalRate: 2 }] } } } });
    await writeTree(path.join(store, "runs/stopped/bundle"), bundle);

    const worker = spawn(process.execPath, [WORKER_MAIN], { env: env("stopped"), stdio: ["ignore", "pipe", "pipe"] });
    let stderr = "";
    worker.stderr.on("data", (d) => (stderr += d));
    const closed = new Promise<number | null>((resolve) => worker.once("close", resolve));
    // Stop it once Artillery is sending load.
    const before = server.paths.length;
    for (let i = 0; i < 200 && server.paths.length === before; i++) await new Promise((r) => setTimeout(r, 100));
    expect(server.paths.length).toBeGreaterThan(before);
    worker.kill("SIGTERM");
    const code = await closed;

    expect(stderr).toContain("received SIGTERM, stopping artillery");
    expect(code).toBe(1);
    const status = JSON.parse(await readFile(path.join(store, "runs/stopped/eu-west-2/task-1/status.json"), "utf8"));
    expect(status.exitCode).toBe(code);
    // Artillery 2.0.34 exits 143 on SIGTERM without writing a report; the log is still uploaded.
    expect(status.reason).toBe("the task was stopped (SIGTERM) before artillery finished (artillery exit code 143)");
    expect(status.end).toEqual({ by: "stop-signal", signal: "SIGTERM" });
    expect(await readdir(path.join(store, "runs/stopped/eu-west-2/task-1"))).toContain("artillery.log");
  });

  it("stops itself at the run's maxDurationMs, and when the runner's heartbeat goes stale, uploading what there is", async () => {
    // A 60 s phase that the task's own limit cuts short, with no runner around to stop it.
    const long = { overrides: { config: { target: server.url, phases: [{ duration: 60, arrivalRate: 2 }] } } };
    await writeTree(path.join(store, "runs/capped/bundle"), httpBundle({ extraManifest: { ...long, maxDurationMs: 8_000 } }));
    const capped = await runWorker(env("capped"));
    expect(capped.code).toBe(1);
    expect(capped.stderr).toContain("stopping: the run's --max-duration (8 s) passed");
    const status = JSON.parse(await readFile(path.join(store, "runs/capped/eu-west-2/task-1/status.json"), "utf8"));
    expect(status.reason).toMatch(/^the run's --max-duration \(8 s\) passed before artillery finished/);
    expect(status.end).toEqual({ by: "max-duration", limitMs: 8_000 });
    expect(await readdir(path.join(store, "runs/capped/eu-west-2/task-1"))).toContain("artillery.log");

    // A heartbeat that never changes (its runner died): the task gives up on it after staleMs.
    await writeTree(path.join(store, "runs/orphan/bundle"), httpBundle({ extraManifest: { ...long, heartbeat: { staleMs: 3_000, pollMs: 500 } } }));
    await writeTree(path.join(store, "runs/orphan/control"), { "heartbeat.json": JSON.stringify({ seq: 7, at: 0 }) });
    const orphan = await runWorker(env("orphan"));
    expect(orphan.code).toBe(1);
    expect(orphan.stderr).toMatch(/stopping: the runner's heartbeat has not changed for \d+ s \(runner gone\?\)/);
    const orphaned = JSON.parse(await readFile(path.join(store, "runs/orphan/eu-west-2/task-1/status.json"), "utf8"));
    expect(orphaned.end).toEqual({ by: "heartbeat", silentMs: expect.any(Number) });
  }, 60_000);

  it("ends the wait for startAt on SIGTERM without starting artillery", async () => {
    await writeTree(path.join(store, "runs/early/bundle"), httpBundle({ startAt: Date.now() + 120_000 }));
    const worker = spawn(process.execPath, [WORKER_MAIN], { env: env("early"), stdio: ["ignore", "pipe", "pipe"] });
    let stderr = "";
    worker.stderr.on("data", (d) => (stderr += d));
    const closed = new Promise<number | null>((resolve) => worker.once("close", resolve));
    for (let i = 0; i < 100 && !stderr.includes("waiting"); i++) await new Promise((r) => setTimeout(r, 100));
    worker.kill("SIGTERM");

    expect(await closed).toBe(1);
    const status = JSON.parse(await readFile(path.join(store, "runs/early/eu-west-2/task-1/status.json"), "utf8"));
    expect(status).toMatchObject({ reason: "the task was stopped (SIGTERM) before artillery started", artilleryExitCode: null, end: { by: "stop-signal", signal: "SIGTERM" } });
  });

  it("at the ready barrier, a go marker that calls the run off or leaves the task out, or none at all, ends it at the gate without load", async () => {
    // waitMs also bounds Artillery's loading: three load at once here, on a machine busy with other tests.
    const barrier = { barrier: { waitMs: 30_000, pollMs: 200 } };
    const go = { "called-off": { cancelled: "only 1 of 2 task(s) were ready" }, "left-out": { startAt: Date.now(), tasks: ["eu-west-2/task-2"] } };
    for (const [runId, marker] of Object.entries(go)) {
      await writeTree(path.join(store, `runs/${runId}/bundle`), httpBundle({ extraManifest: { ...barrier, overrides: { config: { target: server.url } } } }));
      await writeTree(path.join(store, `runs/${runId}/control`), { "go.json": JSON.stringify(marker) });
    }
    await writeTree(path.join(store, "runs/no-go/bundle"), httpBundle({ extraManifest: { ...barrier, overrides: { config: { target: server.url } } } }));
    const before = server.paths.length;

    const runs = await Promise.all(["called-off", "left-out", "no-go"].map((runId) => runWorker(env(runId))));

    const reasons: string[] = [];
    const ends: unknown[] = [];
    for (const [i, runId] of ["called-off", "left-out", "no-go"].entries()) {
      expect(runs[i].code, runs[i].stderr).toBe(2);
      const results = path.join(store, `runs/${runId}/eu-west-2/task-1`);
      // Ready (Artillery had loaded) before it heard the runner; Artillery was let go without load.
      const status = JSON.parse(await readFile(path.join(results, "status.json"), "utf8"));
      expect((await readdir(results)).sort(), status.reason).toEqual(expect.arrayContaining(["artillery.log", "ready.json", "status.json"]));
      expect(status).toMatchObject({ exitCode: 2, artilleryExitCode: null, loadStartedAt: null, readyAt: expect.any(Number) });
      reasons.push(status.reason);
      ends.push(status.end);
    }
    expect(reasons).toEqual([
      "the run was called off before the start: only 1 of 2 task(s) were ready",
      "missed the ready barrier: the run started without this task",
      "no go marker within 30 s of being ready",
    ]);
    expect(ends).toEqual([
      { by: "go-cancelled", reason: "only 1 of 2 task(s) were ready" },
      { by: "barrier-missed" },
      { by: "crash", reason: "no go marker within 30 s of being ready" },
    ]);
    expect(server.paths.length).toBe(before);
  }, 120_000);

  it("fails with exit 2 and a reason naming the problem when the bundle is missing or invalid", async () => {
    const missing = await runWorker(env("nothing-here"));
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain(`FAILED (exit 2): no bundle at ${store}/runs/nothing-here/bundle/`);
    const status = JSON.parse(await readFile(path.join(store, "runs/nothing-here/eu-west-2/task-1/status.json"), "utf8"));
    expect(status).toMatchObject({ exitCode: 2, artilleryExitCode: null, end: { by: "crash", reason: `no bundle at ${store}/runs/nothing-here/bundle/` } });

    await writeTree(path.join(store, "runs/bad/bundle"), { "run.json": JSON.stringify({ scenario: "../etc/passwd", startAt: "soon" }) });
    const bad = await runWorker(env("bad"));
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("runs/bad/bundle/run.json is invalid: scenario: must be a relative path inside the bundle; startAt: Expected number, received string");

    await writeTree(path.join(store, "runs/far/bundle"), httpBundle({ startAt: Date.now() + 3_600_000 }));
    const far = await runWorker(env("far", { CABLE_MAX_START_WAIT_MS: "60000" }));
    expect(far.code).toBe(2);
    // The worker reads the clock a moment later than this test: 3600 s, or 3599 on a busy machine.
    expect(far.stderr).toMatch(/startAt .* is 3(600|599) s away, beyond the 60 s bound \(CABLE_MAX_START_WAIT_MS\)/);
  });

  it("rejects a missing or malformed environment before touching the store", async () => {
    const result = await runWorker(cleanEnv({ CABLE_RUN_ID: "../x", CABLE_REGION: "eu-west-2", CABLE_SECRETS: "{not json" }));
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("invalid worker environment: CABLE_RUN_ID: CABLE_RUN_ID must match");
    expect(result.stderr).toContain("CABLE_STORE: CABLE_STORE is required");
    expect(result.stderr).toContain("CABLE_SECRETS is not valid JSON");
  });
});

import type { ChildProcess } from "node:child_process";
import { access, mkdir, readFile, readdir } from "node:fs/promises";
import path from "node:path";
import type { Writable } from "node:stream";
import { JUDGED_BY_RUNNER_ENV } from "artillery-plugin-cable-report";
import { type ArtilleryOutcome, artilleryBin, runArtillery } from "./artillery.js";
import type { WorkerConfig } from "./config.js";
import { LOG_FILE, MANIFEST_FILE, REPORT_FILE, STATUS_FILE, bundlePrefix, resultPrefix } from "./layout.js";
import { type RunManifest, parseManifest, taskOverrides } from "./manifest.js";
import { slicePayloads } from "./payload-slice.js";
import { GATE_CANCELLED_EXIT } from "./artillery-plugin-cable-start-gate.js";
import { StartGate } from "./gate.js";
import { taskKey, waitForGo, writeReady } from "./markers.js";
import { envSecretValues, makeRedactor, type Redact, redactFile, redactJson, SECRET_ENV } from "./redact.js";
import { readClockBound, UNKNOWN_CLOCK, worseClock } from "./clock-bound.js";
import { describeStop, EXIT, type SeenEnd, type TaskClock, type TaskStatus } from "./status.js";
import { type Store, fetchTree } from "./store.js";
import { TaskStops } from "./task-stops.js";

export interface TaskDeps {
  store: Store;
  resolveSecrets: (refs: Record<string, string>) => Promise<Record<string, string>>;
  /** The environment Artillery inherits (before the manifest's env and the secrets are added). */
  baseEnv: NodeJS.ProcessEnv;
  now: () => number;
  /** Resolves after `ms`, or early when `signal` (or the worker's own stop) aborts. */
  sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Throws when Artillery cannot be found (default: resolving its CLI), so a broken image never reports ready. */
  checkArtillery?: () => void;
  /** Worker progress lines (never secret). */
  log: (line: string) => void;
  /** Where Artillery's redacted output is echoed (the task's stdout, i.e. CloudWatch). */
  echo: Writable;
  onArtillerySpawn?: (child: ChildProcess) => void;
  /** The signal the worker was asked to stop with (ECS StopTask sends SIGTERM), if any. */
  stopSignal?: () => NodeJS.Signals | undefined;
  /** This task's clock error bound (default: clock-bound.ts, from `baseEnv`); bounded in time, never throws. */
  readClock?: () => Promise<TaskClock>;
}

class TaskFailure extends Error {
  constructor(
    readonly exitCode: number,
    reason: string,
    readonly end: SeenEnd,
  ) {
    super(reason);
  }
}

/** Ends the task with `reason` (status.json's words) and `end` (how it ended; by default a crash). */
const fail = (exitCode: number, reason: string, end: SeenEnd = { by: "crash", reason: oneLine(reason) }): never => {
  throw new TaskFailure(exitCode, reason, end);
};

/** What every stage of a task reads: who it is, where its files go, what it may call, why it would stop. */
interface Task {
  config: WorkerConfig & { taskId: string };
  deps: TaskDeps;
  stops: TaskStops;
  workDir: string;
  bundleDir: string;
  resultsDir: string;
  /** Every text the task writes or uploads passes through it; it knows the secrets once they are read. */
  redact: Redact;
}

/** Starts Artillery with the task's environment (once per task), and says whether it has exited yet. */
interface Launcher {
  start: (extraEnv: NodeJS.ProcessEnv) => Promise<ArtilleryOutcome>;
  exited: () => boolean;
}

/**
 * One task of a run: fetch the bundle, wait for the common start, run Artillery, upload whatever
 * results exist (also on failure), then status.json. Never throws; the outcome is the status.
 */
export async function runTask(config: WorkerConfig & { taskId: string }, deps: TaskDeps): Promise<TaskStatus> {
  const workDir = path.join(config.workDir, config.runId, config.region, config.taskId);
  const task: Task = { config, deps, stops: new TaskStops(deps, config.selfStopGraceMs), workDir, bundleDir: path.join(workDir, "bundle"), resultsDir: path.join(workDir, "results"), redact: (text) => text };
  const status = newStatus(config, deps.now());
  // Read at the start (beside the bundle's download) and again at the end: status.json keeps the worse.
  const readClock = () => (deps.readClock ?? (() => readClockBound(deps.baseEnv)))().catch(() => UNKNOWN_CLOCK);
  const clockAtStart = readClock();
  try {
    await mkdir(task.bundleDir, { recursive: true });
    await mkdir(task.resultsDir, { recursive: true });
    const manifest = await fetchBundle(config, deps, task.bundleDir);
    task.stops.watchRun(manifest, deps.store, config.runId);
    await slicePayloads(task.bundleDir, manifest.sequencePayloads ?? [], config.slice, deps.log).catch((err: Error) => fail(EXIT.setup, err.message));
    const secrets = await readSecrets(task, manifest);
    task.redact = makeRedactor(Object.values(secrets));
    (deps.checkArtillery ?? artilleryBin)();
    const artillery = launcher(task, manifest, secrets);
    // A fixed start too far away is refused before anything loads (a clock or runner bug).
    if (manifest.startAt !== undefined) refuseDistantStart(task, manifest.startAt);
    let outcome: ArtilleryOutcome;
    if (manifest.barrier || manifest.startAt !== undefined) {
      outcome = await runAtGate(task, manifest, artillery, status);
    } else {
      deps.log(`starting artillery on ${manifest.scenario}`);
      status.loadStartedAt = deps.now();
      outcome = await artillery.start({});
    }
    await judgeOutcome(task, outcome, status);
  } catch (err) {
    status.exitCode = err instanceof TaskFailure ? err.exitCode : EXIT.setup;
    status.reason = oneLine(err instanceof Error ? err.message : String(err));
    status.end = err instanceof TaskFailure ? err.end : { by: "crash", reason: status.reason };
  } finally {
    task.stops.dispose();
  }
  status.clock = worseClock(await clockAtStart, await readClock());
  return publish(task, status);
}

/** The secrets' values: the local backend's from this environment (CABLE_SECRET_ENV), the others read from SSM / Secrets Manager. */
async function readSecrets(task: Task, manifest: RunManifest): Promise<Record<string, string>> {
  const { config, deps } = task;
  try {
    return { ...envSecretValues(config.envSecrets, deps.baseEnv), ...(await deps.resolveSecrets({ ...config.secrets, ...manifest.secrets })) };
  } catch (err) {
    return fail(EXIT.setup, (err as Error).message);
  }
}

function newStatus(config: WorkerConfig & { taskId: string }, now: number): TaskStatus {
  const startedAt = new Date(now).toISOString();
  const { runId, region, taskId } = config;
  return { runId, region, taskId, exitCode: EXIT.ok, reason: null, startedAt, endedAt: startedAt, startLagMs: null, artilleryExitCode: null, readyAt: null, loadStartedAt: null, firstMetricAt: null, startAt: null };
}

function launcher(task: Task, manifest: RunManifest, secrets: Record<string, string>): Launcher {
  const { config, deps, stops } = task;
  let exited = false;
  const start = (extraEnv: NodeJS.ProcessEnv) =>
    runArtillery({
      scenario: path.join(task.bundleDir, manifest.scenario),
      output: path.join(task.resultsDir, REPORT_FILE),
      overrides: taskOverrides(manifest.overrides),
      environment: manifest.environment,
      env: { ...deps.baseEnv, ...manifest.env, ...secrets, ...artilleryTaskEnv({ ...deps.baseEnv, ...manifest.env }, config, Object.keys(secrets)), ...extraEnv },
      logFile: path.join(task.resultsDir, LOG_FILE),
      echo: deps.echo,
      redact: task.redact,
      onSpawn: (child) => {
        deps.onArtillerySpawn?.(child);
        stops.artillerySpawned(child);
      },
    }).then(
      (outcome) => ((exited = true), outcome),
      (err: Error) => ((exited = true), fail(EXIT.artillery, `artillery could not be started: ${err.message}`)),
    );
  return { start, exited: () => exited };
}

/** How far away `startAt` is (ms); a start beyond the bound fails the task. */
function refuseDistantStart(task: Task, startAt: number): number {
  const wait = startAt - task.deps.now();
  const bound = task.config.maxStartWaitMs;
  if (wait > bound) fail(EXIT.setup, `startAt ${new Date(startAt).toISOString()} is ${Math.round(wait / 1000)} s away, beyond the ${Math.round(bound / 1000)} s bound (CABLE_MAX_START_WAIT_MS)`);
  return wait;
}

/**
 * Artillery starts loading at once and waits at the start gate, so its loading time is not start
 * skew: loaded, then (with a barrier) ready and the runner's go, then the gate opens at the common
 * start. Any failure on the way cancels the gate and lets Artillery exit before it is reported.
 */
async function runAtGate(task: Task, manifest: RunManifest, artillery: Launcher, status: TaskStatus): Promise<ArtilleryOutcome> {
  const { config, deps } = task;
  const gate = new StartGate(path.join(task.workDir, "gate"));
  task.stops.heldAt(gate);
  deps.log(`loading artillery on ${manifest.scenario}; it waits at the start gate`);
  const gateWaitMs = (manifest.barrier?.waitMs ?? 0) + config.maxStartWaitMs + 60_000;
  const running = artillery.start(gate.env(deps.baseEnv, gateWaitMs));
  running.catch(() => undefined);
  let startAt = manifest.startAt;
  try {
    await loadedAtGate(task, gate, artillery, running, manifest.barrier?.waitMs ?? config.maxStartWaitMs);
    if (manifest.barrier) startAt = await passBarrier(task, manifest.barrier, status);
    if (startAt !== undefined) {
      status.startAt = startAt;
      const wait = refuseDistantStart(task, startAt);
      deps.log(`artillery starts at ${new Date(startAt).toISOString()}${wait > 0 ? ` (in ${wait} ms)` : ""}`);
      gate.open(startAt);
    }
  } catch (err) {
    gate.cancel();
    await running.catch(() => undefined);
    throw err;
  }
  const outcome = await running;
  status.loadStartedAt = gate.releasedAt();
  if (status.loadStartedAt !== null && startAt !== undefined) status.startLagMs = Math.max(0, status.loadStartedAt - startAt);
  return outcome;
}

/** Until Artillery has loaded the scenario and waits at the gate; it may exit instead, or the task stop. */
async function loadedAtGate(task: Task, gate: StartGate, artillery: Launcher, running: Promise<ArtilleryOutcome>, boundMs: number): Promise<void> {
  const { stops } = task;
  await until(() => gate.loaded() || artillery.exited() || stops.end() !== undefined, boundMs, 100, { now: task.deps.now, sleep: stops.sleep });
  stoppedBeforeStart(stops);
  if (gate.loaded()) return;
  if (artillery.exited()) {
    const early = await running;
    fail(EXIT.artillery, `artillery exited (${early.exitCode ?? early.signal}) before it had loaded (see ${LOG_FILE})`);
  }
  fail(EXIT.setup, `artillery did not load within ${Math.round(boundMs / 1000)} s`);
}

/** The ready marker, then the runner's go: the common start, for this task only if it made the barrier. */
async function passBarrier(task: Task, barrier: NonNullable<RunManifest["barrier"]>, status: TaskStatus): Promise<number> {
  const { config, deps, stops } = task;
  const { runId, region, taskId } = config;
  status.readyAt = deps.now();
  await writeReady(deps.store, { runId, region, taskId, readyAt: status.readyAt }).catch((err: Error) => fail(EXIT.upload, `writing the ready marker failed: ${err.message}`));
  deps.log(`ready (artillery loaded); waiting up to ${Math.round(barrier.waitMs / 1000)} s for the go marker`);
  const go = await waitForGo(deps.store, runId, { waitMs: barrier.waitMs, pollMs: barrier.pollMs, signal: stops.signal }, { now: deps.now, sleep: deps.sleep });
  stoppedBeforeStart(stops);
  if (!go) return fail(EXIT.setup, `no go marker within ${Math.round(barrier.waitMs / 1000)} s of being ready`);
  if ("cancelled" in go) return fail(EXIT.setup, `the run was called off before the start: ${go.cancelled}`, { by: "go-cancelled", reason: go.cancelled });
  if (!go.tasks.includes(taskKey(region, taskId))) fail(EXIT.setup, "missed the ready barrier: the run started without this task", { by: "barrier-missed" });
  return go.startAt;
}

/** A stop that came before Artillery's load ends the task here. */
function stoppedBeforeStart(stops: TaskStops): void {
  const end = stops.end();
  if (end) fail(EXIT.artillery, `${describeStop(end)} before artillery started`, end);
}

/** A task succeeds when Artillery ran to its end by itself, exited 0 and wrote its report. */
async function judgeOutcome(task: Task, outcome: ArtilleryOutcome, status: TaskStatus): Promise<void> {
  const report = path.join(task.resultsDir, REPORT_FILE);
  // Called off at the gate: Artillery never ran load, so it has no exit code worth reporting.
  status.artilleryExitCode = status.loadStartedAt === null && outcome.exitCode === GATE_CANCELLED_EXIT ? null : outcome.exitCode;
  const stopped = task.stops.end();
  if (stopped) fail(EXIT.artillery, `${describeStop(stopped)} ${status.loadStartedAt === null ? "before artillery started" : `before artillery finished (artillery exit code ${outcome.exitCode ?? outcome.signal})`}`, stopped);
  const failed: SeenEnd = { by: "artillery-failed", exitCode: outcome.exitCode, signal: outcome.signal };
  if (outcome.signal) fail(EXIT.artillery, `artillery was stopped by ${outcome.signal}`, failed);
  if (outcome.exitCode !== 0) fail(EXIT.artillery, `artillery exited with code ${outcome.exitCode} (see ${LOG_FILE})`, failed);
  await access(report).catch(() => fail(EXIT.artillery, `artillery exited 0 but wrote no ${REPORT_FILE}`));
  status.firstMetricAt = await firstMetricAt(report);
  status.end = { by: "phases-done" };
}

/**
 * Whatever results exist, redacted in place (the work folder holds no secret either), then
 * status.json last: the runner reads a task as ended once it is there. Returns the status as uploaded.
 */
async function publish(task: Task, status: TaskStatus): Promise<TaskStatus> {
  const { deps } = task;
  const prefix = resultPrefix(status.runId, status.region, status.taskId);
  const failed = (what: string, err: unknown) => {
    if (status.exitCode === EXIT.ok) status.exitCode = EXIT.upload;
    status.reason = oneLine(`${status.reason ? `${status.reason}; ` : ""}${what} failed: ${(err as Error).message}`);
  };
  try {
    const uploaded = await uploadResults(deps.store, prefix, task.resultsDir, task.redact);
    deps.log(`uploaded ${uploaded.length} file(s) to ${deps.store.location}/${prefix}`);
  } catch (err) {
    failed("uploading results", err);
  }
  status.endedAt = new Date(deps.now()).toISOString();
  try {
    await deps.store.putText(prefix + STATUS_FILE, JSON.stringify(redactJson(status, task.redact), null, 2) + "\n");
  } catch (err) {
    failed(`uploading ${STATUS_FILE}`, err);
  }
  return redactJson(status, task.redact);
}

async function fetchBundle(config: WorkerConfig, deps: TaskDeps, bundleDir: string): Promise<RunManifest> {
  const prefix = bundlePrefix(config.runId);
  const source = `${deps.store.location}/${prefix}`;
  const files = await fetchTree(deps.store, prefix, bundleDir).catch((err: Error) => fail(EXIT.setup, `fetching the bundle from ${source} failed: ${err.message}`));
  if (files.length === 0) fail(EXIT.setup, `no bundle at ${source}`);
  if (!files.includes(MANIFEST_FILE)) fail(EXIT.setup, `the bundle at ${source} has no ${MANIFEST_FILE}`);
  deps.log(`fetched ${files.length} bundle file(s) from ${source}`);
  const manifest = parseManifest(await readFile(path.join(bundleDir, MANIFEST_FILE), "utf8"), `${source}${MANIFEST_FILE}`);
  if (!files.includes(manifest.scenario)) fail(EXIT.setup, `${MANIFEST_FILE} names scenario "${manifest.scenario}", which is not in the bundle`);
  return manifest;
}

/**
 * What the worker's own Artillery plugins need in Artillery's environment: the worker's directory on
 * ARTILLERY_PLUGIN_PATH, where Artillery finds them by name (the start gate, the capacity probe), in
 * the image and locally alike; which task this is, for the capacity probe's live files (on
 * Fargate the task id comes from ECS's metadata, not from the environment); and which of its
 * variables hold secrets (names only), which the plugins redact from the live files. Set last: a
 * scenario's env cannot point them elsewhere.
 */
export function artilleryTaskEnv(base: NodeJS.ProcessEnv, task: Pick<WorkerConfig, "runId" | "region" | "store"> & { taskId: string }, secretNames: string[]): NodeJS.ProcessEnv {
  return {
    ARTILLERY_PLUGIN_PATH: [base.ARTILLERY_PLUGIN_PATH, WORKER_DIR].filter(Boolean).join(":"),
    CABLE_RUN_ID: task.runId,
    CABLE_REGION: task.region,
    CABLE_TASK_ID: task.taskId,
    CABLE_STORE: task.store,
    [SECRET_ENV]: secretNames.join(","),
    // The runner judges config.cable.maxFailedUsers on the merged run; a task's own share must not fail it.
    [JUDGED_BY_RUNNER_ENV]: "1",
  };
}

/** This module's directory: the worker's, with its plugins beside it. */
const WORKER_DIR = __dirname;

/** Polls `done` until it holds or `timeoutMs` passes. */
async function until(done: () => boolean, timeoutMs: number, pollMs: number, deps: { now: () => number; sleep: (ms: number) => Promise<void> }): Promise<void> {
  const deadline = deps.now() + timeoutMs;
  while (!done() && deps.now() < deadline) await deps.sleep(Math.min(pollMs, Math.max(1, deadline - deps.now())));
}

async function uploadResults(store: Store, prefix: string, resultsDir: string, redact: Redact): Promise<string[]> {
  const entries = await readdir(resultsDir, { recursive: true, withFileTypes: true });
  const files = entries
    .filter((e) => e.isFile())
    .map((e) => path.relative(resultsDir, path.join(e.parentPath, e.name)).split(path.sep).join("/"))
    .sort();
  for (const rel of files) await redactFile(path.join(resultsDir, rel), redact);
  for (const rel of files) await store.putFile(prefix + rel, path.join(resultsDir, rel));
  return files;
}

/** When Artillery's load really began (its first metric); null when the report does not say. */
async function firstMetricAt(reportFile: string): Promise<number | null> {
  try {
    const report = JSON.parse(await readFile(reportFile, "utf8")) as { aggregate?: { firstMetricAt?: unknown } };
    const at = report.aggregate?.firstMetricAt;
    return typeof at === "number" && Number.isFinite(at) ? at : null;
  } catch {
    return null;
  }
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

import type { ChildProcess } from "node:child_process";
import { access, mkdir, readFile, readdir } from "node:fs/promises";
import path from "node:path";
import type { Writable } from "node:stream";
import { artilleryBin, runArtillery, terminate } from "./artillery.js";
import type { WorkerConfig } from "./config.js";
import { LOG_FILE, MANIFEST_FILE, REPORT_FILE, STATUS_FILE, bundlePrefix, resultPrefix } from "./layout.js";
import { type RunManifest, parseManifest, taskOverrides } from "./manifest.js";
import { GATE_CANCELLED_EXIT } from "./artillery-plugin-cable-start-gate.js";
import { StartGate } from "./gate.js";
import { taskKey, waitForGo, watchHeartbeat, writeReady } from "./markers.js";
import { makeRedactor } from "./secrets.js";
import { EXIT, type TaskStatus } from "./status.js";
import { type Store, fetchTree } from "./store.js";

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
}

class TaskFailure extends Error {
  constructor(
    readonly exitCode: number,
    reason: string,
  ) {
    super(reason);
  }
}

const fail = (exitCode: number, reason: string): never => {
  throw new TaskFailure(exitCode, reason);
};

/**
 * One task of a run: fetch the bundle, wait for the common start, run Artillery, upload whatever
 * results exist (also on failure), then status.json. Never throws; the outcome is the status.
 */
export async function runTask(config: WorkerConfig & { taskId: string }, deps: TaskDeps): Promise<TaskStatus> {
  const { runId, region, taskId } = config;
  const startedAt = new Date(deps.now()).toISOString();
  const workDir = path.join(config.workDir, runId, region, taskId);
  const bundleDir = path.join(workDir, "bundle");
  const resultsDir = path.join(workDir, "results");
  const status: TaskStatus = {
    runId,
    region,
    taskId,
    exitCode: EXIT.ok,
    reason: null,
    startedAt,
    endedAt: startedAt,
    startLagMs: null,
    artilleryExitCode: null,
    readyAt: null,
    loadStartedAt: null,
    firstMetricAt: null,
    startAt: null,
  };

  // The task's own reasons to stop: the runner's heartbeat went stale, or --max-duration passed.
  const selfStop = new AbortController();
  let selfStopReason: string | undefined;
  let artillery: ChildProcess | undefined;
  let gate: StartGate | undefined;
  const stopSelf = (reason: string) => {
    if (selfStopReason) return;
    selfStopReason = reason;
    deps.log(`stopping: ${reason}`);
    selfStop.abort();
    gate?.cancel();
    if (artillery) terminate(artillery, config.selfStopGraceMs, deps.log);
  };
  // A stop signal (ECS StopTask) must also reach an Artillery held at the start gate, which cannot run signal handlers.
  const stopWatch = setInterval(() => {
    if (deps.stopSignal?.()) gate?.cancel();
  }, 200);
  stopWatch.unref();
  const stopReason = () => {
    const signal = deps.stopSignal?.();
    return signal ? `the task was stopped (${signal})` : selfStopReason;
  };
  const sleep = (ms: number) => deps.sleep(ms, selfStop.signal);
  let heartbeat: { stop: () => void } | undefined;
  let maxTimer: NodeJS.Timeout | undefined;

  try {
    await mkdir(bundleDir, { recursive: true });
    await mkdir(resultsDir, { recursive: true });
    const manifest = await fetchBundle(config, deps, bundleDir);
    if (manifest.maxDurationMs !== undefined) {
      const limit = manifest.maxDurationMs;
      maxTimer = setTimeout(() => stopSelf(`the run's --max-duration (${Math.round(limit / 1000)} s) passed`), limit);
      maxTimer.unref();
    }
    if (manifest.heartbeat) {
      const { staleMs, pollMs } = manifest.heartbeat;
      heartbeat = watchHeartbeat(deps.store, runId, { staleMs, pollMs, onStale: (silent) => stopSelf(`the runner's heartbeat has not changed for ${Math.round(silent / 1000)} s (runner gone?)`) }, { now: deps.now, sleep: deps.sleep });
    }
    const secrets = await deps.resolveSecrets({ ...config.secrets, ...manifest.secrets }).catch((err: Error) => fail(EXIT.setup, err.message));
    (deps.checkArtillery ?? artilleryBin)();

    let exited = false;
    const artilleryRun = (extraEnv: NodeJS.ProcessEnv) =>
      runArtillery({
        scenario: path.join(bundleDir, manifest.scenario),
        output: path.join(resultsDir, REPORT_FILE),
        overrides: taskOverrides(manifest.overrides),
        environment: manifest.environment,
        env: { ...deps.baseEnv, ...manifest.env, ...secrets, ...artilleryTaskEnv({ ...deps.baseEnv, ...manifest.env }, { ...config, taskId }), ...extraEnv },
        logFile: path.join(resultsDir, LOG_FILE),
        echo: deps.echo,
        redact: makeRedactor(Object.values(secrets)),
        onSpawn: (child) => {
          artillery = child;
          deps.onArtillerySpawn?.(child);
          if (selfStopReason) terminate(child, config.selfStopGraceMs, deps.log);
        },
      }).then(
        (outcome) => ((exited = true), outcome),
        (err: Error) => ((exited = true), fail(EXIT.artillery, `artillery could not be started: ${err.message}`)),
      );

    // A fixed start too far away is refused before anything loads (a clock or runner bug).
    const fixedWait = manifest.startAt === undefined ? 0 : manifest.startAt - deps.now();
    if (fixedWait > config.maxStartWaitMs) {
      fail(EXIT.setup, `startAt ${new Date(manifest.startAt!).toISOString()} is ${Math.round(fixedWait / 1000)} s away, beyond the ${Math.round(config.maxStartWaitMs / 1000)} s bound (CABLE_MAX_START_WAIT_MS)`);
    }

    let outcome: Awaited<ReturnType<typeof runArtillery>>;
    if (manifest.barrier || manifest.startAt !== undefined) {
      // Artillery starts loading now and waits at the gate, so loading time is not start skew.
      const gateWaitMs = (manifest.barrier?.waitMs ?? 0) + config.maxStartWaitMs + 60_000;
      gate = new StartGate(path.join(workDir, "gate"));
      const openGate = gate;
      deps.log(`loading artillery on ${manifest.scenario}; it waits at the start gate`);
      const running = artilleryRun(gate.env(deps.baseEnv, gateWaitMs));
      running.catch(() => undefined);
      const stopAtGate = async (failure: TaskFailure): Promise<never> => {
        openGate.cancel();
        await running.catch(() => undefined);
        throw failure;
      };
      const loadBound = manifest.barrier?.waitMs ?? config.maxStartWaitMs;
      await until(() => openGate.loaded() || exited || stopReason() !== undefined, loadBound, 100, { now: deps.now, sleep });
      if (stopReason()) await stopAtGate(new TaskFailure(EXIT.artillery, `${stopReason()} before artillery started`));
      if (!openGate.loaded()) {
        if (exited) {
          const early = await running;
          throw new TaskFailure(EXIT.artillery, `artillery exited (${early.exitCode ?? early.signal}) before it had loaded (see ${LOG_FILE})`);
        }
        await stopAtGate(new TaskFailure(EXIT.setup, `artillery did not load within ${Math.round(loadBound / 1000)} s`));
      }

      let startAt = manifest.startAt;
      if (manifest.barrier) {
        status.readyAt = deps.now();
        await writeReady(deps.store, { runId, region, taskId, readyAt: status.readyAt }).catch((err: Error) => stopAtGate(new TaskFailure(EXIT.upload, `writing the ready marker failed: ${err.message}`)));
        deps.log(`ready (artillery loaded); waiting up to ${Math.round(manifest.barrier.waitMs / 1000)} s for the go marker`);
        const go = await waitForGo(deps.store, runId, { waitMs: manifest.barrier.waitMs, pollMs: manifest.barrier.pollMs, signal: selfStop.signal }, { now: deps.now, sleep: deps.sleep });
        if (stopReason()) await stopAtGate(new TaskFailure(EXIT.artillery, `${stopReason()} before artillery started`));
        if (!go) return await stopAtGate(new TaskFailure(EXIT.setup, `no go marker within ${Math.round(manifest.barrier.waitMs / 1000)} s of being ready`));
        if ("cancelled" in go) return await stopAtGate(new TaskFailure(EXIT.setup, `the run was called off before the start: ${go.cancelled}`));
        if (!go.tasks.includes(taskKey(region, taskId))) await stopAtGate(new TaskFailure(EXIT.setup, "missed the ready barrier: the run started without this task"));
        startAt = go.startAt;
      }
      if (startAt !== undefined) {
        status.startAt = startAt;
        const wait = startAt - deps.now();
        if (wait > config.maxStartWaitMs) {
          await stopAtGate(new TaskFailure(EXIT.setup, `startAt ${new Date(startAt).toISOString()} is ${Math.round(wait / 1000)} s away, beyond the ${Math.round(config.maxStartWaitMs / 1000)} s bound (CABLE_MAX_START_WAIT_MS)`));
        }
        deps.log(`artillery starts at ${new Date(startAt).toISOString()}${wait > 0 ? ` (in ${wait} ms)` : ""}`);
        gate.open(startAt);
      }
      outcome = await running;
      status.loadStartedAt = gate.releasedAt();
      if (status.loadStartedAt !== null && startAt !== undefined) status.startLagMs = Math.max(0, status.loadStartedAt - startAt);
    } else {
      deps.log(`starting artillery on ${manifest.scenario}`);
      status.loadStartedAt = deps.now();
      outcome = await artilleryRun({});
    }
    // Called off at the gate: Artillery never ran load, so it has no exit code worth reporting.
    status.artilleryExitCode = status.loadStartedAt === null && outcome.exitCode === GATE_CANCELLED_EXIT ? null : outcome.exitCode;
    const stopped = stopReason();
    if (stopped) fail(EXIT.artillery, `${stopped} ${status.loadStartedAt === null ? "before artillery started" : `before artillery finished (artillery exit code ${outcome.exitCode ?? outcome.signal})`}`);
    if (outcome.signal) fail(EXIT.artillery, `artillery was stopped by ${outcome.signal}`);
    if (outcome.exitCode !== 0) fail(EXIT.artillery, `artillery exited with code ${outcome.exitCode} (see ${LOG_FILE})`);
    await access(path.join(resultsDir, REPORT_FILE)).catch(() => fail(EXIT.artillery, `artillery exited 0 but wrote no ${REPORT_FILE}`));
    status.firstMetricAt = await firstMetricAt(path.join(resultsDir, REPORT_FILE));
  } catch (err) {
    status.exitCode = err instanceof TaskFailure ? err.exitCode : EXIT.setup;
    status.reason = oneLine(err instanceof Error ? err.message : String(err));
  } finally {
    heartbeat?.stop();
    clearTimeout(maxTimer);
    clearInterval(stopWatch);
  }

  const prefix = resultPrefix(runId, region, taskId);
  try {
    const uploaded = await uploadResults(deps.store, prefix, resultsDir);
    deps.log(`uploaded ${uploaded.length} file(s) to ${deps.store.location}/${prefix}`);
  } catch (err) {
    if (status.exitCode === EXIT.ok) status.exitCode = EXIT.upload;
    status.reason = oneLine(`${status.reason ? `${status.reason}; ` : ""}uploading results failed: ${(err as Error).message}`);
  }
  status.endedAt = new Date(deps.now()).toISOString();
  try {
    await deps.store.putText(prefix + STATUS_FILE, JSON.stringify(status, null, 2) + "\n");
  } catch (err) {
    if (status.exitCode === EXIT.ok) status.exitCode = EXIT.upload;
    status.reason = oneLine(`${status.reason ? `${status.reason}; ` : ""}uploading ${STATUS_FILE} failed: ${(err as Error).message}`);
  }
  return status;
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
 * the image and locally alike; and which task this is, for the capacity probe's live files (on
 * Fargate the task id comes from ECS's metadata, not from the environment). Set last: a scenario's
 * env cannot point them elsewhere.
 */
export function artilleryTaskEnv(base: NodeJS.ProcessEnv, task: Pick<WorkerConfig, "runId" | "region" | "store"> & { taskId: string }): NodeJS.ProcessEnv {
  return {
    ARTILLERY_PLUGIN_PATH: [base.ARTILLERY_PLUGIN_PATH, WORKER_DIR].filter(Boolean).join(":"),
    CABLE_RUN_ID: task.runId,
    CABLE_REGION: task.region,
    CABLE_TASK_ID: task.taskId,
    CABLE_STORE: task.store,
  };
}

/** This module's directory: the worker's, with its plugins beside it. */
const WORKER_DIR = __dirname;

/** Polls `done` until it holds or `timeoutMs` passes. */
async function until(done: () => boolean, timeoutMs: number, pollMs: number, deps: { now: () => number; sleep: (ms: number) => Promise<void> }): Promise<void> {
  const deadline = deps.now() + timeoutMs;
  while (!done() && deps.now() < deadline) await deps.sleep(Math.min(pollMs, Math.max(1, deadline - deps.now())));
}

async function uploadResults(store: Store, prefix: string, resultsDir: string): Promise<string[]> {
  const entries = await readdir(resultsDir, { recursive: true, withFileTypes: true });
  const files = entries
    .filter((e) => e.isFile())
    .map((e) => path.relative(resultsDir, path.join(e.parentPath, e.name)).split(path.sep).join("/"))
    .sort();
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

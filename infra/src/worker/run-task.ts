import type { ChildProcess } from "node:child_process";
import { access, mkdir, readFile, readdir } from "node:fs/promises";
import path from "node:path";
import type { Writable } from "node:stream";
import { runArtillery } from "./artillery.js";
import type { WorkerConfig } from "./config.js";
import { LOG_FILE, MANIFEST_FILE, REPORT_FILE, STATUS_FILE, bundlePrefix, resultPrefix } from "./layout.js";
import { type RunManifest, parseManifest, taskOverrides } from "./manifest.js";
import { makeRedactor } from "./secrets.js";
import { EXIT, type TaskStatus } from "./status.js";
import { type Store, fetchTree } from "./store.js";

export interface TaskDeps {
  store: Store;
  resolveSecrets: (refs: Record<string, string>) => Promise<Record<string, string>>;
  /** The environment Artillery inherits (before the manifest's env and the secrets are added). */
  baseEnv: NodeJS.ProcessEnv;
  now: () => number;
  sleep: (ms: number) => Promise<void>;
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
  };

  try {
    await mkdir(bundleDir, { recursive: true });
    await mkdir(resultsDir, { recursive: true });
    const manifest = await fetchBundle(config, deps, bundleDir);
    const secrets = await deps.resolveSecrets({ ...config.secrets, ...manifest.secrets }).catch((err: Error) => fail(EXIT.setup, err.message));
    status.startLagMs = await waitForStart(manifest, config.maxStartWaitMs, deps);
    const stoppedEarly = deps.stopSignal?.();
    if (stoppedEarly) fail(EXIT.artillery, `the task was stopped (${stoppedEarly}) before artillery started`);
    deps.log(`starting artillery on ${manifest.scenario}${status.startLagMs !== null ? ` (${status.startLagMs} ms after startAt)` : ""}`);
    const outcome = await runArtillery({
      scenario: path.join(bundleDir, manifest.scenario),
      output: path.join(resultsDir, REPORT_FILE),
      overrides: taskOverrides(manifest.overrides),
      environment: manifest.environment,
      env: { ...deps.baseEnv, ...manifest.env, ...secrets },
      logFile: path.join(resultsDir, LOG_FILE),
      echo: deps.echo,
      redact: makeRedactor(Object.values(secrets)),
      onSpawn: deps.onArtillerySpawn,
    }).catch((err: Error) => fail(EXIT.artillery, `artillery could not be started: ${err.message}`));
    status.artilleryExitCode = outcome.exitCode;
    const stopSignal = deps.stopSignal?.();
    if (stopSignal) fail(EXIT.artillery, `the task was stopped (${stopSignal}) before artillery finished (artillery exit code ${outcome.exitCode ?? outcome.signal})`);
    if (outcome.signal) fail(EXIT.artillery, `artillery was stopped by ${outcome.signal}`);
    if (outcome.exitCode !== 0) fail(EXIT.artillery, `artillery exited with code ${outcome.exitCode} (see ${LOG_FILE})`);
    await access(path.join(resultsDir, REPORT_FILE)).catch(() => fail(EXIT.artillery, `artillery exited 0 but wrote no ${REPORT_FILE}`));
  } catch (err) {
    status.exitCode = err instanceof TaskFailure ? err.exitCode : EXIT.setup;
    status.reason = oneLine(err instanceof Error ? err.message : String(err));
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

/** Sleeps until the manifest's startAt; refuses a start further away than the bound (a clock or runner bug). */
async function waitForStart(manifest: RunManifest, maxWaitMs: number, deps: TaskDeps): Promise<number | null> {
  if (manifest.startAt === undefined) return null;
  const wait = manifest.startAt - deps.now();
  if (wait > maxWaitMs) fail(EXIT.setup, `startAt ${new Date(manifest.startAt).toISOString()} is ${Math.round(wait / 1000)} s away, beyond the ${Math.round(maxWaitMs / 1000)} s bound (CABLE_MAX_START_WAIT_MS)`);
  if (wait > 0) {
    deps.log(`waiting ${wait} ms for startAt`);
    await deps.sleep(wait);
  }
  return Math.max(0, deps.now() - manifest.startAt);
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

function oneLine(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

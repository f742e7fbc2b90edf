// The run loop, one piece of code for both backends: find the regions, upload the bundle, start
// every region's tasks at once, watch them, stop them on abort, then collect and report.
import { randomBytes } from "node:crypto";
import { mkdirSync } from "node:fs";
import path from "node:path";
import { writeFileAtomic } from "artillery-plugin-cable-report";
import type { Backend, Region, TaskSnapshot } from "./backend.js";
import { buildBundle } from "./bundle.js";
import { collectRun, type CollectResult } from "./collect.js";
import { FanoutInputError } from "./errors.js";
import type { Progress } from "./progress.js";
import { RECORD_FILE, type RunRecord } from "./record.js";
import { isThrottling } from "./retry.js";
import { loadScenario } from "./scenario.js";
import { backoffDelay } from "./schedule.js";

type Json = Record<string, unknown>;

export interface RunOptions {
  scenarioFile: string;
  regions: string[];
  count: number;
  outDir: string;
  overrides?: Json;
  target?: string;
  variables?: Json;
  environment?: string;
  spot: boolean;
  cpu?: number;
  memory?: number;
  secretRefs: Record<string, string>;
  secretValues: Record<string, string>;
  maxDurationMs?: number;
  startDelayMs?: number;
  startTimeoutMs?: number;
  baseline?: string;
  regressionThreshold?: number;
  title?: string;
  /** Where the local backend keeps its store, recorded for `collect` and `stop`. */
  store?: string;
}

export interface RunDeps {
  backend: Backend;
  now: () => number;
  /** Resolves after `ms`, or early when `signal` aborts. */
  sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Created once the start time is known. */
  progress: (clock: { startAt: number; expectedMs: number | undefined }) => Progress | Promise<Progress>;
  log: (line: string) => void;
  /** Aborted by Ctrl-C; --max-duration aborts it too. */
  abort: AbortController;
  newRunId?: () => string;
}

export interface RunResult extends CollectResult {
  runId: string;
  runDir: string;
}

/** Sortable and unique, and fits ECS `startedBy` (36 characters): 20250101-120000-a1b2c3. */
export function newRunId(now: number = Date.now()): string {
  const stamp = new Date(now).toISOString().replace(/[-:]/g, "").replace("T", "-").slice(0, 15);
  return `${stamp}-${randomBytes(3).toString("hex")}`;
}

/** `--target` and `-v` become overrides, as Artillery's own flags would set them. */
export function effectiveOverrides(options: Pick<RunOptions, "overrides" | "target" | "variables">): Json | undefined {
  const overrides: Json = { ...options.overrides };
  const config: Json = { ...(overrides.config as Json | undefined) };
  if (options.target) config.target = options.target;
  if (options.variables) config.variables = { ...(config.variables as Json | undefined), ...options.variables };
  if (Object.keys(config).length > 0) overrides.config = config;
  return Object.keys(overrides).length > 0 ? overrides : undefined;
}

/** Opens every region; all or nothing, so no task starts when some region is not deployed. */
export async function openRegions(backend: Backend, names: string[]): Promise<Region[]> {
  const settled = await Promise.allSettled(names.map((n) => backend.openRegion(n)));
  const errors = settled.flatMap((s) => (s.status === "rejected" ? [(s.reason as Error).message] : []));
  if (errors.length === 0) return settled.map((s) => (s as PromiseFulfilledResult<Region>).value);
  const allInput = settled.every((s) => s.status === "fulfilled" || s.reason instanceof FanoutInputError);
  throw allInput ? new FanoutInputError(errors.join("\n")) : new Error(errors.join("\n"));
}

export async function runFanout(options: RunOptions, deps: RunDeps): Promise<RunResult> {
  const { backend, abort } = deps;
  const timing = {
    ...backend.timing,
    ...(options.startDelayMs !== undefined ? { startDelayMs: options.startDelayMs } : {}),
    ...(options.startTimeoutMs !== undefined ? { startTimeoutMs: options.startTimeoutMs } : {}),
  };
  const overrides = effectiveOverrides(options);
  const scenario = loadScenario(options.scenarioFile, overrides);
  const regions = await openRegions(backend, options.regions);

  const runId = (deps.newRunId ?? newRunId)();
  const runDir = path.resolve(options.outDir, runId);
  const startAt = deps.now() + timing.startDelayMs;
  const bundle = buildBundle(scenario, { startAt, overrides, environment: options.environment });
  deps.log(`run ${runId}: ${path.relative(process.cwd(), scenario.file)} × ${options.count} task(s) in ${options.regions.join(", ")} (${backend.kind}), ${bundle.files.length} file(s) bundled`);
  await Promise.all(regions.map((r) => r.uploadBundle(runId, bundle)));

  const record: RunRecord = {
    format: "cable-fanout-run",
    version: 1,
    runId,
    backend: backend.kind,
    ...(options.store ? { store: path.resolve(options.store) } : {}),
    scenario: path.relative(process.cwd(), scenario.file),
    regions: options.regions,
    count: options.count,
    startAt,
    started: {},
    tasks: [],
    regionFailures: {},
  };
  mkdirSync(runDir, { recursive: true });
  const saveRecord = () => writeFileAtomic(path.join(runDir, RECORD_FILE), `${JSON.stringify(record, null, 2)}\n`);
  saveRecord();

  const maxDurationMs = options.maxDurationMs ?? timing.startDelayMs + (scenario.durationMs ?? 3_600_000) + timing.marginMs;
  let abortReason = "interrupted (Ctrl-C)";
  const maxTimer = setTimeout(() => {
    abortReason = `--max-duration ${Math.round(maxDurationMs / 1000)} s reached`;
    abort.abort();
  }, maxDurationMs);
  const progress = await deps.progress({ startAt, expectedMs: scenario.durationMs });

  const snapshots = new Map<string, TaskSnapshot[]>();
  const regionFailures = new Map<string, string[]>();
  try {
    await Promise.all(
      regions.map(async (region) => {
        const watched = await watchRegion(region, {
          runId,
          count: options.count,
          startOptions: { spot: options.spot, cpu: options.cpu, memory: options.memory, secretRefs: options.secretRefs, secretValues: options.secretValues, abort: abort.signal },
          timing,
          deps,
          progress,
          abortReason: () => abortReason,
          onStarted: (refs) => {
            record.started[region.name] = refs;
            saveRecord();
          },
        });
        snapshots.set(region.name, watched.tasks);
        if (watched.failures.length > 0) regionFailures.set(region.name, watched.failures);
      }),
    );
  } finally {
    clearTimeout(maxTimer);
    progress.stop();
  }

  deps.log(`collecting results into ${path.relative(process.cwd(), runDir) || "."}`);
  const collected = await collectRun({
    runDir,
    record,
    regions,
    snapshots,
    regionFailures,
    baseline: options.baseline,
    regressionThreshold: options.regressionThreshold,
    title: options.title,
    log: deps.log,
  });
  return { ...collected, runId, runDir };
}

interface WatchInput {
  runId: string;
  count: number;
  startOptions: Parameters<Region["startTasks"]>[2];
  timing: Backend["timing"];
  deps: RunDeps;
  progress: Progress;
  abortReason: () => string;
  onStarted: (refs: string[]) => void;
}

/** Consecutive DescribeTasks errors after which a region is given up (its tasks are stopped). */
const MAX_POLL_ERRORS = 6;

/** Starts a region's tasks and polls them until all have stopped; never throws. */
export async function watchRegion(region: Region, input: WatchInput): Promise<{ tasks: TaskSnapshot[]; failures: string[] }> {
  const { deps, timing, progress } = input;
  const failures: string[] = [];
  const event = (line: string) => progress.event(`${region.name}: ${line}`);
  let tasks: TaskSnapshot[];
  try {
    const outcome = await region.startTasks(input.runId, input.count, input.startOptions);
    tasks = outcome.started;
    failures.push(...outcome.failures);
    for (const f of outcome.failures) event(f);
  } catch (err) {
    const message = `starting tasks failed: ${(err as Error).name}: ${(err as Error).message}`;
    event(message);
    return { tasks: [], failures: [message] };
  }
  input.onStarted(tasks.map((t) => t.ref));

  const startDeadline = deps.now() + timing.startTimeoutMs;
  const stopRequested = new Set<string>();
  let stopDeadline: number | undefined;
  let pollErrors = 0;
  let startTimedOut = false;
  const counts = () => ({
    pending: tasks.filter((t) => t.phase === "pending").length,
    running: tasks.filter((t) => t.phase === "running").length,
    stopped: tasks.filter((t) => t.phase === "stopped").length,
    failed: tasks.filter((t) => t.phase === "stopped" && isFailedStop(t)).length,
  });
  const requestStop = async (targets: TaskSnapshot[], reason: string) => {
    const refs = targets.filter((t) => t.phase !== "stopped" && !stopRequested.has(t.ref)).map((t) => t.ref);
    if (refs.length === 0) return;
    refs.forEach((r) => stopRequested.add(r));
    stopDeadline ??= deps.now() + timing.stopGraceMs;
    event(`stopping ${refs.length} task(s): ${reason}`);
    try {
      await region.stopTasks(refs, `cable-fanout: ${reason}`);
    } catch (err) {
      event((err as Error).message);
    }
  };

  progress.update(region.name, counts());
  while (tasks.some((t) => t.phase !== "stopped")) {
    if (deps.abort.signal.aborted) await requestStop(tasks, input.abortReason());
    if (stopDeadline !== undefined && deps.now() > stopDeadline) {
      const stuck = tasks.filter((t) => t.phase !== "stopped");
      failures.push(`${stuck.length} task(s) had not stopped ${Math.round(timing.stopGraceMs / 1000)} s after StopTask: ${stuck.map((t) => t.taskId).join(", ")}`);
      break;
    }
    let delay = timing.pollMs;
    try {
      const fresh = new Map((await region.describeTasks(tasks.map((t) => t.ref))).map((t) => [t.ref, t]));
      pollErrors = 0;
      tasks = tasks.map((before) => {
        const now = fresh.get(before.ref) ?? before;
        if (before.phase !== "stopped" && now.phase === "stopped" && isFailedStop(now)) {
          event(`task ${now.taskId} stopped: ${[now.stopCode, now.stoppedReason, now.exitCode !== undefined ? `exit code ${now.exitCode}` : undefined].filter(Boolean).join("; ")}${now.log ? ` (log: ${now.log})` : ""}`);
        }
        return now;
      });
    } catch (err) {
      pollErrors++;
      delay = backoffDelay(pollErrors, { baseMs: timing.pollMs, maxMs: Math.max(timing.pollMs, 60_000), attempts: MAX_POLL_ERRORS });
      event(`DescribeTasks failed (${(err as Error).name}: ${(err as Error).message})${isThrottling(err) ? ", throttled" : ""}; next try in ${Math.round(delay / 1000)} s`);
      if (pollErrors >= MAX_POLL_ERRORS) {
        const message = `gave up watching after ${pollErrors} DescribeTasks errors in a row`;
        failures.push(message);
        await requestStop(tasks, message);
        break;
      }
    }
    progress.update(region.name, counts());
    const pending = tasks.filter((t) => t.phase === "pending");
    if (!startTimedOut && pending.length > 0 && deps.now() > startDeadline) {
      startTimedOut = true;
      const message = `${pending.length} task(s) did not start within ${Math.round(timing.startTimeoutMs / 1000)} s`;
      failures.push(message);
      await requestStop(pending, message);
    }
    if (!tasks.some((t) => t.phase !== "stopped")) break;
    await deps.sleep(delay, stopDeadline === undefined ? deps.abort.signal : undefined);
  }
  return { tasks, failures };
}

/** A task that stopped for any reason other than its worker finishing cleanly. */
export function isFailedStop(task: TaskSnapshot): boolean {
  return (task.exitCode !== undefined && task.exitCode !== 0) || (task.stopCode !== undefined && task.stopCode !== "EssentialContainerExited");
}

// The run loop, one piece of code for both backends: find the regions, upload the bundle, start
// every region's tasks at once, watch them, stop them on abort, then collect and report.
import { randomBytes } from "node:crypto";
import { mkdirSync } from "node:fs";
import path from "node:path";
import { describeVerdicts, writeFileAtomic } from "artillery-plugin-cable-report";
import type { Backend, Region, TaskSnapshot, Timing } from "./backend.js";
import { announce, decideBarrier, defaultMinReadyPct, goMarker, readyTaskIds, tasksNeeded } from "./barrier.js";
import { type Bundle, buildBundle } from "./bundle.js";
import { collectRun, type CollectResult } from "./collect.js";
import { FanoutInputError } from "./errors.js";
import type { Progress } from "./progress.js";
import { startHeartbeat } from "./heartbeat.js";
import { type BarrierRecord, RECORD_FILE, type RunRecord } from "./record.js";
import { judgeAbort, type AbortCondition } from "./live/abort.js";
import { LiveFeed } from "./live/feed.js";
import { formatFinal, LiveView } from "./live/view.js";
import { scrapeEvery, type ServerSample } from "./server-metrics.js";
import { type RegionControl, watchRegion } from "./region-watch.js";
import { checkSlicedPayloads, planPayloads } from "./payloads.js";
import { loadScenario, type Scenario } from "./scenario.js";
import { estimateRecord, guardCost, makePlan, planInput } from "./plan/launch.js";

type Json = Record<string, unknown>;

export interface RunOptions {
  scenarioFile: string;
  /** --bundle-root: the folder every file the scenario names must lie in (default: the scenario's project, bundle-root.ts). */
  bundleRoot?: string;
  regions: string[];
  count: number;
  outDir: string;
  overrides?: Json;
  target?: string;
  variables?: Json;
  /** Artillery's --insecure: `config.tls.rejectUnauthorized: false` in every task. */
  insecure?: boolean;
  environment?: string;
  spot: boolean;
  /** --spot-only: no fallback to FARGATE. */
  spotOnly?: boolean;
  cpu?: number;
  memory?: number;
  secretRefs: Record<string, string>;
  secretValues: Record<string, string>;
  maxDurationMs?: number;
  /** How far after the go marker the common start lies. */
  startDelayMs?: number;
  startTimeoutMs?: number;
  /** --min-ready: the share of all tasks (count × regions) that must be ready for the run to start; default by size (barrier.ts defaultMinReadyPct). */
  minReadyPct?: number;
  /** --ready-timeout: how long the barrier waits for them. */
  readyTimeoutMs?: number;
  /** --heartbeat-timeout: tasks stop themselves when the runner's heartbeat is this old. */
  heartbeatTimeoutMs?: number;
  /** --run-id: chosen by the caller instead of generated. */
  runId?: string;
  baseline?: string;
  regressionThreshold?: number;
  title?: string;
  /** Where the local backend keeps its store, recorded for `collect` and `stop`. */
  store?: string;
  /** --abort-on: stop every task once one of these holds on the merged live figures. */
  abortOn?: AbortCondition[];
  /** --server-metrics: the server's Prometheus endpoint, scraped while the run goes on and charted in the report. */
  serverMetricsUrl?: string;
  /** false: no live line per region and period (the capacity search prints its own progress). */
  liveLines?: boolean;
  /** --max-cost: refuse a run whose estimate is higher (dollars). */
  maxCostUsd?: number;
  /** --yes: start a run above the asking threshold without asking. */
  yes?: boolean;
  /**
   * "block" (default): print the plan and guard the cost; "quiet": neither (a comparison's or a
   * capacity search's later runs, once the first has been shown and allowed).
   */
  plan?: "block" | "quiet";
  /** How many runs like this one the command makes (a comparison's servers): the guard judges them all. */
  runsInAll?: number;
}

/** How often the live files are read, and the server scraped. */
export const LIVE_POLL_MS = 2_000;
export const SERVER_SCRAPE_MS = 5_000;

export interface RunDeps {
  backend: Backend;
  now: () => number;
  /** Resolves after `ms`, or early when `signal` aborts. */
  sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Created before the tasks start; `startAt` is known once the barrier lets the run go. */
  progress: (clock: { startAt: () => number | undefined; expectedMs: number | undefined }) => Progress | Promise<Progress>;
  log: (line: string) => void;
  /** Aborted by Ctrl-C; --max-duration aborts it too. */
  abort: AbortController;
  newRunId?: () => string;
  /** Handed the run's live feed once the run has an id (the capacity search judges its steps from it). */
  onFeed?: (feed: LiveFeed) => void;
  /** Asks the person at the terminal a yes/no question; absent when nobody can answer (CI, no TTY). */
  ask?: (question: string) => Promise<boolean>;
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
export function effectiveOverrides(options: Pick<RunOptions, "overrides" | "target" | "variables" | "insecure">): Json | undefined {
  const overrides: Json = { ...options.overrides };
  const config: Json = { ...(overrides.config as Json | undefined) };
  if (options.target) config.target = options.target;
  if (options.insecure) config.tls = { ...(config.tls as Json | undefined), rejectUnauthorized: false };
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
  const run = await prepareRun(options, deps);
  const { regions, timing, maxDurationMs } = run;
  // Written before any task starts, so a task never sees a run without one.
  // Several beats per --heartbeat-timeout, so one slow write never looks like a dead runner.
  const heartbeat = await startHeartbeat(regions, run.runId, Math.max(100, Math.min(timing.heartbeatMs, Math.floor(timing.heartbeatStaleMs / 4))), deps);
  const maxTimer = setTimeout(() => run.stop(`--max-duration ${Math.round(maxDurationMs / 1000)} s reached`), maxDurationMs);
  const progress = await deps.progress({ startAt: () => run.record.startAt ?? undefined, expectedMs: run.scenario.durationMs });
  const live = followLive(run, options, deps, progress);
  const scraping = new AbortController();
  const serverSamples: Promise<ServerSample[]> = options.serverMetricsUrl
    ? scrapeEvery(options.serverMetricsUrl, SERVER_SCRAPE_MS, scraping.signal, { sleep: deps.sleep, log: (line) => progress.event(line) })
    : Promise.resolve([]);
  let tasks: Awaited<ReturnType<typeof runTasks>> = { snapshots: new Map(), regionFailures: new Map() };
  try {
    tasks = await runTasks(run, options, deps, progress);
  } finally {
    clearTimeout(maxTimer);
    heartbeat.stop();
    scraping.abort();
    await live.stop();
    progress.stop();
  }

  deps.log(`collecting results into ${path.relative(process.cwd(), run.runDir) || "."}`);
  const collected = await collectRun({
    runDir: run.runDir,
    record: run.record,
    regions,
    ...tasks,
    serverSamples: await serverSamples,
    baseline: options.baseline,
    regressionThreshold: options.regressionThreshold,
    title: options.title,
    log: deps.log,
  });
  // The answers that need time, on the console too.
  for (const line of collected.merged ? describeVerdicts(collected.merged) : []) deps.log(line);
  return { ...collected, runId: run.runId, runDir: run.runDir };
}

/** A run under way: its record on disk, its regions and limits, and why it was stopped early, if it was. */
class RunInProgress {
  abortReason = "interrupted (signal)";

  constructor(
    readonly runId: string,
    readonly runDir: string,
    readonly record: RunRecord,
    readonly regions: Region[],
    readonly scenario: ReturnType<typeof loadScenario>,
    readonly timing: Timing,
    readonly maxDurationMs: number,
    /** Every task gets its slice of the sequence payloads (CABLE_SLICE). */
    readonly sliced: boolean,
    private readonly abort: AbortController,
  ) {
    mkdirSync(runDir, { recursive: true });
    this.save();
  }

  save(): void {
    writeFileAtomic(path.join(this.runDir, RECORD_FILE), `${JSON.stringify(this.record, null, 2)}\n`);
  }

  /** Stops every task (through the run's abort signal), for `reason`. */
  stop(reason: string): void {
    this.abortReason = reason;
    this.abort.abort();
  }

  get stopped(): boolean {
    return this.abort.signal.aborted;
  }

  get signal(): AbortSignal {
    return this.abort.signal;
  }
}

/** What leaves this machine, so that nobody has to guess: every file, as its path under the bundle root. */
function bundledLine(scenario: Pick<Scenario, "root">, bundle: Pick<Bundle, "files">): string {
  const shown = path.relative(process.cwd(), scenario.root.dir) || ".";
  return `bundled ${bundle.files.length} file(s) from ${shown}: ${bundle.files.map((f) => path.relative(scenario.root.dir, f.source).split(path.sep).join("/")).join(", ")}`;
}

/** The backend's timing, with the run's flags over it. */
export function runTiming(backend: Pick<Backend, "timing">, options: Pick<RunOptions, "startDelayMs" | "startTimeoutMs" | "readyTimeoutMs" | "heartbeatTimeoutMs">): Timing {
  return {
    ...backend.timing,
    ...(options.startDelayMs !== undefined ? { startDelayMs: options.startDelayMs } : {}),
    ...(options.startTimeoutMs !== undefined ? { startTimeoutMs: options.startTimeoutMs } : {}),
    ...(options.readyTimeoutMs !== undefined ? { readyTimeoutMs: options.readyTimeoutMs } : {}),
    ...(options.heartbeatTimeoutMs !== undefined ? { heartbeatStaleMs: options.heartbeatTimeoutMs } : {}),
  };
}

/** --max-duration, or its default: the ready wait, the lead, the phases (an hour when unknown) and a margin. */
export function defaultMaxDuration(options: Pick<RunOptions, "maxDurationMs">, timing: Timing, scenario: Pick<Scenario, "durationMs">): number {
  return options.maxDurationMs ?? timing.readyTimeoutMs + timing.startDelayMs + (scenario.durationMs ?? 3_600_000) + timing.marginMs;
}

/** Everything before the first task: regions found, nothing missing in any, the bundle in every region, the record written. */
async function prepareRun(options: RunOptions, deps: RunDeps): Promise<RunInProgress> {
  const { backend } = deps;
  const timing = runTiming(backend, options);
  const overrides = effectiveOverrides(options);
  const scenario = loadScenario(options.scenarioFile, overrides, options.bundleRoot);
  const payloads = planPayloads(scenario, options.environment);
  const payloadWarnings = [...payloads.notes, ...checkSlicedPayloads(payloads.sliced, { count: options.count, regions: options.regions.length })];
  const regions = await openRegions(backend, options.regions);
  const maxDurationMs = defaultMaxDuration(options, timing, scenario);

  // Nothing starts while a region lacks a secret, the quota or the addresses for the run, or before
  // the run's cost has been said (and allowed, where it is high).
  const preflight = { count: options.count, spot: options.spot, spotOnly: options.spotOnly, cpu: options.cpu, memory: options.memory, secretRefs: options.secretRefs };
  const checked = await Promise.all(regions.map((r) => r.preflight(preflight)));
  const facts = new Map(regions.map((r, i) => [r.name, checked[i].facts]));
  const launch = makePlan(planInput(options, backend.kind, scenario, overrides, { maxDurationMs, startDelayMs: timing.startDelayMs }, facts));
  const quiet = options.plan === "quiet";
  if (!quiet) for (const line of launch.lines) deps.log(line);
  for (const line of checked.flatMap((c) => c.warnings)) deps.log(`warning: ${line}`);
  const problems = checked.flatMap((c) => c.problems);
  if (problems.length > 0) throw new FanoutInputError(`not starting any task:\n${problems.map((p) => `  ${p}`).join("\n")}`);
  if (!quiet) await guardCost(launch, { maxCostUsd: options.maxCostUsd, yes: options.yes, ask: deps.ask });

  const runId = options.runId ?? (deps.newRunId ?? newRunId)();
  const bundle = buildBundle(scenario, {
    overrides,
    environment: options.environment,
    sequencePayloads: payloads.sliced,
    // A ready task waits for the go marker as long as the runner may take to decide, plus the lead and a minute.
    barrier: { waitMs: timing.readyTimeoutMs + timing.startDelayMs + 60_000, pollMs: timing.goPollMs },
    heartbeat: { staleMs: timing.heartbeatStaleMs, pollMs: Math.max(250, Math.min(15_000, Math.floor(timing.heartbeatStaleMs / 6))) },
    maxDurationMs,
  });
  deps.log(`run ${runId}: ${path.relative(process.cwd(), scenario.file)} × ${options.count} task(s) in ${options.regions.join(", ")} (${backend.kind})`);
  deps.log(bundledLine(scenario, bundle));
  for (const line of payloadWarnings) deps.log(`warning: ${line}`);
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
    secrets: Object.keys({ ...options.secretRefs, ...options.secretValues }).sort(),
    startAt: null,
    started: {},
    tasks: [],
    regionFailures: {},
    notices: {},
    ...(launch.cost ? { estimate: estimateRecord(launch) } : {}),
  };
  return new RunInProgress(runId, path.resolve(options.outDir, runId), record, regions, scenario, timing, maxDurationMs, payloads.sliced.length > 0, deps.abort);
}

/**
 * What the tasks stream while they run: a line per region and period, and --abort-on's verdict on
 * the merged figures. `stop` prints the whole run per region, from the last of the live files.
 */
function followLive(run: RunInProgress, options: RunOptions, deps: RunDeps, progress: Progress): { stop: () => Promise<void> } {
  // Once the barrier has gone, only a region's ready tasks send periods: one that missed it, or never
  // started, holds no line back.
  const expected = (region: string) => run.record.barrier?.readyByRegion?.[region] ?? options.count;
  const feed = new LiveFeed(
    run.runId,
    new Map(run.regions.map((r) => [r.name, r.store])),
    { now: deps.now, sleep: deps.sleep, warn: (line) => progress.event(line) },
    { expected, phaseCount: run.scenario.phaseCount, pollMs: LIVE_POLL_MS },
  ).start();
  deps.onFeed?.(feed);
  const view = options.liveLines === false ? undefined : new LiveView(expected);
  const offFeed = feed.onUpdate((snapshot) => {
    const now = deps.now();
    for (const line of view?.lines(snapshot, now) ?? []) progress.event(line);
    if (!options.abortOn?.length || run.record.aborted || run.stopped) return;
    const firstPeriod = Math.min(...[...snapshot.values()].map((region) => region.periods()[0]?.period ?? Infinity));
    const verdict = judgeAbort(options.abortOn, snapshot, expected, now, Number.isFinite(firstPeriod) ? firstPeriod : now);
    if (!verdict) return;
    run.record.aborted = verdict;
    run.save();
    const reason = `--abort-on ${verdict.condition}: ${verdict.figure}`;
    progress.event(`⛔ ${reason}; stopping every task`);
    run.stop(reason);
  });
  return {
    async stop() {
      offFeed();
      feed.stop();
      if (!view) return;
      const last = await feed.refresh().catch(() => feed.snapshot());
      // Every task has stopped: no period it has not sent is coming.
      for (const line of view.lines(last, Infinity)) progress.event(line);
      for (const region of last.values()) if (region.tasks.size > 0) progress.event(formatFinal(region));
    },
  };
}

/** Every region's tasks started and watched to their end, behind one ready barrier; what each region saw. */
async function runTasks(run: RunInProgress, options: RunOptions, deps: RunDeps, progress: Progress): Promise<{ snapshots: Map<string, TaskSnapshot[]>; regionFailures: Map<string, string[]> }> {
  const { record, regions, timing } = run;
  const snapshots = new Map<string, TaskSnapshot[]>();
  const regionFailures = new Map<string, string[]>();
  const fail = (region: string, failures: string[]) => regionFailures.set(region, [...(regionFailures.get(region) ?? []), ...failures]);
  const controls = new Map<string, RegionControl>();
  const abortReason = () => run.abortReason;
  const watches = regions.map(async (region, r) => {
    // Slices are numbered region by region, in the order given, then task by task within each.
    const slices = run.sliced ? { slices: { first: r * options.count, total: options.count * regions.length } } : {};
    const watched = await watchRegion(region, {
      runId: run.runId,
      count: options.count,
      startOptions: { spot: options.spot, spotOnly: options.spotOnly, cpu: options.cpu, memory: options.memory, secretRefs: options.secretRefs, secretValues: options.secretValues, ...slices, abort: run.signal },
      timing,
      deps,
      progress,
      abortReason,
      onStarted: (refs) => {
        record.started[region.name] = refs;
        run.save();
      },
      onControl: (control) => controls.set(region.name, control),
    });
    snapshots.set(region.name, watched.tasks);
    if (watched.failures.length > 0) fail(region.name, watched.failures);
    if (watched.notices.length > 0) {
      record.notices[region.name] = watched.notices;
      run.save();
    }
  });
  const barrier = runBarrier({
    runId: run.runId,
    regions,
    controls,
    count: options.count,
    minReadyPct: options.minReadyPct ?? defaultMinReadyPct(options.count * regions.length),
    timing,
    deps,
    progress,
    abortReason,
    onGo: (startAt) => {
      record.startAt = startAt;
      run.save();
    },
  }).then((outcome) => {
    record.barrier = outcome;
    run.save();
    if (outcome.outcome === "failed") {
      for (const region of regions) fail(region.name, [`the run did not start: ${outcome.reason}`]);
      run.stop(`ready barrier: ${outcome.reason}`);
    }
  });
  await Promise.all([...watches, barrier]);
  return { snapshots, regionFailures };
}

interface BarrierInput {
  runId: string;
  regions: Region[];
  /** Filled in by each region's watch once its RunTask calls have returned. */
  controls: Map<string, RegionControl>;
  count: number;
  minReadyPct: number;
  timing: Timing;
  deps: RunDeps;
  progress: Progress;
  abortReason: () => string;
  onGo: (startAt: number) => void;
}

/**
 * Waits for the tasks' ready markers, then writes the go marker with the common start (the store's
 * clock + the start delay) and stops the tasks that were not ready. On abort, or when too few tasks
 * can be ready in time, it writes a cancelling go marker instead, so waiting tasks exit at once.
 */
export async function runBarrier(input: BarrierInput): Promise<BarrierRecord> {
  const { regions, controls, timing, deps, runId } = input;
  const expected = input.count * regions.length;
  const needed = tasksNeeded(expected, input.minReadyPct);
  const began = deps.now();
  const deadline = began + timing.readyTimeoutMs;
  const ready = new Map<string, string[]>();
  const base = { minReadyPct: input.minReadyPct, readyTimeoutMs: timing.readyTimeoutMs, expected, missed: {} };
  const count = () => [...ready.values()].reduce((n, ids) => n + ids.length, 0);
  let lastReported = -1;
  const cancel = async (outcome: "failed" | "cancelled", reason: string): Promise<BarrierRecord> => {
    for (const line of await announce(regions, runId, { cancelled: reason })) input.progress.event(line);
    return { ...base, outcome, ready: count(), waitedMs: deps.now() - began, reason };
  };
  for (;;) {
    if (deps.abort.signal.aborted) return cancel("cancelled", input.abortReason());
    await Promise.all(
      regions.map(async (region) => {
        const started = new Set((controls.get(region.name)?.tasks() ?? []).map((t) => t.taskId));
        try {
          // Only tasks of this run's watch count (a stale marker of a reused local task id does not).
          ready.set(region.name, (await readyTaskIds(region, runId, region.name)).filter((id) => started.has(id)));
        } catch (err) {
          input.progress.event(`${region.name}: listing ready markers failed: ${(err as Error).message}`);
        }
      }),
    );
    const all = [...controls].flatMap(([name, c]) => c.tasks().map((t) => ({ region: name, task: t })));
    const pending = all.filter(({ region, task }) => task.phase !== "stopped" && !(ready.get(region) ?? []).includes(task.taskId)).length;
    const decision = decideBarrier({ expected, needed, ready: count(), pending, allStarted: controls.size === regions.length, now: deps.now(), deadline });
    if (count() !== lastReported) {
      lastReported = count();
      input.progress.event(`ready: ${lastReported} of ${expected} task(s) (${needed} needed)`);
    }
    if (decision.kind === "fail") return cancel("failed", decision.reason);
    if (decision.kind === "go") {
      let now: number;
      try {
        now = await regions[0].serverTime();
      } catch (err) {
        now = deps.now();
        input.progress.event(`reading the store's clock failed (${(err as Error).message}); using this machine's`);
      }
      const startAt = now + timing.startDelayMs;
      for (const line of await announce(regions, runId, goMarker(startAt, ready))) input.progress.event(line);
      input.onGo(startAt);
      input.progress.event(`go: ${count()} of ${expected} task(s) ready after ${Math.round((deps.now() - began) / 1000)} s; load starts at ${new Date(startAt).toISOString()}`);
      const missed: Record<string, string[]> = {};
      await Promise.all(
        [...controls].map(async ([name, control]) => {
          const late = control.tasks().filter((t) => !(ready.get(name) ?? []).includes(t.taskId));
          if (late.length === 0) return;
          missed[name] = late.map((t) => t.taskId);
          input.progress.event(`${name}: ${late.length} task(s) missed the ready barrier and run no load: ${missed[name].join(", ")}`);
          await control.stop(late.map((t) => t.ref), "missed the ready barrier");
        }),
      );
      const readyByRegion = Object.fromEntries(regions.map((r) => [r.name, ready.get(r.name)?.length ?? 0]));
      return { ...base, outcome: "go", ready: count(), waitedMs: deps.now() - began, missed, readyByRegion };
    }
    await deps.sleep(Math.min(2 * timing.goPollMs, Math.max(0, deadline - deps.now()) || timing.goPollMs), deps.abort.signal);
  }
}


// The run loop, one piece of code for both backends: find the regions, upload the bundle, start
// every region's tasks at once, watch them, stop them on abort, then collect and report.
import { randomBytes } from "node:crypto";
import { mkdirSync } from "node:fs";
import path from "node:path";
import { shownPath } from "../shown-path.js";
import { liveRegionPrefix, type RunnerStop, runnerStopSchema } from "cable-worker/contract";
import { storeRecord } from "../detach/store-record.js";
import { describeVerdicts, judgeBaseline, loadBaseline, redactTarget, writeFileAtomic } from "artillery-plugin-cable-report";
import type { Backend, Region, TaskSnapshot } from "../backend.js";
import { FanoutInputError } from "../errors.js";
import { checkSlicedPayloads, planPayloads } from "../payloads.js";
import { estimateRecord, guardCost, makePlan, planInput } from "../plan/launch.js";
import type { Progress } from "../progress.js";
import { effectiveConfig, loadScenario, type Scenario } from "../scenario.js";
import { scrapeEvery, toServerSeries, type ServerSample } from "../server-metrics.js";
import { defaultMinReadyPct, runBarrier } from "./barrier.js";
import { type Bundle, buildBundle } from "./bundle.js";
import { collectRun } from "./collect.js";
import { checkHistory, historyFacts, historyRecordFacts, resolveLocation } from "./history.js";
import { followLive } from "./follow-live.js";
import { startHeartbeat } from "./heartbeat.js";
import { RECORD_FILE, type RunRecord } from "./record.js";
import { type RegionControl, watchRegion } from "./region-watch.js";
import { effectiveOverrides, type RunDeps, type RunOptions, type RunResult } from "./run-options.js";
import { planTiming, type RunTiming } from "./timing.js";

/** How often the server's metrics are scraped (--server-metrics). */
const SERVER_SCRAPE_MS = 5_000;

/** Sortable and unique, and fits ECS `startedBy` (36 characters): 20250101-120000-a1b2c3. */
export function newRunId(now: number = Date.now()): string {
  const stamp = new Date(now).toISOString().replace(/[-:]/g, "").replace("T", "-").slice(0, 15);
  return `${stamp}-${randomBytes(3).toString("hex")}`;
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
  const { regions, timing } = run;
  const { maxDurationMs } = timing;
  // Written before any task starts, so a task never sees a run without one; a detached run's tasks watch none.
  const heartbeat = options.detach ? undefined : await startHeartbeat(regions, run.runId, timing.beatEveryMs, deps);
  const maxTimer = setTimeout(() => run.stop(`--max-duration ${Math.round(maxDurationMs / 1000)} s reached`, { by: "max-duration", limitMs: maxDurationMs }), maxDurationMs);
  // The live page names the phases and the failure line the tasks run with (after -e and --overrides).
  const config = effectiveConfig(run.scenario, effectiveOverrides(options), options.environment);
  const scraped: ServerSample[] = [];
  const live = followLive(run, { ...options, config, server: () => (scraped.length > 0 ? toServerSeries(scraped) : null) }, deps, await deps.progress({ startAt: () => run.record.startAt ?? undefined, expectedMs: run.scenario.durationMs }));
  const progress = live.progress;
  const scraping = new AbortController();
  const serverSamples: Promise<ServerSample[]> = options.serverMetricsUrl
    ? scrapeEvery(options.serverMetricsUrl, SERVER_SCRAPE_MS, scraping.signal, { sleep: deps.sleep, log: (line) => progress.event(line) }, scraped)
    : Promise.resolve([]);
  let tasks: Awaited<ReturnType<typeof runTasks>> = { snapshots: new Map(), regionFailures: new Map() };
  try {
    tasks = await runTasks(run, options, deps, progress);
  } finally {
    clearTimeout(maxTimer);
    heartbeat?.stop();
    scraping.abort();
    await live.stop();
    progress.stop();
  }
  if (run.record.detached && !run.stopped) {
    await live.final(undefined);
    return leaveRun(run, options, deps);
  }

  deps.log(`collecting results into ${shownPath(run.runDir, options.outDir)}`);
  let collected: Awaited<ReturnType<typeof collectRun>> | undefined;
  try {
    collected = await collectRun({
      runDir: run.runDir,
      record: run.record,
      regions,
      ...tasks,
      serverSamples: await serverSamples,
      baseline: options.baseline,
      regressionThreshold: options.regressionThreshold,
      baselineAny: options.baselineAny,
      title: options.title,
      log: deps.log,
    });
  } finally {
    // The live page becomes the report (or closes without one when collecting failed).
    await live.final(collected?.htmlFile);
  }
  // The answers that need time, on the console too.
  for (const line of collected.merged ? describeVerdicts(collected.merged) : []) deps.log(line);
  return { ...collected, runId: run.runId, runDir: run.runDir };
}

/** The flags another command needs to find this run from anywhere: the store directory, or the regions. */
export function runLocator(record: Pick<RunRecord, "backend" | "store" | "regions">): string {
  return record.backend === "local" ? `--local${record.store ? ` --store ${record.store}` : ""}` : `--regions ${record.regions.join(",")}`;
}

/** --detach, the go given: the runner leaves; what to do next is said. */
function leaveRun(run: RunInProgress, options: RunOptions, deps: RunDeps): RunResult {
  const { runId, record } = run;
  const where = runLocator(record);
  const out = path.resolve(options.outDir) === path.resolve("results") ? "" : ` --out ${options.outDir}`;
  deps.log(`run ${runId} goes on without this runner: no heartbeat; every task stops by itself ${Math.round(run.timing.maxDurationMs / 1000)} s after it started at the latest (--max-duration)`);
  deps.log(`  cable-fanout attach ${runId} ${where}${out}    follow it live and write the report at its end (from any machine with access)`);
  deps.log(`  cable-fanout collect ${runId} ${where}${out}   the report, once it has ended`);
  deps.log(`  cable-fanout stop ${runId} ${where}${out}      stop it now`);
  deps.log(`  cable-fanout status ${where}    the runs in progress`);
  return { runId, runDir: run.runDir, detached: true, exitCode: 0, tasks: [], failedRegions: [], regressions: [] };
}

/** A run under way: its record on disk, its regions and limits, and why it was stopped early, if it was. */
class RunInProgress {
  private stopReason: string | undefined;
  private stoppedBy: RunnerStop | undefined;

  constructor(
    readonly runId: string,
    readonly runDir: string,
    readonly record: RunRecord,
    readonly regions: Region[],
    readonly scenario: ReturnType<typeof loadScenario>,
    readonly timing: RunTiming,
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
  stop(reason: string, why: RunnerStop): void {
    this.stopReason = reason;
    this.stoppedBy = why;
    this.abort.abort();
  }

  /** Why the run was stopped, in words: the progress lines' and every StopTask's reason. */
  get abortReason(): string {
    return this.stopReason ?? (this.abortedBy().by === "capacity-stop" ? "the capacity search has its answer" : "interrupted (signal)");
  }

  /**
   * Why the run was stopped, for the tasks' ends: its own stop, else what aborted its signal (the
   * capacity search gives its stop as the abort's reason), else an interrupt (Ctrl-C).
   */
  abortedBy(): RunnerStop {
    return this.stoppedBy ?? runnerStopSchema.safeParse(this.abort.signal.reason).data ?? { by: "interrupt" };
  }

  /** The runner asks these tasks to stop: the first reason for each is kept. */
  stopping(region: string, taskIds: string[], why: RunnerStop): void {
    const stops = ((this.record.stops ??= {})[region] ??= {});
    for (const id of taskIds) stops[id] ??= why;
    this.save();
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

/** Everything before the first task: regions found, nothing missing in any, the bundle in every region, the record written. */
async function prepareRun(options: RunOptions, deps: RunDeps): Promise<RunInProgress> {
  const { backend } = deps;
  const overrides = effectiveOverrides(options);
  const scenario = loadScenario(options.scenarioFile, overrides, options.bundleRoot);
  const timing = planTiming(backend.timing, options, scenario.durationMs);
  const payloads = planPayloads(scenario, options.environment);
  const payloadWarnings = [...payloads.notes, ...checkSlicedPayloads(payloads.sliced, { count: options.count, regions: options.regions.length })];
  const target = redactTarget(effectiveConfig(scenario, overrides, options.environment).target);
  checkBaseline(options, scenario, target);
  const regions = await openRegions(backend, options.regions);
  const history = options.history && resolveLocation(options.history, regions);
  if (history) await checkHistory(history);

  // Nothing starts while a region lacks a secret, the quota or the addresses for the run, or before
  // the run's cost has been said (and allowed, where it is high).
  const preflight = { count: options.count, spot: options.spot, spotOnly: options.spotOnly, cpu: options.cpu, memory: options.memory, secretRefs: options.secretRefs };
  const checked = await Promise.all(regions.map((r) => r.preflight(preflight)));
  const facts = new Map(regions.map((r, i) => [r.name, checked[i].facts]));
  const launch = makePlan(planInput(options, backend.kind, scenario, overrides, { maxDurationMs: timing.maxDurationMs, startDelayMs: timing.startDelayMs }, facts));
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
    ...timing.task,
    // A detached run's tasks watch no heartbeat: nobody beats once the runner has left; --max-duration bounds them.
    ...(options.detach ? { heartbeat: undefined } : {}),
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
    createdAt: deps.now(),
    ...(options.store ? { store: path.resolve(options.store) } : {}),
    scenario: path.relative(process.cwd(), scenario.file),
    target,
    regions: options.regions,
    count: options.count,
    secrets: Object.keys({ ...options.secretRefs, ...options.secretValues }).sort(),
    startAt: null,
    started: {},
    stops: {},
    tasks: [],
    regionFailures: {},
    notices: {},
    ...(launch.cost ? { estimate: estimateRecord(launch) } : {}),
    ...(history ? { history: historyRecordFacts(history, historyFacts({ scenarioFile: scenario.file, projectDir: scenario.root.dir, overrides, environment: options.environment, count: options.count })) } : {}),
  };
  return new RunInProgress(runId, path.resolve(options.outDir, runId), record, regions, scenario, timing, payloads.sliced.length > 0, deps.abort);
}

/**
 * The baseline, read before any task starts (a missing or broken file is said now, not after the
 * run), and refused now when the gate would refuse it after the run: another scenario (the test's
 * name, or no scenario name shared) or another target URL. The server's own name is known only
 * after the run (collect.ts).
 */
function checkBaseline(options: Pick<RunOptions, "baseline" | "regressionThreshold" | "baselineAny">, scenario: Pick<Scenario, "file" | "scenarios">, target: string | null): void {
  if (options.baseline === undefined) return;
  const baseline = loadBaseline(options.baseline);
  // The sidecar's names for them (cable-report plugin.ts): a scenario without a name is its index.
  const scenarios = scenario.scenarios.map((s, i) => {
    const name = (s as { name?: unknown } | null)?.name;
    return typeof name === "string" ? name : String(i);
  });
  // Artillery names the test after the script's file (the tasks run it under its own name).
  const verdict = judgeBaseline({ test: { name: path.basename(scenario.file), scenarios }, target: { url: target, server: null } }, baseline, {
    gate: options.regressionThreshold !== undefined,
    any: options.baselineAny === true,
  });
  if (verdict.refused) throw new FanoutInputError(`not starting any task: ${verdict.refused}`);
}

/** Every region's tasks started and watched to their end, behind one ready barrier; what each region saw. */
async function runTasks(run: RunInProgress, options: RunOptions, deps: RunDeps, progress: Progress): Promise<{ snapshots: Map<string, TaskSnapshot[]>; regionFailures: Map<string, string[]> }> {
  const { record, regions, timing } = run;
  const snapshots = new Map<string, TaskSnapshot[]>();
  const regionFailures = new Map<string, string[]>();
  const fail = (region: string, failures: string[]) => regionFailures.set(region, [...(regionFailures.get(region) ?? []), ...failures]);
  const controls = new Map<string, RegionControl>();
  const abortReason = () => run.abortReason;
  // --detach: aborted at the go, which ends every region's watch and leaves the tasks running.
  const release = new AbortController();
  const watches = regions.map(async (region, r) => {
    // Slices are numbered region by region, in the order given, then task by task within each.
    const slices = run.sliced ? { slices: { first: r * options.count, total: options.count * regions.length } } : {};
    const watched = await watchRegion(region, {
      runId: run.runId,
      count: options.count,
      startOptions: { spot: options.spot, spotOnly: options.spotOnly, cpu: options.cpu, memory: options.memory, secretRefs: options.secretRefs, secretValues: options.secretValues, ...slices, abort: run.signal, ...(options.detach ? { detached: true } : {}) },
      release: release.signal,
      timing,
      deps,
      progress,
      abortReason,
      abortedBy: () => run.abortedBy(),
      onStopping: (taskIds, why) => run.stopping(region.name, taskIds, why),
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
  }).then(async (outcome) => {
    record.barrier = outcome;
    run.save();
    if (outcome.outcome === "go" && options.detach && !run.stopped) {
      record.detached = {
        at: deps.now(),
        maxDurationMs: timing.maxDurationMs,
        ...(run.scenario.durationMs !== undefined ? { phasesMs: run.scenario.durationMs } : {}),
        ...(run.scenario.phaseCount !== undefined ? { phaseCount: run.scenario.phaseCount } : {}),
        live: Object.fromEntries(regions.map((r) => [r.name, `${r.location} ${liveRegionPrefix(run.runId, r.name)}`])),
        page: pageFacts(run.scenario, effectiveConfig(run.scenario, effectiveOverrides(options), options.environment)),
      };
      run.save();
      const failed = await storeRecord(regions, record);
      for (const line of failed) progress.event(line);
      if (failed.length === regions.length) progress.event(`the run record is in ${path.join(run.runDir, RECORD_FILE)} only: attach and collect from this machine`);
      if (run.stopped) {
        // Stopped (Ctrl-C) while the record was being stored: the run is not left going, and its record says so.
        delete record.detached;
        run.save();
        await storeRecord(regions, record);
      } else {
        release.abort();
      }
    }
    if (outcome.outcome === "failed") {
      for (const region of regions) fail(region.name, [`the run did not start: ${outcome.reason}`]);
      run.stop(`ready barrier: ${outcome.reason}`, { by: "barrier-failed" });
    }
  });
  await Promise.all([...watches, barrier]);
  return { snapshots, regionFailures };
}

/** What a detached run's record keeps for `attach --live`'s page (record.ts `detached.page`). */
function pageFacts(scenario: Scenario, config: Record<string, unknown>): NonNullable<RunRecord["detached"]>["page"] {
  const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
  return {
    title: path.basename(scenario.file),
    phases: Array.isArray(config.phases) ? config.phases.filter(isRecord).slice(0, 1_000) : [],
    cable: isRecord(config.cable) ? { maxFailedUsers: config.cable.maxFailedUsers, timeout: config.cable.timeout } : {},
    scenarios: scenario.scenarios.map((s, i) => (isRecord(s) && typeof s.name === "string" ? s.name.slice(0, 200) : String(i))).slice(0, 1_000),
  };
}

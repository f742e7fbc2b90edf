// `cable-fanout capacity`: the stair, run through the fan-out's own run loop (the same bundle,
// backends, task worker and barrier as `run`). One run per segment: the stair climbs in one run,
// its tasks' probe plugin streams every metrics period into the store, and this loop judges each
// hold as soon as its periods are in. A breach ends that run and repeats the level in a fresh one;
// a repeat that holds resumes the stair above it; the answer ends the search. By message rate
// (`vary: "rate"`), every level is a run of its own (plan.ts, planRateLevel).
import { mkdirSync } from "node:fs";
import path from "node:path";
import { type Store, CAPACITY_PLUGIN } from "cable-worker/contract";
import { writeFileAtomic, type MergedResults } from "artillery-plugin-cable-report";
import type { Backend } from "../backend.js";
import { newRunId, runFanout, type RunDeps, type RunOptions } from "../runner.js";
import { stopKey, type LiveFeed, type LiveSnapshot } from "../live/feed.js";
import { holdSoFar, measureRegion, taskHasStep, taskWindows, type RegionStep } from "./measure.js";
import { levels, planRateLevel, planSegment, type Axis, type PlannedStep, type StairOptions } from "./plan.js";
import { renderCapacityMarkdown } from "./report.js";
import { buildAnswer, decideNext, headline, judgeStep, markUnrecovered, MAX_ATTEMPTS, refineLevel, type Answer, type Attempt, type Next, type StepResult } from "./search.js";
import { redactUrl, scrape, summarizeServer, type ServerSample } from "../server-metrics.js";
import { statOf, type Slo } from "../slo.js";

type Json = Record<string, unknown>;

export interface CapacityOptions extends Omit<RunOptions, "maxDurationMs" | "baseline" | "regressionThreshold" | "title" | "outDir"> {
  outDir: string;
  slos: Slo[];
  stair: StairOptions;
  /** What the stair steps (default users). By rate, the levels are messages a second from `users` users. */
  vary?: Axis;
  /** By rate: the users held at every level, all regions together. */
  users?: number;
  /** After a confirmed breach, search between the last level held and the first that broke, down to this resolution. */
  refine?: number;
  minCapacity?: number;
  /** A Prometheus text endpoint of the server, scraped during the search (`--server-metrics`). */
  serverMetricsUrl?: string;
}

export interface CapacityDeps {
  backend: Backend;
  /** The store the region's tasks write their live periods to (a directory locally, the region's bucket on AWS). */
  liveStore: (region: string) => Store;
  now: () => number;
  sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  log: (line: string) => void;
  /** Ctrl-C: ends the search at once, with what was judged so far. */
  abort: AbortController;
  progress: RunDeps["progress"];
}

export interface CapacityResult {
  answer: Answer;
  searchDir: string;
  jsonFile: string;
  markdownFile: string;
  exitCode: number;
  runs: SegmentRecord[];
}

export interface SegmentRecord {
  runId: string;
  attempt: Attempt;
  /** The levels the run planned (by rate, one). */
  levels: number[];
  /** Users every task started and ended in that run, from its ended.live (every user ends once). */
  users: { created: number; completed: number; failed: number } | null;
  stoppedEarly: boolean;
}

/** Capacity search exit codes, beside `run`'s (EXIT in collect.ts). */
export const CAPACITY_EXIT = { ok: 0, belowMinimum: 1, usage: 2, internal: 3, incomplete: 4, generatorBound: 6 } as const;

const POLL_MS = 2_000;
/** Levels --refine tries at most (a bisection of 200 levels' worth of resolutions needs 8). */
const MAX_REFINE_ROUNDS = 20;
/** How long after a hold's end its periods may take to arrive before the step is judged with what is there. */
const LATE_PERIOD_MS = 45_000;
/** How long the users have to end after the stop (beyond a climb and a hold) before the run is ended anyway. */
const END_GRACE_MS = 45_000;

/**
 * The overrides of one segment's run: the stair's phases, and the probe plugin by name only. The
 * probe ships with the worker (cable-worker's artillery-plugin-cable-capacity-probe), which puts its
 * own directory on ARTILLERY_PLUGIN_PATH: no path of this machine goes to a task.
 */
export function segmentOverrides(base: Json | undefined, phases: Json[], endAfterS: number, segmentVariables: Json = {}): Json {
  const config = { ...((base?.config as Json | undefined) ?? {}) };
  const plugins = { ...((config.plugins as Json | undefined) ?? {}), [CAPACITY_PLUGIN]: { endAfterS } };
  // A user stays at most the stair's length and a margin, even if the stop never reached it.
  // The segment's own variables (by rate: capacity_users, capacity_rate) win over the user's.
  const variables = { ...((config.variables as Json | undefined) ?? {}), ...segmentVariables, capacity_max_s: endAfterS + 120 };
  return { ...base, config: { ...config, phases, plugins, variables } };
}

export async function runCapacity(options: CapacityOptions, deps: CapacityDeps): Promise<CapacityResult> {
  const searchId = newRunId(deps.now());
  const searchDir = path.resolve(options.outDir, searchId);
  mkdirSync(searchDir, { recursive: true });
  const tasks = options.regions.length * options.count;
  const allLevels = levels(options.stair);
  const byRate = options.vary === "rate";
  if (byRate && options.users === undefined) throw new Error("a search by rate needs its users");
  const unit = byRate ? "msg/s" : "users";
  const regionShare = (level: number) => level / options.regions.length;
  deps.log(
    `capacity search ${searchId}: levels ${allLevels.join(", ")}${byRate ? ` msg/s from ${options.users} users` : ""} (${tasks} task(s)), hold ${options.stair.holdS} s, SLO ${options.slos.map((s) => s.text).join(" and ")}`,
  );

  const steps: StepResult[] = [];
  const runs: SegmentRecord[] = [];
  let segment: { levels: number[]; attempt: Attempt } | null = { levels: allLevels, attempt: "stair" };
  while (segment && !deps.abort.signal.aborted) {
    const outcome = await runSegment(segment.levels, segment.attempt);
    runs.push(outcome.record);
    let next: Next = outcome.next;
    // By rate, each level is a run of its own: climbing on is a new run at the next level.
    if (byRate && next.kind === "continue") next = { kind: "resume", levels: allLevels.filter((l) => l > outcome.record.levels[0]) };
    segment = next.kind === "repeat" ? { levels: [next.level], attempt: "repeat" } : next.kind === "resume" ? { levels: next.levels, attempt: "stair" } : null;
  }

  // --refine: bisect between the most held and the first confirmed breach down to the resolution.
  // Each level tried is a fresh run from zero, judged as any other: a breach there counts once a
  // repeat confirms it. A level that gives no verdict (generator-bound, no data) ends the refining.
  if (options.refine !== undefined) {
    const tried = new Set<number>();
    let unrecovered = false;
    for (let round = 0; round < MAX_REFINE_ROUNDS && !unrecovered && !deps.abort.signal.aborted; round++) {
      const sofar = buildAnswer(steps, options.stair.max, "", byRate ? "rate" : "users");
      if (sofar.held === null || sofar.firstFailing === null) break;
      const level = refineLevel(sofar.held, sofar.firstFailing, options.refine);
      if (level === null || tried.has(level)) break;
      tried.add(level);
      deps.log(`capacity: refining between ${sofar.held} and ${sofar.firstFailing} ${unit}: trying ${level}`);
      let attempt: Attempt = "refine";
      for (let n = 0; n < MAX_ATTEMPTS && !deps.abort.signal.aborted; n++) {
        const outcome = await runSegment([level], attempt);
        runs.push(outcome.record);
        if (markUnrecovered(steps, outcome.record.runId, outcome.record.users, sofar.firstFailing)) {
          unrecovered = true;
          deps.log(`capacity: no user completed at ${level} ${unit}: the server has not recovered from the breach at ${sofar.firstFailing}; refining stops with the answer so far`);
          break;
        }
        if (outcome.next.kind !== "repeat") break;
        attempt = "repeat";
      }
    }
  }

  const advice = deps.backend.kind === "local" ? `add processes (--count ${options.count * 2}) or run it from more machines` : `add tasks (--count ${options.count * 2}) or give each a bigger size (--cpu/--memory)`;
  const answer = buildAnswer(steps, options.stair.max, advice, byRate ? "rate" : "users");
  const jsonFile = path.join(searchDir, "capacity.json");
  const markdownFile = path.join(searchDir, "capacity.md");
  const scenario = path.relative(process.cwd(), path.resolve(options.scenarioFile));
  const json = {
    format: "cable-fanout-capacity",
    version: 1,
    searchId,
    scenario,
    backend: deps.backend.kind,
    count: options.count,
    vary: answer.vary,
    // By rate the levels, held and firstFailing are messages a second (all regions), sent by these users.
    unit,
    ...(byRate ? { users: options.users } : {}),
    stair: options.stair,
    refine: options.refine ?? null,
    slos: options.slos.map((s) => s.text),
    headline: headline(answer),
    held: answer.held,
    firstFailing: answer.firstFailing,
    breached: answer.breached,
    generatorBound: answer.generatorBound,
    incomplete: answer.incomplete,
    mostTried: answer.mostTried,
    minCapacity: options.minCapacity ?? null,
    regions: answer.regions,
    steps: answer.steps,
    runs,
  };
  writeFileAtomic(jsonFile, JSON.stringify(json, null, 2) + "\n");
  writeFileAtomic(markdownFile, renderCapacityMarkdown(answer, { slos: options.slos, scenario, stair: options.stair, regions: options.regions, vary: answer.vary, users: options.users, refine: options.refine }));
  deps.log(`capacity: ${headline(answer)}`);

  let exitCode: number = CAPACITY_EXIT.ok;
  if (answer.incomplete || deps.abort.signal.aborted) exitCode = CAPACITY_EXIT.incomplete;
  else if (options.minCapacity !== undefined && (answer.held ?? 0) < options.minCapacity) {
    exitCode = answer.generatorBound ? CAPACITY_EXIT.generatorBound : CAPACITY_EXIT.belowMinimum;
  }
  return { answer, searchDir, jsonFile, markdownFile, exitCode, runs };

  async function runSegment(segmentLevels: number[], attempt: Attempt): Promise<{ next: Next; record: SegmentRecord }> {
    const plan = byRate ? planRateLevel(segmentLevels[0], options.users!, options.stair, tasks) : planSegment(segmentLevels, options.stair, tasks);
    const endAfterS = plan.totalS;
    const overrides = segmentOverrides(options.overrides, plan.phases, endAfterS, plan.variables);
    const segmentAbort = new AbortController();
    const onUserAbort = () => segmentAbort.abort();
    deps.abort.signal.addEventListener("abort", onUserAbort);
    let runId = "";
    let feed: LiveFeed | undefined;
    const what = byRate
      ? `${attempt === "repeat" ? "repeating" : attempt === "refine" ? "refining at" : "level"} ${segmentLevels[0]} msg/s from ${options.users} users`
      : attempt === "stair"
        ? `stair ${segmentLevels[0]} → ${segmentLevels[segmentLevels.length - 1]}`
        : `${attempt === "repeat" ? "repeating" : "refining at"} ${segmentLevels[0]} from zero`;
    deps.log(`capacity: ${what} (${Math.round(plan.totalS)} s planned)`);
    const run = runFanout(
      {
        ...options,
        outDir: searchDir,
        overrides,
        // The search prints its own progress line; the run's live feed serves its verdicts.
        liveLines: false,
        // Start delay, the stair, the users' last listen and the upload, with room to spare.
        maxDurationMs: (deps.backend.timing.startDelayMs ?? 0) + (plan.totalS + 180) * 1000,
      },
      {
        backend: deps.backend,
        now: deps.now,
        sleep: deps.sleep,
        log: deps.log,
        abort: segmentAbort,
        progress: deps.progress,
        newRunId: () => (runId = newRunId(deps.now())),
        onFeed: (f) => (feed = f),
      },
    );
    let finished = false;
    const settled = run.then(
      () => (finished = true),
      () => (finished = true),
    );

    // Resolves after the feed's next read of the live files (it polls every 2 s), or after a poll's time before the run has one.
    const nextRead = () => (feed ? feed.next(segmentAbort.signal) : deps.sleep(POLL_MS, segmentAbort.signal));
    const readLive = async (): Promise<LiveSnapshot> => (feed ? feed.refresh().catch(() => feed!.snapshot()) : new Map());
    const serverSamples: ServerSample[] = [];
    let scrapeErrors = 0;
    const scrapeServer = async () => {
      if (!options.serverMetricsUrl) return;
      try {
        serverSamples.push(await scrape(options.serverMetricsUrl));
      } catch (err) {
        if (scrapeErrors++ === 0) deps.log(`capacity: --server-metrics ${redactUrl(options.serverMetricsUrl)}: ${(err as Error).message} (the search goes on without the server's figures where it fails)`);
      }
    };
    let judged = 0;
    let next: Next = { kind: "done" };
    let lastLine = "";
    let stoppedEarly = false;
    while (!finished && judged < plan.steps.length && !segmentAbort.signal.aborted) {
      await Promise.race([nextRead(), settled]);
      await scrapeServer();
      if (!runId || !feed) continue;
      const live = feed.snapshot();
      const step = plan.steps[judged];
      const ready = stepReady(live, step);
      if (ready === "wait") {
        const line = progressLine(live, step, steps, segmentLevels);
        if (line !== lastLine) deps.log((lastLine = line));
        continue;
      }
      const regions: Record<string, RegionStep> = {};
      for (const region of options.regions) {
        const seen = live.get(region) ?? [];
        const measured = measureRegion(seen, step, options.stair.holdS, byRate ? options.users! / options.regions.length : regionShare(step.level));
        // A task that never wrote a phase is missing as much as one without a hold.
        for (let n = seen.length; n < options.count; n++) measured.missing.push(`(${options.count - seen.length} task(s) without live data)`);
        regions[region] = measured;
      }
      const result = judgeStep(step.level, attempt, runId, regions, options.slos, byRate ? regionShare(step.level) : undefined);
      if (options.serverMetricsUrl) {
        const windows = [...live.values()].flat().map((t) => taskWindows(t, step, options.stair.holdS)).filter((w) => w !== undefined);
        if (windows.length > 0) {
          result.server = { ...summarizeServer(serverSamples, Math.min(...windows.map((w) => w!.holdStart)), Math.max(...windows.map((w) => w!.holdEnd))) };
        }
      }
      steps.push(result);
      judged++;
      deps.log(`capacity: ${step.level} ${unit} ${result.verdict}${result.attempt === "repeat" ? " (repeat)" : ""}: ${stepSummary(result)}`);
      next = decideNext(result, steps.slice(0, -1), allLevels);
      if (next.kind !== "continue") break;
    }

    let users: SegmentRecord["users"] = null;
    if (!finished && runId) {
      // The answer is in before the stair's end: stop the users (each ends its flow once), wait for
      // every task to say they all ended, then end the run.
      stoppedEarly = judged < plan.steps.length;
      for (const region of options.regions) await deps.liveStore(region).putText(stopKey(runId, region), JSON.stringify({ at: deps.now(), reason: next.kind }));
      // Users that arrive after the stop end at their first turn; the tasks say "all ended" in a hold
      // with time to spare, so the wait can last a climb and a hold.
      const longestClimbS = Math.max(...plan.steps.map((s) => s.climbS));
      const deadline = deps.now() + END_GRACE_MS + (options.stair.holdS + longestClimbS) * 1000;
      while (!finished && deps.now() < deadline && !segmentAbort.signal.aborted) {
        const all = [...(await readLive()).values()].flat();
        if (all.length >= tasks && all.every((t) => t.ended)) break;
        await Promise.race([nextRead(), settled]);
      }
      if (!finished) segmentAbort.abort();
    }
    const result = await run.catch(() => undefined);
    deps.abort.signal.removeEventListener("abort", onUserAbort);
    users = usersOf(result?.merged);
    if (!users && runId) {
      const all = [...(await readLive()).values()].flat();
      if (all.length > 0 && all.every((t) => t.ended)) {
        users = all.reduce((sum, t) => ({ created: sum.created + t.ended!.created, completed: sum.completed + t.ended!.completed, failed: sum.failed + t.ended!.failed }), { created: 0, completed: 0, failed: 0 });
      }
    }
    if (judged < plan.steps.length && next.kind === "continue") next = { kind: "done" };
    return { next, record: { runId, attempt, levels: plan.steps.map((s) => s.level), users, stoppedEarly } };
  }

  function stepReady(live: LiveSnapshot, step: PlannedStep): "wait" | "judge" {
    const all = [...live.values()].flat();
    const windows = all.map((t) => taskWindows(t, step, options.stair.holdS));
    if (all.length < tasks || windows.some((w) => !w)) {
      // Tasks not there yet, or their hold not started. A task that never shows up is caught by the run's own start timeout.
      return "wait";
    }
    if (all.every((t, i) => taskHasStep(t, windows[i]!))) return "judge";
    const latestEnd = Math.max(...windows.map((w) => w!.holdEnd));
    return deps.now() > latestEnd + LATE_PERIOD_MS ? "judge" : "wait";
  }

  function progressLine(live: LiveSnapshot, step: PlannedStep, done: StepResult[], segmentLevels: number[]): string {
    const all = [...live.values()].flat();
    const windows = all.map((t) => taskWindows(t, step, options.stair.holdS)).filter((w) => w !== undefined);
    const history = done.map((s) => `${s.level}${s.verdict === "held" ? "✓" : s.verdict === "breached" ? "✗" : "?"}`).join(" ");
    let where = byRate ? `${options.users} users arriving, sending ${step.level} msg/s` : `climbing to ${step.level}`;
    if (windows.length > 0 && windows.length === all.length) {
      const holdStart = Math.min(...windows.map((w) => w!.holdStart));
      const inHold = Math.max(0, Math.min(options.stair.holdS, Math.round((deps.now() - holdStart) / 1000)));
      where = `level ${step.level}${byRate ? " msg/s" : ""}, hold ${inHold}/${options.stair.holdS} s`;
    }
    const measured: string[] = [];
    const first = options.slos.find((s) => s.kind === "histogram");
    if (first && first.kind === "histogram") {
      for (const region of options.regions) {
        const sketch = holdSoFar(live.get(region) ?? [], step, options.stair.holdS, first.metric);
        if (sketch && sketch.count > 0) measured.push(`${options.regions.length > 1 ? `${region} ` : ""}${first.metric}.${first.stat} ${Math.round(statOf(sketch, first.stat))} so far`);
      }
    }
    return `capacity: ${where}${measured.length ? ` · ${measured.join(", ")}` : ""}${history ? ` · ${history}` : ""} (of ${segmentLevels.join(", ")})`;
  }
}

/**
 * The users a run started and ended, from its tasks' final Artillery reports when every task left
 * one (not rebuilt from its live periods). Those are exact; the live periods the probe sums are not always: Artillery drops a worker's
 * second batch of metrics for a period it already reported ("multiple batches of metrics for
 * period", launch-platform.js), which a starved generator produces, so ended.live can say 49
 * created and 60 ended. ended.live stays the signal that the users are done, and the fallback.
 */
export function usersOf(merged: MergedResults | undefined): SegmentRecord["users"] {
  // A task stopped before it wrote its report is merged from its live periods: not exact either.
  if (!merged || merged.regions.length === 0 || merged.regions.some((r) => r.tasks < r.expectedTasks || r.partialTasks > 0)) return null;
  const count = (name: string) => merged.all.counters[name] ?? 0;
  return { created: count("vusers.created"), completed: count("vusers.completed"), failed: count("vusers.failed") };
}

function stepSummary(step: StepResult): string {
  return Object.entries(step.regions)
    .map(([region, o]) => {
      const parts = [...o.results, ...(o.sendCheck ? [o.sendCheck] : [])].map((r) => `${r.slo} ${r.passed === true ? "✓" : "✗"} ${r.value ?? "no samples"}`);
      if (o.sendRate !== null) parts.push(`sent ${o.sendRate} msg/s, received ${o.receiveRate ?? 0} msg/s`);
      if (o.lagP90 !== null) parts.push(`generator lag p90 ${o.lagP90} ms`);
      if (o.cpuPeak !== null) parts.push(`generator CPU ${o.cpuPeak} %`);
      if (o.saturated.length) parts.push(`saturated: ${o.saturated.join("; ")}`);
      if (o.missing.length) parts.push(`missing: ${o.missing.join(", ")}`);
      return `${region}: ${parts.join(", ")}`;
    })
    .concat(step.server ? [`server: ${Object.entries(step.server).map(([k, v]) => `${k} ${v ?? "–"}`).join(", ")}`] : [])
    .join(" | ");
}

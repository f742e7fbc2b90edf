// `cable-fanout capacity`: the stair, run through the fan-out's own run loop (the same bundle,
// backends, task worker and barrier as `run`). One run per segment: the stair climbs in one run,
// its tasks' probe plugin streams every metrics period into the store, and the search judges each
// hold as soon as its periods are in. A breach ends that run and repeats the level in a fresh one;
// a repeat that holds resumes the stair above it; the answer ends the search. By message rate
// (`vary: "rate"`), every level is a run of its own (plan.ts, planRateLevel).
//
// In stages, each a function below: plan the search (planSearch), climb the stair segment by
// segment (climb, nextSegment), and per segment start its run (SegmentRun), watch it (watchSegment:
// the only loop that waits on a run is SegmentRun.poll), judge each hold (judgeHold), and end the
// run early once the answer is in (endEarly); then refine (refine, tryLevel) and write the answer
// (report).
import { mkdirSync } from "node:fs";
import path from "node:path";
import { writeFileAtomic, type MergedResults } from "artillery-plugin-cable-report";
import { newRunId } from "../run/runner.js";
import { refuseUnrunnable } from "../plan/launch.js";
import { allTasks, RegionLive, stopKey, type LiveSnapshot } from "../live/feed.js";
import { holdSoFar, measureRegion, taskHasStep, taskWindows, type RegionStep } from "./measure.js";
import { CAPACITY_EXIT, type CapacityDeps, type CapacityOptions, type CapacityResult, type SegmentRecord } from "./options.js";
import { levels, planRateLevel, planSegment, type PlannedStep } from "./plan.js";
import { renderCapacityMarkdown } from "./report.js";
import { buildAnswer, decideNext, headline, judgeStep, markUnrecovered, MAX_ATTEMPTS, refineLevel, type Answer, type Attempt, type Next, type StepResult } from "./search.js";
import { SegmentRun, segmentOverrides } from "./segment-run.js";
import { redactUrl, scrape, summarizeServer, type ServerSample } from "../server-metrics.js";
import { statOf } from "../slo.js";

type Json = Record<string, unknown>;

/** Levels --refine tries at most (a bisection of 200 levels' worth of resolutions needs 8). */
const MAX_REFINE_ROUNDS = 20;
/** How long after a hold's end its periods may take to arrive before the step is judged with what is there. */
const LATE_PERIOD_MS = 45_000;
/** How long the users have to end after the stop (beyond a climb and a hold) before the run is ended anyway. */
const END_GRACE_MS = 45_000;

/** What every stage of one search reads: its options and deps, its whole stair, and what it has judged and run so far. */
interface Search {
  options: CapacityOptions;
  deps: CapacityDeps;
  searchId: string;
  searchDir: string;
  /** Tasks in every run: regions × count. */
  tasks: number;
  allLevels: number[];
  byRate: boolean;
  unit: "msg/s" | "users";
  steps: StepResult[];
  runs: SegmentRecord[];
}

/** The levels one run climbs (by rate, one), and why it runs them. */
interface Segment {
  levels: number[];
  attempt: Attempt;
}

interface SegmentOutcome {
  next: Next;
  record: SegmentRecord;
}

export async function runCapacity(options: CapacityOptions, deps: CapacityDeps): Promise<CapacityResult> {
  // Every level is a run of its own, whose failure the search outlives: a file the bundle refuses, a payload that does not parse or a variable no task has stops the search at once.
  refuseUnrunnable(options, deps.backend.kind);
  const search = planSearch(options, deps);
  await climb(search);
  if (options.refine !== undefined) await refine(search, options.refine);
  return report(search);
}

/** The search before its first run: its id and folder, the stair's levels, and the line that says what it will do. */
function planSearch(options: CapacityOptions, deps: CapacityDeps): Search {
  const searchId = newRunId(deps.now());
  const searchDir = path.resolve(options.outDir, searchId);
  mkdirSync(searchDir, { recursive: true });
  const tasks = options.regions.length * options.count;
  const allLevels = levels(options.stair);
  const byRate = options.vary === "rate";
  if (byRate && options.users === undefined) throw new Error("a search by rate needs its users");
  deps.log(
    `capacity search ${searchId}: levels ${allLevels.join(", ")}${byRate ? ` msg/s from ${options.users} users` : ""} (${tasks} task(s)), hold ${options.stair.holdS} s, SLO ${options.slos.map((s) => s.text).join(" and ")}`,
  );
  return { options, deps, searchId, searchDir, tasks, allLevels, byRate, unit: byRate ? "msg/s" : "users", steps: [], runs: [] };
}

/** The stair, one segment after another, until a segment's verdicts leave nothing to climb (or Ctrl-C). */
async function climb(search: Search): Promise<void> {
  let segment: Segment | null = { levels: search.allLevels, attempt: "stair" };
  while (segment && !search.deps.abort.signal.aborted) segment = nextSegment(search, await runSegment(search, segment));
}

/** A breach is repeated from zero in a fresh run; a repeat that held resumes the stair above it. */
function nextSegment(search: Search, outcome: SegmentOutcome): Segment | null {
  let next = outcome.next;
  // By rate, each level is a run of its own: climbing on is a new run at the next level.
  if (search.byRate && next.kind === "continue") next = { kind: "resume", levels: search.allLevels.filter((l) => l > outcome.record.levels[0]) };
  return next.kind === "repeat" ? { levels: [next.level], attempt: "repeat" } : next.kind === "resume" ? { levels: next.levels, attempt: "stair" } : null;
}

/**
 * --refine: bisect between the most held and the first confirmed breach down to the resolution.
 * Each level tried is a fresh run from zero, judged as any other: a breach there counts once a
 * repeat confirms it. A level that gives no verdict (generator-bound, no data) ends the refining.
 */
async function refine(search: Search, resolution: number): Promise<void> {
  const { options, deps } = search;
  const tried = new Set<number>();
  for (let round = 0; round < MAX_REFINE_ROUNDS && !deps.abort.signal.aborted; round++) {
    const sofar = buildAnswer(search.steps, options.stair.max, "", search.byRate ? "rate" : "users");
    if (sofar.held === null || sofar.firstFailing === null) return;
    const level = refineLevel(sofar.held, sofar.firstFailing, resolution);
    if (level === null || tried.has(level)) return;
    tried.add(level);
    deps.log(`capacity: refining between ${sofar.held} and ${sofar.firstFailing} ${search.unit}: trying ${level}`);
    if ((await tryLevel(search, level, sofar.firstFailing)) === "unrecovered") return;
  }
}

/** One level of the refining, repeated while its breach needs confirming; "unrecovered" when no user completed there. */
async function tryLevel(search: Search, level: number, firstFailing: number): Promise<"judged" | "unrecovered"> {
  let attempt: Attempt = "refine";
  for (let n = 0; n < MAX_ATTEMPTS && !search.deps.abort.signal.aborted; n++) {
    const outcome = await runSegment(search, { levels: [level], attempt });
    if (markUnrecovered(search.steps, outcome.record.runId, outcome.record.users, firstFailing)) {
      search.deps.log(`capacity: no user completed at ${level} ${search.unit}: the server has not recovered from the breach at ${firstFailing}; refining stops with the answer so far`);
      return "unrecovered";
    }
    if (outcome.next.kind !== "repeat") break;
    attempt = "repeat";
  }
  return "judged";
}

/** The answer from every step judged, written as capacity.json and capacity.md, and the exit code it means. */
function report(search: Search): CapacityResult {
  const { options, deps, searchDir } = search;
  const advice = deps.backend.kind === "local" ? `add processes (--count ${options.count * 2}) or run it from more machines` : `add tasks (--count ${options.count * 2}) or give each a bigger size (--cpu/--memory)`;
  const answer = buildAnswer(search.steps, options.stair.max, advice, search.byRate ? "rate" : "users");
  const jsonFile = path.join(searchDir, "capacity.json");
  const markdownFile = path.join(searchDir, "capacity.md");
  const scenario = path.relative(process.cwd(), path.resolve(options.scenarioFile));
  writeFileAtomic(jsonFile, JSON.stringify(capacityJson(search, answer, scenario), null, 2) + "\n");
  writeFileAtomic(markdownFile, renderCapacityMarkdown(answer, { slos: options.slos, scenario, stair: options.stair, regions: options.regions, vary: answer.vary, users: options.users, refine: options.refine }));
  deps.log(`capacity: ${headline(answer)}`);

  let exitCode: number = CAPACITY_EXIT.ok;
  if (answer.incomplete || deps.abort.signal.aborted) exitCode = CAPACITY_EXIT.incomplete;
  else if (options.minCapacity !== undefined && (answer.held ?? 0) < options.minCapacity) {
    // Starved: no verdict (the machine was busy), never "the server held less".
    exitCode = answer.generatorBound ? CAPACITY_EXIT.generatorBound : answer.generatorStarved ? CAPACITY_EXIT.incomplete : CAPACITY_EXIT.belowMinimum;
  }
  return { answer, searchDir, jsonFile, markdownFile, exitCode, runs: search.runs };
}

function capacityJson(search: Search, answer: Answer, scenario: string): Json {
  const { options } = search;
  return {
    format: "cable-fanout-capacity",
    version: 1,
    searchId: search.searchId,
    scenario,
    backend: search.deps.backend.kind,
    count: options.count,
    vary: answer.vary,
    // By rate the levels, held and firstFailing are messages a second (all regions), sent by these users.
    unit: search.unit,
    ...(search.byRate ? { users: options.users } : {}),
    stair: options.stair,
    refine: options.refine ?? null,
    slos: options.slos.map((s) => s.text),
    headline: headline(answer),
    held: answer.held,
    firstFailing: answer.firstFailing,
    breached: answer.breached,
    generatorBound: answer.generatorBound,
    generatorStarved: answer.generatorStarved ?? null,
    incomplete: answer.incomplete,
    mostTried: answer.mostTried,
    minCapacity: options.minCapacity ?? null,
    regions: answer.regions,
    steps: answer.steps,
    runs: search.runs,
  };
}

/** One run of the fan-out through `segment`'s levels: started, watched and judged, ended early once the answer is in. */
async function runSegment(search: Search, segment: Segment): Promise<SegmentOutcome> {
  const { options, deps } = search;
  const plan = search.byRate ? planRateLevel(segment.levels[0], options.users!, options.stair, search.tasks) : planSegment(segment.levels, options.stair, search.tasks);
  deps.log(`capacity: ${describeSegment(search, segment)} (${Math.round(plan.totalS)} s planned)`);
  const run = new SegmentRun(search.deps, {
    ...options,
    outDir: search.searchDir,
    overrides: segmentOverrides(options.overrides, plan.phases, plan.totalS, plan.variables),
    // The search prints its own progress line; the run's live feed serves its verdicts.
    liveLines: false,
    // Every step is judged on every task it planned for: a task left out at the barrier would leave its steps unjudged.
    minReadyPct: options.minReadyPct ?? 100,
    // Start delay, the stair, the users' last listen and the upload, with room to spare.
    maxDurationMs: (deps.backend.timing.startDelayMs ?? 0) + (plan.totalS + 180) * 1000,
    // The first segment shows the plan and is guarded; the search's later ones, allowed by then, only run.
    plan: search.runs.length === 0 ? "block" : "quiet",
  });
  const watched = await watchSegment(search, run, plan.steps, segment);
  const unjudged = watched.judged < plan.steps.length;
  let stoppedEarly = false;
  if (!run.finished && run.runId) {
    stoppedEarly = unjudged;
    await endEarly(search, run, plan.steps, watched.next);
  }
  const users = usersOf((await run.result())?.merged) ?? (run.runId ? endedUsers(await run.readLive()) : null);
  // A run that ended before its last step was judged leaves nothing to climb on from.
  const next: Next = unjudged && watched.next.kind === "continue" ? { kind: "done" } : watched.next;
  const record: SegmentRecord = { runId: run.runId, attempt: segment.attempt, levels: plan.steps.map((s) => s.level), users, stoppedEarly };
  search.runs.push(record);
  return { next, record };
}

function describeSegment(search: Search, { levels, attempt }: Segment): string {
  if (search.byRate) return `${attempt === "repeat" ? "repeating" : attempt === "refine" ? "refining at" : "level"} ${levels[0]} msg/s from ${search.options.users} users`;
  if (attempt === "stair") return `stair ${levels[0]} → ${levels[levels.length - 1]}`;
  return `${attempt === "repeat" ? "repeating" : "refining at"} ${levels[0]} from zero`;
}

/**
 * Judges each planned step as soon as its holds' periods are in, in order, until the run ends, a
 * verdict ends the segment (its `next` is not "continue") or every step is judged; meanwhile a
 * progress line, and the server's figures when --server-metrics asks.
 */
async function watchSegment(search: Search, run: SegmentRun, planned: PlannedStep[], segment: Segment): Promise<{ next: Next; judged: number }> {
  const { deps } = search;
  const server = serverScraper(search);
  let judged = 0;
  let next: Next = { kind: "done" };
  let lastLine = "";
  await run.poll(
    () => {
      if (!run.runId || !run.feed) return false;
      const live = run.feed.snapshot();
      const step = planned[judged];
      if (stepReady(search, live, step, run.feed.final) === "wait") {
        const line = progressLine(search, live, step, segment.levels);
        if (line !== lastLine) deps.log((lastLine = line));
        return false;
      }
      const result = judgeHold(search, live, step, segment.attempt, run.runId, server.samples);
      search.steps.push(result);
      judged++;
      deps.log(`capacity: ${step.level} ${search.unit} ${result.verdict}${result.attempt === "repeat" ? " (repeat)" : ""}: ${stepSummary(result)}`);
      next = decideNext(result, search.steps.slice(0, -1), search.allLevels);
      return next.kind !== "continue" || judged >= planned.length;
    },
    { afterRead: server.scrape },
  );
  return { next, judged };
}

/** One step's verdict from its tasks' live periods: each region measured against its share of the level, and the server over the holds. */
function judgeHold(search: Search, live: LiveSnapshot, step: PlannedStep, attempt: Attempt, runId: string, serverSamples: ServerSample[]): StepResult {
  const { options, byRate } = search;
  const regionShare = (level: number) => level / options.regions.length;
  const regions: Record<string, RegionStep> = {};
  for (const region of options.regions) {
    const seen = live.get(region) ?? new RegionLive(region);
    const measured = measureRegion(seen, step, options.stair.holdS, byRate ? options.users! / options.regions.length : regionShare(step.level));
    // A task that never wrote a phase is missing as much as one without a hold.
    for (let n = seen.tasks.size; n < options.count; n++) measured.missing.push(`(${options.count - seen.tasks.size} task(s) without live data)`);
    regions[region] = measured;
  }
  const result = judgeStep(step.level, attempt, runId, regions, options.slos, byRate ? regionShare(step.level) : undefined);
  if (options.serverMetricsUrl) {
    const windows = allTasks(live).map((t) => taskWindows(t, step, options.stair.holdS)).filter((w) => w !== undefined);
    if (windows.length > 0) {
      result.server = { ...summarizeServer(serverSamples, Math.min(...windows.map((w) => w!.holdStart)), Math.max(...windows.map((w) => w!.holdEnd))) };
    }
  }
  return result;
}

/**
 * The answer is in before the stair's end: stop the users (each ends its flow once), wait for every
 * task to say they all ended, then end the run. Users that arrive after the stop end at their first
 * turn; the tasks say "all ended" in a hold with time to spare, so the wait can last a climb and a hold.
 */
async function endEarly(search: Search, run: SegmentRun, planned: PlannedStep[], next: Next): Promise<void> {
  const { options, deps } = search;
  for (const region of options.regions) await deps.liveStore(region).putText(stopKey(run.runId, region), JSON.stringify({ at: deps.now(), reason: next.kind }));
  const longestClimbS = Math.max(...planned.map((s) => s.climbS));
  const until = deps.now() + END_GRACE_MS + (options.stair.holdS + longestClimbS) * 1000;
  await run.poll(
    async () => {
      const all = allTasks(await run.readLive());
      return all.length >= search.tasks && all.every((t) => t.ended);
    },
    { lookFirst: true, until },
  );
  if (!run.finished) run.end();
}

/** The users every task said it started and ended (ended.live), once every task has said so. */
function endedUsers(live: LiveSnapshot): SegmentRecord["users"] {
  const all = allTasks(live);
  if (all.length === 0 || !all.every((t) => t.ended)) return null;
  return all.reduce((sum, t) => ({ created: sum.created + t.ended!.created, completed: sum.completed + t.ended!.completed, failed: sum.failed + t.ended!.failed }), { created: 0, completed: 0, failed: 0 });
}

/** The server's Prometheus samples while a segment runs (--server-metrics); the first failure is logged once. */
function serverScraper(search: Search): { samples: ServerSample[]; scrape: () => Promise<void> } {
  const url = search.options.serverMetricsUrl;
  const samples: ServerSample[] = [];
  let errors = 0;
  const take = async () => {
    if (!url) return;
    try {
      samples.push(await scrape(url));
    } catch (err) {
      if (errors++ === 0) search.deps.log(`capacity: --server-metrics ${redactUrl(url)}: ${(err as Error).message} (the search goes on without the server's figures where it fails)`);
    }
  };
  return { samples, scrape: take };
}

function stepReady(search: Search, live: LiveSnapshot, step: PlannedStep, final: boolean): "wait" | "judge" {
  const holdS = search.options.stair.holdS;
  const all = allTasks(live);
  const windows = all.map((t) => taskWindows(t, step, holdS));
  if (all.length < search.tasks || windows.some((w) => !w)) {
    // Tasks not there yet, or their hold not started. A task that never shows up is caught by the run's own start timeout.
    return "wait";
  }
  if (all.every((t, i) => taskHasStep(t, windows[i]!))) return "judge";
  // Every task has stopped and its files have been read for the last time: nothing more is coming
  // (a task without its hold's periods is "missing", and the level is tried again).
  if (final) return "judge";
  const latestEnd = Math.max(...windows.map((w) => w!.holdEnd));
  return search.deps.now() > latestEnd + LATE_PERIOD_MS ? "judge" : "wait";
}

function progressLine(search: Search, live: LiveSnapshot, step: PlannedStep, segmentLevels: number[]): string {
  const { options, byRate } = search;
  const all = allTasks(live);
  const windows = all.map((t) => taskWindows(t, step, options.stair.holdS)).filter((w) => w !== undefined);
  const history = search.steps.map((s) => `${s.level}${s.verdict === "held" ? "✓" : s.verdict === "breached" ? "✗" : "?"}`).join(" ");
  let where = byRate ? `${options.users} users arriving, sending ${step.level} msg/s` : `climbing to ${step.level}`;
  if (windows.length > 0 && windows.length === all.length) {
    const holdStart = Math.min(...windows.map((w) => w!.holdStart));
    const inHold = Math.max(0, Math.min(options.stair.holdS, Math.round((search.deps.now() - holdStart) / 1000)));
    where = `level ${step.level}${byRate ? " msg/s" : ""}, hold ${inHold}/${options.stair.holdS} s`;
  }
  const measured: string[] = [];
  const first = options.slos.find((s) => s.kind === "histogram");
  if (first && first.kind === "histogram") {
    for (const region of options.regions) {
      const seen = live.get(region);
      const sketch = seen && holdSoFar(seen, step, options.stair.holdS, first.metric);
      if (sketch && sketch.count > 0) measured.push(`${options.regions.length > 1 ? `${region} ` : ""}${first.metric}.${first.stat} ${Math.round(statOf(sketch, first.stat))} so far`);
    }
  }
  return `capacity: ${where}${measured.length ? ` · ${measured.join(", ")}` : ""}${history ? ` · ${history}` : ""} (of ${segmentLevels.join(", ")})`;
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
      if (o.starved?.length) parts.push(`starved (the machine was busy with other work): ${o.starved.join("; ")}`);
      if (o.missing.length) parts.push(`missing: ${o.missing.join(", ")}`);
      return `${region}: ${parts.join(", ")}`;
    })
    .concat(step.server ? [`server: ${Object.entries(step.server).map(([k, v]) => `${k} ${v ?? "–"}`).join(", ")}`] : [])
    .join(" | ");
}

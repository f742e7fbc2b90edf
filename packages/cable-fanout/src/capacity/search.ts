// The search's decisions, pure: a step's verdict from every region's figures, what to run next,
// and the answer. One noisy hold is never a verdict: a breach is repeated before it counts.
import type { RegionStep } from "./measure.js";
import type { Axis } from "./plan.js";
import { compare, evaluateSlo, type Slo, type SloResult } from "../slo.js";

/**
 * "generator-bound": a task's generator saturated (the answer is a floor, and more load would only
 * saturate it more). "generator-starved": a task's generator was late while its own CPU stayed
 * low: its machine was busy with other work, so the step's latencies hold that wait; no verdict
 * either, but not the generator's limit: the level is run again once, as a hold without data is.
 */
export type Verdict = "held" | "breached" | "generator-bound" | "generator-starved" | "incomplete";
export type Attempt = "stair" | "repeat" | "refine";

export interface RegionOutcome {
  /** This region's users at the level. */
  users: number;
  results: SloResult[];
  passed: boolean;
  /** Worst task's event-loop lag p90 over the step, ms. */
  lagP90: number | null;
  /** Busiest task's CPU in the hold's busiest period, % of its worker cores; null when not measured. */
  cpuPeak: number | null;
  /** Messages a second this region sent and received during the hold. */
  sendRate: number | null;
  receiveRate: number | null;
  /** By rate: did the region send its share of the level (SEND_RATE_FLOOR)? A level not offered is not a level held. */
  sendCheck?: SloResult;
  saturated: string[];
  /** Tasks whose generator was starved in the step, with why (absent in results written before it). */
  starved?: string[];
  missing: string[];
}

/**
 * By rate, a hold counts only if the users sent at least this share of the level: a server that
 * slows its publishers down (an HTTP publish awaits its answer) must not be credited with a rate
 * it never received.
 */
export const SEND_RATE_FLOOR = 0.9;

export interface StepResult {
  /** Users at the level, every region together. */
  level: number;
  /** A level climbed on the stair, its repeat from zero, or a level tried by --refine (from zero too). */
  attempt: Attempt;
  /** The run (segment) that measured it. */
  runId: string;
  verdict: Verdict;
  regions: Record<string, RegionOutcome>;
  /** The server's figures during the hold, when --server-metrics was given. */
  server?: Record<string, number | null>;
}

/**
 * `expectedSendRate`: by rate, each region's share of the level (msg/s), which it must have sent
 * (SEND_RATE_FLOOR) for the hold to count.
 */
export function judgeStep(level: number, attempt: StepResult["attempt"], runId: string, regions: Record<string, RegionStep>, slos: Slo[], expectedSendRate?: number): StepResult {
  const outcomes: Record<string, RegionOutcome> = {};
  for (const [name, step] of Object.entries(regions)) {
    const results = slos.map((slo) => evaluateSlo(slo, step.figures));
    const worst = (values: Array<number | null>) => {
      const known = values.filter((v): v is number => v !== null);
      return known.length > 0 ? Math.max(...known) : null;
    };
    const sendCheck = expectedSendRate === undefined ? undefined : checkSendRate(step.rates.sent, expectedSendRate);
    outcomes[name] = {
      users: step.figures.users,
      results,
      // No sample is no evidence that the level held (a server that delivers nothing has no latency).
      passed: results.every((r) => r.passed === true) && (sendCheck === undefined || sendCheck.passed === true),
      lagP90: worst(step.health.map((h) => h.lagP90)),
      cpuPeak: worst(step.health.map((h) => h.cpuPeak)),
      sendRate: step.rates.sent,
      receiveRate: step.rates.received,
      ...(sendCheck ? { sendCheck } : {}),
      saturated: step.health.filter((h) => h.saturated).map((h) => `${h.taskId}: ${h.reasons.join(", ")}`),
      starved: step.health.filter((h) => h.starved).map((h) => `${h.taskId}: ${h.reasons.join(", ")}`),
      missing: step.missing,
    };
  }
  const all = Object.values(outcomes);
  const verdict: Verdict = all.some((o) => o.missing.length > 0)
    ? "incomplete"
    : all.some((o) => o.saturated.length > 0)
      ? "generator-bound"
      : all.some((o) => (o.starved?.length ?? 0) > 0)
        ? "generator-starved"
        : all.every((o) => o.passed)
          ? "held"
          : "breached";
  return { level, attempt, runId, verdict, regions: outcomes };
}

function checkSendRate(sent: number | null, expected: number): SloResult {
  const bound = Math.round(expected * SEND_RATE_FLOOR * 10) / 10;
  const text = `sent msg/s>=${bound}`;
  if (sent === null) return { slo: text, value: null, passed: null, window: "hold" };
  const passed = compare(sent, ">=", bound);
  return { slo: text, value: sent, passed, window: "hold", ...(passed ? {} : { excess: Math.round((sent - bound) * 10) / 10 }) };
}

export type Next =
  /** Keep climbing in the same run. */
  | { kind: "continue" }
  /** End this run; run the level again, from zero, and judge it once more. */
  | { kind: "repeat"; level: number }
  /** End this run (if any); climb again in a new run through these levels. */
  | { kind: "resume"; levels: number[] }
  | { kind: "done" };

/** Attempts at one level before the search gives up on it (a breach, then data lost, then…). */
export const MAX_ATTEMPTS = 3;

/**
 * What to run after `step`, given the steps judged before it. One noisy hold is never a verdict: a
 * breach counts once a fresh run of the level breaches again; a hold with no whole period of data
 * (Artillery drops one now and then) is run again too, and so is a hold whose generator was
 * starved (its machine's other work may have passed). A saturated generator ends the search: a
 * higher level would only saturate it more.
 */
export function decideNext(step: StepResult, before: StepResult[], allLevels: number[]): Next {
  const later = allLevels.filter((l) => l > step.level);
  const earlier = before.filter((s) => s.level === step.level);
  const attempts = earlier.length + 1;
  switch (step.verdict) {
    case "held":
      if (later.length === 0) return { kind: "done" };
      // A repeat that held means the stair's breach was one noisy hold: climb on from there.
      return step.attempt === "repeat" ? { kind: "resume", levels: later } : { kind: "continue" };
    case "breached":
      if (earlier.some((s) => s.verdict === "breached") || attempts >= MAX_ATTEMPTS) return { kind: "done" };
      return { kind: "repeat", level: step.level };
    case "incomplete":
      if (earlier.some((s) => s.verdict === "incomplete") || attempts >= MAX_ATTEMPTS) return { kind: "done" };
      return { kind: "repeat", level: step.level };
    case "generator-starved":
      if (earlier.some((s) => s.verdict === "generator-starved") || attempts >= MAX_ATTEMPTS) return { kind: "done" };
      return { kind: "repeat", level: step.level };
    default:
      return { kind: "done" };
  }
}

/**
 * --refine: the next level to try between the most held and the first confirmed breach, on a grid
 * of `resolution` from the level held (so that a level splits over the tasks as the stair's do):
 * the middle one of those strictly between, or null once the two are within one resolution.
 */
export function refineLevel(held: number, failing: number, resolution: number): number | null {
  const between = Math.ceil((failing - held) / resolution) - 1;
  if (between < 1) return null;
  return held + Math.ceil(between / 2) * resolution;
}

/**
 * --refine tries levels below a confirmed breach, each in a fresh run. A server that the breach
 * left wedged (puma stopped answering handshakes after two holds far past its capacity) fails
 * every user at any level, and that would read as a breach below the real one. So a refining run
 * in which users started and none completed its flow is not a verdict on its level: its steps
 * become "incomplete", naming why, and the refining stops with the answer it had.
 * Returns whether it did so.
 */
export function markUnrecovered(steps: StepResult[], runId: string, users: { created: number; completed: number } | null, breachAbove: number): boolean {
  if (!users || users.created === 0 || users.completed > 0) return false;
  for (const step of steps) {
    if (step.runId !== runId) continue;
    step.verdict = "incomplete";
    for (const outcome of Object.values(step.regions)) outcome.missing.push(`no user completed: the server had not recovered from the breach at ${breachAbove}`);
  }
  return true;
}

export interface Breach {
  region: string;
  slo: string;
  value: number | null;
  excess?: number;
}

export interface RegionAnswer {
  held: number | null;
  firstFailing: number | null;
  breached: Breach[];
  generatorBound: boolean;
  /** This region's generator was starved at the level that ended the search (absent before it was told apart). */
  generatorStarved?: boolean;
  steps: Array<{
    /** Users (by users) or messages a second (by rate), every region together. */
    level: number;
    users: number;
    attempt: string;
    verdict: Verdict;
    passed: boolean;
    lagP90: number | null;
    cpuPeak: number | null;
    /** This region's measured messages a second, sent and received, during the hold. */
    sendRate: number | null;
    receiveRate: number | null;
    slos: SloResult[];
    sendCheck?: SloResult;
    server?: Record<string, number | null>;
  }>;
}

/** What a starved generator's answer says, in place of advice to add tasks (which would compete for the same cores). */
export const STARVED_WORDS = "the generator's machine was busy with other work, so its latencies there include that wait, not the server's; run the search where nothing else competes for the generator's cores";

export interface Answer {
  /** What the levels count: concurrent users, or messages a second (all regions together). */
  vary: Axis;
  /** The most users (or msg/s) held under every SLO in every region; null when not even the first level held. */
  held: number | null;
  /** The level whose breach a repeat confirmed. */
  firstFailing: number | null;
  breached: Breach[];
  /** Set when a saturated generator ended the search: the figure is a floor, not the server's capacity. */
  generatorBound: { at: number; atLeast: number | null; tasks: string[]; advice: string } | null;
  /**
   * Set when a starved generator ended the search (its machine busy with other work at that level,
   * again when it was run again): the figure is a floor too, but the generator was not the limit, so no advice to add
   * tasks. Absent in answers written before it.
   */
  generatorStarved?: { at: number; atLeast: number | null; tasks: string[] } | null;
  /** The search stopped on missing data (a task died or left no period inside a hold). */
  incomplete: { at: number; tasks: string[] } | null;
  /** Every level up to --max held. */
  mostTried: boolean;
  max: number;
  regions: Record<string, RegionAnswer>;
  steps: StepResult[];
}

export function buildAnswer(steps: StepResult[], max: number, advice: string, vary: Axis = "users"): Answer {
  // The lowest level whose breach a repeat confirmed (--refine may confirm one below the stair's).
  const confirmed = steps
    .filter((s, i) => s.verdict === "breached" && steps.slice(0, i).some((p) => p.level === s.level && p.verdict === "breached"))
    .sort((a, b) => a.level - b.level)[0];
  // Only the last step can end the search without a verdict; an incomplete hold that a repeat judged is history.
  const last = steps[steps.length - 1];
  const stopped = !confirmed && last && (last.verdict === "generator-bound" || last.verdict === "generator-starved" || last.verdict === "incomplete") ? last : undefined;
  const ceiling = Math.min(confirmed?.level ?? Infinity, stopped?.level ?? Infinity);
  const heldLevels = steps.filter((s) => s.verdict === "held" && s.level < ceiling).map((s) => s.level);
  const held = heldLevels.length > 0 ? Math.max(...heldLevels) : null;
  const breachesOf = (s: StepResult): Breach[] =>
    Object.entries(s.regions).flatMap(([region, o]) =>
      [...o.results, ...(o.sendCheck ? [o.sendCheck] : [])]
        .filter((r) => r.passed !== true)
        .map((r) => ({ region, slo: r.slo, value: r.value, ...(r.excess !== undefined ? { excess: r.excess } : {}) })),
    );

  const regionNames = [...new Set(steps.flatMap((s) => Object.keys(s.regions)))];
  const regions: Record<string, RegionAnswer> = {};
  for (const name of regionNames) {
    const mine = steps.filter((s) => s.regions[name]);
    const failing = confirmed && !confirmed.regions[name]?.passed ? confirmed.level : null;
    const passedLevels = mine.filter((s) => s.regions[name].passed && s.verdict !== "generator-bound" && s.verdict !== "generator-starved" && s.verdict !== "incomplete" && (failing === null || s.level < failing)).map((s) => s.level);
    regions[name] = {
      held: passedLevels.length > 0 ? Math.max(...passedLevels) : null,
      firstFailing: failing,
      breached: confirmed && failing !== null ? breachesOf(confirmed).filter((b) => b.region === name) : [],
      generatorBound: stopped?.verdict === "generator-bound" && (stopped.regions[name]?.saturated.length ?? 0) > 0,
      generatorStarved: stopped?.verdict === "generator-starved" && (stopped.regions[name]?.starved?.length ?? 0) > 0,
      steps: mine.map((s) => ({
        level: s.level,
        users: s.regions[name].users,
        attempt: s.attempt,
        verdict: s.verdict,
        passed: s.regions[name].passed,
        lagP90: s.regions[name].lagP90,
        cpuPeak: s.regions[name].cpuPeak,
        sendRate: s.regions[name].sendRate,
        receiveRate: s.regions[name].receiveRate,
        slos: s.regions[name].results,
        ...(s.regions[name].sendCheck ? { sendCheck: s.regions[name].sendCheck } : {}),
        ...(s.server ? { server: s.server } : {}),
      })),
    };
  }
  const generatorBound =
    stopped?.verdict === "generator-bound"
      ? { at: stopped.level, atLeast: held, tasks: Object.values(stopped.regions).flatMap((o) => o.saturated), advice }
      : null;
  const generatorStarved = stopped?.verdict === "generator-starved" ? { at: stopped.level, atLeast: held, tasks: Object.values(stopped.regions).flatMap((o) => o.starved ?? []) } : null;
  return {
    vary,
    held,
    firstFailing: confirmed?.level ?? null,
    breached: confirmed ? breachesOf(confirmed) : [],
    generatorBound,
    generatorStarved,
    incomplete: stopped?.verdict === "incomplete" ? { at: stopped.level, tasks: Object.entries(stopped.regions).flatMap(([r, o]) => o.missing.map((t) => `${r}/${t}`)) } : null,
    mostTried: !confirmed && !stopped && held === max,
    max,
    regions,
    steps,
  };
}

/** The one-line answer: "held 3,000, the most tried", "held 40 (breached at 60: …)", "at least 40, generator-bound", "at least 40, starved at 60"; by rate in msg/s. */
export function headline(answer: Answer): string {
  const unit = answer.vary === "rate" ? " msg/s" : "";
  const n = (v: number) => `${v.toLocaleString("en-US")}${unit}`;
  if (answer.generatorBound) {
    return `at least ${n(answer.held ?? 0)}, generator-bound at ${n(answer.generatorBound.at)}: ${answer.generatorBound.advice}`;
  }
  if (answer.generatorStarved) {
    return `at least ${n(answer.held ?? 0)}, starved at ${n(answer.generatorStarved.at)}: ${STARVED_WORDS}`;
  }
  if (answer.incomplete) return `no verdict at ${n(answer.incomplete.at)}: no data from ${answer.incomplete.tasks.join(", ")}; held ${answer.held === null ? "nothing" : n(answer.held)} before that`;
  if (answer.mostTried) return `held ${n(answer.max)}, the most tried`;
  if (answer.firstFailing !== null) {
    const why = answer.breached.map((b) => `${b.region} ${b.slo} ${b.value === null ? "no samples" : `was ${b.value}${b.excess !== undefined ? ` (${b.excess >= 0 ? "+" : ""}${b.excess})` : ""}`}`).join("; ");
    return `held ${answer.held === null ? "none of the levels" : n(answer.held)}; ${n(answer.firstFailing)} breached twice: ${why}`;
  }
  return `held ${answer.held === null ? "none of the levels" : n(answer.held)} (the search ended early)`;
}

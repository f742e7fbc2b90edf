// From a region's live periods to one step's figures: which periods belong to the step's climb,
// to its hold (whole periods inside it only), and to the step as a whole. The figures come from the
// region's periods merged across its tasks (region-live.ts); each task's generator is judged on its
// own lag and CPU. Pure.
import { DDSketch } from "@artilleryio/sketches-js";
import { METRICS } from "artillery-engine-cable/metrics";
import { detectSaturation, lateCauseOf, lateSecondsOf, SATURATION_THRESHOLDS, starvedFigures, type LateSeconds } from "artillery-plugin-cable-report";
import { periodSketches } from "artillery-plugin-cable-report";
import type { LivePeriod, RegionLive, TaskLive } from "../live/feed.js";
import type { PeriodFold } from "../live/region-live.js";
import { PERIOD_MS, type PlannedStep } from "./plan.js";
import type { StepFigures } from "../slo.js";

export const LAG_METRIC = METRICS.eventLoopLag;
export const SENT_METRIC = METRICS.messagesSent;
export const RECEIVED_METRIC = METRICS.messagesReceived;
/**
 * The generator verdict is the PR report's (cable-report's detectSaturation and its thresholds:
 * event-loop lag over 100 ms, CPU over 90 %; a late generator saturated when its own CPU reached
 * 50 % or its late seconds were mostly spent running, starved when it waited for a CPU its
 * machine's other work held), read over one step. The report judges a whole run on
 * the lag's p99, over hundreds of one-second samples. A step has a few dozen, so its p99 is its
 * single worst second: one hiccup of a shared machine. The step is judged on its p90 instead: late
 * by more than the threshold in one second out of ten, sustained.
 */
export const LAG_QUANTILE = 0.9;

export interface TaskWindows {
  climbStart: number;
  holdStart: number;
  holdEnd: number;
}

const floorPeriod = (t: number) => t - (t % PERIOD_MS);

/** The step's windows on a task's own clock of phases; undefined until its hold has started. */
export function taskWindows(task: TaskLive, step: PlannedStep, holdS: number): TaskWindows | undefined {
  const climb = task.phases.find((p) => p.index === step.climbIndex);
  const hold = task.phases.find((p) => p.index === step.holdIndex);
  if (!climb || !hold) return undefined;
  return { climbStart: climb.startTime, holdStart: hold.startTime, holdEnd: hold.startTime + holdS * 1000 };
}

/**
 * The step's windows for a whole region, whose periods are merged across its tasks: from the
 * earliest climb, the hold every task that started it was in (the tasks start together, so their
 * windows differ by their clocks' seconds at most); undefined until one task has started its hold.
 */
export function regionWindows(tasks: TaskLive[], step: PlannedStep, holdS: number): TaskWindows | undefined {
  const known = tasks.map((t) => taskWindows(t, step, holdS)).filter((w): w is TaskWindows => w !== undefined);
  if (known.length === 0) return undefined;
  return { climbStart: Math.min(...known.map((w) => w.climbStart)), holdStart: Math.max(...known.map((w) => w.holdStart)), holdEnd: Math.min(...known.map((w) => w.holdEnd)) };
}

/**
 * Periods partition the run: a step owns those that start from its climb's period up to the period
 * its hold ends in (that one belongs to the next climb). The hold is judged on whole periods
 * inside it; the climb is every period that overlaps it.
 */
export function splitPeriods<P extends { period: number }>(periods: P[], w: TaskWindows): { climb: P[]; hold: P[]; step: P[] } {
  const first = floorPeriod(w.climbStart);
  const last = floorPeriod(w.holdEnd);
  return {
    climb: periods.filter((p) => p.period >= first && p.period < w.holdStart),
    hold: periods.filter((p) => p.period >= w.holdStart && p.period + PERIOD_MS <= w.holdEnd),
    step: periods.filter((p) => p.period >= first && p.period < last),
  };
}

/** Whether every period the step needs from this task has arrived (Artillery emits a period some seconds after it ends). */
export function taskHasStep(task: TaskLive, w: TaskWindows): boolean {
  return task.lastPeriod !== null && task.lastPeriod >= floorPeriod(w.holdEnd) - PERIOD_MS;
}

function mergeInto(target: Record<string, DDSketch>, periods: PeriodFold[]): void {
  for (const period of periods) {
    for (const [name, sketch] of Object.entries(period.sketches)) {
      if (!target[name]) target[name] = new DDSketch({ relativeAccuracy: 0.01 });
      target[name].merge(sketch);
    }
  }
}

function addCounters(target: Record<string, number>, periods: PeriodFold[]): void {
  for (const period of periods) for (const [name, n] of Object.entries(period.counters)) target[name] = (target[name] ?? 0) + n;
}

export interface TaskHealth {
  taskId: string;
  region: string;
  /** p90 of the generator's event-loop lag during the step, ms; null without samples. */
  lagP90: number | null;
  /** The generator's CPU in its busiest period of the hold, % of its worker cores; null when not measured. */
  cpuPeak: number | null;
  /** The generator itself was the limit: the step is no verdict on the server, and a higher level would only saturate it more. */
  saturated: boolean;
  /** Late while its own CPU stayed low: its machine was busy with other work (never with `saturated`). No verdict either. */
  starved: boolean;
  reasons: string[];
}

export interface RegionStep {
  figures: StepFigures;
  health: TaskHealth[];
  /** Tasks whose hold had not been seen (died, or no whole period inside the hold). */
  missing: string[];
  /** Messages a second the region's tasks sent and received during the hold (whole periods); null without a hold. */
  rates: { sent: number | null; received: number | null };
}

/** The generator's own figures over a step that say why it was late (cable-report's lateCauseOf). */
export interface LateEvidence {
  /** The busiest period's CPU over the whole step, climb included (arrivals are the generator's own work). */
  cpuPeak: number | null;
  /** Its seconds late by more than 100 ms over the step, by cause; null from an engine that did not count them. */
  late: LateSeconds | null;
}

/**
 * The generator's health over one step of one task: lag p90 over the step (see LAG_QUANTILE) and
 * CPU in the hold's busiest period, against cable-report's thresholds; a lag sampler held up for
 * whole seconds (`heldUp`) too. Late without CPU over 90 %: saturated or starved by `evidence`, as
 * the report reads a task (its own CPU, then its late seconds by cause; without either, saturated).
 */
export function stepHealth(lagP90: number | null, cpuPeak: number | null, heldUp?: string, evidence?: LateEvidence): { saturated: boolean; starved: boolean; reasons: string[] } {
  const reasons: string[] = [];
  if (lagP90 !== null && lagP90 > SATURATION_THRESHOLDS.lagP99Ms) reasons.push(`event-loop lag p90 ${lagP90} ms > ${SATURATION_THRESHOLDS.lagP99Ms} ms`);
  // The report's rule as it stands for CPU: the busiest period over the threshold.
  const cpuReasons = detectSaturation({ lag: null, cpuMean: null, cpuPeak }).reasons;
  reasons.push(...cpuReasons);
  if (heldUp) reasons.push(heldUp);
  if (reasons.length === 0) return { saturated: false, starved: false, reasons };
  const peaks = [cpuPeak, evidence?.cpuPeak].filter((v): v is number => typeof v === "number");
  const health = { lag: null, cpuMean: null, cpuPeak: peaks.length > 0 ? Math.max(...peaks) : null, late: evidence?.late ?? null };
  if (cpuReasons.length > 0 || lateCauseOf(health) === "saturated") return { saturated: true, starved: false, reasons };
  const figures = starvedFigures(health);
  return { saturated: false, starved: true, reasons: figures ? [...reasons, figures] : reasons };
}

/** A task's late seconds over these periods, by cause (the engine's counters, kept per task by region-live.ts). */
export function lateOf(periods: LivePeriod[]): LateSeconds | null {
  const sum: Record<string, number> = {};
  for (const p of periods) for (const [name, n] of Object.entries(p.counters)) sum[name] = (sum[name] ?? 0) + n;
  return lateSecondsOf(sum);
}

/** The most CPU any of these periods reported (to 0.1, as the probe writes it), or null when none carries the figure. */
export function cpuPeakOf(periods: LivePeriod[]): number | null {
  const values = periods.map((p) => p.cpuPercent).filter((v): v is number => typeof v === "number" && Number.isFinite(v));
  return values.length > 0 ? Math.round(Math.max(...values) * 10) / 10 : null;
}

/** One region's figures for one step. `users` is the region's share of the level. */
export function measureRegion(region: RegionLive, step: PlannedStep, holdS: number, users: number): RegionStep {
  const figures: StepFigures = { users, hold: {}, climb: {}, counters: {} };
  const tasks = [...region.tasks.values()];
  let rates: RegionStep["rates"] = { sent: null, received: null };
  const w = regionWindows(tasks, step, holdS);
  if (w) {
    const parts = splitPeriods(region.periods(), w);
    mergeInto(figures.hold, parts.hold);
    mergeInto(figures.climb, parts.climb);
    addCounters(figures.counters, parts.step);
    if (parts.hold.length > 0) {
      // The region's rate over its whole hold periods: every task's messages in them, the tasks side by side.
      const holdCounters: Record<string, number> = {};
      addCounters(holdCounters, parts.hold);
      const seconds = (parts.hold.length * PERIOD_MS) / 1000;
      const round1 = (v: number) => Math.round(v * 10) / 10;
      rates = { sent: round1((holdCounters[SENT_METRIC] ?? 0) / seconds), received: round1((holdCounters[RECEIVED_METRIC] ?? 0) / seconds) };
    }
  }
  const health: TaskHealth[] = [];
  const missing: string[] = [];
  for (const task of tasks) {
    const tw = taskWindows(task, step, holdS);
    if (!tw) {
      missing.push(task.taskId);
      continue;
    }
    const parts = splitPeriods(task.generator, tw);
    if (parts.hold.length === 0) missing.push(task.taskId);
    // The generator's lag over the whole step, climb included: a saturated thread samples its lag
    // rarely (the sampler waits on the same loop), so a hold alone may hold few samples of it.
    const lag = lagOf(parts.step);
    const lagP90 = lag && lag.count > 0 ? Math.round(Math.min(lag.max, lag.getValueAtQuantile(LAG_QUANTILE))) : null;
    // CPU over the hold only: arrivals cost CPU during the climb, and the hold is what is judged.
    const cpuPeak = cpuPeakOf(parts.hold);
    // Why it was late, if it was: its CPU and late seconds over the whole step, as its lag is.
    const evidence = { cpuPeak: cpuPeakOf(parts.step), late: lateOf(parts.step) };
    health.push({ taskId: task.taskId, region: task.region, lagP90, cpuPeak, ...stepHealth(lagP90, cpuPeak, heldUpPeriod(parts.step, tw), evidence) });
  }
  return { figures, health, missing, rates };
}

/** A task's generator lag over these periods, merged. */
function lagOf(periods: LivePeriod[]): DDSketch | undefined {
  const sketches = periods.map((p) => periodSketches(p)[LAG_METRIC]).filter((s) => s !== undefined);
  if (sketches.length === 0) return undefined;
  const merged = new DDSketch({ relativeAccuracy: 0.01 });
  for (const sketch of sketches) merged.merge(sketch);
  return merged;
}

/** A histogram over the hold so far, periods that overlap it included: for the progress line only, never for a verdict. */
export function holdSoFar(region: RegionLive, step: PlannedStep, holdS: number, metric: string): DDSketch | undefined {
  const w = regionWindows([...region.tasks.values()], step, holdS);
  if (!w) return undefined;
  const merged: Record<string, DDSketch> = {};
  mergeInto(merged, region.periods().filter((p) => p.period + PERIOD_MS > w.holdStart && p.period < w.holdEnd));
  return merged[metric];
}

/** Lag samples a worker thread takes in a 10 s period when its event loop keeps time (one a second). */
const LAG_SAMPLES_PER_PERIOD = 10;

/**
 * The lag sampler runs on the same event loop it measures: a thread held up for seconds at a time
 * (blocked by its own work, or kept from the CPU) takes few samples, and those few, taken right
 * after a reset, can read low. A whole period of the step with fewer than half the samples even
 * one thread takes says the loop was held up, whatever the samples read; its CPU and late seconds
 * then say whether it was saturated or starved (stepHealth). (Artillery's threads add samples, so
 * more threads only make the bar easier.)
 */
export function heldUpPeriod(periods: LivePeriod[], w: TaskWindows): string | undefined {
  for (const period of periods) {
    if (period.period < w.climbStart || period.period + PERIOD_MS > w.holdEnd) continue;
    const sketch = periodSketches(period)[LAG_METRIC];
    if (sketch && sketch.count < LAG_SAMPLES_PER_PERIOD / 2) {
      return `event-loop lag sampled ${sketch.count} time(s) in a 10 s period (its loop was held up)`;
    }
  }
  return undefined;
}

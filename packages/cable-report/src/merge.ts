// Merge math, pure: tasks in, one column of the comparison out.
import { DDSketch } from "@artilleryio/sketches-js";
import { METRICS } from "artillery-engine-cable/metrics";
import type { CheckTally, Column, Distribution, GeneratorTask } from "./model.js";
import { detectSaturation } from "./saturation.js";
import { encodeSketch, RELATIVE_ACCURACY } from "./sidecar.js";
import type { HistogramSummary, TaskResult } from "./task.js";
import { byName } from "./task-file.js";

/** Per-period, per-process peak of open connections; its sum over periods means nothing. */
export const OPEN_PEAK_COUNTER = METRICS.connectionsOpenPeriodPeak;

/** The engine's per-second worst event-loop delay (artillery-engine-cable lag.ts): the generator's, not the server's. */
export const EVENT_LOOP_LAG = METRICS.eventLoopLag;

export function mergeColumn(name: string, tasks: TaskResult[], files: string[]): Column {
  const histogramNames = new Set(tasks.flatMap((t) => Object.keys(t.summaries)));
  const histograms = byName<Distribution>();
  for (const metric of [...histogramNames].sort()) {
    histograms[metric] = mergeDistribution(tasks.filter((t) => t.summaries[metric]), metric);
  }
  const counters = sumCounters(tasks.map((t) => t.counters));
  delete counters[OPEN_PEAK_COUNTER];
  const aligned = alignPeriods(tasks);
  const checks = tallyChecks(tasks);

  return {
    name,
    tasks: tasks.length,
    files,
    counters,
    histograms,
    rates: rateStats(aligned),
    peakOpenConnections: peakOfCounter(aligned, OPEN_PEAK_COUNTER),
    checks,
    tasksWithChecks: tasks.filter((t) => t.checks !== null).length,
    firstMetricAt: extreme(tasks.map((t) => t.firstMetricAt), Math.min),
    lastMetricAt: extreme(tasks.map((t) => t.lastMetricAt), Math.max),
    generator: tasks.map((t, i) => generatorHealth(t, files[i] ?? t.reportFile)),
    rejected: [],
    partialTasks: tasks.filter((t) => t.partial).length,
  };
}

/** One task's generator health: its own lag p99 (a merged p99 would hide one saturated task among idle ones) and CPU. */
export function generatorHealth(task: TaskResult, file: string): GeneratorTask {
  const sketch = task.sketches?.[EVENT_LOOP_LAG];
  const summary = task.summaries[EVENT_LOOP_LAG];
  const lagP99 = sketch && sketch.count > 0 ? summarizeSketch(sketch).p99 : summary ? summary.p99 : null;
  const health = { lagP99, cpuMean: task.generator?.cpuMean ?? null, cpuPeak: task.generator?.cpuPeak ?? null };
  return { file, ...health, ...detectSaturation(health) };
}

/**
 * Exact when every task brought its sketch (the merged sketch is the sketch of
 * the union of samples) or when one task holds all the samples; otherwise
 * count, min, max and mean stay exact and the percentiles are interpolated.
 */
export function mergeDistribution(tasks: TaskResult[], metric: string): Distribution {
  if (tasks.length === 0) throw new Error(`no task recorded histogram "${metric}"`);
  if (tasks.every((t) => t.sketches?.[metric])) {
    const sketch = mergeSketches(tasks.map((t) => t.sketches![metric]));
    return { ...summarizeSketch(sketch), approximate: false, sketch: encodeSketch(sketch) };
  }
  const summaries = tasks.map((t) => t.summaries[metric]);
  if (summaries.length === 1) return { ...clampPercentiles(withoutMedian(summaries[0])), approximate: false };
  return approximateDistribution(summaries);
}

export function mergeSketches(sketches: DDSketch[]): DDSketch {
  const merged = new DDSketch({ relativeAccuracy: RELATIVE_ACCURACY });
  for (const sketch of sketches) merged.merge(sketch);
  return merged;
}

/**
 * The numbers Artillery reports for a sketch (ssms.ts summarizeHistogram),
 * except that percentiles are kept within [min, max]: a sketch's bucket value
 * can sit up to 1% past the extremes it actually saw.
 */
export function summarizeSketch(sketch: DDSketch): Omit<Distribution, "approximate" | "sketch"> {
  if (sketch.count === 0) {
    return { count: 0, min: 0, max: 0, mean: 0, p50: 0, p75: 0, p90: 0, p95: 0, p99: 0, p999: 0 };
  }
  const at = (q: number) => round1(sketch.getValueAtQuantile(q));
  return clampPercentiles({
    count: sketch.count,
    min: round1(sketch.min),
    max: round1(sketch.max),
    mean: round1(sketch.sum / sketch.count),
    p50: at(0.5),
    p75: at(0.75),
    p90: at(0.9),
    p95: at(0.95),
    p99: at(0.99),
    p999: at(0.999),
  });
}

/** Percentiles inside [min, max] (rounding and sketch buckets can put them a hair outside). */
export function clampPercentiles<T extends Omit<Distribution, "approximate" | "sketch">>(d: T): T {
  const clamp = (x: number) => Math.min(Math.max(x, d.min), d.max);
  return { ...d, p50: clamp(d.p50), p75: clamp(d.p75), p90: clamp(d.p90), p95: clamp(d.p95), p99: clamp(d.p99), p999: clamp(d.p999) };
}

const QUANTILE_KEYS = ["p50", "p75", "p90", "p95", "p99", "p999"] as const;
const QUANTILES: Record<(typeof QUANTILE_KEYS)[number], number> = {
  p50: 0.5,
  p75: 0.75,
  p90: 0.9,
  p95: 0.95,
  p99: 0.99,
  p999: 0.999,
};

/**
 * Without sketches, each task's distribution is known only at its summary
 * points. Model each as the piecewise-linear CDF through (min, 0), (p50, 0.5),
 * …, (max, 1), weight by sample count, and invert the mixture: unlike
 * averaging percentiles, this keeps a small slow task's tail in the merged p99.
 */
export function approximateDistribution(summaries: HistogramSummary[]): Distribution {
  const count = summaries.reduce((n, s) => n + s.count, 0);
  const cdfs = summaries.map((s) => ({ weight: s.count / count, knots: cdfKnots(s) }));
  const xs = [...new Set(cdfs.flatMap((c) => c.knots.map((k) => k.x)))].sort((a, b) => a - b);
  const mixtureAt = (x: number, side: "before" | "after") =>
    cdfs.reduce((sum, c) => sum + c.weight * cdfAt(c.knots, x, side), 0);
  // Both sides of every breakpoint, so a jump in the mixture stays a jump.
  const mixture = xs.flatMap((x) => [
    { x, q: mixtureAt(x, "before") },
    { x, q: mixtureAt(x, "after") },
  ]);
  const quantile = (q: number) => round1(invert(mixture, q));
  return clampPercentiles({
    count,
    min: summaries.reduce((m, s) => Math.min(m, s.min), Infinity),
    max: summaries.reduce((m, s) => Math.max(m, s.max), -Infinity),
    mean: round1(summaries.reduce((sum, s) => sum + s.mean * s.count, 0) / count),
    p50: quantile(0.5),
    p75: quantile(0.75),
    p90: quantile(0.9),
    p95: quantile(0.95),
    p99: quantile(0.99),
    p999: quantile(0.999),
    approximate: true,
  });
}

interface Knot {
  x: number;
  q: number;
}

function cdfKnots(s: HistogramSummary): Knot[] {
  const knots: Knot[] = [{ x: s.min, q: 0 }];
  for (const key of QUANTILE_KEYS) knots.push({ x: s[key], q: QUANTILES[key] });
  knots.push({ x: s.max, q: 1 });
  // Rounding to 0.1 can leave a percentile a hair outside [min, max] or below its predecessor.
  let floor = s.min;
  for (const k of knots) {
    k.x = Math.min(Math.max(k.x, floor), s.max);
    floor = k.x;
  }
  return knots;
}

/**
 * The CDF at x, from the right (`after`: the value past a jump where knots
 * share an x) or from the left (the limit just before x).
 */
function cdfAt(knots: Knot[], x: number, side: "before" | "after"): number {
  const below = (k: Knot) => (side === "after" ? k.x <= x : k.x < x);
  let i = knots.length - 1;
  while (i >= 0 && !below(knots[i])) i--;
  if (i < 0) return 0;
  if (i === knots.length - 1) return 1;
  const a = knots[i];
  const b = knots[i + 1];
  return a.q + ((b.q - a.q) * (x - a.x)) / (b.x - a.x);
}

/** Smallest x with F(x) ≥ q on a piecewise-linear, non-decreasing CDF. */
function invert(points: Knot[], q: number): number {
  if (points[0].q >= q) return points[0].x;
  for (let i = 1; i < points.length; i++) {
    const a = points[i - 1];
    const b = points[i];
    if (b.q >= q) return a.x + ((b.x - a.x) * (q - a.q)) / (b.q - a.q);
  }
  return points[points.length - 1].x;
}

function withoutMedian(s: HistogramSummary): Omit<Distribution, "approximate" | "sketch"> {
  const { median: _median, ...rest } = s;
  return rest;
}

function sumCounters(all: Array<Record<string, number>>): Record<string, number> {
  const sum = byName<number>();
  for (const counters of all) {
    for (const [name, value] of Object.entries(counters)) sum[name] = (sum[name] ?? 0) + value;
  }
  return sum;
}

interface AlignedPeriod {
  counters: Record<string, number>;
  rates: Record<string, number>;
}

/** Artillery cuts periods at 10 s wall-clock boundaries (ssms.ts normalizeTs), so tasks' periods line up by timestamp. */
function alignPeriods(tasks: TaskResult[]): AlignedPeriod[] {
  const byPeriod = new Map<number, { counters: Array<Record<string, number>>; rates: Array<Record<string, number>> }>();
  for (const task of tasks) {
    for (const p of task.periods) {
      const slot = byPeriod.get(p.period) ?? { counters: [], rates: [] };
      slot.counters.push(p.counters);
      slot.rates.push(p.rates);
      byPeriod.set(p.period, slot);
    }
  }
  return [...byPeriod.values()].map((slot) => ({ counters: sumCounters(slot.counters), rates: sumCounters(slot.rates) }));
}

/**
 * Mean over every aligned period of the column (periods where a rate is absent
 * count as 0, as in Artillery's own aggregate rate) and peak of the summed rate.
 */
function rateStats(aligned: AlignedPeriod[]): Column["rates"] {
  const names = new Set(aligned.flatMap((p) => Object.keys(p.rates)));
  const stats: Column["rates"] = byName();
  for (const name of [...names].sort()) {
    const values = aligned.map((p) => p.rates[name] ?? 0);
    stats[name] = {
      mean: round1(values.reduce((a, b) => a + b, 0) / values.length),
      peak: values.reduce((m, v) => Math.max(m, v), -Infinity),
    };
  }
  return stats;
}

function peakOfCounter(aligned: AlignedPeriod[], name: string): number | null {
  let peak: number | null = null;
  for (const p of aligned) if (p.counters[name] !== undefined) peak = Math.max(peak ?? -Infinity, p.counters[name]);
  return peak;
}

function tallyChecks(tasks: TaskResult[]): CheckTally[] {
  const tallies = new Map<string, CheckTally>();
  for (const task of tasks) {
    for (const c of task.checks ?? []) {
      const tally = tallies.get(c.check) ?? { check: c.check, strict: c.strict, passed: 0, failed: 0 };
      if (c.passed) tally.passed++;
      else tally.failed++;
      tallies.set(c.check, tally);
    }
  }
  return [...tallies.values()];
}

function extreme(values: Array<number | undefined>, pick: (a: number, b: number) => number): number | null {
  let out: number | null = null;
  for (const v of values) if (v !== undefined) out = out === null ? v : pick(out, v);
  return out;
}

function round1(x: number): number {
  return Math.round(x * 10) / 10;
}

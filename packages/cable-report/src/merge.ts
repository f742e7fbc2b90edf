// Distribution math, pure: sketches merged, summaries interpolated, a task's generator health; the
// column itself is folded task by task in fold.ts.
import { DDSketch } from "@artilleryio/sketches-js";
import { METRICS } from "artillery-engine-cable/metrics";
import type { Distribution, GeneratorTask } from "./model.js";
import { detectSaturation, lagFigure, lateSecondsOf } from "./saturation.js";
import { RELATIVE_ACCURACY } from "./sidecar.js";
import type { HistogramSummary, TaskResult } from "./task.js";

/** Per-period, per-process peak of open connections; its sum over periods means nothing. */
export const OPEN_PEAK_COUNTER = METRICS.connectionsOpenPeriodPeak;

/** The engine's per-second worst event-loop delay (artillery-engine-cable lag.ts): the generator's, not the server's. */
export const EVENT_LOOP_LAG = METRICS.eventLoopLag;

/** The column of tasks held in memory (fold.ts folds them one at a time). */
/** One task's generator health: its own lag p99 (a merged p99 would hide one saturated task among idle ones) and CPU. */
export function generatorHealth(task: TaskResult, file: string): GeneratorTask {
  const sketch = task.sketches?.[EVENT_LOOP_LAG];
  const summary = task.summaries[EVENT_LOOP_LAG];
  const lagDistribution = sketch && sketch.count > 0 ? summarizeSketch(sketch) : summary;
  const lag = lagFigure(lagDistribution);
  const health = { lag, cpuMean: task.generator?.cpuMean ?? null, cpuPeak: task.generator?.cpuPeak ?? null };
  const g = task.generator;
  const machine = g ? { stealPercent: g.stealPercent ?? null, load: g.loadPeak ?? null, cores: g.cores ?? null } : null;
  const { saturated, starved, reasons } = detectSaturation({ ...health, late: lateSecondsOf(task.counters), machine });
  // `starved` only where true: a merged file of a run without it reads as before.
  return { file, lagP99: lagDistribution?.p99 ?? null, ...health, saturated, ...(starved ? { starved } : {}), reasons };
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

function round1(x: number): number {
  return Math.round(x * 10) / 10;
}

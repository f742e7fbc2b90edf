// Does a figure creep up over a soak? The verdict, on trend.ts's slope. Pure: no I/O.
//
// "drifting" needs the whole (corrected) 95% interval of the slope above a
// floor per hour, the largest of:
//  - a share of the run's median level (a few MiB an hour matter on a 40 MiB
//    server, not on a 4 GiB one),
//  - an absolute amount, below which no growth matters however certain it is,
//  - three times an allowed level step spread over the run (see
//    `stepAllowanceRelative`): a step is not a slope, but a slope fitted
//    across one reads like one, and over a short run no test can tell the two
//    apart; this term is what keeps a one-off step of a few percent from being
//    called a leak on a 10-minute run.
// Whole interval above the floor, not only the estimate: that is the rule the
// regression gate applies to a change (compare.ts), and it is what keeps the
// false alarms at none in a thousand on the flat 30-minute soaks of the tests,
// where an estimate above max(20% of the level, 5 ms) per hour with an
// interval merely above zero called 17% of the flat p95 series "drifting"
// (test/drift.test.ts has the figures). It implies the two weaker conditions
// (interval excludes zero, estimate above every floor).
// Runs covering less than `minSpanMs` are "too-short": a slope read off a
// short window is mostly whatever wobble happened in it.
// A trend down is never "drifting": a server that got faster or gave memory
// back is not leaking; it is reported as "flat", with a reason that says so.

import { fitCore, medianSorted, MIN_TREND_POINTS, senInterval, serialCorrelationInflation, type TrendPoint } from "./trend.js";

const HOUR_MS = 3_600_000;
const MINUTE_MS = 60_000;

export interface DriftOptions {
  /** The whole interval of the growth per hour must exceed this share of the run's median level (0.1 = 10% an hour)… */
  floorPerHourRelative: number;
  /** …and this much per hour, in the series' unit. */
  floorPerHourAbsolute: number;
  /** Points covering less than this are "too-short" (n points a period apart cover n periods). */
  minSpanMs: number;
  /**
   * A level step up to this share of the level is not a leak, however short
   * the run: the floor includes STEP_MARGIN × this × level ÷ the run's span.
   * Default 0 (off).
   */
  stepAllowanceRelative?: number;
  /** Names the figure in the reason, e.g. "memory", "p95". Default "value". */
  label?: string;
  /** The series' unit, e.g. "MiB", "ms". Default none. */
  unit?: string;
}

export interface DriftVerdict {
  kind: "drifting" | "flat" | "too-short" | "no-data";
  /** Theil–Sen slope, unit per hour; null when there was no fit. */
  perHour: number | null;
  /** 95% interval of `perHour` (widened for serial correlation). */
  low: number | null;
  high: number | null;
  /** Median value over the run: the baseline the relative floor is judged against. */
  level: number | null;
  /** `perHour` ÷ |level|: 0.1 = grows 10% of its level an hour; null when the level is 0 or unknown. */
  relativePerHour: number | null;
  /** One sentence with the figures, for the report. */
  reason: string;
}

/**
 * Shortest run whose slope the report judges: 10 minutes, 60 ten-second
 * periods. Under that a slope is mostly the wobble in the window (a GC cycle,
 * a warm-up tail), and the step term of the floor (3 × a 5% step over the
 * span) would be 90%/h or more anyway.
 */
export const DRIFT_MIN_SPAN_MS = 10 * MINUTE_MS;

/**
 * How many times its size an allowed level step adds to the floor over the
 * run's span. Theil–Sen reads a step of h in mid-run, over a span T, as a
 * slope of about 1.05·h/T on a clean series and 1.45·h/T on a noisy one (the
 * noise blurs the pairs on either side of the step, which say "no slope",
 * toward the pairs across it; least squares reads 1.5·h/T). A margin of 2
 * leaves too little room: in the tests' noise, a p95 step of exactly the
 * allowance (10%) was called a leak in 9 of 1000 thirty-minute soaks and 16
 * of 1000 ten-minute ones; with 3, in 0 and 1 (memory, a 5% step: 0 and 0).
 */
export const STEP_MARGIN = 3;

/**
 * Server memory (MiB, `timeline.server.memoryMiB`).
 *
 * - 10%/h of the level: a process that grows a tenth of its size every hour
 *   doubles in under a day of uptime; less is within what caches warming and
 *   allocator fragmentation do on a healthy server in its first hours, which
 *   is when soaks run.
 * - 8 MiB/h: below this (under 200 MiB a day) a leak outlives no restart that
 *   matters; it is also what a 2 MiB wobble (a heap resize, a buffer pool
 *   allocated once) reads as over a 30-minute soak with some margin (4 to
 *   6 MiB/h, see STEP_MARGIN), so on a small server a wobble stays out even
 *   on long runs where the step term has shrunk.
 * - a 5% step: 2 MiB on a 40 MiB server. The step term is 3 × 5% = 15% of the
 *   level over the span: 30%/h on a 30-minute soak (12 MiB/h on 40 MiB),
 *   90%/h on a 10-minute one; it falls under the 10%/h term after 1.5 hours.
 *   A leak of 20 MiB/h on 40 MiB is found in 30 minutes (every seed of the
 *   tests), not in 10 (it grows 3.3 MiB, hardly more than the wobble).
 */
export const MEMORY_DRIFT_FLOOR: Readonly<Required<DriftOptions>> = Object.freeze({
  floorPerHourRelative: 0.1,
  floorPerHourAbsolute: 8,
  minSpanMs: DRIFT_MIN_SPAN_MS,
  stepAllowanceRelative: 0.05,
  label: "memory",
  unit: "MiB",
});

/**
 * Latency percentiles (ms, e.g. the p95 line).
 *
 * - 5 ms/h: the regression gate's latency floor (`GATE.latencyFloorMs` in
 *   compare.ts): a few milliseconds at p95 is what scheduling on a shared
 *   machine moves between two runs, so a p95 that ends 2.5 ms higher after
 *   30 minutes is not evidence of anything.
 * - 20%/h of the level: a p95 that grows a fifth of itself every hour is a
 *   queue that does not drain, which is what this is meant to catch.
 * - a 10% step: per-period p95s shift by that much for reasons that are not
 *   drift (a connection pool that grew, a JIT tier change, a neighbour on the
 *   host), and they are far noisier than memory (each is the 95th percentile
 *   of ten seconds of samples). The step term is 3 × 10% = 30% of the level
 *   over the span: 60%/h on a 30-minute soak (12 ms/h at a 20 ms p95), so a
 *   p95 growing 30 ms/h from 20 ms is found, and a 10% shift is not a leak.
 */
export const LATENCY_DRIFT_FLOOR: Readonly<Required<DriftOptions>> = Object.freeze({
  floorPerHourRelative: 0.2,
  floorPerHourAbsolute: 5,
  minSpanMs: DRIFT_MIN_SPAN_MS,
  stepAllowanceRelative: 0.1,
  label: "p95",
  unit: "ms",
});

/**
 * Judges whether a series drifts up over the run. Points with a null or
 * non-finite value (periods without samples, scrapes that failed) are skipped.
 * t is in ms; the slope is reported per hour, in the series' unit.
 */
export function judgeDrift(points: ReadonlyArray<{ t: number; v: number | null }>, options: DriftOptions): DriftVerdict {
  const label = options.label ?? "value";
  const unit = options.unit ? ` ${options.unit}` : "";
  const clean: TrendPoint[] = [];
  for (const p of points) {
    if (p.v !== null && Number.isFinite(p.v) && Number.isFinite(p.t)) clean.push({ t: p.t, v: p.v });
  }
  const level = clean.length > 0 ? medianSorted(Float64Array.from(clean, (p) => p.v).sort()) : null;
  const empty = { perHour: null, low: null, high: null, relativePerHour: null };
  if (clean.length < MIN_TREND_POINTS) {
    return { kind: "no-data", ...empty, level, reason: `${clean.length} points with a ${label}, ${MIN_TREND_POINTS} needed for a trend` };
  }

  // Hours since the first point: the slope comes out per hour, and the
  // intercept stays near the data (epoch ms times a slope loses digits).
  const times = clean.map((p) => p.t).sort((a, b) => a - b);
  const t0 = times[0]!;
  const span = times[times.length - 1]! - t0;
  // Each point stands for a period (or a scrape interval), so n points a
  // period apart cover n periods, not n − 1: a 10-minute soak's 60 periods
  // span 9 min 50 s from first to last start and must not be "too-short".
  const covered = span + typicalGap(times);
  const hours = clean.map((p) => ({ t: (p.t - t0) / HOUR_MS, v: p.v }));
  const core = span > 0 ? fitCore(hours) : null;
  if (core === null || covered < options.minSpanMs) {
    return {
      kind: "too-short",
      ...empty,
      level,
      reason: `the points cover ${fmt(covered / MINUTE_MS)} min, under the ${setting(options.minSpanMs / MINUTE_MS)} min it takes to tell a slope from a wobble`,
    };
  }

  const used = Array.from(core.ts, (t, i) => ({ t, v: core.vs[i]! }));
  const { factor } = serialCorrelationInflation(used, core.slope, core.intercept);
  const { low, high } = senInterval(core, factor);
  const perHour = core.slope;
  const scale = level === null ? 0 : Math.abs(level);
  const relativePerHour = scale > 0 ? perHour / scale : null;
  // The step term: see STEP_MARGIN. It uses the span of the points (not the
  // period they cover), the T in the step's reading h/T.
  const stepAllowance = options.stepAllowanceRelative ?? 0;
  const stepFloor = stepAllowance > 0 ? (STEP_MARGIN * stepAllowance * scale) / (span / HOUR_MS) : 0;
  const floor = Math.max(options.floorPerHourRelative * scale, options.floorPerHourAbsolute, stepFloor);
  const figures = { perHour, low, high, level, relativePerHour };

  const interval = `95% interval ${fmt(low)} to ${fmt(high)}${factor >= 1.05 ? `, widened ×${fmt(Math.sqrt(factor))} for correlated periods` : ""}`;
  const terms = [`${setting(options.floorPerHourRelative * 100)}% of ${fmt(scale)}${unit}`, `${setting(options.floorPerHourAbsolute)}${unit}`];
  if (stepFloor > 0) terms.push(`${STEP_MARGIN} × a ${setting(stepAllowance * 100)}% step in ${fmt(span / MINUTE_MS)} min`);
  const floorText = `the floor of max(${terms.join(", ")})${stepFloor > 0 ? ` = ${fmt(floor)}${unit}` : ""} per hour`;
  const rate = `${fmt(Math.abs(perHour))}${unit}/h (${interval})`;

  if (high < 0) {
    return { kind: "flat", ...figures, reason: `${label} falls ${rate}: it improved, which is not a leak` };
  }
  if (!(low > 0)) {
    const verb = perHour < 0 ? "falls" : perHour > 0 ? "grows" : "changes";
    return { kind: "flat", ...figures, reason: `${label} ${verb} ${rate}: the interval includes zero, no clear trend` };
  }
  if (low > floor) {
    return { kind: "drifting", ...figures, reason: `${label} grows ${rate}, all of it above ${floorText}` };
  }
  if (perHour > floor) {
    return { kind: "flat", ...figures, reason: `${label} grows ${rate}, but not all of it above ${floorText}` };
  }
  return { kind: "flat", ...figures, reason: `${label} grows ${rate}, under ${floorText}` };
}

/** Median gap between consecutive distinct times (`times` sorted): the period the points stand for. */
function typicalGap(times: number[]): number {
  const gaps: number[] = [];
  for (let i = 1; i < times.length; i++) {
    const gap = times[i]! - times[i - 1]!;
    if (gap > 0) gaps.push(gap);
  }
  return gaps.length === 0 ? 0 : medianSorted(Float64Array.from(gaps).sort());
}

/** 3.1, 12.4, 0.042, 1234: one decimal in the usual range, two significant digits below 0.1, none from 1000. */
function fmt(x: number): string {
  const a = Math.abs(x);
  if (a === 0) return "0";
  if (a < 0.1) return x.toPrecision(2);
  if (a >= 1000) return x.toFixed(0);
  return x.toFixed(1);
}

/** A setting as it was written: 20, 5, 0.5 (not 20.0, 5.0). */
function setting(x: number): string {
  return fmt(x).replace(/\.0$/, "");
}

// Does a figure creep up over a soak? Pure: no I/O.
//
// Over a long run users want to know whether the server's memory or the
// latency p95 grows: a leak, a queue that never drains, a cache without a
// bound. The per-period series give one point per 10 s period (the server's
// memory one per 5 s scrape), so a 30-minute soak has 180 to 360 points.
//
// The trend is the Theil–Sen estimator: the median of the slopes between every
// pair of points. Its breakdown point is 1 − 1/√2 ≈ 29%: up to that share of
// the points can be anything at all and the slope stays bounded. One outlier
// period (a GC pause, a deploy, a noisy neighbour) moves it by at most one
// rank among hundreds of thousands of slopes, where it can drag a least-squares
// slope anywhere (its influence grows with its size and its distance from the
// middle of the run). Its 95% interval is Sen's (1968), distribution-free: it
// inverts Kendall's tau, so it needs no assumption about the noise's shape
// (latency noise is skewed and heavy-tailed; a normal-theory interval is not
// to be trusted on it).
//
// Sen's interval does assume independent points, and consecutive periods are
// not: a slow period is usually followed by another (a backlog drains over
// several periods, a GC cycle spans scrapes). Positively autocorrelated noise
// makes the plain interval too narrow (for AR(1) noise with φ = 0.6 about half
// as wide as it should be), and a flat series would be called drifting far
// more often than 5% of the time. `judgeDrift` therefore widens it by the
// Hamed & Rao (1998) effective-sample-size correction of the Mann–Kendall
// variance, estimated from the ranks of the detrended series (see
// `serialCorrelationInflation`). The floors (below) are the second guard: they
// hold even where the interval is wrong.
//
// A verdict of "drifting" needs all of:
//  - the whole (corrected) 95% interval of the slope above zero,
//  - the estimated growth per hour above a floor relative to the run's median
//    level (a few MiB an hour matter on a 40 MiB server, not on a 4 GiB one),
//  - and above an absolute floor (below which no growth matters to anyone,
//    however certain it is),
//  - over at least `minSpanMs` of points: a slope read off a short window is
//    mostly whatever wobble happened in it.
// A trend down is never "drifting": a server that got faster or gave memory
// back is not leaking; it is reported as "flat", with a reason that says so.

/** One observation: `t` in ms (epoch or elapsed; only differences matter), `v` in the series' unit. */
export interface TrendPoint {
  t: number;
  v: number;
}

export interface TheilSenFit {
  /** Median pairwise slope, in v per unit of t. */
  slope: number;
  /** Median of v − slope·t: the line's value at t = 0. */
  intercept: number;
  /** Sen's 95% interval of the slope. */
  low: number;
  high: number;
  /** Points the fit used (after dropping non-finite ones and thinning). */
  n: number;
}

/** Fewer points than this and neither a slope nor its interval means much (with 9 points there are 36 slopes and the 95% interval spans most of them). */
export const MIN_TREND_POINTS = 10;

/**
 * More points than this are thinned evenly (every k-th in time order, the
 * first and last kept) before the O(n²) pairwise slopes: 2000 points make
 * 2 million slopes (16 MB of doubles, ~0.2 s to sort), which is the most a
 * report should spend on one line. A soak long enough to have more (over
 * 2.7 hours of 5 s memory scrapes) has slopes far better determined than the
 * floors need, so dropping points costs nothing that matters; thinning evenly
 * keeps the time span and the spacing, so the estimator is unchanged in kind.
 */
export const MAX_TREND_POINTS = 2000;

/** z_{0.975}, the two-sided 95% quantile of the standard normal. */
const Z_975 = 1.959963984540054;

const HOUR_MS = 3_600_000;
const MINUTE_MS = 60_000;

/**
 * Theil–Sen slope and intercept with Sen's (1968) distribution-free 95%
 * interval of the slope. Null for fewer than `MIN_TREND_POINTS` finite points
 * or when every point has the same t (no slope is defined).
 *
 * The interval: with the N pairwise slopes (pairs with equal t left out)
 * sorted ascending, C = z_{0.975}·√Var(S), where
 * Var(S) = [n(n−1)(2n+5) − Σ u(u−1)(2u+5)]/18 is the variance of Kendall's S
 * under no trend, the sum running over groups of u points sharing one t (ties
 * in t, Sen's eq. 2.6; ties in v are not subtracted: v − βt is continuous in
 * β, so they do not tie in the statistic the interval inverts). With
 * M1 = (N − C)/2 and M2 = (N + C)/2 the limits are the round(M1)-th and the
 * (round(M2) + 1)-th smallest slope, 1-based. That is Gilbert (1987),
 * "Statistical Methods for Environmental Pollution Monitoring", §16.5.1
 * ("the M1th largest and the (M2+1)th largest of the N' ordered slope
 * estimates"), as implemented by R's `trend::sens.slope` (rank.lo =
 * round((N−C)/2), rank.up = round((N+C)/2 + 1)) and by SciPy's
 * `scipy.stats.theilslopes` (0-based Rl = round((N+zσ)/2) − 1 and
 * Ru = round((N−zσ)/2) with z < 0). R's `zyp::confint.zyp` takes
 * round((N+C)/2) for the upper limit, one rank narrower. The tests compare
 * with SciPy's figures on a fixed series. Ranks are clamped to [1, N].
 *
 * `varianceInflation` multiplies Var(S) (1 = Sen's interval as published;
 * `judgeDrift` passes the serial-correlation correction).
 */
export function theilSen(points: ReadonlyArray<TrendPoint>, varianceInflation = 1): TheilSenFit | null {
  const core = fitCore(points);
  if (core === null) return null;
  const { low, high } = senInterval(core, varianceInflation);
  return { slope: core.slope, intercept: core.intercept, low, high, n: core.ts.length };
}

interface FitCore {
  /** Time-ordered points the fit used. */
  ts: Float64Array;
  vs: Float64Array;
  /** Pairwise slopes, ascending. */
  slopes: Float64Array;
  slope: number;
  intercept: number;
  /** Σ u(u−1)(2u+5) over groups of u points sharing one t. */
  tieTerm: number;
}

function fitCore(points: ReadonlyArray<TrendPoint>): FitCore | null {
  let clean = points.filter((p) => Number.isFinite(p.t) && Number.isFinite(p.v));
  if (clean.length < MIN_TREND_POINTS) return null;
  clean = [...clean].sort((a, b) => a.t - b.t);
  if (clean.length > MAX_TREND_POINTS) clean = thin(clean, MAX_TREND_POINTS);
  const n = clean.length;
  const ts = Float64Array.from(clean, (p) => p.t);
  const vs = Float64Array.from(clean, (p) => p.v);

  const all = new Float64Array((n * (n - 1)) / 2);
  let count = 0;
  for (let i = 0; i < n - 1; i++) {
    const ti = ts[i]!;
    const vi = vs[i]!;
    for (let j = i + 1; j < n; j++) {
      const dt = ts[j]! - ti;
      // Sorted by t, so dt ≥ 0; dt = 0 is a tie in t, which has no slope.
      if (dt > 0) all[count++] = (vs[j]! - vi) / dt;
    }
  }
  if (count === 0) return null;
  const slopes = all.subarray(0, count).sort();
  const slope = medianSorted(slopes);

  const offsets = Float64Array.from(ts, (t, i) => vs[i]! - slope * t).sort();
  const intercept = medianSorted(offsets);

  let tieTerm = 0;
  for (let i = 0; i < n; ) {
    let j = i + 1;
    while (j < n && ts[j] === ts[i]) j++;
    const u = j - i;
    tieTerm += u * (u - 1) * (2 * u + 5);
    i = j;
  }
  return { ts, vs, slopes, slope, intercept, tieTerm };
}

function senInterval(core: FitCore, varianceInflation: number): { low: number; high: number } {
  const n = core.ts.length;
  const big = core.slopes.length;
  const variance = (Math.max(0, n * (n - 1) * (2 * n + 5) - core.tieTerm) / 18) * Math.max(1, varianceInflation);
  const c = Z_975 * Math.sqrt(variance);
  const rankLow = clampRank(Math.round((big - c) / 2), big);
  const rankHigh = clampRank(Math.round((big + c) / 2) + 1, big);
  return { low: core.slopes[rankLow - 1]!, high: core.slopes[rankHigh - 1]! };
}

function clampRank(rank: number, big: number): number {
  return Math.min(big, Math.max(1, rank));
}

/** Every k-th point evenly, first and last kept (`points` sorted by t, longer than `max`). */
function thin<T>(points: T[], max: number): T[] {
  const out: T[] = [];
  const step = (points.length - 1) / (max - 1);
  for (let i = 0; i < max; i++) out.push(points[Math.round(i * step)]!);
  return out;
}

function medianSorted(sorted: Float64Array): number {
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/**
 * How much autocorrelation in the noise inflates the variance of Kendall's S,
 * n/n* in Hamed & Rao (1998), "A modified Mann-Kendall trend test for
 * autocorrelated data", J. Hydrology 204: 182–196, eq. 18:
 *   n/n* = 1 + 2/(n(n−1)(n−2)) · Σ_{k=1}^{n−1} (n−k)(n−k−1)(n−k−2) ρ_k,
 * with ρ_k the lag-k autocorrelation of the ranks of the detrended series
 * (ranks, so a few spike periods cannot hide the correlation of the rest).
 * We assume AR(1), ρ_k = r₁^k, with r₁ the lag-1 estimate (longer lags are
 * too noisy to estimate from 12 to 360 points; AR(1) is how load-test noise
 * mostly behaves: a backlog decays over the next periods). Negative r₁ would
 * narrow the interval; we never do that, so the factor is at least 1. r₁ is
 * capped at 0.95 (the factor is then ~39: the interval already spans nearly
 * every slope). Small samples underestimate r₁ (by about (1 + 4ρ)/n), so for
 * short series the correction is partial: the floors are what remains.
 *
 * `points` are the time-ordered points of a fit, `slope`/`intercept` its line.
 */
export function serialCorrelationInflation(points: ReadonlyArray<TrendPoint>, slope: number, intercept: number): { lag1: number; factor: number } {
  const n = points.length;
  if (n < 3) return { lag1: 0, factor: 1 };
  const ranks = rank(points.map((p) => p.v - (intercept + slope * p.t)));
  const mean = (n + 1) / 2;
  let num = 0;
  let den = 0;
  for (let i = 0; i < n; i++) {
    const d = ranks[i]! - mean;
    den += d * d;
    if (i + 1 < n) num += d * (ranks[i + 1]! - mean);
  }
  const lag1 = den > 0 ? num / den : 0;
  if (!(lag1 > 0)) return { lag1, factor: 1 };
  const r = Math.min(lag1, 0.95);
  let sum = 0;
  let rk = 1;
  for (let k = 1; k < n; k++) {
    rk *= r;
    if (rk < 1e-12) break;
    sum += (n - k) * (n - k - 1) * (n - k - 2) * rk;
  }
  return { lag1, factor: Math.max(1, 1 + (2 / (n * (n - 1) * (n - 2))) * sum) };
}

/** 1-based ranks, ties sharing their mean rank. */
function rank(values: number[]): number[] {
  const order = values.map((_, i) => i).sort((a, b) => values[a]! - values[b]!);
  const ranks = new Array<number>(values.length);
  for (let i = 0; i < order.length; ) {
    let j = i + 1;
    while (j < order.length && values[order[j]!] === values[order[i]!]) j++;
    for (let k = i; k < j; k++) ranks[order[k]!] = (i + 1 + j) / 2;
    i = j;
  }
  return ranks;
}

export interface DriftOptions {
  /** Growth per hour must exceed this share of the run's median level (0.1 = 10% an hour). */
  floorPerHourRelative: number;
  /** …and this much per hour, in the series' unit. */
  floorPerHourAbsolute: number;
  /** Points covering less than this are "too-short" (n points a period apart cover n periods). */
  minSpanMs: number;
  /**
   * A level step up to this share of the level is not a leak, however short
   * the run: the growth over the run must exceed twice it. Default 0 (off).
   * See `MEMORY_DRIFT_FLOOR` for why a step needs this.
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
 * a warm-up tail), and any growth it could show is too small in absolute
 * terms to tell from a level step.
 */
export const DRIFT_MIN_SPAN_MS = 10 * MINUTE_MS;

/**
 * Server memory (MiB, `timeline.server.memoryMiB`): drifting only above
 * max(10% of the median level, 8 MiB) per hour.
 *
 * - 10%/h relative: a process that grows a tenth of its size every hour
 *   doubles in under a day of uptime; less than that is within what caches
 *   warming and allocator fragmentation do on a healthy server in its first
 *   hour, which is when soaks run.
 * - 8 MiB/h absolute: a level step is not a slope, but a slope fitted across
 *   one reads like one. A step of h in the middle of a run of length T gives a
 *   least-squares slope of 1.5·h/T and a Theil–Sen slope of about h/T to
 *   1.5·h/T (the median pairwise slope falls among the pairs that straddle the
 *   step, the farthest apart of them first). A 2 MiB step (a heap resize, a
 *   pool of buffers allocated once: 5% of a 40 MiB server) over a 30-minute
 *   soak is thus read as 4 to 6 MiB/h, which is at or over the 10% of 40 MiB
 *   = 4 MiB/h relative floor alone; 8 MiB/h keeps it out with room for noise.
 *   At the 10-minute minimum span the same step reads as 12 MiB/h or more and
 *   only the serial-correlation widening of the interval (a step leaves
 *   strongly autocorrelated residuals) stands against it: judge leaks on
 *   runs of 30 minutes or more. A real leak of 8 MiB/h is 190 MiB a day,
 *   which is worth flagging on a small server and is the least one can tell
 *   from steps in half an hour.
 */
export const MEMORY_DRIFT_FLOOR: Readonly<Required<DriftOptions>> = Object.freeze({
  floorPerHourRelative: 0.1,
  floorPerHourAbsolute: 8,
  minSpanMs: DRIFT_MIN_SPAN_MS,
  label: "memory",
  unit: "MiB",
});

/**
 * Latency percentiles (ms, e.g. the p95 line): drifting only above
 * max(20% of the median level, 5 ms) per hour.
 *
 * - 5 ms/h absolute: the regression gate's latency floor (`GATE.latencyFloorMs`
 *   in compare.ts): a few milliseconds at p95 is what scheduling on a shared
 *   machine moves between two runs, so a soak's p95 that ends 2.5 ms higher
 *   after 30 minutes is not evidence of anything.
 * - 20%/h relative: per-period p95s are far noisier than memory (each is the
 *   95th percentile of ten seconds of samples, and one GC pause or one slow
 *   broadcast moves it by tens of percent), and a level step of 10% (a
 *   connection pool that grew, a JIT tier change) reads over 30 minutes as
 *   10 to 15% an hour; 20%/h keeps such steps out. A p95 that grows a fifth
 *   of itself every hour is a queue that does not drain, which is what this
 *   is meant to catch.
 */
export const LATENCY_DRIFT_FLOOR: Readonly<Required<DriftOptions>> = Object.freeze({
  floorPerHourRelative: 0.2,
  floorPerHourAbsolute: 5,
  minSpanMs: DRIFT_MIN_SPAN_MS,
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
      reason: `the points cover ${fmt(covered / MINUTE_MS)} min, under the ${fmt(options.minSpanMs / MINUTE_MS)} min it takes to tell a slope from a wobble`,
    };
  }

  const used = Array.from(core.ts, (t, i) => ({ t, v: core.vs[i]! }));
  const { factor } = serialCorrelationInflation(used, core.slope, core.intercept);
  const { low, high } = senInterval(core, factor);
  const perHour = core.slope;
  const scale = level === null ? 0 : Math.abs(level);
  const relativePerHour = scale > 0 ? perHour / scale : null;
  // A step of h in mid-run is read by Theil–Sen as about 1.05·h/T (no noise)
  // to 1.45·h/T (noise blurs the pairs on either side of the step toward the
  // pairs across it), T the span of the points: twice the allowed step over
  // the span keeps such a step out with a margin for noise.
  const stepAllowance = options.stepAllowanceRelative ?? 0;
  const stepFloor = stepAllowance > 0 ? (2 * stepAllowance * scale) / (span / HOUR_MS) : 0;
  const floor = Math.max(options.floorPerHourRelative * scale, options.floorPerHourAbsolute, stepFloor);
  const figures = { perHour, low, high, level, relativePerHour };

  const interval = `95% interval ${fmt(low)} to ${fmt(high)}${factor >= 1.05 ? `, widened ×${fmt(Math.sqrt(factor))} for correlated periods` : ""}`;
  const terms = [`${fmt(options.floorPerHourRelative * 100)}% of ${fmt(scale)}${unit}`, `${fmt(options.floorPerHourAbsolute)}${unit}`];
  if (stepFloor > 0) terms.push(`twice a ${fmt(stepAllowance * 100)}% step in ${fmt(span / MINUTE_MS)} min`);
  const floorText = `the floor of max(${terms.join(", ")})${stepFloor > 0 ? ` = ${fmt(floor)}${unit}` : ""} per hour`;
  const rate = `${fmt(Math.abs(perHour))}${unit}/h (${interval})`;

  if (high < 0) {
    return { kind: "flat", ...figures, reason: `${label} falls ${rate}: it improved, which is not a leak` };
  }
  if (!(low > 0)) {
    const verb = perHour < 0 ? "falls" : perHour > 0 ? "grows" : "changes";
    return { kind: "flat", ...figures, reason: `${label} ${verb} ${rate}: the interval includes zero, no clear trend` };
  }
  if (perHour > floor) {
    return { kind: "drifting", ...figures, reason: `${label} grows ${rate}, above ${floorText}` };
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

// Level shifts in a figure's history, for the trend charts: "p95 went from 80 ms to 140 ms at run 20". Pure: no I/O.
//
// The method is binary segmentation for changes in mean (Scott & Knott 1974, "A cluster analysis method for
// grouping means in the analysis of variance", Biometrics 30; Vostrikova 1981; the BinSeg of Killick & Eckley's
// R package changepoint, J. Stat. Softw. 58(3), 2014). The cost of a segment is its sum of squared deviations
// from its mean; the best split of a segment is the one that lowers that cost the most; the segment whose best
// split lowers the total cost the most is split first, and the splitting stops at the first split that does not
// pay the penalty (or at ⌊n / minSegment⌋ splits). Binary segmentation rather than an exact search (PELT, optimal
// partitioning): a history has tens to a few hundred runs and a handful of real shifts, where the greedy split
// finds the same ones in O(n) per split with prefix sums, and it has no tuning beyond the penalty. Once the
// splitting stops, each change point is moved to the best split between its neighbours (see there for why).
//
// The penalty is BIC-like: a split is kept when it lowers the cost by more than
//   PENALTY_FACTOR · 2σ̂² · ln n,
// the Schwarz criterion (ln n per parameter) for one more mean and one more change-point location with Gaussian
// noise of variance σ̂² (Yao 1988, "Estimating the number of change-points via Schwarz' criterion", Stat. Probab.
// Lett. 6), made stricter by PENALTY_FACTOR because σ̂ is estimated from the same 20-odd runs (see there for the
// rates it was chosen on). σ̂ must not
// grow with the shifts it is there to find, so it is the robust scale of the first differences: a step moves one
// difference and leaves the rest alone, so σ̂ = MAD(Δy) / (√2 · 0.6745) (the difference of two independent values
// has variance 2σ², and 0.6745 is the normal's quartile: MAD/0.6745 is σ for normal data), as in the change-point
// literature (Fryzlewicz 2014, "Wild binary segmentation for multiple change-point detection", Ann. Statist. 42;
// his R package wbs).
//
// Latencies are judged on ln v ("log"), where a step is a ratio and 5% noise is 5% at 80 ms and at 800 ms alike.
// Counts that can be 0 (errors) are judged on the linear scale; a log request on a series with a value ≤ 0 falls
// back to linear.

export interface ChangePoint {
  /** Index of the first value of the new level (the run where it happened). */
  index: number;
  /** The level before and after (mean, or geometric mean on the log scale), over the segments on either side. */
  before: number;
  after: number;
}

export interface ChangePointOptions {
  /** "log" (default): a step is a ratio (latencies); "linear": a difference (counts that may be 0). */
  scale?: "log" | "linear";
  /** Shortest segment, runs (default 3). */
  minSegment?: number;
}

/**
 * The multiple of the BIC penalty 2σ̂²·ln n: twice it. The plain criterion assumes σ known; here σ̂ comes from
 * the same few runs (the MAD of 29 differences is typically 20% off) and the best of ~25 split positions is a
 * maximum, so on pure noise it flags far more than its nominal rate. Measured on seeded lognormal noise (the
 * test's generator; the scale cancels on the log scale, so 5% and 15% noise give the same rates), the share
 * of series with any change point at all:
 *   factor      1      1.5    2      2.5    3
 *   30 runs   14.6%   5.9%   2.6%   1.3%   0.8%   (2000 series; at 2 over 5000 series: 3.0%)
 *   10 runs   22.1%  13.8%   9.7%   7.1%   5.5%
 *   20 runs   18.7%   8.3%   4.2%   2.4%   1.6%
 *   60 runs    9.3%   2.9%   0.8%   0.3%   0.1%
 * (at 2 over other seeds: 10 runs 10.9%, 20 runs 4.3%, 60 runs 0.5%, 100 runs 0.1%, 300 runs 0.15%). A history
 * of 10 runs shows a spurious shift about one time in ten: the charts mark shifts as hints, never as a verdict
 * (the gate's band does that). What 2 still finds, 30 runs under 5% noise, 2000 series each: a 30% step (5σ)
 * at exactly its run in 98.8% (anywhere from run 3 to run 27; alone in 96.6%); a 15% step (2.8σ) at exactly its
 * run in 80%, within two runs in 98%; a 10% step (1.9σ) within two runs in 77%. 2.5 would halve the false
 * shifts and find the 15% step within a run less often (94.8% against 96.6%); 1.5 finds hardly more and flags
 * 6% of flat 30-run histories.
 */
export const PENALTY_FACTOR = 2;

/** 1/Φ⁻¹(¾): MAD / 0.6744897501960817 is σ for normal data. */
const MAD_TO_SD = 1 / 0.6744897501960817;

/** Level shifts in a series of runs (oldest first), in index order. */
export function changePoints(values: Array<number | null>, options: ChangePointOptions = {}): ChangePoint[] {
  const minSegment = options.minSegment ?? 3;
  if (!(Number.isInteger(minSegment) && minSegment >= 1)) throw new RangeError(`changePoints: minSegment must be an integer ≥ 1, got ${minSegment}`);
  // Runs without the figure are skipped; `at` maps the working series back to the caller's indices.
  const at: number[] = [];
  const kept: number[] = [];
  values.forEach((v, i) => {
    if (v !== null && Number.isFinite(v)) {
      at.push(i);
      kept.push(v);
    }
  });
  const n = kept.length;
  if (n < 2 * minSegment) return [];
  if (kept.every((v) => v === kept[0])) return [];
  const log = (options.scale ?? "log") === "log" && kept.every((v) => v > 0);
  const raw = log ? kept.map(Math.log) : kept;

  // Centred on the median before the prefix sums: Σy² − (Σy)²/m cancels badly on ln-latencies of 4.4 ± 0.05, and
  // centring makes the deviations what is summed. Exactly equal values stay exactly equal (0 for the median's).
  const median = medianOf(raw);
  const y = raw.map((v) => v - median);
  const s1 = new Float64Array(n + 1);
  const s2 = new Float64Array(n + 1);
  for (let i = 0; i < n; i++) {
    s1[i + 1] = s1[i]! + y[i]!;
    s2[i + 1] = s2[i]! + y[i]! * y[i]!;
  }
  /** Sum of squared deviations from the mean of y[from, to). */
  const cost = (from: number, to: number): number => {
    const sum = s1[to]! - s1[from]!;
    return Math.max(0, s2[to]! - s2[from]! - (sum * sum) / (to - from));
  };

  const sigma = noiseScale(y);
  const penalty = PENALTY_FACTOR * 2 * sigma * sigma * Math.log(n);

  interface Segment {
    from: number;
    to: number;
    /** The best split (index of the first value after it) and how much it lowers the cost; gain −1: none possible. */
    split: number;
    gain: number;
  }
  const bestSplit = (from: number, to: number): Segment => {
    const whole = cost(from, to);
    let split = -1;
    let gain = -1;
    for (let k = from + minSegment; k <= to - minSegment; k++) {
      const g = whole - cost(from, k) - cost(k, to);
      if (g > gain) {
        gain = g;
        split = k;
      }
    }
    return { from, to, split, gain };
  };

  const segments: Segment[] = [bestSplit(0, n)];
  const splits: number[] = [];
  const maxSplits = Math.floor(n / minSegment);
  while (splits.length < maxSplits) {
    let best = 0;
    for (let i = 1; i < segments.length; i++) if (segments[i]!.gain > segments[best]!.gain) best = i;
    const segment = segments[best]!;
    if (segment.split < 0 || !(segment.gain > penalty)) break;
    splits.push(segment.split);
    segments.splice(best, 1, bestSplit(segment.from, segment.split), bestSplit(segment.split, segment.to));
  }

  splits.sort((a, b) => a - b);
  // Refinement: each change point moves to the best split between its neighbours, until none moves. Binary
  // segmentation places its first split by fitting one step to the whole series, and where there are two steps
  // (up, then down) that fit is off by a run whenever the run beside the step is noisy towards the middle level:
  // 80 … 80 93 | 130 … 130 | 85 … once in a hundred such series. The split is never revisited, so the chart would
  // mark the shift one run early. Each move strictly lowers the total cost, so this ends; the pass count is a bound.
  const gainAt = (from: number, k: number, to: number): number => cost(from, to) - cost(from, k) - cost(k, to);
  for (let pass = 0; pass < 20; pass++) {
    let moved = false;
    for (let i = 0; i < splits.length; i++) {
      const from = i === 0 ? 0 : splits[i - 1]!;
      const to = i + 1 < splits.length ? splits[i + 1]! : n;
      const best = bestSplit(from, to);
      if (best.gain > gainAt(from, splits[i]!, to)) {
        splits[i] = best.split;
        moved = true;
      }
    }
    if (!moved) break;
  }
  const bounds = [0, ...splits, n];
  const level = (from: number, to: number): number => {
    let sum = 0;
    for (let i = from; i < to; i++) sum += raw[i]!;
    return log ? Math.exp(sum / (to - from)) : sum / (to - from);
  };
  return splits.map((split, i) => ({
    index: at[split]!,
    before: level(bounds[i]!, split),
    after: level(split, bounds[i + 2]!),
  }));
}

/**
 * σ̂ of the noise: MAD of the first differences (about their median, as R's mad()), / (√2 · 0.6745).
 *
 * When more than half the differences are equal the MAD is 0 though the series is not constant: integer counts
 * (0, 0, 1, 0, 0, 0, 2, …) or a noiseless series with a step. A zero σ̂ would make every blip of an error count
 * a change point, so σ̂ falls back to the root mean square of the differences about their median, / √2: it
 * counts a step's difference (one in n − 1) and so errs on the side of fewer change points, and it is 0 only
 * when every difference equals the median one (a constant or a perfectly linear series). Then a floor, 1e-9
 * of the series' own magnitude, keeps the penalty positive, so a constant series has no change point
 * (it has none anyway: every split's gain is 0) while any real step clears it; a noiseless ramp gets as many
 * steps as the bound allows (it has no level to keep, and no measured history is one).
 */
function noiseScale(y: number[]): number {
  const diffs: number[] = [];
  for (let i = 1; i < y.length; i++) diffs.push(y[i]! - y[i - 1]!);
  const centre = medianOf(diffs);
  const deviations = diffs.map((d) => Math.abs(d - centre));
  let sigma = (medianOf(deviations) * MAD_TO_SD) / Math.SQRT2;
  if (sigma === 0) {
    let ss = 0;
    for (const d of deviations) ss += d * d;
    sigma = Math.sqrt(ss / deviations.length) / Math.SQRT2;
  }
  let magnitude = 0;
  for (const v of y) magnitude = Math.max(magnitude, Math.abs(v));
  return Math.max(sigma, 1e-9 * magnitude);
}

function medianOf(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

// The band of normal variation of a figure over past runs, and where a new run sits in it. Pure: no I/O.
//
// The history gate asks one question per figure: is this run's value one the
// last N comparable runs would have produced by chance? The answer is a
// prediction interval, not a confidence interval of the mean: the mean of 20
// runs is known to within s/√20, but the next run scatters by s around it, and
// the band must hold the next run, not the mean. For values drawn
// independently from one normal distribution, the next one x satisfies
//   (x − x̄) / (s·√(1 + 1/n)) ~ t(n − 1)
// exactly (x − x̄ has variance σ²(1 + 1/n); s is independent of both), so
//   x̄ ± t_{conf, n−1} · s · √(1 + 1/n)
// holds the next value with one-sided confidence `conf` on each side (Hahn &
// Meeker, "Statistical Intervals: A Guide for Practitioners", 1991, ch. 4:
// the prediction interval for one future observation). With 5 to 20 runs
// both corrections matter: z instead of t, or s without √(1 + 1/n), makes a
// band that a run with nothing changed leaves far more often than it says
// (at n = 10 the 99% z-bound without the √ holds 97.3% of the next runs, with
// the √ 97.7%; band.test.ts measures it).
//
// Latencies are skewed and change by ratios (a slower machine multiplies every
// percentile), so the band of a latency is computed on ln v ("log"): its
// centre is the geometric mean and its bounds are ratios of it, never
// negative. Counts that can be 0 (errors, failed users) have no logarithm; a
// log band asked of a series with a value ≤ 0 falls back to "linear" and says
// so in `scale`.
//
// The t distribution is computed, not tabulated, since the gate needs any n
// and confidences like 1 − 0.001/12 (Bonferroni over a dozen figures): its
// CDF through the regularized incomplete beta function, its quantile by
// bisection on the CDF. See `studentTUpper` and `studentTQuantile`.

export type BandScale = "log" | "linear";

export interface Band {
  /** Runs the band was computed from. */
  n: number;
  scale: BandScale;
  /** The centre: the mean (linear) or the geometric mean (log), in the figure's unit. */
  center: number;
  /** Standard deviation of the values on the band's scale (of ln v for log). */
  sd: number;
  /** The prediction interval's bounds, in the figure's unit: where the next run's value falls with the band's confidence when nothing changed. */
  low: number;
  high: number;
  /** One-sided confidence of `high` (and of `low`), e.g. 0.999. */
  confidence: number;
}

/**
 * The prediction interval for one more value drawn like `values`: mean ± t_{conf, n−1} · s · √(1 + 1/n) on the
 * scale (ln v for "log"; a log band needs every value > 0, else it is computed on the linear scale and says so via `scale`).
 * null with fewer than 2 values. Non-finite values are dropped first. With s = 0 (all equal), low = high = center.
 * `confidence` is one-sided, in [0.5, 1) (below 0.5 the bounds would cross): RangeError otherwise.
 */
export function predictionBand(values: number[], confidence: number, scale: BandScale): Band | null {
  if (!(confidence >= 0.5 && confidence < 1)) throw new RangeError(`predictionBand: confidence must be in [0.5, 1), got ${confidence}`);
  const finite = values.filter((v) => Number.isFinite(v));
  const n = finite.length;
  if (n < 2) return null;
  const used: BandScale = scale === "log" && finite.every((v) => v > 0) ? "log" : "linear";
  // All equal: exactly a zero-width band on the value itself (ln then exp, or a mean of n copies, can be an ulp off,
  // and an ulp of spread would turn "the same value again" into a t-score of thousands).
  if (finite.every((v) => v === finite[0])) {
    const v = finite[0]!;
    return { n, scale: used, center: v, sd: 0, low: v, high: v, confidence };
  }
  const ys = used === "log" ? finite.map(Math.log) : finite;
  const { mean, sd } = meanSd(ys);
  const half = studentTQuantile(confidence, n - 1) * sd * Math.sqrt(1 + 1 / n);
  const back = used === "log" ? Math.exp : (y: number) => y;
  return { n, scale: used, center: back(mean), sd, low: back(mean - half), high: back(mean + half), confidence };
}

/**
 * Where a value sits in a band, for a report: its t-score ((v' − mean) / (s·√(1+1/n)) on the band's scale;
 * ±Infinity when s = 0 and v differs, 0 when equal) and the one-sided p-value of a value that high or higher
 * under the band (1 − T_cdf(score, n−1)). On a log band a value ≤ 0 is below any band (score −Infinity, p 1);
 * a non-finite value gives NaN for both.
 */
export function bandPosition(band: Band, value: number): { score: number; p: number } {
  if (!Number.isFinite(value)) return { score: NaN, p: NaN };
  let score: number;
  if (band.scale === "log" && value <= 0) score = -Infinity;
  else if (band.sd === 0) score = value === band.center ? 0 : value > band.center ? Infinity : -Infinity;
  else {
    const y = band.scale === "log" ? Math.log(value) : value;
    const mean = band.scale === "log" ? Math.log(band.center) : band.center;
    score = (y - mean) / (band.sd * Math.sqrt(1 + 1 / band.n));
  }
  const df = band.n - 1;
  // The upper tail directly, not 1 − CDF: a p-value of 1e-9 would otherwise be lost to rounding.
  const p = score >= 0 ? studentTUpper(score, df) : 1 - studentTUpper(-score, df);
  return { score, p };
}

/**
 * Per-figure confidence for a family-wise one-sided false-alarm rate `familyAlpha` over `figures` figures (Bonferroni): 1 − familyAlpha / figures.
 *
 * Bonferroni holds whatever the figures' correlation (p95 and p99 of one run move together), where Šidák's
 * 1 − (1 − α)^{1/m} is exact only for independent figures; for α = 0.01 over 12 figures their per-figure rates
 * differ by 0.5% (0.000833 against 0.000837), so the simpler bound, never optimistic, is the one to use.
 */
export function bonferroniConfidence(familyAlpha: number, figures: number): number {
  if (!(familyAlpha > 0 && familyAlpha < 1)) throw new RangeError(`bonferroniConfidence: familyAlpha must be in (0, 1), got ${familyAlpha}`);
  if (!(Number.isInteger(figures) && figures >= 1)) throw new RangeError(`bonferroniConfidence: figures must be an integer ≥ 1, got ${figures}`);
  return 1 - familyAlpha / figures;
}

/** Mean and sample standard deviation (n − 1), two-pass (one pass, Σy² − (Σy)²/n, cancels on ln-latencies that differ in the third digit). */
function meanSd(ys: number[]): { mean: number; sd: number } {
  const n = ys.length;
  let sum = 0;
  for (const y of ys) sum += y;
  const mean = sum / n;
  let ss = 0;
  for (const y of ys) ss += (y - mean) * (y - mean);
  return { mean, sd: Math.sqrt(ss / (n - 1)) };
}

// ---- Student's t distribution ----------------------------------------------------------------------------------

/**
 * Above this many degrees of freedom the tail is the normal's at a rescaled t (Abramowitz & Stegun 26.7.8, as R's
 * pt does above 4e5): P(T > t) ≈ Q(t·(1 − 1/(4ν)) / √(1 + t²/(2ν))), off by O(ν⁻²): 2e-10 relative at ν = 1e7 and
 * t = 9 (a tail of 1e-19), 3e-14 at t = 1.96, 100 times less at ν = 1e8. Below it, the incomplete beta, whose
 * continued fraction starts with 1 − (a + b)x/(a + 1) for x within O(1/ν) of 1, and so loses about ε·ν/t² to
 * cancellation: under 3e-13 up to ν = 1e4, 4e-11 at 1e6, 5e-10 just below 1e7 (6e-9 at 1e9, were it used there).
 * Measured against mpmath's betainc at 40 digits; 1e7 is about where the two errors cross. The large-ν path is
 * also the one for df = Infinity, where it is the normal exactly.
 */
const DF_LARGE = 1e7;

/** Student's t quantile: the value t with P(T ≤ t) = p for T ~ t(df); p in (0,1), df ≥ 1 (Infinity: the normal). RangeError otherwise. */
export function studentTQuantile(p: number, df: number): number {
  if (!(p > 0 && p < 1)) throw new RangeError(`studentTQuantile: p must be in (0, 1), got ${p}`);
  if (!(df >= 1)) throw new RangeError(`studentTQuantile: df must be ≥ 1, got ${df}`);
  if (p === 0.5) return 0;
  // Solve in the upper tail, q = P(T > t) ≤ 0.5, and mirror: the distribution is symmetric, and the tail
  // probability keeps its relative precision where p itself (0.999999…) has lost it.
  return p > 0.5 ? upperQuantile(1 - p, df) : -upperQuantile(p, df);
}

/** Student's t CDF, P(T ≤ t) for T ~ t(df), df ≥ 1 (Infinity: the normal). */
export function studentTCdf(t: number, df: number): number {
  if (Number.isNaN(t)) return NaN;
  return t >= 0 ? 1 - studentTUpper(t, df) : studentTUpper(-t, df);
}

/**
 * P(T > t) for t ≥ 0: ½ I_x(ν/2, ½) with x = ν/(ν + t²) (Abramowitz & Stegun 26.7.1 with 26.5.27): the
 * two-sided tail of t is the incomplete beta at x, and half of it is one tail. 1 − x = t²/(ν + t²) is passed
 * as such, not computed as 1 − x, so that small t keep their precision.
 */
export function studentTUpper(t: number, df: number): number {
  if (Number.isNaN(t)) return NaN;
  if (t <= 0) return t === 0 ? 0.5 : 1 - studentTUpper(-t, df);
  if (t === Infinity) return 0;
  const t2 = t * t;
  if (t2 === Infinity) return 0;
  if (df > DF_LARGE) {
    const v = 1 / (4 * df);
    return normalUpper((t * (1 - v)) / Math.sqrt(1 + t2 * 2 * v));
  }
  const x = df / (df + t2);
  const y = t2 / (df + t2);
  return 0.5 * regularizedBeta(x, y, df / 2, 0.5);
}

/**
 * The t > 0 with P(T > t) = q, q in (0, 0.5): bisection on the monotone tail. The bracket [hi/2, hi] comes from
 * doubling, so bisection reaches a relative width of 1e-13 in about 45 steps, for any df and any q down to the
 * smallest double (t_{1 − 1e-300, 1} ≈ 3e299 is 1000 doublings away; no overflow before that). Bisection rather
 * than Newton or Brent: a few dozen CDF evaluations cost microseconds, and bisection cannot step out of the bracket
 * where the tail's slope (t's density) is 1e-20.
 */
function upperQuantile(q: number, df: number): number {
  let lo = 0;
  let hi = 1;
  for (let i = 0; i < 1100 && studentTUpper(hi, df) >= q; i++) {
    lo = hi;
    hi *= 2;
    if (hi === Infinity) return Infinity;
  }
  for (let i = 0; i < 300 && hi - lo > 1e-13 * hi; i++) {
    const mid = lo + (hi - lo) / 2;
    if (studentTUpper(mid, df) >= q) lo = mid;
    else hi = mid;
  }
  return lo + (hi - lo) / 2;
}

/**
 * I_x(a, b), with y = 1 − x given separately. Numerical Recipes (Press et al., 3rd ed., 2007, §6.4): the
 * prefactor x^a y^b / (a B(a, b)) times the continued fraction, which converges fast for x < (a + 1)/(a + b + 2);
 * above that, by symmetry, 1 − I_y(b, a).
 */
function regularizedBeta(x: number, y: number, a: number, b: number): number {
  if (x <= 0) return 0;
  if (y <= 0) return 1;
  // ln x as log1p(−y) when x is near 1 (and ln y likewise): at ν = 10⁶, x = 1 − 4e-6, and ln x from the rounded x
  // is off by 2.5e-11 relative, which a = ν/2 multiplies into an error of 1e-10 in the tail.
  const lnX = x < 0.5 ? Math.log(x) : Math.log1p(-y);
  const lnY = y < 0.5 ? Math.log(y) : Math.log1p(-x);
  const lnFront = a * lnX + b * lnY - logBeta(a, b);
  if (x < (a + 1) / (a + b + 2)) return (Math.exp(lnFront) * betaContinuedFraction(x, a, b)) / a;
  return 1 - (Math.exp(lnFront) * betaContinuedFraction(y, b, a)) / b;
}

const TINY = 1e-300;
const EPS = 1e-15;
/** Terms grow as O(√max(a, b)): ν = 1e7 takes a few hundred; a bound, never reached, so no input can loop for long. */
const MAX_TERMS = 10_000;

/** The continued fraction of I_x(a, b) (NR's betacf), evaluated by the modified Lentz method (NR §5.2). */
function betaContinuedFraction(x: number, a: number, b: number): number {
  const qab = a + b;
  const qap = a + 1;
  const qam = a - 1;
  let c = 1;
  let d = 1 - (qab * x) / qap;
  if (Math.abs(d) < TINY) d = TINY;
  d = 1 / d;
  let h = d;
  for (let m = 1; m <= MAX_TERMS; m++) {
    const m2 = 2 * m;
    let aa = (m * (b - m) * x) / ((qam + m2) * (a + m2));
    d = 1 + aa * d;
    if (Math.abs(d) < TINY) d = TINY;
    c = 1 + aa / c;
    if (Math.abs(c) < TINY) c = TINY;
    d = 1 / d;
    h *= d * c;
    aa = (-(a + m) * (qab + m) * x) / ((a + m2) * (qap + m2));
    d = 1 + aa * d;
    if (Math.abs(d) < TINY) d = TINY;
    c = 1 + aa / c;
    if (Math.abs(c) < TINY) c = TINY;
    d = 1 / d;
    const del = d * c;
    h *= del;
    if (Math.abs(del - 1) < EPS) break;
  }
  return h;
}

/**
 * ln B(a, b). With the larger argument q ≥ 10, Stirling's series for both ln Γ(q) and ln Γ(p + q) with their
 * big terms cancelled by hand (the way R's lbeta does): ln Γ(q) − ln Γ(p + q) = −(q − ½)·log1p(p/q) − p·ln(p + q) + p
 * + δ(q) − δ(p + q). Subtracting the two ln Γ directly loses |ln Γ(q)|·ε, which at ν = 10⁷ is 2e-8 of the tail.
 */
function logBeta(a: number, b: number): number {
  const p = Math.min(a, b);
  const q = Math.max(a, b);
  if (q < 10) return logGamma(p) + logGamma(q) - logGamma(p + q);
  return logGamma(p) - (q - 0.5) * Math.log1p(p / q) - p * Math.log(p + q) + p + stirlingTail(q) - stirlingTail(p + q);
}

const HALF_LN_2PI = 0.9189385332046728;

/** ln Γ(x), x > 0: Stirling's series (A&S 6.1.41) at x ≥ 10, reached from below by Γ(x + 1) = x Γ(x). Error below 1e-15 relative. */
function logGamma(x: number): number {
  let product = 1;
  while (x < 10) {
    product *= x;
    x += 1;
  }
  return (x - 0.5) * Math.log(x) - x + HALF_LN_2PI + stirlingTail(x) - Math.log(product);
}

/** δ(x) = ln Γ(x) − [(x − ½) ln x − x + ½ ln 2π], x ≥ 10: the Bernoulli terms, the first omitted under 1e-15 there. */
function stirlingTail(x: number): number {
  const r = 1 / x;
  const r2 = r * r;
  return r * (1 / 12 - r2 * (1 / 360 - r2 * (1 / 1260 - r2 * (1 / 1680 - r2 * (1 / 1188 - r2 * (691 / 360360))))));
}

/**
 * P(Z > z) for the standard normal, z > 0: ½ Q(½, z²/2), the regularized upper incomplete gamma, by its series
 * below x = a + 1 and its continued fraction above (NR §6.2, gser and gcf), so the far tail (1e-300) keeps its
 * relative precision, where the usual erf approximations have an absolute error of 1e-7.
 */
function normalUpper(z: number): number {
  const a = 0.5;
  const x = (z * z) / 2;
  if (x === Infinity) return 0;
  const lnFront = -x + a * Math.log(x) - 0.5 * Math.log(Math.PI); // ln Γ(½) = ½ ln π
  if (x < a + 1) {
    let ap = a;
    let del = 1 / a;
    let sum = del;
    for (let i = 0; i < 1000 && Math.abs(del) > Math.abs(sum) * EPS; i++) {
      ap += 1;
      del *= x / ap;
      sum += del;
    }
    return 0.5 * (1 - sum * Math.exp(lnFront));
  }
  let b = x + 1 - a;
  let c = 1 / TINY;
  let d = 1 / b;
  let h = d;
  for (let i = 1; i <= 1000; i++) {
    const an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (Math.abs(d) < TINY) d = TINY;
    c = b + an / c;
    if (Math.abs(c) < TINY) c = TINY;
    d = 1 / d;
    const del = d * c;
    h *= del;
    if (Math.abs(del - 1) < EPS) break;
  }
  return 0.5 * Math.exp(lnFront) * h;
}

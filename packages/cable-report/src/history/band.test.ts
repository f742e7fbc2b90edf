// The t distribution, the prediction band and the Bonferroni split (src/history/band.ts).
//
// The quantiles are checked three ways: against printed tables (3 decimals), against closed forms (df = 1 is
// the Cauchy, t = tan(π(p − ½)); df = 2 has t = (2p − 1)/√(2p(1 − p))) and against mpmath (findroot on
// betainc at 40 digits) to 1e-9 relative. The band's coverage is simulated on seeded normal data: the one-sided
// 99% bound must hold the next value 99% of the time at n = 10 and n = 20, where a z-based bound holds fewer.
import { describe, expect, it } from "vitest";
import { normals } from "../../test/fixtures.js";
import { bandPosition, bonferroniConfidence, predictionBand, studentTCdf, studentTQuantile, studentTUpper } from "./band.js";

function relErr(actual: number, expected: number): number {
  return Math.abs(actual - expected) / Math.abs(expected);
}

describe("studentTQuantile", () => {
  it("matches the printed tables (3 decimals)", () => {
    const table: Array<[p: number, df: number, t: number]> = [
      [0.975, 1, 12.706],
      [0.975, 10, 2.228],
      [0.995, 19, 2.861],
      [0.999, 19, 3.579],
      [0.9995, 9, 4.781],
      [0.95, 4, 2.132],
      [0.99, 9, 2.821],
      [0.975, 30, 2.042],
      [0.975, 1000, 1.962],
    ];
    for (const [p, df, t] of table) expect(studentTQuantile(p, df)).toBeCloseTo(t, 3);
  });

  it("matches mpmath to 1e-9 relative, near p = 1 too", () => {
    const exact: Array<[p: number, df: number, t: number]> = [
      [0.975, 1, 12.706204736174693],
      [0.975, 10, 2.2281388519862742],
      [0.995, 19, 2.8609346064649788],
      [0.999, 19, 3.5794001489547155],
      [0.9995, 9, 4.7809125859312179],
      [0.975, 1000, 1.9623390808264081],
      [0.99, 9, 2.8214379250258082],
      [0.99, 19, 2.5394831906239622],
      [1 - 1e-6, 5, 24.771029720515944],
    ];
    for (const [p, df, t] of exact) expect(relErr(studentTQuantile(p, df), t)).toBeLessThan(1e-9);
  });

  it("matches the closed forms at df = 1 (Cauchy) and df = 2, from p = 1e-9 to 1 − 1e-9", () => {
    for (const p of [1e-9, 1e-6, 0.001, 0.01, 0.1, 0.3, 0.6, 0.9, 0.975, 0.999, 1 - 1e-6, 1 - 1e-9]) {
      // tan(π(p − ½)) written as ∓cot(π·tail), which stays well-conditioned near p = 0 and 1 (1 − p is exact for p ≥ ½).
      const tail = p < 0.5 ? p : 1 - p;
      const sign = p < 0.5 ? -1 : 1;
      expect(relErr(studentTQuantile(p, 1), sign / Math.tan(Math.PI * tail))).toBeLessThan(1e-9);
      expect(relErr(studentTQuantile(p, 2), (2 * p - 1) / Math.sqrt(2 * p * (1 - p)))).toBeLessThan(1e-9);
    }
  });

  it("tends to the normal as df grows, and is the normal at df = Infinity", () => {
    const z975 = 1.9599639845400542;
    const z6 = 4.7534243088228989; // z at 1 − 1e-6
    expect(relErr(studentTQuantile(0.975, Infinity), z975)).toBeLessThan(1e-10);
    expect(relErr(studentTQuantile(1 - 1e-6, Infinity), z6)).toBeLessThan(1e-9);
    // t_{p,ν} = z + (z³ + z)/(4ν) + (5z⁵ + 16z³ + 3z)/(96ν²) + O(ν⁻³) (Abramowitz & Stegun 26.7.5); the ν⁻³ term is
    // 2.6e-9 at ν = 1000.
    const z = z975;
    for (const df of [1000, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9]) {
      const t = studentTQuantile(0.975, df);
      expect(t).toBeGreaterThan(z975);
      const expansion = z + (z ** 3 + z) / (4 * df) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * df * df);
      expect(relErr(t, expansion)).toBeLessThan(2e-9 * (1000 / df) ** 3 + 1e-10);
    }
    expect(studentTQuantile(0.975, 1000)).toBeCloseTo(1.96, 2);
    // Monotone in df: heavier tails with fewer degrees of freedom.
    const byDf = [1, 2, 3, 5, 10, 30, 100, 1000, 1e6, Infinity].map((df) => studentTQuantile(0.999, df));
    for (let i = 1; i < byDf.length; i++) expect(byDf[i]!).toBeLessThan(byDf[i - 1]!);
  });

  it("is symmetric, 0 at p = ½, and round-trips through the CDF", () => {
    for (const df of [1, 2, 3.5, 9, 19, 100, 1e4, 1e8]) {
      expect(studentTQuantile(0.5, df)).toBe(0);
      for (const p of [1e-12, 1e-6, 0.001, 0.025, 0.2, 0.49, 0.51, 0.8, 0.975, 0.999, 1 - 1e-6]) {
        const t = studentTQuantile(p, df);
        // Symmetry on a pair of p that sum to 1 exactly (1 − 1e-12 as a double is not 1 − 1e-12, and the tail's
        // quantile moves by 1e-4 with it).
        const low = p < 0.5 ? p : 1 - p;
        const high = 1 - low;
        expect(relErr(studentTQuantile(high, df), -studentTQuantile(1 - high, df))).toBeLessThan(1e-9);
        // The tail the quantile was asked for, to its relative precision.
        const tail = p < 0.5 ? studentTCdf(t, df) : 1 - studentTCdf(t, df);
        expect(relErr(tail, Math.min(p, 1 - p))).toBeLessThan(1e-8);
        expect(relErr(p < 0.5 ? studentTUpper(-t, df) : studentTUpper(t, df), Math.min(p, 1 - p))).toBeLessThan(1e-8);
      }
    }
  });

  it("rejects p outside (0, 1) and df below 1", () => {
    for (const p of [0, 1, -0.1, 1.5, NaN]) expect(() => studentTQuantile(p, 5)).toThrow(RangeError);
    for (const df of [0, 0.5, -1, NaN]) expect(() => studentTQuantile(0.9, df)).toThrow(RangeError);
  });
});

describe("studentTCdf", () => {
  it("is ½ at 0, monotone, and the Cauchy's at df = 1", () => {
    expect(studentTCdf(0, 7)).toBe(0.5);
    for (const t of [-50, -3, -1, -0.1, 0.1, 1, 3, 50]) {
      expect(relErr(studentTCdf(t, 1), 0.5 + Math.atan(t) / Math.PI)).toBeLessThan(1e-12);
    }
    let last = 0;
    for (let t = -10; t <= 10; t += 0.25) {
      const c = studentTCdf(t, 4);
      expect(c).toBeGreaterThan(last);
      last = c;
    }
    expect(studentTCdf(Infinity, 3)).toBe(1);
    expect(studentTCdf(-Infinity, 3)).toBe(0);
  });
});

describe("predictionBand", () => {
  it("linear: mean ± t_{0.95,4} · s · √(1 + 1/5), by hand", () => {
    // 10, 12, 14, 16, 18: mean 14, s² = (16 + 4 + 0 + 4 + 16)/4 = 10; t_{0.95,4} = 2.1318467863266499 (mpmath);
    // half-width = 2.13184678632665 · √10 · √1.2 = 2.13184678632665 · √12 = 7.384932...
    const band = predictionBand([14, 10, 18, 12, 16], 0.95, "linear")!;
    const half = 2.1318467863266499 * Math.sqrt(12);
    expect(band.n).toBe(5);
    expect(band.scale).toBe("linear");
    expect(band.center).toBeCloseTo(14, 12);
    expect(band.sd).toBeCloseTo(Math.sqrt(10), 12);
    expect(band.high).toBeCloseTo(14 + half, 9);
    expect(band.low).toBeCloseTo(14 - half, 9);
    expect(band.high).toBeCloseTo(21.384932, 5);
    expect(band.confidence).toBe(0.95);
  });

  it("log: the geometric mean times and divided by one ratio, by hand", () => {
    // ln 50, ln 100, ln 200: mean ln 100, deviations −ln 2, 0, ln 2, so s = ln 2; t_{0.9,2} = 0.8/√0.18 (closed form),
    // half-width on the log scale = t · ln 2 · √(4/3): high = 100·e^half, low = 100/e^half.
    const band = predictionBand([200, 50, 100], 0.9, "log")!;
    const half = (0.8 / Math.sqrt(0.18)) * Math.LN2 * Math.sqrt(4 / 3);
    expect(band.scale).toBe("log");
    expect(band.center).toBeCloseTo(100, 10);
    expect(band.sd).toBeCloseTo(Math.LN2, 12);
    expect(band.high).toBeCloseTo(100 * Math.exp(half), 8);
    expect(band.low).toBeCloseTo(100 / Math.exp(half), 8);
    expect(band.low * band.high).toBeCloseTo(100 * 100, 6);
    expect(band.low).toBeGreaterThan(0);
  });

  it("log and linear differ on skewed data: the log band is asymmetric, never below 0", () => {
    const values = [20, 22, 25, 21, 60, 23, 24, 22, 21, 26];
    const log = predictionBand(values, 0.99, "log")!;
    const lin = predictionBand(values, 0.99, "linear")!;
    expect(log.scale).toBe("log");
    expect(lin.scale).toBe("linear");
    expect(lin.low).toBeLessThan(0); // the arithmetic band of a skewed latency reaches below zero
    expect(log.low).toBeGreaterThan(0);
    expect(log.center).toBeLessThan(lin.center); // geometric mean ≤ arithmetic mean
    expect(log.high - log.center).toBeGreaterThan(log.center - log.low);
    expect(lin.high - lin.center).toBeCloseTo(lin.center - lin.low, 9);
  });

  it("a log band with a value ≤ 0 is computed on the linear scale and says so", () => {
    const band = predictionBand([0, 1, 2, 0, 3], 0.99, "log")!;
    expect(band.scale).toBe("linear");
    expect(band.center).toBeCloseTo(1.2, 12);
    expect(predictionBand([-1, 1, 2], 0.99, "log")!.scale).toBe("linear");
  });

  it("drops non-finite values, and is null under 2 values", () => {
    expect(predictionBand([], 0.99, "log")).toBeNull();
    expect(predictionBand([5], 0.99, "log")).toBeNull();
    expect(predictionBand([5, NaN, Infinity, -Infinity], 0.99, "linear")).toBeNull();
    const band = predictionBand([10, NaN, 12, Infinity, 14, 16, 18], 0.95, "linear")!;
    expect(band.n).toBe(5);
    expect(band.center).toBeCloseTo(14, 12);
  });

  it("all equal: a zero-width band on the value itself, on either scale", () => {
    for (const scale of ["log", "linear"] as const) {
      const band = predictionBand([0.1, 0.1, 0.1, 0.1], 0.999, scale)!;
      expect(band).toEqual({ n: 4, scale, center: 0.1, sd: 0, low: 0.1, high: 0.1, confidence: 0.999 });
    }
    expect(predictionBand([0, 0, 0], 0.99, "log")).toMatchObject({ scale: "linear", center: 0, low: 0, high: 0 });
  });

  it("rejects a confidence outside [0.5, 1)", () => {
    for (const c of [0.4, 1, 1.2, NaN]) expect(() => predictionBand([1, 2, 3], c, "linear")).toThrow(RangeError);
  });

  // The one-sided 99% bound on seeded normal data. 20,000 trials per n: the binomial SD of a 99% coverage is
  // 0.07%, so ±0.3% is over 4 SD. Measured (seeds 10 and 20): n = 10 0.9892, n = 20 0.9909; the z-bound
  // without √(1 + 1/n) 0.9727 and 0.9839, the z-bound with it 0.9769 and 0.9860 (in theory 0.9731 / 0.9825 and
  // 0.9775 / 0.9844: P(T_{n−1} ≤ z_{0.99}/√(1 + 1/n)) and P(T_{n−1} ≤ z_{0.99})).
  it.each([10, 20])("the one-sided 99%% bound holds the next value 99%% of the time at n = %i (a z-bound does not)", (n) => {
    const next = normals(n);
    const trials = 20_000;
    const z99 = 2.3263478740408408;
    let covered = 0;
    let zCovered = 0;
    let zSqrtCovered = 0;
    for (let i = 0; i < trials; i++) {
      const values = Array.from({ length: n }, () => 50 + 7 * next());
      const x = 50 + 7 * next();
      const band = predictionBand(values, 0.99, "linear")!;
      if (x <= band.high) covered++;
      if (x <= band.center + z99 * band.sd) zCovered++;
      if (x <= band.center + z99 * band.sd * Math.sqrt(1 + 1 / n)) zSqrtCovered++;
    }
    const coverage = covered / trials;
    expect(coverage).toBeGreaterThan(0.987);
    expect(coverage).toBeLessThan(0.993);
    expect(zCovered / trials).toBeLessThan(n === 10 ? 0.98 : 0.986);
    expect(zSqrtCovered / trials).toBeLessThan(n === 10 ? 0.982 : 0.9875);
  });
});

describe("bandPosition", () => {
  it("the band's high bound has the t quantile for score and 1 − confidence for p", () => {
    const values = [80, 84, 79, 91, 86, 83, 88, 82, 85, 81];
    for (const scale of ["log", "linear"] as const) {
      const band = predictionBand(values, 0.999, scale)!;
      const high = bandPosition(band, band.high);
      expect(high.score).toBeCloseTo(studentTQuantile(0.999, 9), 8);
      expect(high.p).toBeCloseTo(0.001, 10);
      const low = bandPosition(band, band.low);
      expect(low.score).toBeCloseTo(-studentTQuantile(0.999, 9), 8);
      expect(low.p).toBeCloseTo(0.999, 10);
      const centre = bandPosition(band, band.center);
      expect(centre.score).toBeCloseTo(0, 10);
      expect(centre.p).toBeCloseTo(0.5, 10);
    }
  });

  it("by hand on the linear example: (20 − 14)/(√10·√1.2) = √3", () => {
    const band = predictionBand([10, 12, 14, 16, 18], 0.95, "linear")!;
    const { score, p } = bandPosition(band, 20);
    expect(score).toBeCloseTo(Math.sqrt(3), 12);
    expect(p).toBeCloseTo(1 - studentTCdf(Math.sqrt(3), 4), 12);
    expect(p).toBeCloseTo(0.079, 3);
  });

  it("keeps a tiny p-value's precision (the upper tail directly, not 1 − CDF)", () => {
    const band = predictionBand([100, 101, 99, 100.5, 99.5, 100], 0.99, "linear")!;
    const { score, p } = bandPosition(band, 200);
    expect(score).toBeGreaterThan(100);
    expect(p).toBeGreaterThan(0);
    expect(p).toBeLessThan(1e-9);
    expect(relErr(p, studentTUpper(score, 5))).toBeLessThan(1e-12);
  });

  it("a zero-width band: 0 on the value, ±Infinity off it", () => {
    const band = predictionBand([7, 7, 7], 0.99, "log")!;
    expect(bandPosition(band, 7)).toEqual({ score: 0, p: 0.5 });
    expect(bandPosition(band, 7.01)).toEqual({ score: Infinity, p: 0 });
    expect(bandPosition(band, 6.99)).toEqual({ score: -Infinity, p: 1 });
  });

  it("a value ≤ 0 sits below any log band; a non-finite one has no position", () => {
    const band = predictionBand([10, 12, 11], 0.99, "log")!;
    expect(bandPosition(band, 0)).toEqual({ score: -Infinity, p: 1 });
    expect(bandPosition(band, -3)).toEqual({ score: -Infinity, p: 1 });
    expect(bandPosition(band, NaN).score).toBeNaN();
    expect(bandPosition(band, Infinity).p).toBeNaN();
  });
});

describe("bonferroniConfidence", () => {
  it("splits the family-wise rate evenly", () => {
    expect(bonferroniConfidence(0.01, 1)).toBeCloseTo(0.99, 15);
    expect(bonferroniConfidence(0.01, 10)).toBeCloseTo(0.999, 15);
    expect(bonferroniConfidence(0.012, 12)).toBeCloseTo(0.999, 15);
  });

  it("rejects a rate outside (0, 1) and a figure count below 1", () => {
    expect(() => bonferroniConfidence(0, 3)).toThrow(RangeError);
    expect(() => bonferroniConfidence(1, 3)).toThrow(RangeError);
    expect(() => bonferroniConfidence(0.01, 0)).toThrow(RangeError);
    expect(() => bonferroniConfidence(0.01, 2.5)).toThrow(RangeError);
  });
});

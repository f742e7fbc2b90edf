// The regression gate's statistics on constructed distributions (the real-run
// A/A and A/B proof is gate-runs.test.ts).
import { describe, expect, it } from "vitest";
import { binomialUpperTail, findRegressions, quantileInterval } from "../src/compare.js";
import type { MergedResults } from "../src/model.js";
import { mergeRegions } from "../src/results.js";
import { exactQuantile, random, sketchOf, taskOf } from "./fixtures.js";

const RTT = "cable.rtt";

/** Log-normal-ish latencies around `median` ms, n samples. */
function latencies(median: number, n: number, seed: number): number[] {
  const next = random(seed);
  return Array.from({ length: n }, () => median * Math.exp(0.4 * (next() + next() + next() - 1.5)));
}

function run(samples: number[], extra: { counters?: Record<string, number>; lag?: number[] } = {}): MergedResults {
  const histograms: Record<string, number[]> = { [RTT]: samples };
  if (extra.lag) histograms["cable.event_loop_lag"] = extra.lag;
  return mergeRegions([{ name: "local", tasks: [taskOf({ histograms, counters: { "vusers.created": 1_000, ...extra.counters } })], files: ["local/a.json"] }]);
}

const rows = (regressions: ReturnType<typeof findRegressions>) => regressions.filter((r) => r.column === "local").map((r) => r.row);

describe("the order-statistic interval of a percentile", () => {
  it("covers the population's quantile about 95% of the time", () => {
    let covered = 0;
    for (let seed = 1; seed <= 200; seed++) {
      const interval = quantileInterval(sketchOf(latencies(20, 400, seed)), 0.95)!;
      // The population's p95: 20·exp(0.4·(q of the sum of three uniforms − 1.5)) ≈ from a huge sample.
      if (interval.low <= TRUE_P95 && TRUE_P95 <= interval.high) covered++;
    }
    expect(covered / 200).toBeGreaterThan(0.9);
  });

  it("has no interval with too few samples for the tail", () => {
    expect(quantileInterval(sketchOf(latencies(20, 40, 1)), 0.5)).toBeNull();
    expect(quantileInterval(sketchOf(latencies(20, 400, 1)), 0.99)).toBeNull();
    expect(quantileInterval(sketchOf(latencies(20, 600, 1)), 0.99)).not.toBeNull();
  });
});

const TRUE_P95 = exactQuantile(latencies(20, 200_000, 999), 0.95);

describe("the gate", () => {
  it("passes independent samples of one distribution (A/A), 50 times out of 50, both ways", () => {
    let alarms = 0;
    for (let seed = 1; seed <= 50; seed++) {
      const a = run(latencies(20, 500, seed));
      const b = run(latencies(20, 500, seed + 1_000));
      alarms += findRegressions(a, b, 10).length + findRegressions(b, a, 10).length;
    }
    expect(alarms).toBe(0);
  });

  it("catches a 30% slowdown, and not a 5% one", () => {
    const base = run(latencies(20, 500, 1));
    expect(rows(findRegressions(run(latencies(26, 500, 2)), base, 10))).toEqual(
      expect.arrayContaining(["Round-trip time (rtt) (ms): p50", "Round-trip time (rtt) (ms): p95"]),
    );
    expect(findRegressions(run(latencies(21, 500, 2)), base, 10)).toEqual([]);
  });

  it("never counts a change under the floor: 5 ms, or the generator's lag when larger", () => {
    expect(findRegressions(run(latencies(1.5, 2_000, 2)), run(latencies(1, 2_000, 1)), 10)).toEqual([]);
    // Like a real A/A pair against Rails on a loaded runner (p95 2.6 → 7 ms): certain by the interval, but noise.
    expect(findRegressions(run(latencies(4.5, 2_000, 2)), run(latencies(1.8, 2_000, 1)), 10)).toEqual([]);
    // The same change a few milliseconds larger counts.
    expect(rows(findRegressions(run(latencies(12, 2_000, 2)), run(latencies(1.8, 2_000, 1)), 10))).toContain("Round-trip time (rtt) (ms): p95");
    const lag = latencies(30, 20, 5);
    expect(findRegressions(run(latencies(26, 500, 2), { lag }), run(latencies(20, 500, 1), { lag }), 10)).toEqual([]);
  });

  it("reads the lag for the floor as the report does: the max under 100 samples, where a p99 means nothing", () => {
    // A short run on a busy runner: one slow second in eight. Its p99 is a rank of eight samples.
    const current = latencies(7, 2_000, 2);
    const base = run(latencies(1.8, 2_000, 1));
    const oneSlowSecond = (n: number) => Array.from({ length: n }, (_, i) => (i === 0 ? 9 : 1));
    expect(findRegressions(run(current, { lag: oneSlowSecond(8) }), base, 10)).toEqual([]);
    // Over 100 samples the p99 speaks, and one slow second in 150 does not raise the floor.
    expect(rows(findRegressions(run(current, { lag: oneSlowSecond(150) }), base, 10))).toContain("Round-trip time (rtt) (ms): p95");
  });

  it("leaves a saturated generator's latencies out", () => {
    const lag = latencies(300, 20, 5);
    expect(findRegressions(run(latencies(40, 500, 2), { lag }), run(latencies(20, 500, 1)), 10)).toEqual([]);
  });

  it("counts new errors only when significant and above the floor", () => {
    const base = run(latencies(20, 500, 1), { counters: { "errors.ETIMEDOUT": 0 } });
    const many = run(latencies(20, 500, 2), { counters: { "errors.ETIMEDOUT": 30 } });
    const few = run(latencies(20, 500, 2), { counters: { "errors.ETIMEDOUT": 2 } });
    expect(rows(findRegressions(many, base, 10))).toEqual(["Errors: All errors", "Errors: ETIMEDOUT"]);
    expect(findRegressions(many, base, 10)[0].reason).toMatch(/0 → 3 per 100 users \(new; 0 → 30 of 1000 → 1000 users\)/);
    expect(findRegressions(few, base, 10)).toEqual([]);
  });

  it("has an exact binomial tail", () => {
    expect(binomialUpperTail(6, 6, 0.5)).toBeCloseTo(1 / 64, 10);
    expect(binomialUpperTail(0, 10, 0.3)).toBe(1);
    expect(binomialUpperTail(3, 10, 0.5)).toBeCloseTo(1 - (1 + 10 + 45) / 1024, 10);
  });
});

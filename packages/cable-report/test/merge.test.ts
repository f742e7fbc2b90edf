import { DDSketch } from "@artilleryio/sketches-js";
import { describe, expect, it } from "vitest";
import { foldTasks, mergeDistribution } from "../src/fold.js";
import { approximateDistribution, mergeSketches, summarizeSketch } from "../src/merge.js";
import { mergeRegions } from "../src/results.js";
import { around, exactQuantile, random, sketchOf, summaryOf, taskOf } from "./fixtures.js";

const LATENCY = "cable.broadcast_latency";
const QUANTILES = { p50: 0.5, p75: 0.75, p90: 0.9, p95: 0.95, p99: 0.99, p999: 0.999 } as const;

describe("merging percentiles", () => {
  it("gives the union's p95 for an uneven mix across regions, where averaging would not", () => {
    const fast = around(10, 9_000, 1);
    const slow = around(1_000, 1_000, 2);
    const merged = mergeRegions([
      { name: "eu-west-2", tasks: [taskOf({ histograms: { [LATENCY]: fast } })], files: ["eu-west-2/a.json"] },
      { name: "us-east-1", tasks: [taskOf({ histograms: { [LATENCY]: slow } })], files: ["us-east-1/a.json"] },
    ]);
    const all = merged.all.histograms[LATENCY];
    const union = [...fast, ...slow];

    expect(all.approximate).toBe(false);
    expect(all.count).toBe(10_000);
    // Rank 9,499 of 10,000 falls among the slow samples.
    expect(all.p95).toBeGreaterThan(900);
    expect(Math.abs(all.p95 - exactQuantile(union, 0.95))).toBeLessThanOrEqual(0.01 * exactQuantile(union, 0.95) + 0.05);
    // What a per-task average of percentiles (the AWS solution) would have said:
    const regions = merged.regions.map((r) => r.histograms[LATENCY].p95);
    expect((regions[0] + regions[1]) / 2).toBeLessThan(600);
  });

  it("equals the sketch of all samples, and the exact quantiles within 1%, for random splits", () => {
    const next = random(7);
    const samples = Array.from({ length: 20_000 }, () => Math.exp(3 + 1.5 * next() * next() * 4));
    const cuts = [0, 1_000, 1_300, 9_000, 15_500, 20_000];
    const parts = cuts.slice(1).map((end, i) => samples.slice(cuts[i], end));

    const merged = mergeDistribution(parts.map((p) => taskOf({ histograms: { [LATENCY]: p } })), LATENCY);

    const { sketch, ...summary } = merged;
    expect(summary).toEqual({ ...summarizeSketch(sketchOf(samples)), approximate: false });
    expect(DDSketch.fromProto(Buffer.from(sketch!, "base64")).count).toBe(samples.length);
    for (const [key, q] of Object.entries(QUANTILES)) {
      const exact = exactQuantile(samples, q);
      // DDSketch's 1% relative accuracy, plus Artillery's rounding to 0.1.
      expect(Math.abs(merged[key as keyof typeof QUANTILES] - exact), key).toBeLessThanOrEqual(0.01 * exact + 0.05);
    }
    expect(merged.min).toBe(Math.round(Math.min(...samples) * 10) / 10);
    expect(merged.max).toBe(Math.round(Math.max(...samples) * 10) / 10);
    const mean = samples.reduce((a, b) => a + b, 0) / samples.length;
    expect(merged.mean).toBe(Math.round(mean * 10) / 10);
  });

  it("does not modify the tasks' sketches", () => {
    const a = sketchOf([1, 2, 3]);
    const b = sketchOf([100]);
    mergeSketches([a, b]);
    expect(a.count).toBe(3);
    expect(b.count).toBe(1);
  });
});

describe("merging without sidecars", () => {
  it("keeps count, min, max and the count-weighted mean exact and marks percentiles approximate", () => {
    const fast = around(10, 9_000, 3);
    const slow = around(1_000, 1_000, 4);
    const tasks = [fast, slow].map((s) => taskOf({ histograms: { [LATENCY]: s }, sidecar: false }));

    const merged = mergeDistribution(tasks, LATENCY);

    const [f, s] = tasks.map((t) => t.summaries[LATENCY]);
    expect(merged.approximate).toBe(true);
    expect(merged.count).toBe(10_000);
    expect(merged.min).toBe(Math.min(f.min, s.min));
    expect(merged.max).toBe(Math.max(f.max, s.max));
    expect(merged.mean).toBeCloseTo((f.mean * 9_000 + s.mean * 1_000) / 10_000, 1);
    // Interpolating the mixture keeps the slow tail: p95 is within the slow task's p50 range.
    expect(merged.p95).toBeGreaterThan(900);
    expect(merged.p50).toBeLessThan(12);
  });

  it("reports a single task's own summary exactly", () => {
    const task = taskOf({ histograms: { [LATENCY]: around(50, 500, 5) }, sidecar: false });
    const { median: _median, ...summary } = task.summaries[LATENCY];
    expect(mergeDistribution([task], LATENCY)).toEqual({ ...summary, approximate: false });
  });

  it("interpolates between summary points and respects jumps where points coincide", () => {
    const constant = summaryOf(sketchOf(Array.from({ length: 100 }, () => 5)));
    const spread = summaryOf(sketchOf(Array.from({ length: 100 }, (_, i) => 100 + i)));
    const merged = approximateDistribution([constant, spread]);
    // Half the samples sit at 5: the median is at the jump, p75 half-way through the other task.
    expect(merged.p50).toBeCloseTo(constant.p50, 1);
    expect(merged.p75).toBeGreaterThan(spread.min);
    expect(merged.p75).toBeLessThan(spread.max);
  });
});

describe("counters, periods and checks", () => {
  const t0 = 1_700_000_000_000;
  const tasks = [
    taskOf({
      counters: { "vusers.created": 10, "errors.ECONNREFUSED": 2, "cable.connections_open_period_peak": 150 },
      periods: [
        { period: t0, counters: { "cable.connections_open_period_peak": 100 }, rates: { "cable.send_rate": 40 } },
        { period: t0 + 10_000, counters: { "cable.connections_open_period_peak": 50 }, rates: { "cable.send_rate": 20 } },
      ],
      checks: [{ check: "cable.rtt.p99 < 500", strict: true, passed: true }],
      firstMetricAt: t0 + 1_000,
      lastMetricAt: t0 + 15_000,
    }),
    taskOf({
      counters: { "vusers.created": 5, "errors.ECONNREFUSED": 1, "cable.connections_open_period_peak": 90 },
      periods: [
        { period: t0 + 10_000, counters: { "cable.connections_open_period_peak": 80 }, rates: { "cable.send_rate": 30 } },
        { period: t0 + 20_000, counters: { "cable.connections_open_period_peak": 10 }, rates: {} },
      ],
      checks: [{ check: "cable.rtt.p99 < 500", strict: true, passed: false }],
      firstMetricAt: t0 + 2_000,
      lastMetricAt: t0 + 25_000,
    }),
    taskOf({ counters: { "vusers.created": 1 }, sidecar: false }),
  ];
  const column = foldTasks(tasks, []).column("eu-west-2");

  it("adds counters and never reports the meaningless sum of the open-connections peak", () => {
    expect(column.counters["vusers.created"]).toBe(16);
    expect(column.counters["errors.ECONNREFUSED"]).toBe(3);
    expect(column.counters).not.toHaveProperty("cable.connections_open_period_peak");
  });

  it("takes peaks over periods aligned by timestamp, summed across tasks", () => {
    // Periods: t0 → 100, t0+10 s → 50 + 80, t0+20 s → 10.
    expect(column.peakOpenConnections).toBe(130);
    expect(column.rates["cable.send_rate"].peak).toBe(50);
    // (40 + 50 + 0) / 3 periods.
    expect(column.rates["cable.send_rate"].mean).toBe(30);
  });

  it("spans the run from the first to the last metric of any task", () => {
    expect(column.firstMetricAt).toBe(t0 + 1_000);
    expect(column.lastMetricAt).toBe(t0 + 25_000);
  });

  it("tallies ensure outcomes and counts the tasks that recorded them", () => {
    expect(column.checks).toEqual([{ check: "cable.rtt.p99 < 500", strict: true, passed: 1, failed: 1 }]);
    expect(column.tasksWithChecks).toBe(2);
  });

  it("has no peak when the engine never emitted the counter", () => {
    expect(foldTasks([taskOf({ counters: { "vusers.created": 1 } })], []).column("x").peakOpenConnections).toBeNull();
  });
});

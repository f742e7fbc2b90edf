// report.md's charts over time are linear in the periods (a 7-day soak has 60,480): each series is
// read once per chart line, and the server's samples once per chart. Checked by counting reads, not
// by timing (docs/benchmarks.md has the measured 7-day figure).
import { describe, expect, it } from "vitest";
import type { MergedResults, Series } from "../src/model.js";
import { fillGaps, overTimeSection, resample } from "../src/over-time.js";
import { mergeRegions } from "../src/results.js";
import { around, taskOf } from "./fixtures.js";

const START = Date.UTC(2026, 10, 24, 12, 0, 0);

/** One region, one task, `n` periods with a latency, connections and an error now and then; the server scraped every 5 s. */
function run(n: number): MergedResults {
  const periods = Array.from({ length: n }, (_, p) => ({
    period: START + p * 10_000,
    counters: { "vusers.created": 1, "vusers.completed": 1, "cable.connections_open_period_peak": 10, "cable.messages_received": 100, ...(p % 7 === 0 ? { "errors.ETIMEDOUT": 1 } : {}) },
    samples: { "cable.broadcast_latency": around(20, 3, p + 1) },
  }));
  const task = taskOf({
    counters: { "vusers.created": n, "vusers.completed": n },
    histograms: { "cable.broadcast_latency": around(20, 10, 1) },
    periods,
    firstMetricAt: START,
    lastMetricAt: START + n * 10_000 - 1,
  });
  const merged = mergeRegions([{ name: "eu-west-2", tasks: [task], files: ["eu-west-2/t1.json"] }]);
  const at = Array.from({ length: 2 * n }, (_, i) => START + 2_500 + i * 5_000);
  merged.timeline!.server = { at, vcpu: at.map(() => 1), memoryMiB: at.map((_, i) => 100 + i), connections: at.map(() => 10) };
  return merged;
}

/** Counts every property read of an object (and of the arrays and records inside it). */
function counted<T extends object>(target: T, reads: { n: number }): T {
  return new Proxy(target, {
    get(obj, key, receiver) {
      reads.n++;
      const value = Reflect.get(obj, key, receiver) as unknown;
      return value !== null && typeof value === "object" ? counted(value, reads) : value;
    },
  });
}

/** Reads of the columns' series and of the server's samples while the section is rendered. */
function readsFor(n: number): { series: number; server: number; text: string[] } {
  const merged = run(n);
  const series = { n: 0 };
  const server = { n: 0 };
  for (const column of [...merged.regions, merged.all]) column.series = counted(column.series as Series, series);
  merged.timeline!.server = counted(merged.timeline!.server!, server);
  const text = overTimeSection(merged, [...merged.regions, merged.all]);
  return { series: series.n, server: server.n, text };
}

describe("the charts over time are linear in the periods", () => {
  it("reads each series a bounded number of times per period, whatever the run's length", () => {
    const short = readsFor(60);
    const long = readsFor(600);
    expect(short.text.join("\n")).toContain("cable.broadcast_latency p95");
    expect(long.text.join("\n")).toContain("Server memory (MiB)");
    // Ten times the periods: about ten times the reads (quadratic work would read a hundred times more).
    expect(long.series / short.series).toBeLessThan(12);
    expect(long.server / short.server).toBeLessThan(12);
    expect(long.series / 600).toBeLessThan(60);
  });

  it("fills interior gaps linearly and the ends with the nearest value", () => {
    expect(fillGaps([null, 2, null, 6, null])).toEqual({ values: [2, 2, 4, 6, 6], filled: true });
    expect(fillGaps([1, 2])).toEqual({ values: [1, 2], filled: false });
    expect(fillGaps([null, null])).toBeNull();
    expect(fillGaps([])).toBeNull();
  });

  it("resamples the server's figures onto the periods: the mean or the largest inside each, none where none", () => {
    const axis = [0, 10_000, 20_000, 30_000];
    const at = [1_000, 6_000, 12_000, 31_000, 45_000];
    expect(resample(axis, at, [1, 3, null, 5, 9], "mean")).toEqual([2, null, null, 5]);
    expect(resample(axis, at, [1, 3, 4, 5, 9], "max")).toEqual([3, 4, null, 5]);
  });
});

// The time series, from constructed tasks whose clocks and start times differ: periods line up by
// timestamp, latency percentiles per period are those of the union of the tasks' samples, and
// report.md draws them over time.
import { describe, expect, it } from "vitest";
import { renderMarkdown } from "../src/markdown.js";
import { fillGaps, fold } from "../src/over-time.js";
import { mergeRegions } from "../src/results.js";
import { foldTasks } from "../src/fold.js";
import { gridPeriod, mainLatency } from "../src/series.js";
import { around, exactQuantile, taskOf, TEST } from "./fixtures.js";

const T0 = 1_700_000_000_000; // on the 10 s grid
const BROADCAST = "cable.broadcast_latency";
const LAG = "cable.event_loop_lag";

describe("the folded series", () => {
  // Task a runs periods 0..3; task b starts 20 s later (periods 2..5) and its clock stamps its
  // periods 3 s off the grid (a task whose clock is not the others').
  const a = taskOf({
    periods: [0, 1, 2, 3].map((i) => ({
      period: T0 + i * 10_000,
      counters: { "vusers.created": 4, "vusers.completed": i === 3 ? 4 : 0, "cable.messages_received": 100, "cable.connections_open_period_peak": 4 * (i + 1), ...(i === 1 ? { "errors.cable.timeout": 2 } : {}) },
      samples: { [BROADCAST]: around(10 + i, 50, i), [LAG]: [1, 2, 3] },
      cpuPercent: 20 + i,
    })),
  });
  const b = taskOf({
    periods: [2, 3, 5].map((i) => ({
      period: T0 + i * 10_000 + 3_000,
      counters: { "vusers.created": 2, "vusers.failed": i === 5 ? 2 : 0, "cable.messages_received": 50 },
      samples: { [BROADCAST]: around(100, 40, 10 + i) },
    })),
  });
  const series = foldTasks([a, b], ["a.json", "b.json"]).series();

  it("aligns the tasks' periods on the 10 s grid, with gaps where no task reported", () => {
    expect(gridPeriod(T0 + 23_000)).toBe(T0 + 20_000);
    expect(series.periods).toEqual([0, 1, 2, 3, 4, 5].map((i) => T0 + i * 10_000));
    expect(series.users.created).toEqual([4, 4, 6, 6, null, 2]);
  });

  it("gives each period the percentiles of the union of its tasks' samples (merged sketches, not averaged percentiles)", () => {
    const union = [...around(12, 50, 2), ...around(100, 40, 12)];
    const p95 = series.latency[BROADCAST].p95[2]!;
    expect(Math.abs(p95 - exactQuantile(union, 0.95)) / exactQuantile(union, 0.95)).toBeLessThanOrEqual(0.011);
    expect(series.latency[BROADCAST].count).toEqual([50, 50, 90, 90, null, 40]);
    expect(series.latency[BROADCAST].p95[4]).toBeNull();
    expect(series.latency[BROADCAST].approximate).toBe(false);
    // The lag is the generator's, not a latency of the server.
    expect(Object.keys(series.latency)).toEqual([BROADCAST]);
  });

  it("counts users active at each period's end, rates per second, errors per code and connections summed", () => {
    expect(series.users.active).toEqual([4, 8, 14, 16, 16, 16]);
    expect(series.messages.received).toEqual([10, 10, 15, 15, null, 5]);
    expect(series.errors["errors.cable.timeout"]).toEqual([0, 2, 0, 0, null, 0]);
    expect(series.errors.total).toEqual([0, 2, 0, 0, null, 0]);
    expect(series.connections).toEqual([4, 8, 12, 16, null, null]);
  });

  it("keeps each task's generator apart, null where it did not report", () => {
    expect(series.generator.map((g) => g.file)).toEqual(["a.json", "b.json"]);
    expect(series.generator[0].cpu).toEqual([20, 21, 22, 23, null, null]);
    // Three samples a period: their max (saturation.ts lagFigure), never a p99 that DDSketch's rank
    // q·(n−1) would make the second largest.
    expect(series.generator[0].lagP99).toEqual([3, 3, 3, 3, null, null]);
    expect(series.generator[1].cpu).toEqual([null, null, null, null, null, null]);
  });

  it("picks broadcast latency as the main one when it is there", () => {
    expect(mainLatency(["cable.handshake_latency", BROADCAST, LAG])).toBe(BROADCAST);
    expect(mainLatency(["cable.handshake_latency", "cable.subscription_latency"])).toBe("cable.subscription_latency");
    expect(mainLatency([LAG])).toBeNull();
  });
});

describe("report.md over time", () => {
  // A spike: 60 s quiet, 40 s at 10× latency, 60 s quiet, from two regions.
  const spiky = (seed: number, offset: number) =>
    taskOf(
      {
        test: { ...TEST, phases: [{ name: "quiet", duration: 60 }, { name: "spike", duration: 40 }, { name: "after", duration: 60 }] },
        phaseStarts: [
          { index: 0, name: "quiet", startTime: T0 + offset },
          { index: 1, name: "spike", startTime: T0 + 60_000 + offset },
          { index: 2, name: "after", startTime: T0 + 100_000 + offset },
        ],
        counters: { "vusers.created": 10 },
        histograms: { [BROADCAST]: [10] },
        periods: Array.from({ length: 16 }, (_, i) => ({
          period: T0 + i * 10_000,
          counters: { "vusers.created": 1, "cable.messages_received": 30, "cable.connections_open_period_peak": 5 },
          samples: { [BROADCAST]: around(i >= 6 && i < 10 ? 200 : 20, 30, seed * 100 + i) },
        })),
      },
      `t${seed}.json`,
    );
  const merged = mergeRegions([
    { name: "eu-west-2", tasks: [spiky(1, 0)], files: ["eu-west-2/t1.json"] },
    { name: "us-east-1", tasks: [spiky(2, 1_500)], files: ["us-east-1/t2.json"] },
  ]);
  const markdown = renderMarkdown(merged);

  it("draws the main latency's p95 per region and for all regions as lines: low, high, low", () => {
    const section = markdown.slice(markdown.indexOf("### Over time"));
    const chart = /```mermaid\n([\s\S]*?)```/.exec(section)![1];
    expect(chart).toContain('title "cable.broadcast_latency p95"');
    expect(chart).toContain('x-axis "minutes" 0.17 --> 2.67');
    expect(chart).toMatch(/y-axis "ms" 0 --> \d+/);
    const lines = [...chart.matchAll(/line \[([^\]]*)\]/g)].map((m) => m[1].split(", ").map(Number));
    expect(lines).toHaveLength(3);
    for (const values of lines) {
      expect(values).toHaveLength(16);
      expect(Math.max(...values.slice(0, 6))).toBeLessThan(30);
      expect(Math.min(...values.slice(6, 10))).toBeGreaterThan(150);
      expect(Math.max(...values.slice(10))).toBeLessThan(30);
    }
    expect(section).toContain("🟦 eu-west-2 · 🟧 us-east-1 · ⬛ all regions");
    expect(section).toContain("Phases: quiet 0:00–1:00 · spike 1:00–1:40 · after 1:40–2:40");
  });

  it("also charts open connections, messages received per second and errors", () => {
    expect(markdown).toContain("**Open connections**");
    expect(markdown).toContain("**Messages received per second**");
    expect(markdown).toContain("No errors in any period.");
    expect(merged.timeline?.phases.map((p) => p.name)).toEqual(["quiet", "spike", "after"]);
  });

  it("folds long runs into at most 60 points, the worst period of each for latencies", () => {
    expect(fold([1, 5, 2, null, null, null, 3], 3, "max")).toEqual([5, null, 3]);
    expect(fold([1, 5, 3], 3, "mean")).toEqual([3]);
    expect(fillGaps([null, 2, null, 4, null])).toEqual({ values: [2, 2, 3, 4, 4], filled: true });
    expect(fillGaps([null, null])).toBeNull();
  });
});

describe("report.md over time, a long run", () => {
  it("folds a 30-minute run of 3 regions × 6 tasks into 60 points per line and stays under the comment limit", () => {
    const regions = ["ap-south-1", "eu-west-2", "us-east-1"].map((name, r) => ({
      name,
      files: Array.from({ length: 6 }, (_, t) => `${name}/t${t}.json`),
      tasks: Array.from({ length: 6 }, (_, t) =>
        taskOf(
          {
            counters: { "vusers.created": 180 },
            histograms: { [BROADCAST]: [10] },
            periods: Array.from({ length: 180 }, (_, i) => ({
              period: T0 + i * 10_000,
              counters: { "vusers.created": 1, "vusers.completed": 1, "cable.messages_received": 100, "cable.connections_open_period_peak": 10 },
              samples: { [BROADCAST]: around(20, 5, r * 10_000 + t * 1_000 + i) },
            })),
          },
          `${name}/t${t}.json`,
        ),
      ),
    }));
    const markdown = renderMarkdown(mergeRegions(regions));
    expect(Buffer.byteLength(markdown)).toBeLessThan(60_000);
    const section = markdown.slice(markdown.indexOf("### Over time"));
    expect(section).toContain("Each point folds 3 periods");
    const lines = [...section.matchAll(/line \[([^\]]*)\]/g)].map((m) => m[1].split(", ").length);
    expect(lines.length).toBeGreaterThanOrEqual(8);
    expect(new Set(lines)).toEqual(new Set([60]));
  });
});

// Servers side by side (servers.ts): one column per server, runs aligned to a common start, no
// "all regions" column, the servers' own figures in a table.
import { describe, expect, it } from "vitest";
import { renderMarkdown } from "../src/markdown.js";
import { compareServers, serverFiguresSection, serverGateSection, serverRegressions, shiftTask, type ServerRun } from "../src/servers.js";
import { around, taskOf } from "./fixtures.js";

const T0 = Date.UTC(2026, 10, 24, 12, 0, 0);

function run(name: string, startAt: number, latencyMs: number, seed = latencyMs, samples = 100): ServerRun {
  const task = taskOf(
    {
      counters: { "vusers.created": 100, "vusers.completed": 100, "vusers.created_by_name.listener": 100 },
      histograms: { "cable.handshake_latency": around(latencyMs, samples, seed) },
      periods: [0, 1, 2].map((i) => ({ period: startAt + i * 10_000, counters: { "vusers.created": i === 0 ? 100 : 0 }, histograms: { "cable.handshake_latency": around(latencyMs, 30, i) } })),
      phaseStarts: [{ index: 0, name: "ramp", startTime: startAt }],
      firstMetricAt: startAt,
      lastMetricAt: startAt + 30_000,
    },
    "t1/report.json",
  );
  return { name, regions: [{ name: "local", tasks: [task], files: ["local/t1/report.json"] }] };
}

describe("servers side by side", () => {
  it("a column per server, in the given order, each run moved to start where the first did", () => {
    const merged = compareServers([run("soketi", T0 + 5 * 60_000, 20), run("anycable", T0, 5)]);
    expect(merged.regions.map((r) => r.name)).toEqual(["soketi", "anycable"]);
    const [soketi, anycable] = merged.regions;
    expect(soketi.series?.periods).toEqual(anycable.series?.periods);
    expect(soketi.series?.periods[0]).toBe(T0);
    expect(soketi.histograms["cable.handshake_latency"].p50).toBeGreaterThan(anycable.histograms["cable.handshake_latency"].p50 * 2);
    expect(soketi.files).toEqual(["soketi/local/t1/report.json"]);
  });

  it("a server whose run left nothing is a column marked missing, and said so", () => {
    const merged = compareServers([run("soketi", T0, 20), { name: "reverb" }]);
    expect(merged.regions.map((r) => [r.name, r.tasks])).toEqual([
      ["soketi", 1],
      ["reverb", 0],
    ]);
    expect(merged.notes.join("\n")).toContain("No results from reverb");
  });

  it("report.md has no all-regions column and no charts over time (the runs' own reports have them), and names the servers", () => {
    const md = renderMarkdown(compareServers([run("soketi", T0, 20), run("reverb", T0 + 60_000, 30)]), { servers: true });
    expect(md).toMatch(/\| Metric \| soketi \| reverb \|\n/);
    expect(md).not.toContain("all regions");
    expect(md).not.toContain("Over time");
    expect(md).toContain("- **Servers, one after the other:** soketi: 1, reverb: 1");
  });

  it("shiftTask moves every timestamp, and nothing else", () => {
    const task = run("a", T0, 5).regions![0].tasks[0];
    const moved = shiftTask(task, 20_000);
    expect(moved.periods.map((p) => p.period)).toEqual(task.periods.map((p) => p.period + 20_000));
    expect(moved.phaseStarts[0].startTime).toBe(T0 + 20_000);
    expect([moved.firstMetricAt, moved.lastMetricAt]).toEqual([T0 + 20_000, T0 + 50_000]);
    expect(moved.counters).toBe(task.counters);
  });

  it("the servers' own figures: memory idle → peak → after, CPU", () => {
    const lines = serverFiguresSection([
      { name: "soketi", process: { memoryIdleMb: 61.2, memoryPeakMb: 140.7, memoryAfterMb: 98, cpuPeakPct: 87.4, cpuMeanPct: 35.2, source: "process 1234 and its children" } },
      { name: "reverb" },
    ]);
    expect(lines).toContain("| soketi | 61 MB → 141 MB → 98 MB | 87 % | 35 % | process 1234 and its children |");
    expect(lines.join("\n")).not.toContain("reverb");
    expect(serverFiguresSection([{ name: "x" }])).toEqual([]);
  });

  it("the gate between servers: identical servers pass (A/A), a slower one is named (A/B)", () => {
    const aa = compareServers([run("a", T0, 40, 1, 2_000), run("b", T0 + 60_000, 40, 2, 2_000)]);
    expect(serverRegressions(aa, 10)).toEqual([]);
    expect(serverGateSection(aa, 10, []).join("\n")).toContain("No server is worse than a by 10% or more beyond noise");
    const ab = compareServers([run("anycable", T0, 40, 1, 2_000), run("reverb", T0 + 60_000, 80, 2, 2_000)]);
    const found = serverRegressions(ab, 10);
    expect(found.map((r) => [r.row, r.column])).toContainEqual(["Handshake latency (ms): p50", "reverb"]);
    expect(found.every((r) => r.column === "reverb")).toBe(true);
    expect(serverGateSection(ab, 10, found).join("\n")).toContain("- ❌ **Handshake latency (ms): p50**, reverb:");
    // A saturated generator: that column's latencies are not judged, and the section says so.
    const hot = compareServers([run("anycable", T0, 40, 1, 2_000), run("reverb", T0 + 60_000, 80, 2, 2_000)]);
    hot.regions[1].generator = hot.regions[1].generator.map((t) => ({ ...t, saturated: true, reasons: ["event-loop lag p99 125 ms > 100 ms"] }));
    const judged = serverRegressions(hot, 10);
    expect(judged.some((r) => r.row.startsWith("Handshake latency"))).toBe(false);
    expect(serverGateSection(hot, 10, judged).join("\n")).toContain("The latencies of reverb were not judged: the load generator was saturated in that run");
  });
});

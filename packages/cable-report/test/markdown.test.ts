import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { findRegressions } from "../src/compare.js";
import { DEFAULT_MAX_BYTES, renderMarkdown } from "../src/markdown.js";
import type { MergedResults } from "../src/model.js";
import { mergeRegions, type RegionTasks } from "../src/results.js";
import type { TaskResult } from "../src/task.js";
import { around, taskOf } from "./fixtures.js";

const T0 = Date.UTC(2025, 0, 15, 12, 0, 0);

/** A chat run: `scale` stretches latencies, `errors` adds receive timeouts. */
function chatTask(seed: number, { scale = 1, errors = 0, sidecar = true, busy = false } = {}): TaskResult {
  const created = 100 + seed;
  const failed = errors > 0 ? Math.min(errors, 5) : 0;
  return taskOf({
    histograms: {
      "vusers.session_length": around(5_000 * scale, created - failed, seed),
      "cable.handshake_latency": around(40 * scale, created, seed + 1),
      "cable.subscription_latency": around(15 * scale, created, seed + 2),
      "cable.rtt": around(25 * scale, created * 5, seed + 3),
      "cable.broadcast_latency": around(30 * scale, created * 20, seed + 4),
      "cable.event_loop_lag": around(busy ? 300 : 2, 30, seed + 5),
      "app.render_time": around(7, created, seed + 6),
    },
    counters: {
      "vusers.created": created,
      "vusers.created_by_name.chat": created,
      "vusers.completed": created - failed,
      "vusers.failed": failed,
      "cable.connections": created,
      "cable.subscriptions": created,
      "cable.messages_sent": created * 5,
      "cable.messages_received": created * 20,
      "cable.connections_open_period_peak": 300,
      "app.cache_hits": created * 2,
      ...(errors > 0 ? { "errors.cable.receive_timeout": errors, "errors.ECONNRESET": 1 } : {}),
    },
    generator: { workers: 1, cpuMean: busy ? 97 : 35, cpuPeak: busy ? 99.5 : 41.2 },
    periods: [0, 1, 2].map((i) => ({
      period: T0 + i * 10_000,
      counters: { "cable.connections_open_period_peak": 40 + 10 * i + seed },
      rates: { "cable.send_rate": 20 + 5 * i, "cable.receive_rate": 80 + 20 * i },
    })),
    checks: [
      { check: "cable.rtt.p99 < 100", strict: true, passed: scale < 2 },
      { check: "vusers.failed < 1", strict: true, passed: failed === 0 },
    ],
    firstMetricAt: T0 + 1_234 + seed,
    lastMetricAt: T0 + 29_000 + seed,
    sidecar,
  });
}

/** `slowRegion` stretches ap-south-1's latencies; the current run also has a saturated task and a corrupt file. */
function chatRun(slowRegion: number, { current = false } = {}): MergedResults {
  const regions: RegionTasks[] = [
    { name: "ap-south-1", tasks: [chatTask(1, { scale: slowRegion })], files: ["ap-south-1/t1.json"] },
    {
      name: "eu-west-2",
      tasks: [chatTask(2, { busy: current }), chatTask(3, { errors: 4 })],
      files: ["eu-west-2/t1.json", "eu-west-2/t2.json"],
      rejected: current ? [{ file: "eu-west-2/t3.json", kind: "corrupt", reason: "is not an Artillery JSON report (artillery run -o): Unexpected end of JSON input" }] : [],
    },
    { name: "us-east-1", tasks: [chatTask(4), chatTask(5, { sidecar: false })], files: ["us-east-1/t1.json", "us-east-1/t2.json"] },
  ];
  const merged = mergeRegions(regions, { regions: ["sa-east-1"] });
  // A metric this run no longer records.
  if (!current) merged.all.counters["cable.reconnects"] = 3;
  return merged;
}

describe("the markdown layout", () => {
  it("matches the golden file (UPDATE_GOLDEN=1 rewrites it)", () => {
    const markdown = renderMarkdown(chatRun(2.5, { current: true }), {
      title: "Chat load test",
      baseline: chatRun(1),
      baselineLabel: "main@abc123",
      regressionThreshold: 10,
    });
    const golden = join(__dirname, "golden", "report.md");
    if (process.env.UPDATE_GOLDEN || !existsSync(golden)) writeFileSync(golden, markdown);
    expect(markdown).toBe(readFileSync(golden, "utf8"));
  });

  it("finds the regressions the golden file marks, and only gates what it can test", () => {
    const regressions = findRegressions(chatRun(2.5, { current: true }), chatRun(1), 10);
    // all regions holds a task without sidecar: its percentiles are ≈ and not gated.
    expect(new Set(regressions.map((r) => r.column))).toEqual(new Set(["ap-south-1"]));
    const rtt = regressions.find((r) => r.row === "Round-trip time (rtt) (ms): p95")!;
    expect(rtt.percent).toBeGreaterThan(100);
    expect(rtt.interval[0]).toBeGreaterThan(100);
    // Max, session length, the generator's lag and custom metrics changed as much, yet never count.
    expect(regressions.filter((r) => /Max|Session|Load generator|app\./.test(r.row))).toEqual([]);
    // 101 handshakes: too few for a p99.
    expect(regressions.some((r) => r.row === "Handshake latency (ms): p99")).toBe(false);
    expect(findRegressions(chatRun(1), chatRun(1), 10)).toEqual([]);
  });

  it("shows the saturation banner naming the task, the corrupt file, custom metrics and what only the baseline had", () => {
    const markdown = renderMarkdown(chatRun(1, { current: true }), { baseline: chatRun(1), regressionThreshold: 10 });
    expect(markdown).toMatch(/> ⚠️ \*\*The load generator was saturated\*\* in 1 task: `eu-west-2\/t1.json` \(event-loop lag p99 \d+ ms > 100 ms, CPU 100% > 90%\)/);
    expect(markdown.indexOf("⚠️ **The load generator was saturated**")).toBeLessThan(markdown.indexOf("| Metric |"));
    expect(markdown).toContain("| Merged | ⚠️ 1 of 3 | ⚠️ 2 of 3, 1 corrupt |");
    expect(markdown).toContain("- ⚠️ **eu-west-2**: 2 of 3 tasks reported; corrupt `eu-west-2/t3.json`");
    expect(markdown).toMatch(/\| \*\*app.render_time\*\* \|/);
    expect(markdown).toMatch(/\| app.cache_hits \| 202 ±0% \|/);
    expect(markdown).toContain("- Only in the baseline (not recorded by this run): `cable.reconnects`");
    expect(markdown).toContain("no regression beyond 10%");
    expect(renderMarkdown(chatRun(1))).not.toContain("saturated**");
  });
});

describe("the size limit", () => {
  it("stays under the PR comment limit with many regions and many long error names", () => {
    const regions: RegionTasks[] = Array.from({ length: 150 }, (_, r) => {
      const task = chatTask(r, { errors: 3 });
      for (let e = 0; e < 100; e++) task.counters[`errors.${"x".repeat(150)}-${r}-${e}`] = e + 1;
      return { name: `region-${String(r).padStart(2, "0")}-${"long-name-".repeat(3)}`, tasks: [task], files: [`r${r}.json`] };
    });
    const merged = mergeRegions(regions, { tasksPerRegion: 2 });
    const markdown = renderMarkdown(merged, { baseline: merged, regressionThreshold: 5 });

    expect(Buffer.byteLength(markdown)).toBeLessThanOrEqual(DEFAULT_MAX_BYTES);
    expect(markdown).toContain("| **all regions** |");
    expect(markdown).toMatch(/\d+ more regions are left out to stay under the PR comment size limit/);
    expect(markdown).toMatch(/\| \d+ other kinds \|/);
  });

  it("keeps the full layout when it fits", () => {
    const markdown = renderMarkdown(chatRun(1));
    expect(markdown).toContain("```mermaid");
    expect(markdown).not.toContain("left out");
  });
});

describe("escaping", () => {
  it("keeps every table row at the same number of cells whatever the names hold", () => {
    const task = chatTask(1);
    task.counters["errors.bad | pipe <script>\nnewline"] = 2;
    const merged = mergeRegions([{ name: "weird|region", tasks: [task], files: ["x.json"] }]);
    const markdown = renderMarkdown(merged);
    const rows = markdown.split("\n").filter((l) => l.startsWith("|"));
    const cells = (line: string) => line.split(/(?<!\\)\|/).length;
    expect(new Set(rows.map(cells))).toEqual(new Set([cells(rows[0])]));
    expect(markdown).not.toContain("<script>");
    expect(markdown).toContain("bad \\| pipe &lt;script&gt; newline");
  });
});

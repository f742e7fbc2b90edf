import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { findRegressions } from "../src/compare.js";
import { DEFAULT_MAX_BYTES, renderMarkdown } from "../src/markdown.js";
import type { MergedResults } from "../src/model.js";
import { mergeRegions, type RegionTasks } from "../src/results.js";
import type { TaskResult } from "../src/task.js";
import { LIMITS } from "../src/text.js";
import { around, taskOf } from "./fixtures.js";
import { HOSTILE_TEXTS, liveMarkup, outsideCode, renderedTags } from "./hostile-text.js";

/** The elements report.md writes itself. */
const OWN_ELEMENTS = new Set(["h2", "h3", "p", "ul", "li", "strong", "code", "pre", "table", "thead", "tbody", "tr", "th", "td", "blockquote", "details", "summary", "br"]);

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
    expect(markdown).toMatch(/> ⚠️ \*\*The load generator was saturated\*\* in 1 task: `eu-west-2\/t1.json` \(event-loop lag (p99|max) \d+ ms over [\d,]+ samples > 100 ms, CPU 100% > 90%\)/);
    expect(markdown.indexOf("⚠️ **The load generator was saturated**")).toBeLessThan(markdown.indexOf("| Metric |"));
    expect(markdown).toContain("| Merged | ⚠️ 1 of 3 | ⚠️ 2 of 3, 1 corrupt |");
    expect(markdown).toContain("- ⚠️ **eu-west-2**: 2 of 3 tasks reported; corrupt `eu-west-2/t3.json`");
    expect(markdown).toMatch(/\| \*\*app.render\\_time\*\* \|/);
    expect(markdown).toMatch(/\| app.cache\\_hits \| 202 ±0% \|/);
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

describe("text from outside", () => {
  /** A run whose every name, and the server's words, hold one of the hostile texts. */
  function hostileRun(): MergedResults {
    const texts = HOSTILE_TEXTS;
    const at = (i: number) => texts[i % texts.length];
    const task = chatTask(1, { errors: 2 });
    task.counters[`errors.${at(0)} ${at(2)}`] = 2;
    task.counters["errors.cable.subscription_rejected"] = 3;
    task.counters[`cable.subscription_rejected.${at(4)}`] = 3;
    task.test = { name: at(1), scenarios: [at(2), at(3)], phases: [{ name: at(4), duration: at(5) as unknown as number, arrivalRate: 2 }] };
    task.periods = [];
    const merged = mergeRegions(
      [
        { name: at(6), tasks: [task], files: [`${at(7)}/t1.json`], rejected: [{ file: `${at(8)}/t2.json`, kind: "corrupt", reason: at(9) }] },
        { name: at(10), tasks: [chatTask(2)], files: ["b/t1.json"] },
      ],
      { regions: [at(11)] },
    );
    merged.serverWords = texts.map((text) => ({ error: "cable.subscription_rejected", cause: at(4), text }));
    merged.notes.push(...texts);
    merged.verdicts = { spikes: [], storms: {}, connects: {}, checks: texts.map((check) => ({ check, columns: { [at(6)]: { passed: false, value: check } } })) } as unknown as MergedResults["verdicts"];
    return merged;
  }

  it("is inert everywhere in report.md: no mention, link, image, heading or raw tag outside code", () => {
    const merged = hostileRun();
    const markdown = renderMarkdown(merged, { title: HOSTILE_TEXTS.join(" "), baseline: merged, baselineLabel: HOSTILE_TEXTS[3], regressionThreshold: 10 });
    expect(liveMarkup(markdown)).toEqual([]);
    // Rendered (as report.html renders it): only the elements report.md writes itself.
    expect([...renderedTags(markdown)].filter((t) => !OWN_ELEMENTS.has(t))).toEqual([]);
    // The server's words are there, quoted in code spans.
    expect(markdown).toContain("The server said: `@octocat`, `ping @octocat and @github/security`, `[click](https://evil.example)`");
    expect(markdown).toContain("```` ``` fence ` tick `` two ````");
  });

  it("keeps every table row at the same number of cells whatever the names hold", () => {
    const markdown = renderMarkdown(hostileRun());
    const rows = markdown.split("\n").filter((l) => l.startsWith("|"));
    const cells = (line: string) => outsideCode(line).split(/(?<!\\)\|/).length;
    const tables = markdown.split("\n\n").filter((b) => b.startsWith("|"));
    expect(tables.length).toBeGreaterThan(1);
    for (const table of tables) {
      const lines = table.split("\n").filter((l) => l.startsWith("|"));
      expect(new Set(lines.map(cells)), table.slice(0, 200)).toEqual(new Set([cells(lines[0])]));
    }
    expect(rows.length).toBeGreaterThan(10);
  });

  it("caps every name and quoted text", () => {
    const long = `@x${"y".repeat(5_000)}`;
    const task = chatTask(1);
    task.counters[`errors.${long}`] = 1;
    task.test = { name: long, scenarios: [long], phases: [{ name: long, duration: 1, arrivalRate: 1 }] };
    const merged = mergeRegions([{ name: long, tasks: [task], files: [`${long}.json`], rejected: [{ file: long, kind: "corrupt", reason: long }] }]);
    merged.serverWords = [{ error: "cable.subscription_rejected", cause: "other", text: long }];
    merged.notes.push(long);
    const markdown = renderMarkdown(merged, { title: long });
    const longest = Math.max(...markdown.split(/[\s|]+/).map((w) => w.length));
    expect(longest).toBeLessThanOrEqual(LIMITS.note + 10);
  });
});

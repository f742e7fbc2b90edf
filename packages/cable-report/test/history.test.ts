// The history (issue 53): records, their store, the gate against the band, report.md's section,
// the trend and `cable-report trend`, on constructed runs (real merges of real sketches). The
// real-run proof (A/A and a known slowdown through the real CLI) is bench/history-aa.mjs, its
// figures in docs/benchmarks.md; S3 on moto is cable-fanout's history-moto test.
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { EXIT_BAD_INPUT, EXIT_OK, trendMain } from "../src/cli.js";
import { renderMarkdown } from "../src/markdown.js";
import { mergeRegions } from "../src/results.js";
import type { MergedResults } from "../src/model.js";
import { HISTORY_GATE, judgeAgainstHistory, sparkline } from "../src/history/gate.js";
import { historyRecord, MAX_ERROR_KINDS, recordFileName, scenarioHash, type HistoryRecord } from "../src/history/record.js";
import { openHistory, parseHistoryLocation, readRecord } from "../src/history/store.js";
import { renderTrendMarkdown } from "../src/history/trend-markdown.js";
import { TrendInputError, trendModel } from "../src/history/trend-model.js";
import { liveMarkup } from "./hostile-text.js";
import { normals, taskOf } from "./fixtures.js";

const BROADCAST = "cable.broadcast_latency";
const HASH = scenarioHash({ scenario: "config: {}\n", tasksPerRegion: 2 });
const OTHER_HASH = scenarioHash({ scenario: "config: {}\n", tasksPerRegion: 3 });
const TARGET = "ws://127.0.0.1:8080/cable";
const DAY = 86_400_000;
const T0 = Date.UTC(2026, 9, 1, 2, 0);

/** Latencies around `median` ms (log-normal, σ 0.3), n samples. */
function latencies(median: number, n: number, seed: number): number[] {
  const z = normals(seed);
  return Array.from({ length: n }, () => median * Math.exp(0.3 * z()));
}

interface RunSpec {
  median: number;
  seed: number;
  failed?: number;
  regions?: string[];
  errors?: Record<string, number>;
}

/** A two-region run: 1,000 broadcast latencies per region, 200 users per region. */
function runOf(spec: RunSpec): MergedResults {
  const regions = spec.regions ?? ["eu-west-2", "us-east-1"];
  return mergeRegions(
    regions.map((name, r) => ({
      name,
      tasks: [
        taskOf({
          histograms: { [BROADCAST]: latencies(spec.median, 1_000, spec.seed * 10 + r) },
          counters: { "vusers.created": 200, "vusers.completed": 200 - (spec.failed ?? 0), "vusers.failed": spec.failed ?? 0, ...spec.errors },
        }),
      ],
      files: [`${name}/a.json`],
    })),
  );
}

function recordOf(merged: MergedResults, i: number, over: Partial<HistoryRecord["run"]> = {}): HistoryRecord {
  return historyRecord({
    identity: {
      id: `run-${String(i).padStart(2, "0")}`,
      kind: "run",
      label: null,
      at: T0 + i * DAY,
      scenario: { file: "scenarios/chat.yml", hash: HASH },
      target: { url: TARGET, server: null },
      branch: "main",
      commit: `c0ffee${i}`,
      tool: "0.1.0",
      regions: merged.regions.map((r) => r.name),
      tasksPerRegion: 1,
      ...over,
    },
    merged,
    usersOverLine: false,
    checksFailed: false,
    regressions: null,
  });
}

/** n nightly runs of the same server: run-to-run noise of 5% on the median (the day's neighbours, the host). */
function history(n: number, seed = 1, median = 40): HistoryRecord[] {
  const z = normals(seed);
  return Array.from({ length: n }, (_, i) => recordOf(runOf({ median: median * Math.exp(0.05 * z()), seed: seed * 1_000 + i }), i));
}

const current = (i: number, over: Partial<HistoryRecord["run"]> = {}) => ({ id: `run-${i}`, scenario: { file: "scenarios/chat.yml", hash: HASH }, target: { url: TARGET, server: null }, ...over });

describe("a history record", () => {
  it("reads back as it was written, slimmed of what only report.html needs", () => {
    const record = recordOf(runOf({ median: 40, seed: 1 }), 0);
    const text = JSON.stringify(record);
    const read = readRecord(text);
    expect("record" in read && read.record.run.id).toBe("run-00");
    expect(record.results.all.files).toEqual([]);
    expect(record.results.all.series).toBeUndefined();
    // The sketches of the main latencies are kept, so later merges stay exact.
    expect(record.results.regions[0].histograms[BROADCAST].sketch).toMatch(/^[A-Za-z0-9+/=]+$/);
    // Two regions with 1,000 samples each: a few KB.
    expect(Buffer.byteLength(text)).toBeLessThan(20_000);
    expect(recordFileName(record)).toBe("20261001T020000Z-run-00.json");
  });

  it("keeps the most frequent error kinds and sums the rest, so a hostile server cannot bloat it", () => {
    const errors = Object.fromEntries(Array.from({ length: 500 }, (_, i) => [`errors.kind-${i}`, i + 1]));
    const record = recordOf(runOf({ median: 40, seed: 2, errors }), 0);
    const kinds = Object.keys(record.results.all.counters).filter((n) => n.startsWith("errors."));
    expect(kinds).toHaveLength(MAX_ERROR_KINDS + 1);
    const total = Object.values(errors).reduce((a, b) => a + b, 0) * 2;
    expect(kinds.reduce((sum, n) => sum + record.results.all.counters[n], 0)).toBe(total);
  });

  it("hashes what the tasks ran, each input apart", () => {
    expect(scenarioHash({ scenario: "a", overrides: "b", tasksPerRegion: 1 })).not.toBe(scenarioHash({ scenario: "ab", overrides: "", tasksPerRegion: 1 }));
    expect(scenarioHash({ scenario: "a", tasksPerRegion: 1 })).toBe(scenarioHash({ scenario: Buffer.from("a"), tasksPerRegion: 1 }));
  });
});

describe("the history's store", () => {
  it("appends one file per run and reads them oldest first; a corrupt or foreign file is skipped and said, the rest used", async () => {
    const dir = mkdtempSync(join(tmpdir(), "history-"));
    const store = openHistory(dir);
    const runs = history(3);
    for (const r of [runs[2], runs[0], runs[1]]) await store.append(r);
    writeFileSync(join(dir, "20261005T000000Z-torn.json"), JSON.stringify(runs[0]).slice(0, 500));
    writeFileSync(join(dir, "20261006T000000Z-foreign.json"), JSON.stringify({ format: "something-else", run: { id: "<script>" } }));
    writeFileSync(join(dir, "notes.txt"), "not a record");
    writeFileSync(join(dir, "20261007T000000Z-\u001b[31mred\u001b[0m.json"), JSON.stringify({ format: "cable-history-run", version: 1, run: { "\u001b]8;;x\u0007": 1 } }));
    const read = await store.read();
    expect(read.records.map((r) => r.run.id)).toEqual(["run-00", "run-01", "run-02"]);
    // A name or key from the store is one printable line: no terminal escape reaches a log.
    expect(read.skipped.map((s) => s.file)).toEqual(["20261005T000000Z-torn.json", "20261006T000000Z-foreign.json", "20261007T000000Z- [31mred [0m.json"]);
    expect(read.skipped.every((s) => !/[\u0000-\u001f]/.test(s.file + s.reason))).toBe(true);
    expect(read.skipped[0].reason).toMatch(/not JSON/);
    expect(read.skipped[1].reason).toMatch(/not a cable-report history record \(format/);
    expect(readdirSync(dir).filter((f) => f.startsWith("2026")).length).toBe(6);
    expect(await store.check()).toBe(6);
  });

  it("reads a folder that does not exist yet as an empty history", async () => {
    expect(await openHistory(join(tmpdir(), "no-such-history-folder-53")).read()).toEqual({ records: [], skipped: [], unread: 0 });
  });

  it("takes s3://bucket/prefix and names a bad location", () => {
    expect(parseHistoryLocation("s3://my-bucket/cable/history/")).toEqual({ kind: "s3", bucket: "my-bucket", prefix: "cable/history/" });
    expect(parseHistoryLocation("s3://my-bucket")).toEqual({ kind: "s3", bucket: "my-bucket", prefix: "" });
    expect(() => parseHistoryLocation("s3://Bad_Bucket!/x")).toThrow(/s3:\/\/bucket\/prefix/);
    expect(() => parseHistoryLocation("  ")).toThrow(/--history wants/);
  });
});

describe("the gate against the band of comparable runs", () => {
  it("finds nothing in a run like the others, and catches a 30% slowdown in every column", () => {
    const read = { records: history(20), skipped: [] };
    const same = judgeAgainstHistory(runOf({ median: 40, seed: 99_001 }), current(21), read, { threshold: 10 });
    expect(same.mode).toBe("band");
    if (same.mode !== "band") return;
    expect(same.runs).toBe(HISTORY_GATE.window);
    expect(same.regressions).toEqual([]);
    // Three percentiles and two rates per column, three columns: 1% split over them.
    expect(same.confidence).toBeCloseTo(1 - 0.01 / 15, 6);

    const slow = judgeAgainstHistory(runOf({ median: 52, seed: 99_002 }), current(21), read, { threshold: 10 });
    if (slow.mode !== "band") throw new Error("band expected");
    const flagged = new Set(slow.regressions.map((r) => `${r.row} / ${r.column}`));
    // p50 everywhere; p95 where its own 95% interval (1,000 samples a region) clears the band.
    for (const column of ["eu-west-2", "us-east-1", "all regions"]) expect(flagged).toContain(`Broadcast latency p50 / ${column}`);
    expect(flagged).toContain("Broadcast latency p95 / all regions");
    expect(slow.regressions[0].reason).toMatch(/above it/);
  });

  it("spares a percentile whose own 95% interval reaches into the band, and leaves out one with too few samples", () => {
    const read = { records: history(20), skipped: [] };
    // 60 samples a region: p50 judged (its interval is wide), p95 and p99 have too few in their tail.
    const few = judgeAgainstHistory(mergeRegions(["eu-west-2", "us-east-1"].map((name, r) => ({ name, tasks: [taskOf({ histograms: { [BROADCAST]: latencies(55, 60, 7_000 + r) }, counters: { "vusers.created": 200, "vusers.completed": 200 } })], files: [`${name}/a.json`] }))), current(21), read, { threshold: 10 });
    if (few.mode !== "band") throw new Error("band expected");
    const p99 = few.figures.find((f) => f.figure.key === `${BROADCAST}.p99` && f.column === "all regions")!;
    expect(p99.notJudged).toBe("too few samples (120, under 500)");
    const p50 = few.figures.find((f) => f.figure.key === `${BROADCAST}.p50` && f.column === "eu-west-2")!;
    expect(p50.band && p50.value > p50.band.high).toBe(true);
    expect(p50.regression).toBe(false);
    expect(p50.spared).toMatch(/^its 95% interval reaches into the band \(from [\d.]+ ms\)$/);
  });

  it("never fails a run without --fail-on-regression, and shows where it sits", () => {
    const verdict = judgeAgainstHistory(runOf({ median: 60, seed: 5 }), current(21), { records: history(12), skipped: [] }, {});
    if (verdict.mode !== "band") throw new Error("band expected");
    expect(verdict.regressions).toEqual([]);
    expect(verdict.figures.some((f) => f.band && f.value > f.band.high)).toBe(true);
  });

  it("leaves out runs of another scenario, target or branch, and says how many", () => {
    const records = [
      ...history(10),
      recordOf(runOf({ median: 400, seed: 7 }), 30, { scenario: { file: "x.yml", hash: OTHER_HASH } }),
      recordOf(runOf({ median: 400, seed: 8 }), 31, { target: { url: "ws://elsewhere:1/cable", server: null } }),
      recordOf(runOf({ median: 400, seed: 9 }), 32, { branch: "feature/x" }),
      recordOf(runOf({ median: 400, seed: 10 }), 33, { branch: "feature/y" }),
    ];
    const verdict = judgeAgainstHistory(runOf({ median: 40, seed: 11 }), current(40), { records, skipped: [] }, { threshold: 10 });
    expect(verdict.mode).toBe("band");
    if (verdict.mode !== "band") return;
    expect(verdict.runs).toBe(10);
    expect(verdict.regressions).toEqual([]);
    expect(verdict.left).toEqual([
      { why: "another scenario, load or task count", runs: 1 },
      { why: "another target", runs: 1 },
      { why: "another branch than main", runs: 2 },
    ]);
    // Every branch: the two feature runs (10× slower) join the band, which widens.
    const all = judgeAgainstHistory(runOf({ median: 40, seed: 11 }), current(40), { records, skipped: [] }, { threshold: 10, branch: null });
    expect(all.mode === "band" && all.runs).toBe(12);
  });

  it("counts no run stopped early or with users over the line in the band, and says so; the trend still draws them", () => {
    const records = history(10);
    const bad = (r: HistoryRecord, verdict: Partial<HistoryRecord["verdict"]>) => ({ ...r, results: runOf({ median: 400, seed: 90 }), verdict: { ...r.verdict, ...verdict } });
    records[3] = bad(records[3], { aborted: true });
    records[6] = bad(records[6], { usersOverLine: true });
    const verdict = judgeAgainstHistory(runOf({ median: 40, seed: 91 }), current(11), { records, skipped: [] }, { threshold: 10 });
    expect(verdict.mode).toBe("band");
    if (verdict.mode !== "band") return;
    expect(verdict.runs).toBe(8);
    expect(verdict.left).toEqual([
      { why: "a run stopped by --abort-on", runs: 1 },
      { why: "a run with more failed users than maxFailedUsers allows", runs: 1 },
    ]);
    const p50 = verdict.figures.find((f) => f.figure.key === `${BROADCAST}.p50` && f.column === "all regions")!;
    expect(p50.band!.high).toBeLessThan(60);
    const model = trendModel({ records, skipped: [], unread: 0 }, { branch: "main", last: 30, metrics: [`${BROADCAST}.p50`] });
    expect(model.runs).toHaveLength(10);
    expect(model.figures[0].lines.at(-1)!.values[3]).toBeGreaterThan(300);
  });

  it("falls back to the two-run comparison with too few comparable runs, naming the newest", () => {
    const verdict = judgeAgainstHistory(runOf({ median: 40, seed: 12 }), current(10), { records: history(HISTORY_GATE.minRuns - 1), skipped: [] }, { threshold: 10 });
    expect(verdict.mode).toBe("two-run");
    expect(verdict.mode === "two-run" && verdict.newest?.run.id).toBe(`run-0${HISTORY_GATE.minRuns - 2}`);
  });

  it("judges failed users per user against a history without failures, above the floor only", () => {
    const read = { records: history(10), skipped: [] };
    const many = judgeAgainstHistory(runOf({ median: 40, seed: 13, failed: 10 }), current(11), read, { threshold: 10 });
    expect(many.mode === "band" && many.regressions.map((r) => `${r.row} / ${r.column}`)).toContain("Failed users per 100 / all regions");
    // One user of 200 per region: 0.5 per 100, under the floor of 1 per 100.
    const one = judgeAgainstHistory(runOf({ median: 40, seed: 13, failed: 1 }), current(11), read, { threshold: 10 });
    expect(one.mode === "band" && one.regressions.filter((r) => r.row.startsWith("Failed"))).toEqual([]);
  });
});

describe("report.md against the history", () => {
  it("says which comparison it used and shows each gated figure in its band, outside text inert", () => {
    const hostile = "<img src=x onerror=alert(1)> @octocat #12 https://evil.example";
    const records = history(12).map((r) => ({ ...r, results: renamed(r.results, "us-east-1", hostile) }));
    const merged = renamed(runOf({ median: 56, seed: 14 }), "us-east-1", hostile);
    const verdict = judgeAgainstHistory(merged, current(13), { records, skipped: [{ file: "bad <b>.json", reason: "not JSON (truncated or corrupt)" }] }, { threshold: 10 });
    const markdown = renderMarkdown(merged, {
      regressionThreshold: 10,
      baseline: records.at(-1)!.results,
      baselineLabel: "the newest comparable run",
      history: { verdict, where: "s3://bucket/history", minRuns: HISTORY_GATE.minRuns, branch: "main", baselineGiven: false },
    });
    expect(markdown).toContain("### Against the history");
    expect(markdown).toMatch(/- \*\*History:\*\* `s3:\/\/bucket\/history`: judged against the band of the last 12 comparable runs — ❌ \*\*\d+ figures above their band\*\*/);
    expect(markdown).toMatch(/\| Broadcast latency p95 \| all regions \| [\d.]+ ms \| [\d.]+ ms · [\d.]+ ms \| [▁▂▃▄▅▆▇█]{12} [▁▂▃▄▅▆▇█] \| ❌ above the band/);
    expect(markdown).toContain("### ❌ Regressions (above the band of the history");
    expect(markdown).toMatch(/1 history record skipped: bad \\<b\\>\.json/);
    expect(liveMarkup(markdown)).toEqual([]);
  });

  it("says the history is too short, and for an empty one that this run starts it", () => {
    const merged = runOf({ median: 40, seed: 15 });
    const empty = judgeAgainstHistory(merged, current(1), { records: [], skipped: [] }, { threshold: 10 });
    const markdown = renderMarkdown(merged, { history: { verdict: empty, where: "history", minRuns: 8, branch: "main", baselineGiven: false } });
    expect(markdown).toContain("compared with nothing: this run starts it");
    expect(markdown).toContain("No comparable run (same scenario, load and target, branch main) in the history yet");
    expect(markdown).not.toContain("| Figure |");

    // Three runs: too few for a band, but the trend line starts.
    const three = judgeAgainstHistory(merged, current(4), { records: history(3), skipped: [] }, { threshold: 10 });
    const short = renderMarkdown(merged, { history: { verdict: three, where: "history", minRuns: 8, branch: "main", baselineGiven: false } });
    expect(short).toMatch(/\| Broadcast latency p95 \| [\d.]+ ms \| [▁▂▃▄▅▆▇█]{3} [▁▂▃▄▅▆▇█] \|/);
  });
});

describe("the trend", () => {
  /** 30 nightly runs, the broadcast latency stepping from 40 to 60 ms at run 21 (index 20). */
  function stepped(): HistoryRecord[] {
    const z = normals(77);
    return Array.from({ length: 30 }, (_, i) => recordOf(runOf({ median: (i < 20 ? 40 : 60) * Math.exp(0.04 * z()), seed: 5_000 + i }), i));
  }

  it("finds the step at the run where it happened, per region and for all regions, and flags the runs above their band", () => {
    const model = trendModel({ records: stepped(), skipped: [], unread: 0 }, { branch: "main", last: 30, metrics: [] });
    expect(model.columns).toEqual(["eu-west-2", "us-east-1", "all regions"]);
    const p95 = model.figures.find((f) => f.figure.key === `${BROADCAST}.p95`)!;
    for (const line of p95.lines) {
      expect(line.changePoints.map((c) => c.index)).toEqual([20]);
      // The first run after the step is above the band drawn from the 20 before it.
      expect(line.above).toContain(20);
      // No band before the 8th run.
      expect(line.band.slice(0, HISTORY_GATE.minRuns).every((b) => b === null)).toBe(true);
    }
    const markdown = renderTrendMarkdown(model);
    expect(markdown).toContain("run-20 (2026-10-21)");
    expect(markdown).toContain("xychart-beta");
    expect(markdown).toMatch(/### Broadcast latency p95/);
    expect(liveMarkup(markdown)).toEqual([]);
  });

  it("takes the newest comparable runs on the branch, and says what it left out", () => {
    const records = [...stepped(), recordOf(runOf({ median: 40, seed: 1 }), 40, { branch: "feature" }), recordOf(runOf({ median: 40, seed: 2 }), 41, { scenario: { file: "other.yml", hash: OTHER_HASH } })];
    // The newest run on main is of another scenario: --scenario picks the chat runs.
    expect(trendModel({ records, skipped: [], unread: 0 }, { branch: "main", last: 10, metrics: [] }).runs.map((r) => r.id)).toEqual(["run-41"]);
    const model = trendModel({ records, skipped: [], unread: 0 }, { branch: "main", last: 10, metrics: ["vusers.failed"], scenario: "chat.yml" });
    expect(model.runs.map((r) => r.id)).toEqual(Array.from({ length: 10 }, (_, i) => `run-${20 + i}`));
    expect(model.figures.map((f) => f.figure.key)).toEqual(["vusers.failed"]);
    expect(model.left).toEqual([
      { why: "another branch than main", runs: 1 },
      { why: "another scenario, load or task count", runs: 1 },
      { why: "older than the last 10", runs: 20 },
    ]);
    expect(trendModel({ records, skipped: [], unread: 0 }, { branch: "main", last: 10, metrics: [], scenario: HASH.slice(0, 8) }).runs).toHaveLength(10);
    expect(() => trendModel({ records, skipped: [], unread: 0 }, { branch: "main", last: 10, metrics: [], scenario: "nope.yml" })).toThrow(/--scenario "nope.yml": no such run on branch main \(its scenarios: scenarios\/chat.yml, other.yml\)/);
    expect(() => trendModel({ records, skipped: [], unread: 0 }, { branch: "main", last: 10, metrics: ["cable.nope"], scenario: "chat.yml" })).toThrow(TrendInputError);
    expect(() => trendModel({ records, skipped: [], unread: 0 }, { branch: "release", last: 10, metrics: [] })).toThrow(/no run on branch release/);
  });

  it("draws a sparkline of the runs and this run", () => {
    expect(sparkline([1, 2, 3, 4], 8)).toBe("▂▃▄▅ █");
    // From zero: a p99 of 43.4 beside 43.5 is no cliff.
    expect(sparkline([43.4, 43.5, 43.4], 43.4)).toBe("███ █");
    expect(sparkline([0, 0], 0)).toBe("▁▁ ▁");
  });
});

describe("cable-report trend", () => {
  it("writes trend.md and trend.html from a folder, and says a skipped record", async () => {
    const dir = mkdtempSync(join(tmpdir(), "trend-cli-"));
    const store = openHistory(join(dir, "history"));
    for (const r of history(10)) await store.append(r);
    writeFileSync(join(dir, "history", "20990101T000000Z-torn.json"), "{");
    const out = join(dir, "trend.md");
    const html = join(dir, "trend.html");
    expect(await trendMain([join(dir, "history"), "--out", out, "--html", html, "--last", "5"])).toBe(EXIT_OK);
    expect(readFileSync(out, "utf8")).toMatch(/- \*\*Runs:\*\* 5 on main/);
    expect(readFileSync(html, "utf8")).toMatch(/^<!doctype html>/);
  });

  it("refuses bad input with exit 2", async () => {
    const dir = mkdtempSync(join(tmpdir(), "trend-cli-"));
    expect(await trendMain([dir])).toBe(EXIT_BAD_INPUT);
    expect(await trendMain([dir, "--last", "0"])).toBe(EXIT_BAD_INPUT);
    expect(await trendMain([dir, "--branch", "x", "--all-branches"])).toBe(EXIT_BAD_INPUT);
    expect(await trendMain([])).toBe(EXIT_BAD_INPUT);
  });
});

/** The same run with one region's name replaced (a hostile folder name). */
function renamed(merged: MergedResults, from: string, to: string): MergedResults {
  return { ...merged, regions: merged.regions.map((r) => (r.name === from ? { ...r, name: to } : r)) };
}

// Task files are validated, not trusted (src/task-file.ts): a results folder with one hostile task
// file beside a good one still gives a report, through the real `cable-report` bin, with the bad
// file marked and its reason given, and the good one merged with its own numbers. Each hostile
// kind once made the merge exit 3 (a stack overflow, "Invalid array length", a TypeError) or run
// out of memory; the bin runs in a child process with a memory cap and a time limit for that.
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { DDSketch } from "@artilleryio/sketches-js";
import { beforeEach, describe, expect, it } from "vitest";
import type { MergedResults } from "../src/model.js";
import { encodeSketch, sidecarPathFor } from "../src/sidecar.js";
import { outsideTheRun, sketchProblem, TASK_FILE_LIMITS } from "../src/task-file.js";
import { decodeSketch } from "../src/sketch-codec.js";
import { sketchOf, TEST, writeTask } from "./fixtures.js";

const BIN = resolve(__dirname, "../bin/cable-report.js");
const T0 = Date.UTC(2026, 10, 24, 12, 0, 0);
const RTT = [10, 12, 14, 20, 25, 30, 40, 80];

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "cable-report-task-file-"));
});

/** A task of two periods, its report and sidecar written as the plugin writes them. */
function writeGood(file: string, created = 3, testRunId?: string): void {
  writeTask(file, {
    counters: { "vusers.created": created, "vusers.created_by_name.chat": created, "cable.messages_received": 7 },
    histograms: { "cable.rtt": RTT },
    periods: [
      { period: T0, counters: { "vusers.created": created - 1, "vusers.created_by_name.chat": created - 1 }, samples: { "cable.rtt": RTT.slice(0, 4) } },
      { period: T0 + 10_000, counters: { "vusers.created": 1, "vusers.created_by_name.chat": 1, "cable.messages_received": 7 }, samples: { "cable.rtt": RTT.slice(4) } },
    ],
    firstMetricAt: T0 + 150,
    lastMetricAt: T0 + 19_000,
    testRunId: testRunId ?? `run-${file}`,
  });
}

type Json = Record<string, any>;
const read = (file: string): Json => JSON.parse(readFileSync(file, "utf8"));
/** Rewrites a JSON file; `text` may replace the serialized form (for what JSON.stringify cannot write). */
function rewrite(file: string, change: (json: Json) => void, text?: (json: string) => string): void {
  const json = read(file);
  change(json);
  const out = JSON.stringify(json);
  writeFileSync(file, text ? text(out) : out);
}

interface Run {
  status: number | null;
  stderr: string;
  merged: MergedResults;
  markdown: string;
}

function cableReport(...args: string[]): Run {
  const json = join(dir, "merged.json");
  const out = join(dir, "report.md");
  const run = spawnSync(process.execPath, ["--max-old-space-size=512", BIN, join(dir, "results"), "--json", json, "--out", out, "--html", join(dir, "report.html"), ...args], {
    encoding: "utf8",
    timeout: 30_000,
  });
  expect(run.status, run.stderr).not.toBeNull();
  expect([0, 1], run.stderr).toContain(run.status);
  return { status: run.status, stderr: run.stderr, merged: read(json) as MergedResults, markdown: readFileSync(out, "utf8") };
}

/** The good task's own numbers, in the column that holds it. */
function expectGoodMerged(merged: MergedResults, region = "eu-west-2"): void {
  const column = merged.regions.find((r) => r.name === region)!;
  expect(column.tasks).toBe(1);
  expect(column.counters["vusers.created"]).toBe(3);
  expect(column.counters["cable.messages_received"]).toBe(7);
  const rtt = column.histograms["cable.rtt"];
  expect(rtt.count).toBe(RTT.length);
  expect(rtt.approximate).toBe(false);
  expect(rtt.max).toBe(80);
  expect(column.series?.periods).toEqual([T0, T0 + 10_000]);
  expect(column.series?.latency["cable.rtt"].count).toEqual([4, 4]);
}

const good = () => join(dir, "results", "eu-west-2", "good", "report.json");
const bad = () => join(dir, "results", "eu-west-2", "bad", "report.json");

/** A good task and a hostile one beside it; the hostile one is left out, marked with `reason`. */
function expectReportCorrupt(reason: RegExp): Run {
  const run = cableReport();
  const column = run.merged.regions.find((r) => r.name === "eu-west-2")!;
  expect(column.rejected).toEqual([{ file: "eu-west-2/bad/report.json", kind: "corrupt", reason: expect.stringMatching(reason) }]);
  expect(column.expectedTasks).toBe(2);
  expectGoodMerged(run.merged);
  expect(run.markdown).toContain("1 corrupt");
  return run;
}

/** A good task and one whose sidecar is hostile: that task merges from its report alone, and a note says why. */
function expectSidecarNotUsed(reason: RegExp): Run {
  const run = cableReport();
  const note = run.merged.notes.find((n) => n.startsWith("eu-west-2/bad/report.json: its sidecar was not used"));
  expect(note, run.merged.notes.join("\n")).toMatch(reason);
  const column = run.merged.regions.find((r) => r.name === "eu-west-2")!;
  expect(column.tasks).toBe(2);
  expect(column.counters["vusers.created"]).toBe(6);
  expect(column.histograms["cable.rtt"]).toMatchObject({ count: 2 * RTT.length, max: 80 });
  return run;
}

describe("a hostile task file beside a good one: the report is written, the bad file marked, the good one merged", () => {
  beforeEach(() => {
    writeGood(good());
    writeGood(bad(), 3, "bad-run");
  });

  it("a period at 0 (the series would run from 1970)", () => {
    rewrite(bad(), (r) => (r.intermediate[0].period = "0"));
    expectReportCorrupt(/^holds a period at 0, outside its own metric times/);
  });

  it("a period at 1e300", () => {
    rewrite(bad(), (r) => (r.intermediate[1].period = 1e300));
    expectReportCorrupt(/^is not an Artillery JSON report .*less than or equal to 9007199254740991 at intermediate\.1\.period/);
  });

  it("a sidecar period at 1e300", () => {
    rewrite(sidecarPathFor(bad()), (s) => (s.periods[1].period = 1e300));
    expectSidecarNotUsed(/less than or equal to 9007199254740991 at periods\.1\.period/);
  });

  it("a sidecar period a year after the task's last metric", () => {
    rewrite(sidecarPathFor(bad()), (s) => (s.periods[1].period = T0 + 365 * 86_400_000));
    expectSidecarNotUsed(/holds a period at \d+, outside its own metric times/);
  });

  it("a negative count", () => {
    rewrite(sidecarPathFor(bad()), (s) => (s.periods[0].counters["vusers.created"] = -1_000_000));
    expectSidecarNotUsed(/-1000000 is not a finite number ≥ 0 at periods\.0\.counters\.vusers\.created/);
  });

  it("an infinite count", () => {
    rewrite(bad(), (r) => (r.aggregate.counters["vusers.created"] = "@INF@"), (text) => text.replace('"@INF@"', "1e999"));
    expectReportCorrupt(/counters: null is not a finite number ≥ 0 at aggregate\.counters\.vusers\.created|is not a finite number ≥ 0 at aggregate\.counters\.vusers\.created/);
  });

  it("a sketch bin far away (a merge would allocate every bin between)", () => {
    const far = sketchOf([]);
    Object.assign(far.store, { bins: [1], offset: 100_000_000, minKey: 100_000_000, maxKey: 100_000_000, count: 1 });
    Object.assign(far, { min: 10, max: 10, sum: 10 });
    rewrite(sidecarPathFor(bad()), (s) => (s.periods[0].histograms["cable.rtt"] = encodeSketch(far)));
    expectSidecarNotUsed(/period \d+: histogram "cable\.rtt" has bins at keys 100000000…100000000, outside ±2500/);
  });

  it("test.phases nested 100,000 deep", () => {
    rewrite(sidecarPathFor(bad()), (s) => (s.test.phases = ["@DEEP@"]), (text) => text.replace('"@DEEP@"', '{"x":'.repeat(100_000) + "{}" + "}".repeat(100_000)));
    expectSidecarNotUsed(/nested deeper than 8 at test\.phases\.0/);
  });

  it("130,000 periods (a spread over them overflowed the stack)", () => {
    const periods = Array.from({ length: 130_000 }, (_, i) => ({ period: T0 + i * 10_000, counters: { "vusers.created": 0 }, rates: { "cable.send_rate": 1 }, summaries: {} }));
    rewrite(bad(), (r) => {
      r.intermediate = periods;
      r.aggregate.lastMetricAt = T0 + 130_000 * 10_000;
    });
    expectReportCorrupt(/130000 entries, more than 69122 at intermediate/);
  });

  it("a task that says it ran for 15 days", () => {
    rewrite(bad(), (r) => (r.aggregate.lastMetricAt = r.aggregate.firstMetricAt + 15 * 86_400_000));
    expectReportCorrupt(/^spans 15\.0 days \(a task may span 8\.0 days at most\)/);
  });

  it("130,000 periods in a sidecar", () => {
    const periods = Array.from({ length: 130_000 }, (_, i) => ({ period: T0 + (i % 2) * 10_000, counters: {}, rates: { "cable.send_rate": 1 } }));
    rewrite(sidecarPathFor(bad()), (s) => (s.periods = periods));
    expectSidecarNotUsed(/130000 entries, more than 69122 at periods/);
  });

  it("a task that ran years before the others", () => {
    const year = 365 * 86_400_000;
    rewrite(bad(), (r) => {
      r.aggregate.firstMetricAt -= 5 * year;
      r.aggregate.lastMetricAt -= 5 * year;
      for (const p of r.intermediate) p.period = Number(p.period) - 5 * year;
    });
    rewrite(sidecarPathFor(bad()), (s) => {
      for (const p of s.periods) p.period -= 5 * year;
    });
    expectReportCorrupt(/^starts 1825\.0 days before the run's other tasks/);
  });

  it("more metric names than a task can hold", () => {
    rewrite(sidecarPathFor(bad()), (s) => {
      for (let i = 0; i <= TASK_FILE_LIMITS.namesPerTask; i++) s.periods[i % 2].counters[`errors.cable.pusher_${i}`] = 1;
    });
    expectSidecarNotUsed(/names more than 5000 distinct metrics/);
  });
});

describe("a stopped task's live period files (a task without a report)", () => {
  const live = (period: number, counters: Record<string, number>, name = `period-${period}.live`) => {
    const file = join(dir, "results", "eu-west-2", "stopped", "live", name);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, JSON.stringify({ period, counters, rates: {}, histograms: { "cable.rtt": encodeSketch(sketchOf([5])) } }));
  };

  beforeEach(() => writeGood(good()));

  it("a period 400 days away marks the task corrupt; the rest merges", () => {
    live(T0, { "vusers.created": 1 });
    live(T0 + 400 * 86_400_000, { "vusers.created": 1 });
    const run = cableReport();
    const column = run.merged.regions.find((r) => r.name === "eu-west-2")!;
    expect(column.rejected).toEqual([{ file: "eu-west-2/stopped", kind: "corrupt", reason: "its live periods: spans 400.0 days (a task may span 8.0 days at most)" }]);
    expectGoodMerged(run.merged);
  });

  it("a file whose period is not the one its name says, or whose sketch cannot be merged, is left out", () => {
    live(T0, { "vusers.created": 1 });
    live(T0 + 10_000, { "vusers.created": 2 }, `period-${T0 + 20_000}.live`);
    const far = sketchOf([]);
    Object.assign(far.store, { bins: [1], offset: 100_000_000, minKey: 100_000_000, maxKey: 100_000_000, count: 1 });
    live(T0 + 30_000, { "vusers.created": 4 });
    rewrite(join(dir, "results", "eu-west-2", "stopped", "live", `period-${T0 + 30_000}.live`), (p) => (p.histograms["cable.rtt"] = encodeSketch(far)));
    const column = cableReport().merged.regions.find((r) => r.name === "eu-west-2")!;
    expect(column.tasks).toBe(2);
    expect(column.counters["vusers.created"]).toBe(3 + 1);
  });
});

describe("region folders and metrics named after Object.prototype's members", () => {
  const regions = ["__proto__", "constructor", "eu-west-2", "toString"];

  it("merge as any other name, in every column and verdict", () => {
    for (const region of regions) writeGood(join(dir, "results", region, "task", "report.json"), 3, `run-${region}`);
    rewrite(sidecarPathFor(join(dir, "results", "__proto__", "task", "report.json")), (s) => {
      for (const p of s.periods) p.counters["__proto__"] = 2;
    });
    const { merged, markdown } = cableReport("--expect-regions", "constructor,hasOwnProperty,eu-west-2");
    expect(merged.regions.map((r) => [r.name, r.tasks])).toEqual([
      ["__proto__", 1],
      ["constructor", 1],
      ["eu-west-2", 1],
      ["hasOwnProperty", 0],
      ["toString", 1],
    ]);
    for (const region of regions) expectGoodMerged(merged, region);
    expect(merged.all.counters["vusers.created"]).toBe(12);
    expect(markdown).toContain("hasOwnProperty");
  });

  it("get their spike recovery, reconnect storm and drift verdicts", () => {
    const test = { ...TEST, phases: [{ name: "warm", duration: 300, arrivalRate: 1 }, { name: "spike", duration: 300, arrivalRate: 10 }, { name: "after", duration: 300, arrivalRate: 1 }] };
    const latency = (i: number) => Array.from({ length: 20 }, () => (i >= 30 && i < 40 ? 300 : 20));
    for (const region of regions) {
      const periods = Array.from({ length: 90 }, (_, i) => ({
        period: T0 + i * 10_000,
        counters: { "vusers.created": 1, "vusers.created_by_name.chat": 1 },
        samples: { "cable.broadcast_latency": latency(i), "cable.restore_latency": [100, 200] },
      }));
      writeTask(join(dir, "results", region, "task", "report.json"), {
        counters: { "vusers.created": 90, "vusers.created_by_name.chat": 90 },
        histograms: { "cable.broadcast_latency": periods.flatMap((_, i) => latency(i)), "cable.restore_latency": periods.flatMap(() => [100, 200]) },
        periods,
        test,
        firstMetricAt: T0,
        lastMetricAt: T0 + 899_000,
        testRunId: region,
        phaseStarts: test.phases.map((p, index) => ({ index, name: p.name, startTime: T0 + index * 300_000 })),
      });
    }
    const { verdicts } = cableReport().merged;
    const columns = [...regions, "all regions"].sort();
    expect(verdicts?.spikes.map((s) => Object.keys(s.columns).sort())).toEqual([columns]);
    expect(Object.keys(verdicts?.storms ?? {}).sort()).toEqual(columns);
    expect(Object.keys(verdicts?.drift?.latency ?? {}).sort()).toEqual(columns);
    expect(verdicts?.spikes[0].columns["__proto__"]).toMatchObject({ before: 20, worst: 300 });
  });
});

describe("the checks", () => {
  it("a sketch within the key bound decodes; one past it, or with a bin that is not a count, does not", () => {
    const near = sketchOf([1e-9, 1, 1e12]);
    expect(sketchProblem(decodeSketch("x", encodeSketch(near)))).toBeNull();
    const negative = sketchOf([5, 6]);
    negative.store.bins[negative.store.maxKey - negative.store.offset] = -3;
    expect(() => decodeSketch("x", encodeSketch(negative))).toThrow(/has an invalid sample count/);
    const infinite = sketchOf([5, 6]);
    infinite.store.bins[infinite.store.maxKey - infinite.store.offset] = Infinity;
    expect(() => decodeSketch("x", encodeSketch(infinite))).toThrow(/has an invalid sample count/);
    const otherMapping = DDSketch.fromProto(near.toProto());
    (otherMapping.mapping as unknown as { _offset: number })._offset = 7;
    expect(() => decodeSketch("x", encodeSketch(otherMapping))).toThrow(/not made with relative accuracy 0\.01/);
    expect(() => decodeSketch("x", "A".repeat(TASK_FILE_LIMITS.sketchBase64 + 1))).toThrow(/more than a sketch can be/);
  });

  it("the run is the fullest stretch of task starts, the latest of equals; tasks without a time stay", () => {
    const day = 86_400_000;
    expect([...outsideTheRun([T0, T0 + 60_000, undefined, T0 - 3 * day])]).toEqual([[3, expect.stringMatching(/^starts 3\.0 days before/)]]);
    expect([...outsideTheRun([T0 - 10 * day, T0])]).toEqual([[0, expect.stringMatching(/^starts 10\.0 days before/)]]);
    expect(outsideTheRun([T0, T0 + day - 1, undefined]).size).toBe(0);
  });

  it("test.phases as Artillery writes them still load", () => {
    const file = join(dir, "results", "eu-west-2", "a.json");
    writeTask(file, { counters: { "vusers.created": 1 }, test: { ...TEST, phases: [{ name: "ramp", duration: "5m", arrivalRate: 1, rampTo: 20 }, { pause: 10 }] } });
    const run = cableReport();
    expect(run.merged.test.phases).toEqual([{ name: "ramp", duration: "5m", arrivalRate: 1, rampTo: 20 }, { pause: 10 }]);
    expect(run.merged.notes.filter((n) => n.includes("not used"))).toEqual([]);
  });
});

// The merge folds one task at a time (fold.ts) so that its memory does not grow with tasks. These
// hold the fold to the merge of every task at once: regions folded into all regions equal all the
// tasks folded together, and the streamed results directory equals the same directory read into
// memory and merged, a task from another run and a stopped task's live periods included.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DDSketch } from "@artilleryio/sketches-js";
import { ColumnFold, foldTasks } from "../src/fold.js";
import { encodeSketch } from "../src/sidecar.js";
import { loadResultsDir, mergeRegions, mergeResults } from "../src/results.js";
import type { TaskResult } from "../src/task.js";
import { periodOf, random, taskOf, writeTask, type PeriodSpec, type TaskSpec } from "./fixtures.js";

const T0 = Date.UTC(2026, 0, 5, 12, 0, 0);
const PERIOD = 10_000;

/** A task of `periods` periods from `first`, with latency, lag, CPU, counters, errors and a check. */
function spec(seed: number, first = 0, periods = 6): TaskSpec {
  const next = random(seed);
  const samples = (center: number, n: number) => Array.from({ length: n }, () => Math.round(center * (0.5 + next()) * 10) / 10);
  const specs: PeriodSpec[] = Array.from({ length: periods }, (_, i) => ({
    period: T0 + (first + i) * PERIOD,
    counters: {
      "vusers.created": 3,
      "vusers.created_by_name.chat": 3,
      "vusers.completed": i > 0 ? 2 : 0,
      "cable.connections": 3,
      "cable.messages_sent": 10 + seed,
      "cable.connections_open_period_peak": 3 * (i + 1),
      ...(next() < 0.4 ? { "errors.cable.timeout": 1 } : {}),
    },
    rates: { "cable.send_rate": Math.round(next() * 100) / 10 },
    samples: { "cable.broadcast_latency": samples(20 + seed, 30), "cable.rtt": samples(5, 10), "cable.event_loop_lag": samples(3, 5) },
    cpuPercent: Math.round(next() * 1000) / 10,
  }));
  const histograms: Record<string, number[]> = {};
  const counters: Record<string, number> = {};
  for (const p of specs) {
    for (const [name, s] of Object.entries(p.samples ?? {})) (histograms[name] ??= []).push(...s);
    for (const [name, n] of Object.entries(p.counters)) counters[name] = (counters[name] ?? 0) + n;
  }
  return {
    histograms,
    counters,
    periods: specs,
    phaseStarts: [{ index: 0, name: "steady", startTime: T0 + first * PERIOD + 50 }],
    checks: [{ check: "p99 < 200", strict: true, passed: seed % 2 === 0 }],
    firstMetricAt: T0 + first * PERIOD,
    lastMetricAt: T0 + (first + periods) * PERIOD - 1,
    generator: { workers: 1, cpuMean: 30 + seed, cpuPeak: 60 },
    testRunId: `run-${seed}`,
  };
}

/**
 * Floating-point sums (a sketch's sum of samples, a summed rate) depend on the order of addition, and
 * the fold adds region by region: equal up to 12 significant digits, sketches bin for bin.
 */
function settled(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value), (key, v) => {
    if (key === "sketch" && typeof v === "string") {
      const sketch = DDSketch.fromProto(Buffer.from(v, "base64"));
      sketch.sum = Number(sketch.sum.toPrecision(12));
      return encodeSketch(sketch);
    }
    return typeof v === "number" ? Number(v.toPrecision(12)) : v;
  });
}

describe("the fold", () => {
  it("of regions folded into all regions equals every task folded at once, in the column and over time", () => {
    const regions = [0, 1, 2].map((r) => Array.from({ length: 4 }, (_, t) => taskOf(spec(10 * r + t, r + t, 5 + t), `r${r}/t${t}.json`)));
    const all = new ColumnFold();
    for (const tasks of regions) all.absorb(foldTasks(tasks, tasks.map((t) => t.reportFile)));
    const everyTask: TaskResult[] = regions.flat();
    const once = foldTasks(everyTask, everyTask.map((t) => t.reportFile));
    expect(settled(all.column("all"))).toEqual(settled(once.column("all")));
    expect(settled(all.series())).toEqual(settled(once.series()));
  });

  it("leaves the folded region as it was when absorbed", () => {
    const tasks = [taskOf(spec(1)), taskOf(spec(2))];
    const region = foldTasks(tasks, ["a.json", "b.json"]);
    const before = { column: region.column("r"), series: region.series() };
    new ColumnFold().absorb(region);
    new ColumnFold().absorb(region);
    expect({ column: region.column("r"), series: region.series() }).toEqual(before);
  });

  it("keeps a metric exact while every task brings its sketch, and interpolates once one does not", () => {
    const withSketches = [taskOf(spec(3)), taskOf(spec(4))];
    const bare = taskOf({ ...spec(5), sidecar: false });
    expect(foldTasks(withSketches, []).column("x").histograms["cable.rtt"].approximate).toBe(false);
    expect(foldTasks([...withSketches, bare], []).column("x").histograms["cable.rtt"].approximate).toBe(true);
  });
});

describe("the results directory, merged as it is read", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "cable-report-fold-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("equals the directory read into memory and merged: copies, a task from another run and a stopped task's live periods included", () => {
    for (const [r, region] of ["eu-west-2", "us-east-1", "ap-south-1"].entries()) {
      for (let t = 0; t < 5; t++) writeTask(join(dir, region, `task-${t}`, "report.json"), spec(10 * r + t, t % 2, 6));
    }
    // A copy of a task (counted once), and a bare report without a sidecar.
    writeTask(join(dir, "eu-west-2", "z-copy", "report.json"), spec(0, 0, 6));
    writeTask(join(dir, "us-east-1", "bare", "report.json"), { ...spec(40), sidecar: false });
    // A task of a run 30 days earlier: found only once every start is known, then left out.
    const old = spec(41);
    const shift = -30 * 86_400_000;
    writeTask(join(dir, "ap-south-1", "old", "report.json"), {
      ...old,
      periods: old.periods!.map((p) => ({ ...p, period: p.period + shift })),
      phaseStarts: old.phaseStarts!.map((p) => ({ ...p, startTime: p.startTime + shift })),
      firstMetricAt: old.firstMetricAt! + shift,
      lastMetricAt: old.lastMetricAt! + shift,
    });
    // A task stopped before its report: only its live periods.
    const live = join(dir, "us-east-1", "stopped", "live");
    mkdirSync(live, { recursive: true });
    for (const p of spec(42).periods!.slice(0, 3)) writeFileSync(join(live, `period-${p.period}.live`), JSON.stringify(periodOf(p)));

    const streamed = mergeResults(dir);
    const { regions, notes } = loadResultsDir(dir);
    expect(streamed).toEqual(mergeRegions(regions, {}, notes));
    expect(streamed.all.tasks).toBe(17);
    expect(streamed.all.partialTasks).toBe(1);
    expect(streamed.all.rejected.map((r) => [r.file, r.kind])).toEqual(
      expect.arrayContaining([
        [join("eu-west-2", "z-copy", "report.json"), "duplicate"],
        [join("ap-south-1", "old", "report.json"), "corrupt"],
      ]),
    );
    expect(streamed.all.rejected.find((r) => r.file.includes("old"))!.reason).toMatch(/days before the run's other tasks/);
  });
});

// Constructed tasks for the unit tests: real DDSketches from known samples, and
// files in Artillery's report layout (checked against real `artillery run`
// output by the end-to-end test).
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { DDSketch } from "@artilleryio/sketches-js";
import { sketchOf } from "cable-test-servers";
import { summarizeSketch } from "../src/merge.js";
import { encodeSketch, RELATIVE_ACCURACY, SIDECAR_FORMAT, SIDECAR_VERSION, sidecarPathFor, type Sidecar } from "../src/sidecar.js";
import { periodSketches, type PhaseStart } from "../src/period.js";
import type { LiveRegion } from "../src/live.js";
import type { HistogramSummary, TaskPeriod, TaskResult } from "../src/task.js";

/** A period of a constructed task: its counters, and raw samples per histogram (encoded as the plugin does). */
export interface PeriodSpec {
  period: number;
  counters: Record<string, number>;
  rates?: Record<string, number>;
  samples?: Record<string, number[]>;
  cpuPercent?: number;
}

export function periodOf(spec: PeriodSpec): TaskPeriod {
  return {
    period: spec.period,
    counters: spec.counters,
    rates: spec.rates ?? {},
    histograms: Object.fromEntries(Object.entries(spec.samples ?? {}).map(([n, s]) => [n, encodeSketch(sketchOf(s))])),
    ...(spec.cpuPercent !== undefined ? { cpuPercent: spec.cpuPercent } : {}),
  };
}

/** Deterministic pseudo-random numbers in [0, 1) (mulberry32). */
export function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Standard normal deviates by Box–Muller (both of each pair) from a seeded uniform source. */
export function normals(seed: number): () => number {
  const u = random(seed);
  let spare: number | null = null;
  return () => {
    if (spare !== null) {
      const s = spare;
      spare = null;
      return s;
    }
    const r = Math.sqrt(-2 * Math.log(1 - u()));
    const theta = 2 * Math.PI * u();
    spare = r * Math.sin(theta);
    return r * Math.cos(theta);
  };
}

/** n samples spread uniformly around `center` (±10%). */
export function around(center: number, n: number, seed: number): number[] {
  const next = random(seed);
  return Array.from({ length: n }, () => center * (0.9 + 0.2 * next()));
}

export { sketchOf };

/** What Artillery writes in the report for a sketch. */
export function summaryOf(sketch: DDSketch): HistogramSummary {
  const s = summarizeSketch(sketch);
  return { ...s, median: s.p50 };
}

/** The exact q-quantile of samples, by Artillery's (DDSketch's) rank convention: rank q·(n−1). */
export function exactQuantile(samples: number[], q: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.floor(q * (sorted.length - 1))];
}

export interface TaskSpec {
  histograms?: Record<string, number[]>;
  counters?: Record<string, number>;
  periods?: PeriodSpec[];
  phaseStarts?: PhaseStart[];
  checks?: TaskResult["checks"];
  test?: TaskResult["test"];
  firstMetricAt?: number;
  lastMetricAt?: number;
  /** false: a task that ran without the plugin. */
  sidecar?: boolean;
  generator?: TaskResult["generator"];
  testRunId?: string;
  /** The sidecar's target (target.ts); absent: a sidecar from before it was recorded. */
  target?: TaskResult["target"];
}

export const TEST = { name: "chat.yml", scenarios: ["chat"], phases: [{ name: "steady", duration: 60, arrivalRate: 10 }] };

export function taskOf(spec: TaskSpec, reportFile = "report.json"): TaskResult {
  const sketches = Object.fromEntries(Object.entries(spec.histograms ?? {}).map(([n, s]) => [n, sketchOf(s)]));
  const counters = spec.counters ?? {};
  const task: TaskResult = {
    reportFile,
    counters,
    summaries: Object.fromEntries(Object.entries(sketches).map(([n, s]) => [n, summaryOf(s)])),
    periods: (spec.periods ?? []).map(periodOf),
    phaseStarts: spec.phaseStarts ?? [],
    firstMetricAt: spec.firstMetricAt,
    lastMetricAt: spec.lastMetricAt,
    scenariosRun: Object.keys(counters)
      .filter((n) => n.startsWith("vusers.created_by_name."))
      .map((n) => n.slice("vusers.created_by_name.".length)),
    checks: spec.sidecar === false ? null : (spec.checks ?? null),
  };
  if (spec.sidecar !== false) {
    task.sidecarFile = sidecarPathFor(reportFile);
    task.sketches = sketches;
    task.test = spec.test ?? TEST;
    task.generator = spec.generator;
    task.testRunId = spec.testRunId;
    task.target = spec.target;
  }
  return task;
}

/** Writes `file` in Artillery's `-o` layout and, unless spec.sidecar is false, the plugin's sidecar. */
export function writeTask(file: string, spec: TaskSpec): void {
  mkdirSync(dirname(file), { recursive: true });
  const task = taskOf(spec, file);
  const periodMetrics = (p: TaskPeriod) => ({ period: String(p.period), counters: p.counters, rates: p.rates, summaries: {}, histograms: {} });
  const report = {
    aggregate: {
      period: Math.max(0, ...task.periods.map((p) => p.period)),
      counters: task.counters,
      rates: {},
      firstMetricAt: spec.firstMetricAt,
      lastMetricAt: spec.lastMetricAt,
      summaries: task.summaries,
      histograms: task.summaries,
    },
    intermediate: task.periods.map(periodMetrics),
  };
  writeFileSync(file, JSON.stringify(report));
  if (spec.sidecar === false) return;
  const sidecar: Sidecar = {
    format: SIDECAR_FORMAT,
    version: SIDECAR_VERSION,
    artilleryVersion: "2.0.34",
    testRunId: spec.testRunId ?? `fixture:${file}`,
    test: task.test!,
    relativeAccuracy: RELATIVE_ACCURACY,
    aggregate: {
      counters: task.counters,
      rates: {},
      histograms: Object.fromEntries(Object.entries(task.sketches!).map(([n, s]) => [n, encodeSketch(s)])),
    },
    periods: task.periods,
    phaseStarts: task.phaseStarts,
    checks: task.checks,
    ...(spec.generator ? { generator: spec.generator } : {}),
    ...(spec.target ? { target: spec.target } : {}),
  };
  writeFileSync(sidecarPathFor(file), JSON.stringify(sidecar));
}

/** What the runner's live feed keeps of a region: one record per period, its tasks' counters added and sketches merged. */
export function liveRegionOf(name: string, tasks: TaskResult[], expectedTasks = tasks.length): LiveRegion {
  const folds = new Map<number, LiveRegion["periods"][number]>();
  for (const task of tasks) {
    for (const p of task.periods) {
      const fold = folds.get(p.period) ?? { period: p.period, counters: {}, sketches: {}, cpuPercent: null };
      for (const [k, v] of Object.entries(p.counters)) fold.counters[k] = (fold.counters[k] ?? 0) + v;
      for (const [k, s] of Object.entries(periodSketches(p))) (fold.sketches[k] ??= new DDSketch({ relativeAccuracy: 0.01 })).merge(s);
      if (p.cpuPercent !== undefined) fold.cpuPercent = Math.max(fold.cpuPercent ?? 0, p.cpuPercent);
      folds.set(p.period, fold);
    }
  }
  return { name, periods: [...folds.values()].sort((a, b) => a.period - b.period), tasks: tasks.length, expectedTasks, phaseStarts: tasks[0]?.phaseStarts ?? [] };
}

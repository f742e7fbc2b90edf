// What happened when, pure: the periods of a column's tasks in, one series per figure out.
// Periods align by timestamp (Artillery cuts them at 10 s wall-clock boundaries on every task), so
// the n-th entry of every series is the same 10 s of every task; a latency percentile of a period
// is that of the period's sketches merged across tasks, as the whole-run figures are.
import type { DDSketch } from "@artilleryio/sketches-js";
import { METRICS } from "artillery-engine-cable/metrics";
import { approximateDistribution, mergeSketches, summarizeSketch } from "./merge.js";
import type { Series } from "./model.js";
import { PERIOD_MS, periodSketches } from "./period.js";
import type { HistogramSummary, TaskPeriod, TaskResult } from "./task.js";
import { byName } from "./task-file.js";

/** Histograms of the engine that are not latencies: the generator's lag, and per-second open connections. */
export const NOT_LATENCIES: ReadonlySet<string> = new Set([METRICS.eventLoopLag, METRICS.connectionsOpenPeak]);

/** The latency a chart over time shows first: what users of a chat feel, then what the scenario measures. */
const MAIN_LATENCY_ORDER = [METRICS.broadcastLatency, METRICS.rtt, METRICS.publishLatency, METRICS.subscriptionLatency, METRICS.handshakeLatency];

export function isLatencyMetric(name: string): boolean {
  return name.startsWith("cable.") && !NOT_LATENCIES.has(name);
}

/** The main latency among those recorded: broadcast latency when there is one. */
export function mainLatency(metrics: Iterable<string>): string | null {
  const present = [...metrics].filter(isLatencyMetric);
  return MAIN_LATENCY_ORDER.find((m) => present.includes(m)) ?? present.sort()[0] ?? null;
}

/** A period's start on the 10 s grid (a task whose periods are off it still lines up with the rest). */
export function gridPeriod(period: number): number {
  return period - (((period % PERIOD_MS) + PERIOD_MS) % PERIOD_MS);
}

const round1 = (x: number) => Math.round(x * 10) / 10;

export function mergeSeries(tasks: TaskResult[], files: string[]): Series {
  const slots = new Map<number, Array<{ task: number; period: TaskPeriod }>>();
  tasks.forEach((task, i) => {
    for (const period of task.periods) {
      const key = gridPeriod(period.period);
      const slot = slots.get(key) ?? [];
      slot.push({ task: i, period });
      slots.set(key, slot);
    }
  });
  const keys = [...slots.keys()].sort((a, b) => a - b);
  const periods: number[] = [];
  if (keys.length > 0) for (let t = keys[0]; t <= keys[keys.length - 1]; t += PERIOD_MS) periods.push(t);
  const at = periods.map((t) => slots.get(t) ?? []);

  const sum = (name: string) => at.map((slot) => (slot.length === 0 ? null : slot.reduce((n, { period }) => n + (period.counters[name] ?? 0), 0)));
  const sumOrNull = (name: string) => at.map((slot) => (slot.some(({ period }) => name in period.counters) ? slot.reduce((n, { period }) => n + (period.counters[name] ?? 0), 0) : null));
  const perSecond = (values: Array<number | null>) => values.map((v) => (v === null ? null : round1(v / (PERIOD_MS / 1000))));

  const histogramNames = new Set<string>();
  for (const slot of at) for (const { period } of slot) for (const name of [...Object.keys(period.histograms), ...Object.keys(period.summaries ?? {})]) histogramNames.add(name);
  const latency: Series["latency"] = byName();
  for (const metric of [...histogramNames].filter(isLatencyMetric).sort()) latency[metric] = latencySeries(at, metric);

  const created = sum("vusers.created");
  const completed = sum("vusers.completed");
  const failed = sum("vusers.failed");
  let running: number | null = null;
  const active = periods.map((_, i) => {
    if (created[i] === null) return running;
    running = Math.max(0, (running ?? 0) + created[i]! - (completed[i] ?? 0) - (failed[i] ?? 0));
    return running;
  });

  const errorNames = new Set<string>();
  for (const slot of at) for (const { period } of slot) for (const name of Object.keys(period.counters)) if (name.startsWith("errors.")) errorNames.add(name);
  const errors: Series["errors"] = byName();
  if (errorNames.size > 0) {
    for (const name of [...errorNames].sort()) errors[name] = sum(name);
    errors.total = at.map((slot, i) => (slot.length === 0 ? null : [...errorNames].reduce((n, name) => n + (errors[name][i] ?? 0), 0)));
  }

  return {
    periods,
    latency,
    connections: sumOrNull(METRICS.connectionsOpenPeriodPeak),
    users: { created, completed, failed, active, connected: sum(METRICS.connections) },
    messages: { sent: perSecond(sum(METRICS.messagesSent)), received: perSecond(sum(METRICS.messagesReceived)) },
    errors,
    generator: tasks.map((task, i) => {
      const byPeriod = new Map(task.periods.map((p) => [gridPeriod(p.period), p]));
      return {
        file: files[i] ?? task.reportFile,
        lagP99: periods.map((t) => {
          const p = byPeriod.get(t);
          if (!p) return null;
          const sketch = periodSketches(p)[METRICS.eventLoopLag];
          if (sketch && sketch.count > 0) return summarizeSketch(sketch).p99;
          return p.summaries?.[METRICS.eventLoopLag]?.p99 ?? null;
        }),
        cpu: periods.map((t) => byPeriod.get(t)?.cpuPercent ?? null),
      };
    }),
  };
}

type Slot = Array<{ task: number; period: TaskPeriod }>;

/** Exact where every task's period brought its sketch; else interpolated from Artillery's per-period summaries. */
function latencySeries(at: Slot[], metric: string): Series["latency"][string] {
  const out = { count: [] as Array<number | null>, p50: [] as Array<number | null>, p95: [] as Array<number | null>, p99: [] as Array<number | null>, approximate: false };
  for (const slot of at) {
    const sketches: DDSketch[] = [];
    const summaries: HistogramSummary[] = [];
    let missingSketch = false;
    for (const { period } of slot) {
      const sketch = periodSketches(period)[metric];
      if (sketch) sketches.push(sketch);
      else if (period.summaries?.[metric]) {
        missingSketch = true;
        summaries.push(period.summaries[metric]);
      }
    }
    let figures: { count: number; p50: number; p95: number; p99: number } | null = null;
    if (!missingSketch && sketches.length > 0) {
      const merged = sketches.length === 1 ? sketches[0] : mergeSketches(sketches);
      if (merged.count > 0) figures = summarizeSketch(merged);
    } else if (summaries.length > 0 && sketches.length === 0) {
      const nonEmpty = summaries.filter((s) => s.count > 0);
      if (nonEmpty.length > 0) {
        figures = nonEmpty.length === 1 ? nonEmpty[0] : approximateDistribution(nonEmpty);
        out.approximate ||= nonEmpty.length > 1;
      }
    } else if (summaries.length > 0) {
      // Some tasks with sketches, some without: the counts add up; the percentiles are interpolated.
      const all = [...sketches.map((s) => ({ ...summarizeSketch(s), median: 0 })), ...summaries].filter((s) => s.count > 0);
      if (all.length > 0) figures = approximateDistribution(all.map((s) => ({ ...s, median: s.p50 })));
      out.approximate = true;
    }
    out.count.push(figures ? figures.count : slot.length === 0 ? null : 0);
    out.p50.push(figures ? figures.p50 : null);
    out.p95.push(figures ? figures.p95 : null);
    out.p99.push(figures ? figures.p99 : null);
  }
  return out;
}

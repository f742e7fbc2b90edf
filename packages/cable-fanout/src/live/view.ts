// What `cable-fanout run` prints while the load runs: one line per region for every metrics period,
// once each of the region's tasks has sent it (or it is late), from the same merged series the
// report draws (cable-report's mergeSeries over the live period records). Pure but for the clock.
import { gridPeriod, mainLatency, mergeSeries, mergeSketches, PERIOD_MS, periodSketches, type Series, type TaskResult } from "artillery-plugin-cable-report";
import type { LiveSnapshot, TaskLive } from "./feed.js";

/** How long after a period's end a missing task stops holding its line back (Artillery emits a period a few seconds after it ends). */
export const LATE_MS = 20_000;

/** A region's tasks as the report's merger sees tasks: their periods, one file name each. */
export function asTasks(tasks: TaskLive[]): TaskResult[] {
  return tasks.map((t) => ({ reportFile: `${t.region}/${t.taskId}`, counters: {}, summaries: {}, periods: t.periods, phaseStarts: t.phases, scenariosRun: [], checks: null }));
}

/**
 * Whether every task has sent `period`: Artillery reports a period only once it is over, so a task
 * that sent it (or a later one, or has ended) has nothing more for it. A task idle in that period
 * sends none: after LATE_MS it no longer holds the line back. `expected` tasks must have shown up,
 * unless late.
 */
export function periodComplete(tasks: TaskLive[], expected: number, period: number, now: number): boolean {
  if (now > period + PERIOD_MS + LATE_MS) return true;
  if (tasks.length < expected) return false;
  return tasks.every((t) => t.ended !== undefined || t.periods.some((p) => p.period >= period));
}

export interface PeriodFigures {
  period: number;
  /** Tasks that sent this period, of those expected. */
  tasks: number;
  expected: number;
  active: number | null;
  connections: number | null;
  received: number | null;
  latency: { metric: string; p95: number | null } | null;
  errors: number;
  lagP99: number | null;
  cpu: number | null;
}

export function figuresAt(series: Series, i: number, tasks: TaskLive[], expected: number): PeriodFigures {
  const main = mainLatency(Object.keys(series.latency));
  const max = (values: Array<number | null>) => {
    const known = values.filter((v): v is number => v !== null);
    return known.length > 0 ? Math.max(...known) : null;
  };
  const period = series.periods[i];
  return {
    period,
    tasks: tasks.filter((t) => t.periods.some((p) => gridPeriod(p.period) === period)).length,
    expected,
    active: series.users.active[i],
    connections: series.connections[i],
    received: series.messages.received[i],
    latency: main ? { metric: main, p95: series.latency[main].p95[i] } : null,
    errors: series.errors.total?.[i] ?? 0,
    lagP99: max(series.generator.map((g) => g.lagP99[i])),
    cpu: max(series.generator.map((g) => g.cpu[i])),
  };
}

const n = (v: number | null, unit = "") => (v === null ? "–" : `${Math.round(v).toLocaleString("en-US")}${unit}`);

/** `local-a 10:00:20 · 120 users active · 118 connections · 450 msg/s received · broadcast_latency p95 12 ms · 0 errors · generator lag 3 ms, CPU 24%` */
export function formatPeriod(region: string, f: PeriodFigures): string {
  const time = new Date(f.period).toISOString().slice(11, 19);
  const parts = [
    `${n(f.active)} users active`,
    `${n(f.connections)} connections`,
    `${n(f.received)} msg/s received`,
    ...(f.latency ? [`${f.latency.metric.replace(/^cable\./, "")} p95 ${n(f.latency.p95, " ms")}`] : []),
    `${n(f.errors)} error${f.errors === 1 ? "" : "s"}`,
    `generator lag ${n(f.lagP99, " ms")}, CPU ${n(f.cpu, "%")}`,
  ];
  const short = f.tasks < f.expected ? ` (${f.tasks} of ${f.expected} tasks)` : "";
  return `${region} ${time}${short} · ${parts.join(" · ")}`;
}

/** The whole run of one region, from its live periods: the line printed when the run ends. */
export function formatFinal(region: string, tasks: TaskLive[]): string {
  const series = mergeSeries(asTasks(tasks), []);
  const sum = (values: Array<number | null>) => values.reduce<number>((a, v) => a + (v ?? 0), 0);
  const main = mainLatency(Object.keys(series.latency));
  let latency = "";
  if (main) {
    const sketches = tasks.flatMap((t) => t.periods.map((p) => periodSketches(p)[main]).filter((s) => s !== undefined));
    if (sketches.length > 0) {
      const merged = mergeSketches(sketches);
      if (merged.count > 0) latency = ` · ${main.replace(/^cable\./, "")} p95 ${n(Math.min(merged.max, merged.getValueAtQuantile(0.95)), " ms")}`;
    }
  }
  const peak = series.connections.filter((v): v is number => v !== null);
  return (
    `${region} ended · ${n(sum(series.users.created))} users (${n(sum(series.users.completed))} completed, ${n(sum(series.users.failed))} failed)` +
    ` · peak ${n(peak.length > 0 ? Math.max(...peak) : null)} connections${latency} · ${n(sum(series.errors.total ?? []))} errors (from the live periods; report.md has the exact figures)`
  );
}

/** Remembers which periods each region has printed; `lines` gives the new ones of a snapshot. */
export class LiveView {
  private readonly printed = new Map<string, number>();

  constructor(private readonly expectedPerRegion: number) {}

  lines(snapshot: LiveSnapshot, now: number): string[] {
    const out: Array<{ period: number; line: string }> = [];
    for (const [region, tasks] of snapshot) {
      if (tasks.length === 0) continue;
      const series = mergeSeries(asTasks(tasks), []);
      const last = this.printed.get(region) ?? -Infinity;
      series.periods.forEach((period, i) => {
        if (period <= last || series.users.created[i] === null) return;
        if (!periodComplete(tasks, this.expectedPerRegion, period, now)) return;
        out.push({ period, line: formatPeriod(region, figuresAt(series, i, tasks, this.expectedPerRegion)) });
        this.printed.set(region, period);
      });
    }
    // Period by period, the regions in their order within each.
    return out.sort((a, b) => a.period - b.period).map((o) => o.line);
  }
}

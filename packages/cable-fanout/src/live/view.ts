// What `cable-fanout run` prints while the load runs: one line per region for every metrics period,
// once each of the region's tasks has sent it (or it is late), from the region's merged periods
// (region-live.ts), counted as the report's series counts them. Pure but for the clock.
import { METRICS } from "artillery-engine-cable/metrics";
import { lateCauseOf, lateSecondsOf, mainLatency, mergeSketches, PERIOD_MS, SATURATION_THRESHOLDS, summarizeSketch } from "artillery-plugin-cable-report";
import { periodRows, tasksExpected, type LiveSnapshot, type PeriodRow, type RegionLive, type TasksExpected } from "./region-live.js";

/** How long after a period's end a missing task stops holding its line back (Artillery emits a period a few seconds after it ends). */
export const LATE_MS = 20_000;

/**
 * Whether every task of the region has sent `period`: Artillery reports a period only once it is
 * over, so a task that sent it (or a later one, or has ended) has nothing more for it. A task idle
 * in that period sends none: after LATE_MS it no longer holds the line back. `expected` tasks must
 * have shown up, unless late.
 */
export function periodComplete(region: RegionLive, expected: number, period: number, now: number): boolean {
  if (now > period + PERIOD_MS + LATE_MS) return true;
  if (region.tasks.size < expected) return false;
  return [...region.tasks.values()].every((t) => t.ended !== undefined || (t.lastPeriod !== null && t.lastPeriod >= period));
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
  /** Users whose flow failed in the period. */
  failed: number;
  lagP99: number | null;
  cpu: number | null;
  /** Why a task's generator was late in the period, when it was (cable-report's saturation.ts); absent otherwise. */
  generator?: "saturated" | "starved";
}

/** The main latency among every histogram the region's periods carry: broadcast latency when there is one. */
function regionLatency(region: RegionLive): string | null {
  const names = new Set<string>();
  for (const fold of region.periods()) for (const name of Object.keys(fold.sketches)) names.add(name);
  return mainLatency(names);
}

const errorsOf = (counters: Record<string, number>) => Object.entries(counters).reduce((sum, [name, n]) => sum + (name.startsWith("errors.") ? n : 0), 0);

/** A region's figures in one period (a row of that region alone). */
export function figuresAt(row: PeriodRow, main: string | null, expected: number): PeriodFigures {
  const [fold] = row.folds;
  const sketch = main ? fold.sketches[main] : undefined;
  const received = row.counters[METRICS.messagesReceived] ?? 0;
  return {
    period: row.period,
    tasks: fold.tasks.size,
    expected,
    active: row.active,
    connections: METRICS.connectionsOpenPeriodPeak in row.counters ? row.counters[METRICS.connectionsOpenPeriodPeak] : null,
    received: Math.round((received / (PERIOD_MS / 1000)) * 10) / 10,
    latency: main ? { metric: main, p95: sketch && sketch.count > 0 ? summarizeSketch(sketch).p95 : null } : null,
    errors: errorsOf(row.counters),
    failed: row.counters["vusers.failed"] ?? 0,
    lagP99: fold.lagP99,
    cpu: fold.cpu,
    ...generatorState(fold.lagP99, fold.cpu, fold.counters),
  };
}

/** The report's reading of a late generator, on one period: over 90% CPU saturated; over 100 ms lag, saturated or starved (saturation.ts). */
function generatorState(lagP99: number | null, cpu: number | null, counters: Record<string, number>): Pick<PeriodFigures, "generator"> {
  if (cpu !== null && cpu > SATURATION_THRESHOLDS.cpuPercent) return { generator: "saturated" };
  if (lagP99 === null || lagP99 <= SATURATION_THRESHOLDS.lagP99Ms) return {};
  return { generator: lateCauseOf({ lag: null, cpuMean: null, cpuPeak: cpu, late: lateSecondsOf(counters) }) };
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
    ...(f.failed > 0 ? [`❌ ${n(f.failed)} user${f.failed === 1 ? "" : "s"} failed`] : []),
    `generator lag ${n(f.lagP99, " ms")}, CPU ${n(f.cpu, "%")}${f.generator === "saturated" ? " (saturated)" : f.generator === "starved" ? " (starved: the machine is busy with other work)" : ""}`,
  ];
  const short = f.tasks < f.expected ? ` (${f.tasks} of ${f.expected} tasks)` : "";
  return `${region} ${time}${short} · ${parts.join(" · ")}`;
}

/** The whole run of one region, from its live periods: the line printed when the run ends. */
export function formatFinal(region: RegionLive): string {
  const rows = periodRows([region]);
  const sum = (name: string) => rows.reduce((total, row) => total + (row.counters[name] ?? 0), 0);
  const main = regionLatency(region);
  let latency = "";
  if (main) {
    const sketches = region.periods().flatMap((fold) => fold.sketches[main] ?? []);
    if (sketches.length > 0) {
      const merged = mergeSketches(sketches);
      if (merged.count > 0) latency = ` · ${main.replace(/^cable\./, "")} p95 ${n(Math.min(merged.max, merged.getValueAtQuantile(0.95)), " ms")}`;
    }
  }
  const peak = rows.filter((row) => METRICS.connectionsOpenPeriodPeak in row.counters).map((row) => row.counters[METRICS.connectionsOpenPeriodPeak]);
  const errors = rows.reduce((total, row) => total + errorsOf(row.counters), 0);
  // Never green with a failed user; the report's headline holds it to config.cable.maxFailedUsers.
  const mark = sum("vusers.failed") > 0 ? "❌" : errors > 0 ? "⚠️" : "✅";
  return (
    `${mark} ${region.region} ended · ${n(sum("vusers.created"))} users (${n(sum("vusers.completed"))} completed, ${n(sum("vusers.failed"))} failed)` +
    ` · peak ${n(peak.length > 0 ? Math.max(...peak) : null)} connections${latency} · ${n(errors)} errors (from the live periods; report.md has the exact figures)`
  );
}

/** Remembers which periods each region has printed; `lines` gives the new ones of a poll. */
export class LiveView {
  private readonly printed = new Map<string, number>();

  constructor(private readonly expected: TasksExpected) {}

  lines(snapshot: LiveSnapshot, now: number): string[] {
    const out: Array<{ period: number; line: string }> = [];
    for (const [name, region] of snapshot) {
      if (region.tasks.size === 0) continue;
      const last = this.printed.get(name) ?? -Infinity;
      const main = regionLatency(region);
      const expected = tasksExpected(this.expected, name);
      for (const row of periodRows([region])) {
        if (row.period <= last) continue;
        if (!periodComplete(region, expected, row.period, now)) break;
        out.push({ period: row.period, line: formatPeriod(name, figuresAt(row, main, expected)) });
        this.printed.set(name, row.period);
      }
    }
    // Period by period, the regions in their order within each.
    return out.sort((a, b) => a.period - b.period).map((o) => o.line);
  }
}

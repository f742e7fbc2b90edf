// The main figures of a run, read off a record's column (a region or all regions): what the trend
// draws and the history gate judges. Pure.
//
// Keys are Artillery-style metric names, so `--metric cable.broadcast_latency` picks that latency's
// three percentiles and `--metric cable.broadcast_latency.p95` one of them.
import { METRICS } from "artillery-engine-cable/metrics";
import { EVENT_LOOP_LAG } from "../merge.js";
import type { Column, MergedResults } from "../model.js";
import { latencyMetrics } from "../rows.js";
import { lagFigure } from "../saturation.js";
import type { BandScale } from "./band.js";

export type FigureUnit = "ms" | "count" | "per-user" | "msg/s";

export interface Figure {
  key: string;
  /** For people: "Broadcast latency p95". */
  title: string;
  unit: FigureUnit;
  /** The scale its band and change points work on: a latency moves by ratios, a count of failures from 0. */
  scale: BandScale;
  /** Which way is worse; null: neither (the load's own size). */
  worse: "up" | null;
  /**
   * How the history gate judges it: a latency percentile (its log band, the latency floor, left out
   * where the generator was unfit), or a per-user rate of events (its linear band, the count floors).
   * Absent: shown in the trend, never gated.
   */
  gate?: { kind: "latency"; metric: string; q: number } | { kind: "rate"; events(column: Column): number };
  value(column: Column): number | null;
}

const PERCENTILES = ["p50", "p95", "p99"] as const;
const QUANTILE = { p50: 0.5, p95: 0.95, p99: 0.99 } as const;

export const FIGURE_KEYS = {
  failedUsers: "vusers.failed",
  errorsPerUser: "errors.per_user",
  peakConnections: "connections.peak",
  messagesPerSecond: "messages.received_rate",
  generatorLag: "generator.event_loop_lag",
} as const;

const created = (c: Column) => c.counters["vusers.created"] ?? 0;
const errorCount = (c: Column) => Object.entries(c.counters).reduce((n, [name, v]) => (name.startsWith("errors.") ? n + v : n), 0);
const perUser = (events: (c: Column) => number) => (c: Column) => (c.tasks === 0 || created(c) === 0 ? null : events(c) / created(c));

/** The figures of a set of runs: every latency any of them recorded (the table's order), then the rest. */
export function historyFigures(runs: MergedResults[]): Figure[] {
  const metrics = new Map<string, string>();
  for (const run of runs) for (const { metric, title } of latencyMetrics(run)) if (!metrics.has(metric)) metrics.set(metric, title);
  const latencies = [...metrics].flatMap(([metric, title]) =>
    PERCENTILES.map(
      (p): Figure => ({
        key: `${metric}.${p}`,
        title: `${title.replace(/ \(rtt\)$/, "")} ${p}`,
        unit: "ms",
        scale: "log",
        worse: "up",
        gate: { kind: "latency", metric, q: QUANTILE[p] },
        value: (c) => {
          const d = c.histograms[metric];
          return d && d.count > 0 ? d[p] : null;
        },
      }),
    ),
  );
  const failed = (c: Column) => c.counters["vusers.failed"] ?? 0;
  return [
    ...latencies,
    { key: FIGURE_KEYS.failedUsers, title: "Failed users per 100", unit: "per-user", scale: "linear", worse: "up", gate: { kind: "rate", events: failed }, value: perUser(failed) },
    { key: FIGURE_KEYS.errorsPerUser, title: "Errors per 100 users", unit: "per-user", scale: "linear", worse: "up", gate: { kind: "rate", events: errorCount }, value: perUser(errorCount) },
    { key: FIGURE_KEYS.peakConnections, title: "Peak open connections", unit: "count", scale: "log", worse: null, value: (c) => (c.tasks === 0 ? null : c.peakOpenConnections) },
    { key: FIGURE_KEYS.messagesPerSecond, title: "Messages received a second", unit: "msg/s", scale: "log", worse: null, value: (c) => c.rates[METRICS.receiveRate]?.mean ?? null },
    { key: FIGURE_KEYS.generatorLag, title: "Generator event-loop lag", unit: "ms", scale: "log", worse: null, value: (c) => lagFigure(c.histograms[EVENT_LOOP_LAG])?.ms ?? null },
  ];
}

/**
 * The figures `--metric` names: a key, or a prefix of keys at a dot (`cable.broadcast_latency` is
 * its three percentiles); none given: all. A name matching nothing is an error the caller shows with
 * the known keys.
 */
export function pickFigures(figures: Figure[], wanted: string[]): { figures: Figure[]; unknown: string[] } {
  if (wanted.length === 0) return { figures, unknown: [] };
  const matches = (f: Figure, w: string) => f.key === w || f.key.startsWith(`${w}.`);
  const unknown = wanted.filter((w) => !figures.some((f) => matches(f, w)));
  return { figures: figures.filter((f) => wanted.some((w) => matches(f, w))), unknown };
}

/** A figure's value as people read it: per-user rates per 100 users. */
export function shownValue(figure: Pick<Figure, "unit">, value: number): number {
  return figure.unit === "per-user" ? value * 100 : value;
}

/** "142 ms", "0.5 per 100", "1,204 msg/s". */
export function formatFigure(figure: Pick<Figure, "unit">, value: number | null): string {
  if (value === null || !Number.isFinite(value)) return "—";
  const shown = shownValue(figure, value);
  const digits = Math.abs(shown) >= 100 ? 0 : Math.abs(shown) >= 10 ? 1 : 2;
  const text = new Intl.NumberFormat("en-US", { maximumFractionDigits: digits }).format(shown);
  return figure.unit === "ms" ? `${text} ms` : figure.unit === "msg/s" ? `${text} msg/s` : text;
}

// The rows of the comparison table: which number each row reads from a column,
// how it is formatted, and which direction is a regression. Shared by the
// markdown renderer and the baseline comparison.
import { METRICS } from "artillery-engine-cable/metrics";
import { EVENT_LOOP_LAG, OPEN_PEAK_COUNTER } from "./merge.js";
import { isLatencyMetric } from "./series.js";
import { lagFigure } from "./saturation.js";
import { isServerSoftwareCounter } from "./target.js";
import { notEvaluated } from "./unevaluated.js";
import type { Column, Distribution, MergedResults, RegionColumn } from "./model.js";

export type Unit = "count" | "ms" | "rate" | "percent" | "value";

/**
 * How the regression gate tests a row (compare.ts); rows without one show a
 * change from the baseline but never fail the gate.
 * - quantile: the q-quantile of a server latency histogram, from the merged sketches.
 * - rate: events per created virtual user (`counters` summed; `complement`:
 *   created minus them, e.g. users that did not complete).
 */
export type GateSpec = { kind: "quantile"; metric: string; q: number } | { kind: "rate"; counters: string[]; complement?: boolean };

export interface NumericRow {
  kind: "numeric";
  section: string;
  label: string;
  unit: Unit;
  /** Which way is worse; null rows show a change but never count as a regression. */
  worse: "up" | "down" | null;
  value(column: Column): number | null;
  approximate?(column: Column): boolean;
  gate?: GateSpec;
}

export interface TextRow {
  kind: "text";
  section: string;
  label: string;
  text(column: Column): string;
}

export type Row = NumericRow | TextRow;

export interface RowLimits {
  /** Error kinds shown one per row; the rest are summed in one row. */
  maxErrorRows: number;
}

const KNOWN_LATENCIES: Array<[string, string]> = [
  [METRICS.handshakeLatency, "Handshake latency"],
  [METRICS.subscriptionLatency, "Subscription latency"],
  [METRICS.rtt, "Round-trip time (rtt)"],
  [METRICS.broadcastLatency, "Broadcast latency"],
  [METRICS.publishLatency, "Publish latency"],
  [METRICS.httpLatency, "HTTP steps latency"],
  [METRICS.authLatency, "Auth endpoint latency"],
];

/** A named HTTP step's own latency (`cable.http_latency.<name>`): titled by its step's name. */
const namedHttpStep = (metric: string) => (metric.startsWith(`${METRICS.httpLatency}.`) ? `HTTP "${metric.slice(METRICS.httpLatency.length + 1)}" latency` : undefined);


/**
 * Engine latency histograms present in any column: the known ones first, then
 * any other `cable.*`, except the generator's own event-loop lag.
 */
export function latencyMetrics(merged: MergedResults): Array<{ metric: string; title: string }> {
  const present = new Set(Object.keys(merged.all.histograms).filter(isLatencyMetric));
  const known = KNOWN_LATENCIES.filter(([metric]) => present.has(metric)).map(([metric, title]) => ({ metric, title }));
  const knownNames = new Set(KNOWN_LATENCIES.map(([metric]) => metric));
  const others = [...present]
    .filter((metric) => !knownNames.has(metric))
    .sort()
    .map((metric) => ({ metric, title: namedHttpStep(metric) ?? metric }));
  return [...known, ...others];
}

export function tableRows(merged: MergedResults, limits: RowLimits): Row[] {
  const columns = [...merged.regions, merged.all];
  const seen = new Set(Object.keys(merged.all.counters));
  const counterRow = (section: string, label: string, counter: string, worse: NumericRow["worse"]) =>
    counterRowOf(section, label, counter, worse, seen);
  const rows: Row[] = [
    tasksRow(merged),
    counterRow("Virtual users", "Created", "vusers.created", null),
    { ...counterRow("Virtual users", "Completed", "vusers.completed", "down"), gate: { kind: "rate", counters: ["vusers.completed"], complement: true } },
    { ...counterRow("Virtual users", "Failed", "vusers.failed", "up"), gate: { kind: "rate", counters: ["vusers.failed"] } },
    ...distributionRows("Session length (ms)", "vusers.session_length", [
      ["Min", "min"],
      ["Max", "max"],
      ["Mean", "mean"],
      ["Median", "p50"],
      ["p95", "p95"],
      ["p99", "p99"],
    ], null),
    counterRow("Messages", "Sent", METRICS.messagesSent, null),
    counterRow("Messages", "Received", METRICS.messagesReceived, null),
    rateRow("Messages", "Average send rate (msg/s)", METRICS.sendRate, "mean"),
    rateRow("Messages", "Peak send rate (msg/s)", METRICS.sendRate, "peak"),
    rateRow("Messages", "Average receive rate (msg/s)", METRICS.receiveRate, "mean"),
    rateRow("Messages", "Peak receive rate (msg/s)", METRICS.receiveRate, "peak"),
    ...latencyMetrics(merged).flatMap(({ metric, title }) => [
      samplesRow(`${title} (ms)`, metric),
      ...distributionRows(`${title} (ms)`, metric, [
        ["p50", "p50"],
        ["p95", "p95"],
        ["p99", "p99"],
        ["Max", "max"],
      ], "up"),
    ]),
    {
      kind: "numeric",
      section: "Connections",
      label: "Peak concurrent connections",
      unit: "count",
      worse: null,
      value: (c) => c.peakOpenConnections,
    },
    counterRow("Connections", "Opened", METRICS.connections, null),
    counterRow("Connections", "Subscriptions", METRICS.subscriptions, null),
    ...customHistogramRows(merged),
    ...errorRows(merged.all, limits.maxErrorRows),
    ...otherCounterRows(merged.all, limits.maxErrorRows, seen),
    ...generatorRows(seen),
    ...checkRows(columns),
  ];
  // A row no column has data for (say, rtt in a broadcast-only test) is noise.
  return rows.filter((row) => row.kind === "text" || columns.some((c) => row.value(c) !== null));
}

function counterRowOf(
  section: string,
  label: string,
  counter: string,
  worse: NumericRow["worse"],
  seen: Set<string>,
): NumericRow {
  return {
    kind: "numeric",
    section,
    label,
    unit: "count",
    worse,
    // Once any task counted it, a column that ran tasks but never counted it counted zero.
    value: (c) => (c.tasks === 0 || !seen.has(counter) ? null : (c.counters[counter] ?? 0)),
  };
}

function rateRow(section: string, label: string, rate: string, stat: "mean" | "peak"): NumericRow {
  return { kind: "numeric", section, label, unit: "rate", worse: null, value: (c) => c.rates[rate]?.[stat] ?? null };
}

type DistributionStat = Exclude<keyof Distribution, "approximate" | "count" | "sketch">;

const QUANTILE_OF: Partial<Record<DistributionStat, number>> = { p50: 0.5, p95: 0.95, p99: 0.99 };

/**
 * `worse: "up"` rows are server latencies: their percentiles are gated. Max is
 * never gated: one sample, so one hiccup of the network or the generator.
 */
function distributionRows(
  section: string,
  metric: string,
  stats: Array<[string, DistributionStat]>,
  worse: NumericRow["worse"],
  unit: Unit = "ms",
): NumericRow[] {
  return stats.map(([label, stat]): NumericRow => {
    const q = QUANTILE_OF[stat];
    return {
      kind: "numeric",
      section,
      label,
      unit,
      worse,
      value: (c) => c.histograms[metric]?.[stat] ?? null,
      // min, max and mean merge exactly from summaries; only percentiles are interpolated.
      approximate: (c) => stat.startsWith("p") && (c.histograms[metric]?.approximate ?? false),
      ...(worse === "up" && q !== undefined ? { gate: { kind: "quantile" as const, metric, q } } : {}),
    };
  });
}

function samplesRow(section: string, metric: string): NumericRow {
  return { kind: "numeric", section, label: "Samples", unit: "count", worse: null, value: (c) => c.histograms[metric]?.count ?? null };
}

/** Tasks merged per column, and the files that could not be: a reviewer must see a corrupt task. */
function tasksRow(merged: MergedResults): TextRow {
  return {
    kind: "text",
    section: "Tasks",
    label: "Merged",
    text: (c) => {
      const expected = c === merged.all ? merged.regions.reduce((n, r) => n + r.expectedTasks, 0) : (c as RegionColumn).expectedTasks;
      const corrupt = c.rejected.filter((r) => r.kind === "corrupt").length;
      const duplicates = c.rejected.length - corrupt;
      const parts = [c.tasks < expected ? `⚠️ ${c.tasks} of ${expected}` : `${c.tasks}`];
      if (corrupt > 0) parts.push(`${corrupt} corrupt`);
      if (duplicates > 0) parts.push(`${duplicates} duplicate${duplicates === 1 ? "" : "s"} ignored`);
      return parts.join(", ");
    },
  };
}

/** Histograms a processor recorded itself (`events.emit("histogram", …)`): shown, never gated (their direction is unknown). */
function customHistogramRows(merged: MergedResults): NumericRow[] {
  const custom = Object.keys(merged.all.histograms)
    .filter((name) => !name.startsWith("cable.") && name !== "vusers.session_length")
    .sort()
    .slice(0, MAX_CUSTOM_HISTOGRAMS);
  return custom.flatMap((metric) => [
    samplesRow(metric, metric),
    ...distributionRows(metric, metric, [["p50", "p50"], ["p95", "p95"], ["p99", "p99"], ["Max", "max"]], null, "value"),
  ]);
}

const MAX_CUSTOM_HISTOGRAMS = 10;

/** Counters shown in rows of their own (or meaningless summed), so not again under "Other counters". */
const SHOWN_COUNTERS = new Set([
  "vusers.created",
  "vusers.completed",
  "vusers.failed",
  METRICS.messagesSent,
  METRICS.messagesReceived,
  METRICS.connections,
  METRICS.subscriptions,
  OPEN_PEAK_COUNTER,
  // The generator's late seconds by cause: its own section's rows (generatorRows).
  METRICS.eventLoopLateSaturated,
  METRICS.eventLoopLateStarved,
]);

/** Every counter no other row shows (the engine's other counters, a processor's own), by name. */
function otherCounterRows(all: Column, maxRows: number, seen: Set<string>): NumericRow[] {
  const names = Object.keys(all.counters)
    // The server's own name per connection (target.ts) is the headline's, not a figure to compare.
    .filter((name) => !SHOWN_COUNTERS.has(name) && !name.startsWith(ERROR_PREFIX) && !name.startsWith("vusers.created_by_name.") && !isServerSoftwareCounter(name))
    .sort()
    .slice(0, maxRows);
  return names.map((name) => counterRowOf("Other counters", name, name, null, seen));
}

/**
 * The load generator's own health (saturation.ts): the merged lag, the
 * busiest task's CPU, and its late seconds by cause. Never gated, because they
 * describe the generator.
 */
function generatorRows(seen: Set<string>): NumericRow[] {
  const busiest = (c: Column, pick: "cpuMean" | "cpuPeak") => {
    const values = c.generator.map((t) => t[pick]).filter((v): v is number => v !== null);
    return values.length > 0 ? Math.max(...values) : null;
  };
  return [
    { kind: "numeric", section: "Load generator", label: "Event-loop lag samples", unit: "count", worse: null, value: (c) => c.histograms[EVENT_LOOP_LAG]?.count ?? null },
    // A p99 over too few samples is the largest or second-largest of them: "—", and the max beside it (saturation.ts).
    {
      kind: "numeric",
      section: "Load generator",
      label: "Event-loop lag p99 (ms)",
      unit: "ms",
      worse: null,
      value: (c) => (lagFigure(c.histograms[EVENT_LOOP_LAG])?.stat === "p99" ? c.histograms[EVENT_LOOP_LAG]!.p99 : null),
      approximate: (c) => c.histograms[EVENT_LOOP_LAG]?.approximate ?? false,
    },
    ...distributionRows("Load generator", EVENT_LOOP_LAG, [["Event-loop lag max (ms)", "max"]], null),
    { kind: "numeric", section: "Load generator", label: "CPU, whole run, busiest task (%)", unit: "percent", worse: null, value: (c) => busiest(c, "cpuMean") },
    { kind: "numeric", section: "Load generator", label: "CPU, busiest period (%)", unit: "percent", worse: null, value: (c) => busiest(c, "cpuPeak") },
    // Seconds late by more than 100 ms, by what the thread did while late (saturation.ts): shown once any task counted one.
    counterRowOf("Load generator", "Late seconds, running (saturated)", METRICS.eventLoopLateSaturated, null, seen),
    counterRowOf("Load generator", "Late seconds, waiting for a CPU (starved)", METRICS.eventLoopLateStarved, null, seen),
  ];
}

const ERROR_PREFIX = "errors.";

function errorRows(all: Column, maxRows: number): NumericRow[] {
  const names = Object.keys(all.counters)
    .filter((name) => name.startsWith(ERROR_PREFIX))
    .sort((a, b) => all.counters[b] - all.counters[a] || a.localeCompare(b));
  const sumOf = (c: Column, counters: string[]) =>
    c.tasks === 0 ? null : counters.reduce((sum, name) => sum + (c.counters[name] ?? 0), 0);
  const row = (label: string, counters: string[]): NumericRow => ({
    kind: "numeric",
    section: "Errors",
    label,
    unit: "count",
    worse: "up",
    value: (c) => sumOf(c, counters),
    gate: { kind: "rate", counters },
  });
  const shown = names.length > maxRows ? names.slice(0, maxRows - 1) : names;
  const rest = names.slice(shown.length);
  const rows = [row("All errors", names), ...shown.map((name) => row(name.slice(ERROR_PREFIX.length), [name]))];
  if (rest.length > 0) rows.push(row(`${rest.length} other kinds`, rest));
  return rows;
}

const MAX_CHECK_ROWS = 20;

function checkRows(columns: Column[]): TextRow[] {
  const checks = [...new Set(columns.flatMap((c) => c.checks.map((k) => k.check)))].slice(0, MAX_CHECK_ROWS);
  return checks.map((check) => ({
    kind: "text",
    section: "Checks (ensure)",
    label: check,
    text: (c) => {
      const tally = c.checks.find((k) => k.check === check);
      if (!tally) return "—";
      const why = notEvaluated(check, c.counters);
      if (why) return `⚪ not evaluated: ${why}`;
      const ran = tally.passed + tally.failed;
      const missing = c.tasks - ran;
      const verdict = tally.failed === 0 ? `✅ ${tally.passed}/${ran} passed` : `❌ ${tally.failed}/${ran} failed`;
      return missing > 0 ? `${verdict} (${missing} not recorded)` : verdict;
    },
  }));
}

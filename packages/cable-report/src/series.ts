// What happened when: the grid and the metric kinds fold.ts draws its series by.
// Periods align by timestamp (Artillery cuts them at 10 s wall-clock boundaries on every task), so
// the n-th entry of every series is the same 10 s of every task; a latency percentile of a period
// is that of the period's sketches merged across tasks, as the whole-run figures are.
import { METRICS } from "artillery-engine-cable/metrics";
import { PERIOD_MS } from "./period.js";

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


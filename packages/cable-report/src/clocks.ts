// What the clocks say about cross-task latencies, pure: the engine leaves a negative broadcast
// latency out of cable.broadcast_latency and counts it in cable.broadcast_latency_negative (the
// receiver's clock was behind the sender's by more than the latency); this turns that count into
// a note for the report. Not an error: the server did nothing wrong, the machines' clocks did.
import { METRICS } from "artillery-engine-cable/metrics";
import type { Column } from "./model.js";

const count = (n: number) => n.toLocaleString("en-US");

/**
 * "12 broadcast latencies were negative: …", for a column's counters, or null when none was.
 * `crossTaskBoundMs`: how far apart two tasks' clocks may be by their error bounds (the fan-out's
 * `crossTaskClockBound`), said beside it when known.
 */
export function negativeLatencyNote(column: Pick<Column, "counters" | "histograms">, crossTaskBoundMs?: number | null): string | null {
  const negative = column.counters[METRICS.broadcastLatencyNegative] ?? 0;
  if (!(negative > 0)) return null;
  const recorded = column.histograms[METRICS.broadcastLatency]?.count ?? 0;
  const stamped = negative + recorded;
  const share = (negative / stamped) * 100;
  const percent = share >= 1 ? `${Math.round(share)}%` : share >= 0.1 ? `${share.toFixed(1)}%` : "under 0.1%";
  const bound =
    crossTaskBoundMs === undefined ? "" : crossTaskBoundMs === null ? " The tasks' clock error bounds are unknown." : ` By the tasks' clock error bounds, two clocks may disagree by up to ${formatMs(crossTaskBoundMs)}.`;
  return (
    `${count(negative)} broadcast ${negative === 1 ? "latency was" : "latencies were"} negative: the sender's and receiver's clocks disagree by more than the latency. ` +
    `${negative === 1 ? "It is" : "They are"} left out of cable.broadcast_latency (${count(negative)} of ${count(stamped)} stamped broadcasts, ${percent}); ` +
    `the latencies recorded carry the same disagreement.${bound}`
  );
}

/** "0.54 ms", "2.4 ms", "12 ms": a bound to two significant digits. */
export function formatMs(ms: number): string {
  if (ms < 1) return `${Number(ms.toPrecision(2))} ms`;
  if (ms < 10) return `${(Math.round(ms * 10) / 10).toString()} ms`;
  return `${count(Math.round(ms))} ms`;
}

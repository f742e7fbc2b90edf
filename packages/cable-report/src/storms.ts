// In a reconnect storm (a server restart, a kill -9, a network that dropped everyone), how long
// until everyone was back? Pure: a column's merged figures in, the times until 50%, 95% and 100% of
// the dropped users were back out, from the engine's own timestamps: each `reconnect` step records
// `cable.restore_latency` from its drop to every channel usable again, and fails with
// `cable.reconnect_timeout` when its user never came back. With every socket dropped at once (a
// restart), "q of the dropped users back after t" is the restore latency's quantile q·dropped/back,
// read from the merged sketch: exact to its 1%, per region and for all regions.
import { METRICS } from "artillery-engine-cable/metrics";
import type { Column, StormColumn } from "./model.js";
import { decodeSketch } from "./sketch-codec.js";

export const NEVER_BACK = "errors.cable.reconnect_timeout";
const SHARES = [0.5, 0.95, 1] as const;

export function judgeStorm(column: Column): StormColumn | null {
  const restore = column.histograms[METRICS.restoreLatency];
  const back = restore?.count ?? 0;
  const never = column.counters[NEVER_BACK] ?? 0;
  const dropped = back + never;
  if (dropped === 0) return null;
  const sketch = restore?.sketch ? decodeSketch(METRICS.restoreLatency, restore.sketch) : undefined;
  const at = (share: number): number | null => {
    const needed = share * dropped;
    if (back === 0 || needed > back + 1e-9) return null;
    const q = needed / back;
    // Everyone back is the last restore itself: the sketch's exact max, not its top bucket.
    if (sketch) return Math.round(q >= 1 ? sketch.max : Math.min(sketch.max, Math.max(sketch.min, sketch.getValueAtQuantile(q))));
    // Without the sketch, the summary's points: the nearest at or above q.
    if (q <= 0.5) return restore!.p50;
    if (q <= 0.95) return restore!.p95;
    if (q <= 0.99) return restore!.p99;
    return restore!.max;
  };
  const [half, most, all] = SHARES.map(at);
  return { dropped, back, never, halfBackMs: half, mostBackMs: most, allBackMs: all, approximate: !sketch };
}

/** "100 dropped: 50% back in 1.2 s, 95% in 3.4 s, all in 5.0 s", or "…, 95% never: 10 never came back". */
export function describeStorm(s: StormColumn): string {
  const when = (label: string, ms: number | null) => (ms === null ? `${label} never` : `${label} in ${(ms / 1000).toFixed(1)} s`);
  const parts = [when("50% back", s.halfBackMs), when("95%", s.mostBackMs), ...(s.never > 0 ? [] : [when("all", s.allBackMs)])];
  return `${s.dropped.toLocaleString("en-US")} dropped: ${parts.join(", ")}${s.never > 0 ? `; ${s.never.toLocaleString("en-US")} never came back` : ""}`;
}

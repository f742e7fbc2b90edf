// In a reconnect storm (a server restart, a kill -9, a network that dropped everyone), how long
// until everyone was back? Pure: a column's merged figures in, the times until 50%, 95% and 100% of
// the dropped users were back out, from the engine's own timestamps: each `reconnect` step records
// `cable.restore_latency` from its drop to every channel usable again, and fails with
// `cable.reconnect_timeout` when its user never came back. With every socket dropped at once (a
// restart), "q of the dropped users back after t" is the restore latency's quantile q·dropped/back,
// read from the merged sketch: exact to its 1%, per region and for all regions.
import { METRICS } from "artillery-engine-cable/metrics";
import type { Column, ConnectStormColumn, MergedResults, StormColumn } from "./model.js";
import { errorCounter } from "artillery-engine-cable/errors";
import { PERIOD_MS } from "./period.js";
import { phaseRate } from "./phases.js";
import { decodeSketch } from "./sketch-codec.js";

const NEVER_BACK = errorCounter("reconnect_timeout");
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

/**
 * The longest phase judged a connection storm: everyone arriving in one burst of up to a minute
 * (connection-storm.yml's is 10 s). Longer arrivals are a ramp, and a burst inside a longer run is a
 * spike (recovery.ts).
 */
export const CONNECT_STORM_MAX_MS = 60_000;
/**
 * The slowest arrival judged a storm, users a second (as the phase is written, per task): the seed's
 * storm is 100/s, and `npm start`'s default scale (0.2) keeps it at 20/s; a chat's 5/s is not one.
 */
export const CONNECT_STORM_MIN_RATE = 20;

/**
 * In a connection storm (every user arrives in one burst: the run's only phase that brings users,
 * at least CONNECT_STORM_MIN_RATE a second for at most CONNECT_STORM_MAX_MS), how long after the phase began were 50%, 95% and all of them
 * connected? Read off the per-period `cable.connections` counts, interpolated within the period
 * where the share is crossed, and, when the phase arrives at a constant rate, held to the bounds
 * the engine's own timestamps give: the q-th share of users arrives q·D into a phase of D and takes
 * between the least and the most `cable.handshake_latency` to connect, so it was connected between
 * q·D + min and q·D + max (the upper bound only when everyone connected). On a healthy server the
 * bounds are a few milliseconds apart; on a choking one the periods decide within them.
 */
export function judgeConnectStorm(column: Column, merged: Pick<MergedResults, "timeline" | "test">): ConnectStormColumn | null {
  const arriving = (merged.timeline?.phases ?? []).filter((p) => (phaseRate(merged.test.phases[p.index]) ?? 0) > 0);
  if (arriving.length !== 1 || !column.series?.users.connected) return null;
  const [phase] = arriving;
  const spec = merged.test.phases[phase.index] ?? {};
  const durationMs = Number(spec.duration) * 1000;
  if (!(durationMs > 0 && durationMs <= CONNECT_STORM_MAX_MS) || (phaseRate(spec) ?? 0) < CONNECT_STORM_MIN_RATE) return null;
  const users = column.counters["vusers.created"] ?? 0;
  const connected = Math.min(users, column.counters[METRICS.connections] ?? 0);
  if (users === 0) return null;
  const never = users - connected;
  const handshake = column.histograms[METRICS.handshakeLatency];
  const constantRate = spec.rampTo === undefined && (spec.arrivalRate !== undefined || spec.arrivalCount !== undefined);
  const bounded = constantRate && handshake && handshake.count > 0;

  const { periods, users: perPeriod } = column.series;
  const counts = perPeriod.connected!;
  const at = (share: number): number | null => {
    const needed = share * users;
    if (needed > connected + 1e-9) return null;
    let before = 0;
    let estimate: number | null = null;
    for (let i = 0; i < periods.length; i++) {
      const c = counts[i] ?? 0;
      if (c === 0) continue;
      if (before + c + 1e-9 >= needed) {
        const from = Math.max(periods[i], phase.startTime);
        estimate = from + ((needed - before) / c) * (periods[i] + PERIOD_MS - from) - phase.startTime;
        break;
      }
      before += c;
    }
    if (estimate === null) return null;
    if (bounded) {
      const low = share * durationMs + handshake.min;
      const high = never === 0 ? share * durationMs + handshake.max : Infinity;
      estimate = Math.min(high, Math.max(low, estimate));
    }
    return Math.round(estimate);
  };
  const [halfMs, mostMs, allMs] = SHARES.map(at);
  return { phase: phase.name || `phase ${phase.index + 1}`, start: phase.startTime, users, connected, never, halfMs, mostMs, allMs, basis: bounded ? "arrivals" : "periods" };
}

/** "1,000 users: 50% connected in 5.1 s, 95% in 9.6 s, all in 10.2 s", or "…; 12 never connected". */
export function describeConnectStorm(s: ConnectStormColumn): string {
  const when = (label: string, ms: number | null) => (ms === null ? `${label} never` : `${label} in ${(ms / 1000).toFixed(1)} s`);
  const parts = [when("50% connected", s.halfMs), when("95%", s.mostMs), ...(s.never > 0 ? [] : [when("all", s.allMs)])];
  return `${s.users.toLocaleString("en-US")} users: ${parts.join(", ")}${s.never > 0 ? `; ${s.never.toLocaleString("en-US")} never connected` : ""}`;
}

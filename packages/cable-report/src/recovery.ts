// After a spike, does latency come back, and how fast? Pure: merged results in, one verdict per
// spike and column out, read off the per-period series of the main latency's p95.
//
// - A spike is a phase whose arrival rate is at least SPIKE_FACTOR times the phase's before it
//   (arrivalRate, the higher end of a ramp, or arrivalCount over its duration).
// - Before: the median p95 of the last BEFORE_PERIODS whole periods of the phase before (the median,
//   so one slow period there does not lower the bar the recovery is judged against).
// - Worst: the highest p95 of a period that overlaps the spike phase.
// - Recovered: the first period, from the one the spike phase ends in, that starts a stretch of
//   STAY_PERIODS periods whose p95 is back within RECOVERY_TOLERANCE of before, or within
//   RECOVERY_FLOOR_MS of it (a 3 ms baseline cannot be held to ±0.6 ms on a shared generator), or
//   no higher than the worst of those periods before (what the run already called normal: on a
//   noisy runner a 10 s period's p95 swings by more than either), whichever is loosest; the time
//   from the spike phase's end to that period's start (0 when the period the spike ends in is
//   already back: "at once"). None by the end of the run: not recovered.
// The resolution is one 10 s metrics period.
import type { Column, MergedResults, Spike, SpikeColumn } from "./model.js";
import { PERIOD_MS } from "./period.js";
import { phaseRate } from "./phases.js";
import { mainLatency } from "./series.js";
import { describeConnectStorm, describeStorm } from "./storms.js";
import { clock } from "./text.js";
import { byName } from "./task-file.js";

export const SPIKE_FACTOR = 3;
export const BEFORE_PERIODS = 3;
export const STAY_PERIODS = 2;
export const RECOVERY_TOLERANCE = 0.2;
export const RECOVERY_FLOOR_MS = 5;

export function findSpikes(merged: MergedResults): Spike[] {
  const timeline = merged.timeline;
  const metric = mainLatency(Object.keys(merged.all.series?.latency ?? {}));
  if (!timeline || !metric) return [];
  const spikes: Spike[] = [];
  for (const [i, phase] of timeline.phases.entries()) {
    const previous = timeline.phases[i - 1];
    if (!previous || previous.index !== phase.index - 1) continue;
    const rateBefore = phaseRate(merged.test.phases[previous.index]);
    const rate = phaseRate(merged.test.phases[phase.index]);
    if (rateBefore === null || rate === null || rateBefore <= 0 || rate < SPIKE_FACTOR * rateBefore) continue;
    const end = phase.endTime ?? null;
    const columns = byName<SpikeColumn>();
    for (const column of [...merged.regions, merged.all]) {
      if (column.series) columns[column.name] = judgeColumn(column, metric, previous.startTime, phase.startTime, end);
    }
    spikes.push({ phase: phase.name || `phase ${phase.index + 1}`, index: phase.index, metric, start: phase.startTime, end, rateBefore, rate, columns });
  }
  return spikes;
}

function judgeColumn(column: Column, metric: string, beforeStart: number, start: number, end: number | null): SpikeColumn {
  const series = column.series!;
  const p95 = series.latency[metric]?.p95 ?? [];
  const at = series.periods.map((t, i) => ({ t, v: p95[i] ?? null }));
  const wholeBefore = at.filter((p) => p.t >= beforeStart && p.t + PERIOD_MS <= start && p.v !== null).slice(-BEFORE_PERIODS);
  const before = median(wholeBefore.map((p) => p.v!));
  const stop = end ?? Infinity;
  const during = at.filter((p) => p.t + PERIOD_MS > start && p.t < stop && p.v !== null).map((p) => p.v!);
  const worst = during.length > 0 ? during.reduce((m, v) => Math.max(m, v)) : null;
  if (before === null || end === null) return { before, worst, threshold: null, recoveredAfterMs: null, recoveredAt: null };
  const worstBefore = Math.max(...wholeBefore.map((p) => p.v!));
  const threshold = round1(Math.max(before * (1 + RECOVERY_TOLERANCE), before + RECOVERY_FLOOR_MS, worstBefore));
  const after = at.filter((p) => p.t + PERIOD_MS > end);
  for (let i = 0; i + STAY_PERIODS <= after.length; i++) {
    const stretch = after.slice(i, i + STAY_PERIODS);
    const contiguous = stretch.every((p, k) => k === 0 || p.t === stretch[k - 1].t + PERIOD_MS);
    if (contiguous && stretch.every((p) => p.v !== null && p.v <= threshold)) {
      return { before, worst, threshold, recoveredAfterMs: Math.max(0, stretch[0].t - end), recoveredAt: stretch[0].t };
    }
  }
  return { before, worst, threshold, recoveredAfterMs: null, recoveredAt: null };
}

function median(values: number[]): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return round1(sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2);
}

const round1 = (x: number) => Math.round(x * 10) / 10;

/** "after 20 s", "at once", "not by the end of the run" */
export function describeRecovery(c: SpikeColumn): string {
  if (c.before === null) return "no whole period before the spike to compare with";
  if (c.recoveredAfterMs === null) return "not recovered by the end of the run";
  return c.recoveredAfterMs === 0 ? "at once" : `after ${Math.round(c.recoveredAfterMs / 1000)} s`;
}

/** Every time verdict as console lines: each spike's recovery, then each column's connection and reconnect storm, then a soak's drift. */
export function describeVerdicts(merged: MergedResults): string[] {
  const connects = Object.entries(merged.verdicts?.connects ?? {}).map(([column, s]) => `connection storm "${s.phase}", ${column}: ${describeConnectStorm(s)}`);
  const storms = Object.entries(merged.verdicts?.storms ?? {}).map(([column, s]) => `reconnect storm, ${column}: ${describeStorm(s)}`);
  const drift = merged.verdicts?.drift;
  const soak = drift
    ? [...Object.entries(drift.latency).map(([column, d]) => `soak drift, ${column}: ${d.kind}: ${d.reason}`), ...(drift.memory ? [`soak drift, server memory: ${drift.memory.kind}: ${drift.memory.reason}`] : [])]
    : [];
  return [...describeSpikes(merged), ...connects, ...storms, ...soak];
}

/** One line per spike and column, for a console: `spike "spike" 1:00–1:40 (5/s after 1/s), all regions: cable.broadcast_latency p95 20 ms before, worst 480 ms, back after 20 s`. */
export function describeSpikes(merged: MergedResults): string[] {
  const start = merged.timeline?.start ?? 0;
  return (merged.verdicts?.spikes ?? []).flatMap((spike) =>
    Object.entries(spike.columns).map(([column, c]) => {
      const when = `spike "${spike.phase}" ${clock(spike.start - start)}–${spike.end === null ? "end" : clock(spike.end - start)} (${spike.rate}/s after ${spike.rateBefore}/s)`;
      if (c.before === null) return `${when}, ${column}: ${describeRecovery(c)}`;
      return `${when}, ${column}: ${spike.metric} p95 ${c.before} ms before, worst ${c.worst ?? "–"} ms, back ${describeRecovery(c)}`;
    }),
  );
}

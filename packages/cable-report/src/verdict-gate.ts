// The regression gate for the answers that need time, pure: a spike that took 40 s to recover and
// now takes 90 s, or a soak that was flat and now drifts, fails `--fail-on-regression` as a slower
// p95 does. Each check needs both runs to have the verdict (the same spike phase, a drift verdict
// in both), and a change beyond what the verdict can resolve:
// - recovery: the change must pass the threshold (percent of the baseline's recovery time) and one
//   10 s metrics period, the verdict's resolution; a run that no longer recovers, where the
//   baseline did, regresses whatever the figures;
// - drift: "drifting" where the baseline was "flat" (each verdict already needs its whole 95%
//   interval above its floor); or both drifting, the current trend above the threshold and its
//   whole interval above the baseline's.
import type { Regression } from "./regression.js";
import type { MergedResults } from "./model.js";
import { PERIOD_MS } from "./period.js";

export function verdictRegressions(merged: MergedResults, baseline: MergedResults, thresholdPercent: number): Regression[] {
  return [...recoveryRegressions(merged, baseline, thresholdPercent), ...driftRegressions(merged, baseline, thresholdPercent)];
}

function recoveryRegressions(merged: MergedResults, baseline: MergedResults, threshold: number): Regression[] {
  const out: Regression[] = [];
  for (const spike of merged.verdicts?.spikes ?? []) {
    const before = (baseline.verdicts?.spikes ?? []).find((s) => s.index === spike.index && s.phase === spike.phase);
    if (!before) continue;
    for (const [column, now] of Object.entries(spike.columns)) {
      const then = before.columns[column];
      if (!then || then.before === null || now.before === null || then.recoveredAfterMs === null) continue;
      const row = `Verdicts: recovery after spike "${spike.phase}" (s)`;
      if (now.recoveredAfterMs === null) {
        out.push({ row, column, baseline: then.recoveredAfterMs / 1000, current: Infinity, percent: Infinity, interval: [Infinity, Infinity], regression: true, reason: `recovered after ${then.recoveredAfterMs / 1000} s in the baseline; not by the end of this run` });
        continue;
      }
      const change = now.recoveredAfterMs - then.recoveredAfterMs;
      const percent = then.recoveredAfterMs === 0 ? (change > 0 ? Infinity : 0) : (100 * change) / then.recoveredAfterMs;
      if (change > PERIOD_MS && percent >= threshold) {
        out.push({
          row,
          column,
          baseline: then.recoveredAfterMs / 1000,
          current: now.recoveredAfterMs / 1000,
          percent,
          interval: [percent, percent],
          regression: true,
          reason: `${then.recoveredAfterMs / 1000} s → ${now.recoveredAfterMs / 1000} s: ${Number.isFinite(percent) ? `+${percent.toFixed(0)}%` : "from at once"} ≥ ${threshold}%, and more than one 10 s period (the verdict's resolution)`,
        });
      }
    }
  }
  return out;
}

function driftRegressions(merged: MergedResults, baseline: MergedResults, threshold: number): Regression[] {
  const now = merged.verdicts?.drift;
  const then = baseline.verdicts?.drift;
  if (!now || !then) return [];
  const pairs = [
    ...Object.entries(now.latency).map(([column, d]) => ({ row: `Verdicts: ${now.metric ?? "latency"} p95 drift (per hour)`, column, now: d, then: then.latency[column] })),
    { row: "Verdicts: server memory drift (MiB per hour)", column: merged.all.name, now: now.memory, then: then.memory },
  ];
  const out: Regression[] = [];
  for (const p of pairs) {
    if (!p.now || !p.then || p.now.kind !== "drifting" || p.now.perHour === null) continue;
    if (p.then.kind === "flat") {
      out.push({ row: p.row, column: p.column, baseline: p.then.perHour ?? 0, current: p.now.perHour, percent: Infinity, interval: [Infinity, Infinity], regression: true, reason: `flat in the baseline, drifting now: ${p.now.reason}` });
      continue;
    }
    if (p.then.kind !== "drifting" || p.then.perHour === null || p.then.high === null || p.now.low === null) continue;
    const percent = (100 * (p.now.perHour - p.then.perHour)) / p.then.perHour;
    if (percent >= threshold && p.now.low > p.then.high) {
      out.push({
        row: p.row,
        column: p.column,
        baseline: p.then.perHour,
        current: p.now.perHour,
        percent,
        interval: [percent, percent],
        regression: true,
        reason: `drifting in both; ${p.then.perHour} → ${p.now.perHour} per hour (+${percent.toFixed(0)}% ≥ ${threshold}%), its whole 95% interval (${p.now.low} to ${p.now.high}) above the baseline's (${p.then.low} to ${p.then.high})`,
      });
    }
  }
  return out;
}

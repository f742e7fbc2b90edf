// Over a soak, does anything creep up? Pure: merged results in, drift verdicts out (drift.ts has the
// statistics: a Theil–Sen trend per hour with its 95% interval, and the floors a trend must pass to
// be called drifting). Judged on runs whose periods span at least DRIFT_MIN_SPAN_MS: the main
// latency's p95 per column, one point per 10 s period; and the server's resident memory per scrape
// (`--server-metrics`). Shorter runs get no drift verdict at all (null), not "flat". A compressed
// soak lowers the span with the plugin's `soakMinimum` (verdict-checks.ts).
import { DRIFT_MIN_SPAN_MS, judgeDrift, LATENCY_DRIFT_FLOOR, MEMORY_DRIFT_FLOOR } from "./drift.js";
import type { MergedResults, Verdicts } from "./model.js";
import { PERIOD_MS } from "./period.js";
import { mainLatency } from "./series.js";
import { byName } from "./task-file.js";

export function soakDrift(merged: MergedResults, minSpanMs = DRIFT_MIN_SPAN_MS): Verdicts["drift"] {
  const periods = merged.all.series?.periods ?? [];
  if (periods.length === 0 || periods[periods.length - 1] + PERIOD_MS - periods[0] < minSpanMs) return null;
  const metric = mainLatency(Object.keys(merged.all.series?.latency ?? {}));
  const latency = byName<ReturnType<typeof judgeDrift>>();
  if (metric) {
    for (const column of [...merged.regions, merged.all]) {
      const series = column.series;
      const p95 = series?.latency[metric]?.p95;
      if (!series || !p95) continue;
      latency[column.name] = judgeDrift(series.periods.map((t, i) => ({ t, v: p95[i] })), { ...LATENCY_DRIFT_FLOOR, minSpanMs, label: `${metric} p95` });
    }
  }
  const server = merged.timeline?.server;
  const memory = server && server.at.length > 0 ? judgeDrift(server.at.map((t, i) => ({ t, v: server.memoryMiB[i] })), { ...MEMORY_DRIFT_FLOOR, minSpanMs, label: "server memory" }) : null;
  return { metric, latency, memory };
}

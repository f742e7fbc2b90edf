// What a phase of the scenario, as written, brings: read by the spike (recovery.ts) and the
// connection-storm (storms.ts) verdicts, and the timeline's phase bounds (results.ts).
import { PERIOD_MS } from "./period.js";

const num = (v: unknown) => (typeof v === "number" ? v : typeof v === "string" && v.trim() !== "" && Number.isFinite(Number(v)) ? Number(v) : undefined);

/**
 * How long a phase lasts as written, in ms: `duration` (or a `pause`), seconds as a number or
 * Artillery's "10s"/"2m"/"1h" strings; null when its spec does not say.
 */
export function phaseDurationMs(spec: Record<string, unknown> | undefined): number | null {
  if (!spec) return null;
  const raw = spec.pause !== undefined ? spec.pause : spec.duration;
  const plain = num(raw);
  if (plain !== undefined) return plain >= 0 ? plain * 1000 : null;
  const m = typeof raw === "string" ? /^\s*(\d+(?:\.\d+)?)\s*(ms|s|sec|m|min|h|hr)?\s*$/i.exec(raw) : null;
  if (!m) return null;
  const unit = (m[2] ?? "s").toLowerCase();
  const scale = unit === "ms" ? 1 : unit.startsWith("m") ? 60_000 : unit.startsWith("h") ? 3_600_000 : 1000;
  return Number(m[1]) * scale;
}

/**
 * Each phase as it ran: its start from the tasks (the earliest over them), its end its start plus
 * its written duration, cut at the next phase's start; a phase without a duration runs to the next
 * one, the last to the end of the last period.
 */
export function phaseBounds(
  starts: ReadonlyArray<{ index: number; name: string; startTime: number }>,
  specs: ReadonlyArray<Record<string, unknown>>,
  lastPeriod: number | null,
): Array<{ index: number; name: string; startTime: number; endTime: number | null }> {
  const ordered = [...starts].sort((a, b) => a.startTime - b.startTime || a.index - b.index);
  const runEnd = lastPeriod === null ? null : lastPeriod + PERIOD_MS;
  return ordered.map((p, i) => {
    const next = ordered[i + 1]?.startTime ?? null;
    const duration = phaseDurationMs(specs[p.index]);
    const written = duration === null ? null : p.startTime + duration;
    const candidates = [written, next].filter((t): t is number => t !== null);
    return { index: p.index, name: p.name, startTime: p.startTime, endTime: candidates.length > 0 ? Math.min(...candidates) : runEnd };
  });
}

/** Users a second a phase brings, as far as its spec says. */
export function phaseRate(spec: Record<string, unknown> | undefined): number | null {
  if (!spec) return null;
  if (spec.pause !== undefined) return 0;
  const rate = num(spec.arrivalRate);
  const rampTo = num(spec.rampTo);
  if (rate !== undefined) return Math.max(rate, rampTo ?? rate);
  const count = num(spec.arrivalCount);
  const duration = num(spec.duration);
  if (count !== undefined && duration) return count / duration;
  return null;
}

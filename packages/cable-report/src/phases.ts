// What a phase of the scenario, as written, brings: read by the spike (recovery.ts) and the
// connection-storm (storms.ts) verdicts.

/** Users a second a phase brings, as far as its spec says. */
export function phaseRate(spec: Record<string, unknown> | undefined): number | null {
  if (!spec) return null;
  const num = (v: unknown) => (typeof v === "number" ? v : typeof v === "string" && v.trim() !== "" && Number.isFinite(Number(v)) ? Number(v) : undefined);
  if (spec.pause !== undefined) return 0;
  const rate = num(spec.arrivalRate);
  const rampTo = num(spec.rampTo);
  if (rate !== undefined) return Math.max(rate, rampTo ?? rate);
  const count = num(spec.arrivalCount);
  const duration = num(spec.duration);
  if (count !== undefined && duration) return count / duration;
  return null;
}

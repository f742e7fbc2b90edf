// `ensure`-style conditions on the answers that need time, so that a CI job can fail on them:
//
//   config:
//     plugins:
//       cable-report:
//         ensure:
//           - recovery < 30s          # every spike's p95 back within 30 s of its end
//           - drift.latency < 20%/h   # the main latency's p95 creeps up less than 20% an hour
//           - drift.memory < 8MiB/h   # the server's memory (--server-metrics), all regions only
//           - storm.p95 < 5s          # 95% of a reconnect storm's dropped users back within 5 s
//
// Artillery's own `ensure` judges metrics as the run ends in each task; these need the merged
// series of every task and region, so the merger judges them (per column) and the report shows them
// beside the other verdicts. As with `ensure`, a condition with nothing to judge fails (no spike in
// the run, a run too short for a drift verdict): a check that cannot fail is no check.
import { z } from "zod";
import type { Column, MergedResults } from "./model.js";

export type VerdictCheck =
  | { kind: "recovery"; text: string; op: "<" | "<="; boundMs: number }
  | { kind: "storm"; text: string; share: "p50" | "p95" | "all"; op: "<" | "<="; boundMs: number }
  | { kind: "drift"; text: string; of: "latency" | "memory"; op: "<" | "<="; bound: number; unit: "%/h" | "ms/h" | "MiB/h" };

const GRAMMAR = /^\s*(recovery|storm\.(p50|p95|all)|drift\.(latency|memory))\s*(<=|<)\s*(\d+(?:\.\d+)?)\s*(ms|s|%\/h|ms\/h|MiB\/h)\s*$/;

export class VerdictCheckError extends Error {}

/** Throws VerdictCheckError naming the condition and what is wrong with it. */
export function parseVerdictCheck(text: string): VerdictCheck {
  const m = GRAMMAR.exec(text);
  if (!m) {
    throw new VerdictCheckError(
      `"${text}": write one of recovery < 30s, storm.p50|p95|all < 5s, drift.latency < 20%/h (or ms/h), drift.memory < 5%/h (or MiB/h); the operator is < or <=`,
    );
  }
  const [, subject, share, of, op, number, unit] = m;
  const value = Number(number);
  const time = (kind: string) => {
    if (unit !== "s" && unit !== "ms") throw new VerdictCheckError(`"${text}": ${kind} is a time: give it in s or ms, not ${unit}`);
    return unit === "s" ? value * 1000 : value;
  };
  if (subject === "recovery") return { kind: "recovery", text: text.trim(), op: op as "<" | "<=", boundMs: time("recovery") };
  if (share) return { kind: "storm", text: text.trim(), share: share as "p50" | "p95" | "all", op: op as "<" | "<=", boundMs: time(subject) };
  if (unit === "s" || unit === "ms") throw new VerdictCheckError(`"${text}": ${subject} is a trend: give it in %/h or ${of === "memory" ? "MiB/h" : "ms/h"}`);
  if ((of === "memory" && unit === "ms/h") || (of === "latency" && unit === "MiB/h")) throw new VerdictCheckError(`"${text}": ${subject} is not measured in ${unit}`);
  return { kind: "drift", text: text.trim(), of: of as "latency" | "memory", op: op as "<" | "<=", bound: value, unit: unit as "%/h" | "ms/h" | "MiB/h" };
}

/** Where the plugin's options sit in a script, and what they may hold. */
export const pluginOptionsSchema = z.object({ ensure: z.array(z.string()).optional(), soakMinimum: z.union([z.string(), z.number()]).optional() }).passthrough();

const SPAN = /^\s*(\d+(?:\.\d+)?)\s*(s|m|min|h)?\s*$/;

/**
 * `soakMinimum`: the shortest run judged for drift, "2m", "90s", "1h" or seconds (default 10m,
 * DRIFT_MIN_SPAN_MS). Lowered only for a compressed soak, a leak sped up to show in minutes: the
 * floors' step term grows as the span shrinks, so a short flat run is still never called drifting.
 */
export function parseSoakMinimum(value: string | number): number {
  const m = SPAN.exec(String(value));
  const ms = m ? Number(m[1]) * ({ s: 1000, m: 60_000, min: 60_000, h: 3_600_000 }[m[2] ?? "s"] ?? 1000) : NaN;
  if (!(ms >= MIN_SOAK_MS)) throw new VerdictCheckError(`soakMinimum ${JSON.stringify(value)}: give a span such as 2m or 90s, at least ${MIN_SOAK_MS / 1000} s (12 periods: a trend needs 10 points)`);
  return ms;
}
const MIN_SOAK_MS = 120_000;

/** Every problem with a script's `config.plugins.cable-report.ensure`, each naming its field. */
export function verdictCheckProblems(pluginOptions: unknown): string[] {
  if (pluginOptions === undefined || pluginOptions === null) return [];
  const parsed = pluginOptionsSchema.safeParse(pluginOptions);
  if (!parsed.success) return ["config.plugins.cable-report.ensure: must be a list of conditions such as recovery < 30s"];
  const soak: string[] = [];
  if (parsed.data.soakMinimum !== undefined) {
    try {
      parseSoakMinimum(parsed.data.soakMinimum);
    } catch (err) {
      soak.push(`config.plugins.cable-report.${(err as Error).message}`);
    }
  }
  return soak.concat((parsed.data.ensure ?? []).flatMap((text, i) => {
    try {
      parseVerdictCheck(text);
      return [];
    } catch (err) {
      return [`config.plugins.cable-report.ensure[${i}]: ${(err as Error).message}`];
    }
  }));
}

export interface CheckOutcomeInColumn {
  passed: boolean;
  /** What was measured, in words: "recovered after 20 s", "no spike in this run". */
  value: string;
}

const holds = (value: number, op: "<" | "<=", bound: number) => (op === "<" ? value < bound : value <= bound);

export function evaluateVerdictCheck(check: VerdictCheck, merged: MergedResults, column: Column): CheckOutcomeInColumn {
  const verdicts = merged.verdicts;
  if (check.kind === "recovery") {
    const spikes = (verdicts?.spikes ?? []).map((s) => ({ phase: s.phase, c: s.columns[column.name] })).filter((s) => s.c && s.c.before !== null);
    if (spikes.length === 0) return { passed: false, value: "no spike in this run to judge" };
    const worst = spikes.find((s) => s.c!.recoveredAfterMs === null) ?? spikes.reduce((a, b) => (b.c!.recoveredAfterMs! > a.c!.recoveredAfterMs! ? b : a));
    if (worst.c!.recoveredAfterMs === null) return { passed: false, value: `"${worst.phase}" not recovered by the end of the run` };
    return { passed: holds(worst.c!.recoveredAfterMs, check.op, check.boundMs), value: `"${worst.phase}" recovered after ${Math.round(worst.c!.recoveredAfterMs / 100) / 10} s` };
  }
  if (check.kind === "storm") {
    const storm = verdicts?.storms?.[column.name];
    if (!storm) return { passed: false, value: "no reconnect in this run to judge" };
    const ms = check.share === "p50" ? storm.halfBackMs : check.share === "p95" ? storm.mostBackMs : storm.allBackMs;
    if (ms === null) return { passed: false, value: `${check.share === "all" ? "all" : check.share.slice(1) + "%"} never came back (${storm.never} of ${storm.dropped} never did)` };
    return { passed: holds(ms, check.op, check.boundMs), value: `${(ms / 1000).toFixed(1)} s` };
  }
  const drift = verdicts?.drift;
  if (!drift) return { passed: false, value: "no drift verdict (runs of 10 minutes or more get one)" };
  const verdict = check.of === "memory" ? drift.memory : drift.latency[column.name];
  if (!verdict || verdict.perHour === null) return { passed: false, value: check.of === "memory" ? "no server memory (--server-metrics)" : "no latency trend" };
  const value = check.unit === "%/h" ? (verdict.relativePerHour ?? Infinity) * 100 : verdict.perHour;
  const shown = check.unit === "%/h" ? `${Math.round(value * 10) / 10}%/h` : `${Math.round(value * 10) / 10} ${check.unit}`;
  return { passed: holds(value, check.op, check.bound), value: shown };
}

/** The checks of a run, judged per column (the server's memory in all regions only). */
export function judgeVerdictChecks(texts: string[], merged: MergedResults): Array<{ check: string; columns: Record<string, CheckOutcomeInColumn> }> {
  return texts.map((text) => {
    let check: VerdictCheck;
    try {
      check = parseVerdictCheck(text);
    } catch (err) {
      const outcome = { passed: false, value: `not a condition: ${(err as Error).message}` };
      return { check: text, columns: { [merged.all.name]: outcome } };
    }
    const columns = check.kind === "drift" && check.of === "memory" ? [merged.all] : [...merged.regions.filter((r) => r.tasks > 0), merged.all];
    return { check: check.text, columns: Object.fromEntries(columns.map((c) => [c.name, evaluateVerdictCheck(check, merged, c)])) };
  });
}

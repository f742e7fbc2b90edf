// The block a person reads first, above everything in report.md and report.html (which takes its
// text from report.md): how the run ended, its users, peak connections, the main latency, errors,
// checks and verdicts, and the server it loaded. Pure: merged results in, markdown lines out. The
// figures are the all-regions column's, the same the table shows below; outside text is escaped.
import { METRICS } from "artillery-engine-cable/metrics";
import { formatMs } from "./clocks.js";
import type { MergedResults } from "./model.js";
import { describeRecovery } from "./recovery.js";
import { latencyMetrics } from "./rows.js";
import { isLatencyMetric, mainLatency } from "./series.js";
import { describeConnectStorm, describeStorm } from "./storms.js";
import { clock, code, inline, LIMITS } from "./text.js";

/** How the run ended, as the headline and the run's consumers (a PR comment's reader) see it. */
export interface RunState {
  state: "complete" | "aborted" | "cut short" | "incomplete";
  /** Why, in words; null for a complete run. */
  reason: string | null;
}

const n = (v: number) => v.toLocaleString("en-US", { maximumFractionDigits: 1 });
const plural = (count: number, word: string) => `${n(count)} ${word}${count === 1 ? "" : "s"}`;

export function runState(merged: MergedResults): RunState {
  const all = merged.all;
  const count = (name: string) => all.counters[name] ?? 0;
  const cutOff = count("vusers.created") - count("vusers.completed") - count("vusers.failed");
  const usersCut = cutOff > 0 ? `${plural(cutOff, "virtual user")} cut off in their flow` : null;
  const partial = all.partialTasks > 0 ? `${plural(all.partialTasks, "task")} stopped before Artillery wrote ${all.partialTasks === 1 ? "its" : "their"} report (figures from the periods ${all.partialTasks === 1 ? "it" : "they"} streamed)` : null;
  const aborted = merged.timeline?.aborted;
  if (aborted) {
    const at = merged.timeline?.start ? ` at ${clock(aborted.at - merged.timeline.start)}` : "";
    return { state: "aborted", reason: [`stopped${at} by ${code(`--abort-on ${aborted.condition}`)} (${code(aborted.figure)})`, partial, usersCut].filter(Boolean).join("; ") };
  }
  if (partial || usersCut) return { state: "cut short", reason: [partial, usersCut].filter(Boolean).join("; ") };
  const expected = merged.regions.reduce((sum, r) => sum + r.expectedTasks, 0);
  const missing = merged.regions.filter((r) => r.tasks < r.expectedTasks);
  if (missing.length > 0) {
    const names = missing.slice(0, 5).map((r) => `${inline(r.name, LIMITS.name)} ${r.tasks} of ${r.expectedTasks}`);
    return { state: "incomplete", reason: `${all.tasks} of ${expected} tasks reported (${names.join(", ")}${missing.length > 5 ? ", …" : ""})` };
  }
  return { state: "complete", reason: null };
}

const STATE_MARK: Record<RunState["state"], string> = { complete: "✅", aborted: "⛔", "cut short": "✂️", incomplete: "⚠️" };

/** The headline's lines, a blockquote; `servers`: columns are servers run one after the other (no all-regions column). */
export function headline(merged: MergedResults, options: { servers?: boolean; regressions?: number; threshold?: number } = {}): string[] {
  if (options.servers) return [];
  const all = merged.all;
  const count = (name: string) => all.counters[name] ?? 0;
  const state = runState(merged);
  const lines: string[] = [];
  const label = state.state[0].toUpperCase() + state.state.slice(1);
  lines.push(
    `**${STATE_MARK[state.state]} ${label}**${state.reason ? `: ${state.reason}` : ""} · ` +
      `**${n(count("vusers.created"))}** virtual users (${n(count("vusers.completed"))} completed, ${n(count("vusers.failed"))} failed)` +
      (all.peakOpenConnections !== null ? ` · peak **${n(all.peakOpenConnections)}** open connections` : ""),
  );

  const main = mainLatency(Object.keys(all.histograms).filter(isLatencyMetric));
  const d = main ? all.histograms[main] : undefined;
  const errors = Object.entries(all.counters).filter(([k]) => k.startsWith("errors.")).reduce((sum, [, v]) => sum + v, 0);
  const latency = d && d.count > 0
    ? `**${inline(latencyMetrics(merged).find((m) => m.metric === main)?.title ?? main!, LIMITS.name)}** p50 ${n(d.p50)} · p95 **${n(d.p95)}** · p99 ${n(d.p99)} ms${d.approximate ? " (≈)" : ""} over ${plural(d.count, "sample")}`
    : "no latency recorded";
  // A cross-task latency is only as good as the two clocks: their bound beside it, and the negatives counted apart.
  const crossTask = main === METRICS.broadcastLatency;
  const bound = crossTask && merged.clockBoundMs !== undefined ? ` (clocks within ${merged.clockBoundMs === null ? "an unknown bound" : `±${formatMs(merged.clockBoundMs)}`})` : "";
  const negative = crossTask ? (all.counters[METRICS.broadcastLatencyNegative] ?? 0) : 0;
  const negatives = negative > 0 ? ` · ⚠️ ${n(negative)} negative, left out (clocks disagree)` : "";
  lines.push(`${latency}${bound}${negatives} · **${n(errors)}** error${errors === 1 ? "" : "s"}`);

  const checkParts: string[] = [];
  const ensure = all.checks.reduce((t, c) => ({ passed: t.passed + c.passed, failed: t.failed + c.failed }), { passed: 0, failed: 0 });
  if (ensure.passed + ensure.failed > 0) checkParts.push(`${ensure.failed === 0 ? "✅" : "❌"} ensure: ${n(ensure.passed)} of ${n(ensure.passed + ensure.failed)} task checks passed`);
  const verdictChecks = (merged.verdicts?.checks ?? []).map((c) => c.columns[all.name]).filter((c) => c !== undefined);
  if (verdictChecks.length > 0) {
    const failed = verdictChecks.filter((c) => !c.passed).length;
    checkParts.push(`${failed === 0 ? "✅" : "❌"} verdict checks: ${verdictChecks.length - failed} of ${verdictChecks.length} passed`);
  }
  const verdicts = verdictLines(merged);
  if (options.regressions !== undefined) {
    verdicts.push(options.regressions === 0 ? `✅ no regression beyond ${options.threshold}% against the baseline` : `❌ ${plural(options.regressions, "regression")} beyond ${options.threshold}% against the baseline`);
  }
  if (checkParts.length > 0 || verdicts.length > 0) lines.push([...checkParts, ...verdicts].join(" · "));

  const target = merged.target;
  if (target && (target.url || target.server)) {
    lines.push(`Target: ${target.url ? code(target.url, LIMITS.label) : "not named"}${target.server ? ` (${inline(target.server, LIMITS.label)})` : ""}`);
  }
  return ["", ...lines.flatMap((line, i) => (i === 0 ? [`> ${line}`] : [">", `> ${line}`]))];
}

/** The time verdicts of the all-regions column, a few words each. */
function verdictLines(merged: MergedResults): string[] {
  const name = merged.all.name;
  const v = merged.verdicts;
  if (!v) return [];
  const out: string[] = [];
  for (const spike of v.spikes.slice(0, 3)) {
    const c = spike.columns[name];
    if (c) out.push(`spike "${inline(spike.phase, LIMITS.name)}": p95 back ${describeRecovery(c)}`);
  }
  const connect = v.connects[name];
  if (connect) out.push(`connection storm: ${describeConnectStorm(connect)}`);
  const storm = v.storms[name];
  if (storm) out.push(`reconnect storm: ${describeStorm(storm)}`);
  const drift = v.drift?.latency[name];
  if (drift && drift.kind !== "no-data") out.push(`latency drift: ${drift.kind}`);
  if (v.drift?.memory && v.drift.memory.kind !== "no-data") out.push(`server memory drift: ${v.drift.memory.kind}`);
  return out;
}

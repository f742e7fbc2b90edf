// The block a person reads first, above everything in report.md and report.html (which takes its
// text from report.md): how the run ended, its users, peak connections, the main latency, errors,
// checks and verdicts, and the server it loaded. Pure: merged results in, markdown lines out. The
// figures are the all-regions column's, the same the table shows below; outside text is escaped.
import { judgeFailedUsers, readMaxFailedUsers, type FailedUsersVerdict } from "artillery-engine-cable/failed-users";
import { METRICS } from "artillery-engine-cable/metrics";
import { formatMs } from "./clocks.js";
import type { MergedResults } from "./model.js";
import { describeRecovery } from "./recovery.js";
import { latencyMetrics } from "./rows.js";
import { isLatencyMetric, mainLatency } from "./series.js";
import { describeConnectStorm, describeStorm } from "./storms.js";
import { clock, code, inline, LIMITS } from "./text.js";
import { notEvaluated } from "./unevaluated.js";

/** How the run ended, as the headline and the run's consumers (a PR comment's reader) see it. */
export interface RunState {
  state: "complete" | "aborted" | "cut short" | "incomplete" | "running";
  /** Why, in words; null for a complete run. */
  reason: string | null;
  /** The failure line (`config.cable.maxFailedUsers`) on every user of the run. */
  users: FailedUsersVerdict;
  /** Errors counted (`errors.*`), with or without failed users. */
  errors: number;
}

/** Every user of the run against its failure line. */
export function failedUsers(merged: MergedResults): FailedUsersVerdict {
  const count = (name: string) => merged.all.counters[name] ?? 0;
  return judgeFailedUsers(readMaxFailedUsers(merged.test.maxFailedUsers), { created: count("vusers.created"), failed: count("vusers.failed") });
}

const errorCount = (counters: Record<string, number>) => Object.entries(counters).filter(([k]) => k.startsWith("errors.")).reduce((sum, [, v]) => sum + v, 0);

const n = (v: number) => v.toLocaleString("en-US", { maximumFractionDigits: 1 });
const plural = (count: number, word: string) => `${n(count)} ${word}${count === 1 ? "" : "s"}`;

export function runState(merged: MergedResults): RunState {
  return { ...endOf(merged), users: failedUsers(merged), errors: errorCount(merged.all.counters) };
}

function endOf(merged: MergedResults): Pick<RunState, "state" | "reason"> {
  const all = merged.all;
  const count = (name: string) => all.counters[name] ?? 0;
  const cutOff = count("vusers.created") - count("vusers.completed") - count("vusers.failed");
  const usersCut = cutOff > 0 ? `${plural(cutOff, "virtual user")} cut off in their flow` : null;
  const partial = all.partialTasks > 0 ? `${plural(all.partialTasks, "task")} stopped before Artillery wrote ${all.partialTasks === 1 ? "its" : "their"} report (figures from the periods ${all.partialTasks === 1 ? "it" : "they"} streamed)` : null;
  const aborted = merged.timeline?.aborted;
  // A run still going (the live page) has users in their flow and tasks yet to report by nature.
  if (merged.live && !aborted) return { state: "running", reason: null };
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

const STATE_MARK: Record<RunState["state"], string> = { complete: "✅", aborted: "⛔", "cut short": "✂️", incomplete: "⚠️", running: "⏳" };

/**
 * The headline's first words. A complete run is green only when every user completed and nothing
 * erred: users over the failure line are ❌, failures within it or errors without failed users ⚠️.
 */
export function stateWords(state: RunState): { mark: string; label: string } {
  const { users } = state;
  const label = state.state[0].toUpperCase() + state.state.slice(1);
  const failedPart = users.failed > 0 ? `${n(users.failed)} of ${n(users.created)} virtual users failed` : null;
  if (state.state !== "complete") return { mark: users.over ? "❌" : STATE_MARK[state.state], label: failedPart ? `${label}, ${failedPart}` : label };
  if (users.over) return { mark: "❌", label: `${label}, ${failedPart} (more than ${code(`maxFailedUsers: ${users.line}`)})` };
  if (failedPart) return { mark: "⚠️", label: `${label}, ${failedPart} (within ${code(`maxFailedUsers: ${users.line}`)})` };
  if (state.errors > 0) return { mark: "⚠️", label: `${label}, with ${plural(state.errors, "error")} and no failed user` };
  return { mark: STATE_MARK.complete, label };
}

/** The headline's lines, a blockquote; `servers`: columns are servers run one after the other (no all-regions column). */
export function headline(merged: MergedResults, options: { servers?: boolean; regressions?: number; threshold?: number } = {}): string[] {
  if (options.servers) return [];
  const all = merged.all;
  const count = (name: string) => all.counters[name] ?? 0;
  const state = runState(merged);
  const lines: string[] = [];
  const { mark, label } = stateWords(state);
  lines.push(
    `**${mark} ${label}**${state.reason ? `: ${state.reason}` : ""} · ` +
      `**${n(count("vusers.created"))}** virtual users (${n(count("vusers.completed"))} completed, ${n(count("vusers.failed"))} failed)` +
      (all.peakOpenConnections !== null ? ` · peak **${n(all.peakOpenConnections)}** open connections` : ""),
  );

  const main = mainLatency(Object.keys(all.histograms).filter(isLatencyMetric));
  const d = main ? all.histograms[main] : undefined;
  const errors = state.errors;
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
  // A check that could not have failed (unevaluated.ts) is neither passed nor failed.
  const evaluated = all.checks.filter((c) => notEvaluated(c.check, all.counters) === null);
  const unevaluated = all.checks.length - evaluated.length;
  const ensure = evaluated.reduce((t, c) => ({ passed: t.passed + c.passed, failed: t.failed + c.failed }), { passed: 0, failed: 0 });
  if (ensure.passed + ensure.failed + unevaluated > 0) {
    const mark = ensure.failed > 0 ? "❌" : unevaluated > 0 ? "⚠️" : "✅";
    const ran = ensure.passed + ensure.failed > 0 ? `${n(ensure.passed)} of ${n(ensure.passed + ensure.failed)} task checks passed` : "no task check evaluated";
    checkParts.push(`${mark} ensure: ${ran}${unevaluated > 0 ? `, ${plural(unevaluated, "check")} not evaluated` : ""}`);
  }
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

  lines.push(...acceptanceLines(merged, state));

  const target = merged.target;
  if (target && (target.url || target.server)) {
    lines.push(`Target: ${target.url ? code(target.url, LIMITS.label) : "not named"}${target.server ? ` (${inline(target.server, LIMITS.label)})` : ""}`);
  }
  return ["", ...lines.flatMap((line, i) => (i === 0 ? [`> ${line}`] : [">", `> ${line}`]))];
}

const seconds = (ms: number) => (ms >= 1000 ? `${n(ms / 1000)} s` : formatMs(ms));

/** Errors that are a timeout: the engine's `*_timeout` names and the socket's ETIMEDOUT. */
const isTimeout = (error: string) => /(^|_)timeout$/.test(error.replace(/^errors\.(cable\.)?/, "")) || error === "errors.ETIMEDOUT";

/**
 * A server that accepts slowly looks like a working one until its queue overflows: handshakes past
 * half the timeout, or failed users that mostly timed out, are pointed at beside the headline.
 */
export function acceptanceLines(merged: MergedResults, state: RunState): string[] {
  const lines: string[] = [];
  const handshake = merged.all.histograms[METRICS.handshakeLatency];
  const timeout = merged.test.timeoutMs;
  if (handshake && handshake.count > 0 && timeout !== undefined && handshake.p95 > timeout / 2) {
    lines.push(
      `⚠️ Slow acceptance: handshake p95 ${seconds(handshake.p95)} is over half the ${seconds(timeout)} timeout. ` +
        "The server takes connections slower than they arrive: usually its accept queue (Puma's backlog, too few workers or threads) or a proxy in front of it.",
    );
  }
  const timeouts = Object.entries(merged.all.counters).filter(([k]) => isTimeout(k));
  const timedOut = timeouts.reduce((sum, [, v]) => sum + v, 0);
  if (state.users.failed > 0 && timedOut * 2 >= state.users.failed) {
    const names = timeouts.sort((a, b) => b[1] - a[1]).slice(0, 3).map(([k, v]) => `${code(k.replace(/^errors\./, ""))} ${n(v)}`);
    lines.push(`⚠️ Most failed users timed out (${names.join(", ")}): the server was too slow to answer, not refusing; look at its accept queue, CPU and the proxy in front.`);
  }
  return lines;
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

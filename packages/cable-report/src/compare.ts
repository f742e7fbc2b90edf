// Baseline comparison and the regression gate, pure.
//
// A cell fails the gate only when both hold:
//  1. the change is significantly at least the threshold
//     (`--fail-on-regression 10%`): the whole 95% interval of the change lies
//     at or above it, so noise that merely could be 10% never fails a build;
//     the interval combines the two runs' 95% intervals (for a percentile, the
//     order-statistic interval read from the merged sketch; for error counts,
//     the log rate ratio's, with an exact binomial test of the counts);
//  2. it is larger than an absolute floor, below which no change matters to a
//     user however certain it is, or could be the generator's own doing:
//     for latency, 5 ms or the generator's event-loop lag as the report reads
//     it (p99, or the max under 100 samples: saturation.ts) in the larger of
//     the two runs, since a change no larger than the generator's own delay
//     may be that delay, and a few milliseconds at p95 is what scheduling on a
//     shared machine moves (a Rails A/A pair on a loaded 2-core runner went
//     from p95 2.6 ms to 7 ms with the generator's lag p99 at 4 ms); for error-like counts, 1 event per 100 virtual users
//     and 3 events in all.
// And only cells that describe the server are gated: the p50/p95/p99 of the
// engine's latency histograms (merged sketches on both sides, enough samples
// in the tail, no saturated or starved generator task on either side: the
// latencies of either hold a delay that is not the server's), failed users,
// users that did not complete, and errors (per created user). Never: Max (one sample), ≈ percentiles (interpolated),
// session length and rates (set by the scenario), the generator's own lag or
// CPU, custom metrics (their direction is unknown).
//
// Both tests assume independent samples. Samples within a run are not quite
// (a GC pause delays many messages at once; one broadcast reaches many
// subscribers together), so the intervals are narrower than the run-to-run
// spread; the threshold and the floor are what absorb that spread. The A/A
// tests (test/gate-runs.test.ts) measure the false-alarm rate on real runs.
import { DDSketch } from "@artilleryio/sketches-js";
import type { Column, Distribution, MergedResults } from "./model.js";
import { tableRows, type GateSpec, type NumericRow } from "./rows.js";
import { EVENT_LOOP_LAG } from "./merge.js";
import type { Change, Regression } from "./regression.js";
import { lagFigure } from "./saturation.js";
import { RELATIVE_ACCURACY } from "./sidecar.js";
import { isServerSoftwareCounter, type BaselineVerdict } from "./target.js";
import { inline, LIMITS } from "./text.js";
import { verdictRegressions } from "./verdict-gate.js";

export type { Change, Regression } from "./regression.js";

export const GATE = Object.freeze({
  /** Two-sided 95% per run: z for the order-statistic interval of a quantile. */
  z: 1.96,
  /** Latency changes below this never count (timer granularity and scheduling jitter of a shared runner: see above). */
  latencyFloorMs: 5,
  /** Per-user rates: at least this much more per created user… */
  rateFloorPerUser: 0.01,
  /** …and at least this many more events in all. */
  countFloor: 3,
  /** Fewer samples than this on either side: no statistics, not gated. */
  minSamples: 50,
  /** The tail a percentile describes must hold this many samples on each side (p99: n ≥ 500). */
  minTailSamples: 5,
});

export type GateVerdict =
  | { gated: false; why: string }
  | { gated: true; regression: boolean; percent: number; interval: [number, number]; delta: number; explain(): string };

/** The change of a cell, direction-aware; `regression` only by the percentage (the table's arrows). */
export function changeOf(row: NumericRow, current: number, baseline: number, thresholdPercent?: number): Change {
  const percent = baseline === 0 ? (current === 0 ? 0 : Infinity) : ((current - baseline) / Math.abs(baseline)) * 100;
  const worse = row.worse === "up" ? percent : row.worse === "down" ? -percent : 0;
  return { percent, regression: thresholdPercent !== undefined && row.gate !== undefined && worse >= thresholdPercent };
}

export function baselineColumn(baseline: MergedResults | undefined, name: string): Column | undefined {
  if (!baseline) return undefined;
  return baseline.all.name === name ? baseline.all : baseline.regions.find((r) => r.name === name && r.tasks > 0);
}

/** The gate's verdict on one cell: not gated (and why), or the test's numbers. */
export function gateCell(row: NumericRow, current: Column, baseline: Column, thresholdPercent: number): GateVerdict {
  if (!row.gate) return { gated: false, why: "describes the scenario or the generator" };
  // A saturated generator's latencies include its own delay, a starved one's its machine's: neither says anything about the server.
  if (row.gate.kind === "quantile") {
    const why = generatorUnfit(current) ?? generatorUnfit(baseline);
    if (why) return { gated: false, why };
  }
  if (row.gate.kind === "quantile") {
    const floor = Math.max(GATE.latencyFloorMs, lagMs(current), lagMs(baseline));
    return gateQuantile(row.gate, current.histograms[row.gate.metric], baseline.histograms[row.gate.metric], thresholdPercent, floor);
  }
  return gateRate(row.gate, current, baseline, thresholdPercent);
}

/** The generator's lag as the table and the banner read it, so that the floor never hides behind a p99 of a dozen samples. */
function lagMs(column: Column): number {
  return lagFigure(column.histograms[EVENT_LOOP_LAG])?.ms ?? 0;
}

/**
 * Why a column's latencies are left out of the gate, or undefined: a task's generator saturated,
 * or starved (late while its machine was busy with other work: the figures hold that wait, so they
 * are left out too, and said so in those words, never as saturation).
 */
export function generatorUnfit(column: Column): string | undefined {
  if (column.generator.some((t) => t.saturated)) return "the load generator was saturated";
  if (column.generator.some((t) => t.starved)) return "the load generator was starved (its machine was busy with other work)";
  return undefined;
}

/** Every regression in every row (no row limits) and column, all-regions column included. */
export function findRegressions(merged: MergedResults, baseline: MergedResults, thresholdPercent: number): Regression[] {
  const regressions: Regression[] = [];
  const rows = tableRows(merged, { maxErrorRows: Infinity }).filter((r): r is NumericRow => r.kind === "numeric" && r.gate !== undefined);
  for (const column of [...merged.regions, merged.all]) {
    const before = baselineColumn(baseline, column.name);
    if (!before || column.tasks === 0) continue;
    for (const row of rows) {
      const current = row.value(column);
      const previous = row.value(before);
      if (current === null || previous === null) continue;
      const verdict = gateCell(row, column, before, thresholdPercent);
      if (verdict.gated && verdict.regression) {
        regressions.push({
          row: `${row.section}: ${row.label}`,
          column: column.name,
          baseline: previous,
          current,
          percent: verdict.percent,
          interval: verdict.interval,
          regression: true,
          reason: verdict.explain(),
        });
      }
    }
  }
  // The answers that need time (spike recovery, soak drift) are gated too.
  return [...regressions, ...verdictRegressions(merged, baseline, thresholdPercent)];
}

/**
 * Metrics the baseline has and this run does not: a metric that vanished is news too. Not the
 * server's name (`cable.server_software.…`): a new version is said beside the baseline instead.
 */
export function onlyInBaseline(merged: MergedResults, baseline: MergedResults): string[] {
  const now = new Set([...Object.keys(merged.all.histograms), ...Object.keys(merged.all.counters)]);
  return [...Object.keys(baseline.all.histograms), ...Object.keys(baseline.all.counters)].filter((m) => !now.has(m) && !isServerSoftwareCounter(m)).sort();
}

/**
 * The baseline check's outcome (target.ts judgeBaseline) in report.md's header, after the Baseline
 * line (or, when the gate refused the baseline and the report was rendered without it, in its
 * place): markdown from renderMarkdown in, the same with these lines out.
 */
export function withBaselineVerdict(markdown: string, verdict: BaselineVerdict, label: string): string {
  const lines = verdict.refused
    ? [`- **Baseline:** ${inline(label, LIMITS.label)} — not compared: ${inline(verdict.refused)}`]
    : verdict.notes.map((note) => `- **Baseline note:** ${inline(note)}`);
  if (lines.length === 0) return markdown;
  const text = markdown.split("\n");
  const baselineAt = text.findIndex((line) => line.startsWith("- **Baseline:**"));
  // Else the end of the header: the first list of `- **…:**` lines (after the title and the headline's quote).
  const headerStart = text.findIndex((line) => line.startsWith("- **"));
  const headerEnd = headerStart < 0 ? -1 : text.findIndex((line, i) => i > headerStart && !line.startsWith("- "));
  const at = baselineAt >= 0 ? baselineAt + 1 : headerStart < 0 ? text.length : headerEnd < 0 ? text.length : headerEnd;
  text.splice(at, 0, ...lines);
  return text.join("\n");
}

function gateQuantile(
  gate: Extract<GateSpec, { kind: "quantile" }>,
  current: Distribution | undefined,
  baseline: Distribution | undefined,
  threshold: number,
  floorMs: number,
): GateVerdict {
  if (!current || !baseline) return { gated: false, why: "not in both runs" };
  if (current.approximate || baseline.approximate || !current.sketch || !baseline.sketch) {
    return { gated: false, why: "≈ (no sketches to test)" };
  }
  const a = quantileInterval(decode(baseline.sketch), gate.q);
  const b = quantileInterval(decode(current.sketch), gate.q);
  if (!a || !b) {
    const needed = Math.max(GATE.minSamples, Math.ceil(GATE.minTailSamples / (1 - gate.q)));
    return { gated: false, why: `too few samples (under ${needed})` };
  }
  const percent = ratioPercent(b.value, a.value);
  const interval: [number, number] = [ratioPercent(b.low, a.high), ratioPercent(b.high, a.low)];
  const delta = b.value - a.value;
  const big = interval[0] >= threshold;
  const aboveFloor = delta >= floorMs;
  const label = `p${Math.round(gate.q * 100)}`;
  const explain = () => [
    `${label} ${fmt(a.value)} → ${fmt(b.value)} ms (${signed(percent)}%, ${signed(delta)} ms)`,
    `95% interval of the change ${signed(interval[0])}% … ${signed(interval[1])}%`,
    `${big ? "all of it ≥" : "not all ≥"} ${threshold}%, ${aboveFloor ? "above" : "under"} the ${fmt(floorMs)} ms floor` +
      (floorMs > GATE.latencyFloorMs ? " (the generator's event-loop lag)" : ""),
  ].join("; ");
  return { gated: true, regression: big && aboveFloor, percent, interval, delta, explain };
}

/**
 * Distribution-free interval of a quantile: the sample ranks n·q ± z·√(n·q·(1−q))
 * bracket the true quantile with ~95% confidence; their values are read from
 * the sketch and widened by its relative accuracy. null: too few samples.
 */
export function quantileInterval(sketch: DDSketch, q: number): { value: number; low: number; high: number } | null {
  const n = sketch.count;
  if (n < GATE.minSamples || n * (1 - q) < GATE.minTailSamples) return null;
  const spread = GATE.z * Math.sqrt(n * q * (1 - q));
  const at = (rank: number) => sketch.getValueAtQuantile(Math.min(Math.max(rank, 0), n - 1) / (n - 1));
  const clamp = (x: number) => Math.min(Math.max(x, sketch.min), sketch.max);
  return {
    value: clamp(at(q * (n - 1))),
    low: clamp(at(Math.floor(q * (n - 1) - spread)) * (1 - RELATIVE_ACCURACY)),
    high: clamp(at(Math.ceil(q * (n - 1) + spread)) * (1 + RELATIVE_ACCURACY)),
  };
}

/**
 * Events per created user, current against baseline: the conditional test of
 * two Poisson rates (given x₀ + x₁ events, x₁ is binomial with p = e₁/(e₀+e₁)
 * under no change), with the log rate ratio's interval (½ added to each count).
 */
function gateRate(gate: Extract<GateSpec, { kind: "rate" }>, current: Column, baseline: Column, threshold: number): GateVerdict {
  const exposure = (c: Column) => c.counters["vusers.created"] ?? 0;
  const events = (c: Column) => {
    const sum = gate.counters.reduce((n, name) => n + (c.counters[name] ?? 0), 0);
    return gate.complement ? Math.max(0, exposure(c) - sum) : sum;
  };
  const e0 = exposure(baseline);
  const e1 = exposure(current);
  if (e0 === 0 || e1 === 0) return { gated: false, why: "no virtual users created" };
  const x0 = events(baseline);
  const x1 = events(current);
  const r0 = x0 / e0;
  const r1 = x1 / e1;
  const percent = r0 === 0 ? (r1 === 0 ? 0 : Infinity) : (r1 / r0 - 1) * 100;
  const logRatio = Math.log((x1 + 0.5) / e1 / ((x0 + 0.5) / e0));
  const se = Math.sqrt(1 / (x1 + 0.5) + 1 / (x0 + 0.5));
  const interval: [number, number] = [(Math.exp(logRatio - GATE.z * se) - 1) * 100, (Math.exp(logRatio + GATE.z * se) - 1) * 100];
  const aboveFloor = r1 - r0 >= GATE.rateFloorPerUser && x1 - x0 * (e1 / e0) >= GATE.countFloor;
  const big = interval[0] >= threshold;
  // The exact test only where it can change the verdict (a large table has thousands of error cells).
  const significant = big && aboveFloor && binomialUpperTail(x1, x0 + x1, e1 / (e0 + e1)) < 0.025;
  const explain = () => [
    `${fmt(r0 * 100)} → ${fmt(r1 * 100)} per 100 users (${Number.isFinite(percent) ? `${signed(percent)}%` : "new"}; ${x0} → ${x1} of ${e0} → ${e1} users)`,
    `95% interval of the change ${signed(interval[0])}% … ${signed(interval[1])}%`,
    `${big ? "all of it ≥" : "not all ≥"} ${threshold}%, ${big && aboveFloor ? (significant ? "significant (exact test)" : "not significant (exact test)") : "not tested"}, ${aboveFloor ? "above" : "under"} the floor (${GATE.rateFloorPerUser * 100} per 100 users and ${GATE.countFloor} events)`,
  ].join("; ");
  return { gated: true, regression: big && significant && aboveFloor, percent, interval, delta: r1 - r0, explain };
}

/** P(X ≥ k) for X ~ Binomial(n, p): exact by log terms up to 5,000 trials, normal (continuity-corrected) beyond. */
export function binomialUpperTail(k: number, n: number, p: number): number {
  if (k <= 0) return 1;
  if (k > n) return 0;
  if (n > 5_000) {
    const mean = n * p;
    const sd = Math.sqrt(n * p * (1 - p));
    return 1 - normalCdf((k - 0.5 - mean) / sd);
  }
  let logTerm = logChoose(n, k) + k * Math.log(p) + (n - k) * Math.log1p(-p);
  let sum = 0;
  for (let i = k; i <= n; i++) {
    const term = Math.exp(logTerm);
    sum += term;
    // Past the mode the terms only shrink; stop once they no longer count.
    if (i > n * p && term < sum * 1e-12) break;
    logTerm += Math.log((n - i) / (i + 1)) + Math.log(p) - Math.log1p(-p);
  }
  return Math.min(1, sum);
}

function logChoose(n: number, k: number): number {
  let sum = 0;
  for (let i = 1; i <= k; i++) sum += Math.log((n - k + i) / i);
  return sum;
}

/** Abramowitz–Stegun 7.1.26 via erf; ample for a p-value threshold. */
function normalCdf(z: number): number {
  const x = Math.abs(z) / Math.SQRT2;
  const t = 1 / (1 + 0.3275911 * x);
  const erf = 1 - ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * Math.exp(-x * x);
  return z >= 0 ? (1 + erf) / 2 : (1 - erf) / 2;
}

function decode(base64: string): DDSketch {
  return DDSketch.fromProto(Buffer.from(base64, "base64"));
}

function ratioPercent(current: number, baseline: number): number {
  if (baseline <= 0) return current > 0 ? Infinity : 0;
  return (current / baseline - 1) * 100;
}

/** One formatter: `toLocaleString` builds a new one per call, which a table of thousands of cells feels. */
const ONE_DECIMAL = new Intl.NumberFormat("en-US", { maximumFractionDigits: 1 });

function fmt(x: number): string {
  return ONE_DECIMAL.format(Math.round(x * 10) / 10);
}

function signed(x: number): string {
  if (!Number.isFinite(x)) return x > 0 ? "+∞" : "−∞";
  const text = fmt(Math.abs(x));
  return x < 0 ? `−${text}` : `+${text}`;
}

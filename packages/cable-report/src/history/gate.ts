// The regression gate against the history: a run judged against the band of normal variation of the
// last comparable runs, not against one baseline. Pure.
//
// Comparable: the same scenario hash (the scenario's text, overrides, variables, environment and tasks
// per region: record.ts scenarioHash), the same target URL, and the branch the band is drawn from
// (main by default: a pull request is judged against what main does, never against other pull
// requests). The band: the last `window` such runs (20 by default), each gated figure of each column
// (a region, or all regions) on its own. All of them, even after a change point: a band drawn from
// the runs after the last one (the new level, once 8 runs hold it) was tried, and on real A/A runs it
// picked a quiet stretch after noisier first runs, whose spread was half the window's, and raised a
// false alarm on the next p99 hiccup (docs/benchmarks.md). After a real step the band is wide for
// up to 20 runs, then narrow again: slower to catch the next step, never quicker to cry wolf.
//
// The boundary: a one-sided prediction interval (band.ts): the mean of the last n runs plus
// t_{1−α, n−1} · s · √(1 + 1/n), on the logarithm of a latency (run-to-run latency noise is
// multiplicative: a p95 of 80 ms moves by a few ms, one of 800 by tens; the log makes it symmetric
// and near normal), on the per-user rate itself for failures and errors (often exactly 0). A
// prediction interval, not a confidence interval of the mean: the question is where one more run
// falls, so the run's own spread counts (the √(1 + 1/n)), and with n runs the t quantile, not z
// (at n = 10 a z bound at 99% covers only ~98%).
//
// α: 1% for the whole run, split evenly (Bonferroni) over the figures judged in it: a run judges
// p50, p95 and p99 of each latency and two rates, per column, often 20 to 40 figures, and each
// figure at 1% would raise a false alarm on most A/A runs. Bonferroni is conservative under the
// strong correlation of these figures (p95 and p99, a region and all regions), so the real
// family-wise rate is lower; docs/benchmarks.md has the A/A and slowdown rates measured.
//
// Above the band means the whole 95% interval of the run's percentile (from its merged sketch, as
// the two-run gate reads it) is above the band's upper bound: a p95 of a few hundred samples moves
// by itself, and the band (run-to-run spread of point values) does not know this run's own luck.
// Beyond the band is not enough, as in the two-run gate (compare.ts): the run must also be worse
// than the band's centre by at least the threshold (--fail-on-regression: what matters), and by at
// least the floor (5 ms for a latency; 1 per 100 users and 3 events for a rate: what no user
// notices). Not the generator's event-loop lag, which the two-run gate adds to its floor: the band's
// runs hold the generator's usual delay already, a generator that was the limit (saturated or
// starved) leaves its latencies out, and a short run's lag figure is the max of a few samples (its
// start-up), which moved by 40 to 60 ms between identical runs here (docs/benchmarks.md). A
// percentile needs the samples the two-run gate asks for (50, and 5 in its tail: p99 from 500). A history of identical
// runs has s = 0 and a band of one value; the threshold and the floor are what keep it from
// failing every run that differs by a microsecond.
//
// With fewer than `minRuns` comparable runs (8) the band would be too wide to catch anything (at
// n = 5, t_{0.999, 4} = 7.2 standard deviations): the gate falls back to today's two-run comparison
// against the newest comparable run (or --baseline when given), and report.md says which it used.
// Latencies of a column whose generator was saturated or starved are left out: of this run (not
// judged) and of the band (not counted).
import { DDSketch } from "@artilleryio/sketches-js";
import { verdictRegressions } from "../verdict-gate.js";
import { GATE, generatorUnfit, quantileInterval } from "../compare.js";
import type { Column, MergedResults } from "../model.js";
import type { Regression } from "../regression.js";
import { bandPosition, bonferroniConfidence, predictionBand, type Band } from "./band.js";
import { historyFigures, formatFigure, type Figure } from "./figures.js";
import type { HistoryRecord, RunIdentity } from "./record.js";
import type { SkippedRecord } from "./store.js";

export const HISTORY_GATE = Object.freeze({
  /** The whole run's one-sided false-alarm rate, split over its figures. */
  familyAlpha: 0.01,
  /** Fewer comparable runs than this: the two-run comparison. */
  minRuns: 8,
  /** The band is drawn from at most this many of the newest comparable runs. */
  window: 20,
  /** The branch the band comes from. */
  branch: "main",
});

export interface ComparableOptions {
  /** null: every branch. */
  branch: string | null;
  window: number;
  /** Keep the runs no band takes (outOfBand): the trend draws them, the gate does not count them. */
  keepOutOfBand?: boolean;
}

/**
 * Why a comparable run makes no band, or null: one stopped by --abort-on or with more failed users
 * than its line allows was not a normal night, and counting it would widen the band by its failure.
 * A run the gate flagged stays in: a change kept is the new normal as the window moves on.
 */
export function outOfBand(record: HistoryRecord): string | null {
  if (record.verdict.aborted) return "a run stopped by --abort-on";
  if (record.verdict.usersOverLine) return "a run with more failed users than maxFailedUsers allows";
  return null;
}

/** Why records were left out of the band, with how many each; said in report.md and trend.md. */
export interface LeftOut {
  why: string;
  runs: number;
}

export interface Comparable {
  /** Oldest first, at most `window`. */
  runs: HistoryRecord[];
  left: LeftOut[];
}

/** What makes two runs comparable: the same experiment (scenario, load, tasks), the same server. */
export type Experiment = Pick<RunIdentity, "scenario" | "target" | "id">;

/** The runs comparable with `current`, newest `window` of them, and what was left out and why. */
export function comparableRuns(records: HistoryRecord[], current: Experiment, options: ComparableOptions): Comparable {
  const counts = new Map<string, number>();
  const leave = (why: string) => counts.set(why, (counts.get(why) ?? 0) + 1);
  const kept: HistoryRecord[] = [];
  for (const r of records) {
    if (r.run.id === current.id) continue;
    if (r.run.scenario.hash !== current.scenario.hash) leave("another scenario, load or task count");
    else if ((r.run.target.url ?? null) !== (current.target.url ?? null)) leave("another target");
    else if (options.branch !== null && r.run.branch !== options.branch) leave(`another branch than ${options.branch}`);
    else if (r.results.all.tasks === 0) leave("no task reported");
    else if (!options.keepOutOfBand && outOfBand(r)) leave(outOfBand(r)!);
    else kept.push(r);
  }
  const runs = kept.slice(Math.max(0, kept.length - options.window));
  if (kept.length > runs.length) counts.set(`older than the last ${options.window}`, kept.length - runs.length);
  return { runs, left: [...counts].map(([why, runs]) => ({ why, runs })) };
}

/** One gated figure of one column against its band. */
export interface FigureVerdict {
  figure: Figure;
  column: string;
  value: number;
  /** The band's runs' values, oldest first (the sparkline). */
  history: number[];
  band: Band | null;
  /** Where the value sits: t-score and one-sided p (null without a band). */
  position: { score: number; p: number } | null;
  regression: boolean;
  /** Not judged, and why (null: judged). */
  notJudged: string | null;
  /** Above the band but no regression: under the threshold or the floor, in words; null otherwise. */
  spared?: string | null;
  reason: string;
}

export type HistoryVerdict =
  | {
      mode: "band";
      runs: number;
      /** Per-figure one-sided confidence of the band's upper bound. */
      confidence: number;
      figures: FigureVerdict[];
      regressions: Regression[];
      left: LeftOut[];
      skipped: SkippedRecord[];
      threshold: number | undefined;
    }
  | {
      mode: "two-run";
      /** Comparable runs found (fewer than minRuns). */
      runs: number;
      /** The newest comparable run's results: the two-run baseline when no --baseline was given. */
      newest: HistoryRecord | null;
      /** Each gated figure with the runs so far (the trend line), none judged. */
      figures: FigureVerdict[];
      left: LeftOut[];
      skipped: SkippedRecord[];
    };

export interface HistoryGateOptions {
  /** --fail-on-regression, percent; undefined: the band is shown, nothing fails. */
  threshold?: number;
  branch?: string | null;
  window?: number;
  minRuns?: number;
}

/** The run judged against its comparable history. */
export function judgeAgainstHistory(
  merged: MergedResults,
  current: Experiment,
  read: { records: HistoryRecord[]; skipped: SkippedRecord[] },
  options: HistoryGateOptions = {},
): HistoryVerdict {
  const minRuns = options.minRuns ?? HISTORY_GATE.minRuns;
  const { runs, left } = comparableRuns(read.records, current, {
    branch: options.branch === undefined ? HISTORY_GATE.branch : options.branch,
    window: options.window ?? HISTORY_GATE.window,
  });
  const figures = historyFigures([merged, ...runs.map((r) => r.results)]).filter((f) => f.gate);
  const columns: Column[] = [...merged.regions.filter((r) => r.tasks > 0), merged.all];
  // First which (figure, column) pairs can be judged: their count sets each one's confidence.
  const pairs = columns.flatMap((column) =>
    figures.map((figure) => {
      const gate = figure.gate!;
      const value = figure.value(column);
      const history = runs.flatMap((r) => {
        const past = pastColumn(r.results, column.name);
        if (!past) return [];
        if (gate.kind === "latency" && generatorUnfit(past)) return [];
        const v = figure.value(past);
        return v === null ? [] : [v];
      });
      const unfit = gate.kind === "latency" ? (generatorUnfit(column) ?? tooFewSamples(column, gate.metric, gate.q)) : undefined;
      const notJudged =
        value === null ? "not in this run" : unfit ? `${unfit}` : history.length < minRuns ? `${history.length} comparable runs have it, ${minRuns} needed` : null;
      return { figure, column, value, history, notJudged };
    }),
  );
  const unjudged = (p: (typeof pairs)[number], why: string | null): FigureVerdict => ({ figure: p.figure, column: p.column.name, value: p.value!, history: p.history, band: null, position: null, regression: false, notJudged: why, reason: why ?? "" });
  if (runs.length < minRuns) {
    const why = `${runs.length} comparable run${runs.length === 1 ? "" : "s"}, ${minRuns} needed for a band`;
    return { mode: "two-run", runs: runs.length, newest: runs.at(-1) ?? null, figures: pairs.filter((p) => p.value !== null).map((p) => unjudged(p, p.notJudged === "not in this run" ? p.notJudged : why)), left, skipped: read.skipped };
  }
  const judged = pairs.filter((p) => p.notJudged === null);
  const confidence = bonferroniConfidence(HISTORY_GATE.familyAlpha, Math.max(1, judged.length));
  const verdicts: FigureVerdict[] = pairs
    .filter((p) => p.value !== null)
    .map((p) => {
      if (p.notJudged !== null) return unjudged(p, p.notJudged);
      const band = predictionBand(p.history, confidence, p.figure.scale)!;
      return judgeFigure(p.figure, p.column, p.value!, p.history, band, options.threshold);
    });
  // The answers that need time (spike recovery, soak drift) have no band: against the newest comparable run, as the two-run gate judges them.
  const timed = options.threshold === undefined ? [] : verdictRegressions(merged, runs[runs.length - 1].results, options.threshold);
  const regressions = [...verdicts.filter((v) => v.regression).map(regressionOf), ...timed];
  return { mode: "band", runs: runs.length, confidence, figures: verdicts, regressions, left, skipped: read.skipped, threshold: options.threshold };
}

function pastColumn(results: MergedResults, name: string): Column | undefined {
  return results.all.name === name ? results.all : results.regions.find((r) => r.name === name && r.tasks > 0);
}

function judgeFigure(figure: Figure, column: Column, value: number, history: number[], band: Band, threshold: number | undefined): FigureVerdict {
  const position = bandPosition(band, value);
  // A percentile is above the band only when its whole 95% interval is (read from this run's merged
  // sketch, as the two-run gate reads it): one run's p95 of a few hundred samples moves by itself.
  const interval = figure.gate!.kind === "latency" ? percentileInterval(column, figure.gate!.metric, figure.gate!.q) : null;
  const lowest = interval ? Math.min(value, interval.low) : value;
  const beyond = lowest > band.high;
  const material = threshold === undefined ? false : band.center <= 0 ? value > 0 : value >= band.center * (1 + threshold / 100);
  let aboveFloor: boolean;
  let floor: string;
  if (figure.gate!.kind === "latency") {
    aboveFloor = value - band.center >= GATE.latencyFloorMs;
    floor = `the ${GATE.latencyFloorMs} ms floor`;
  } else {
    const users = column.counters["vusers.created"] ?? 0;
    aboveFloor = value - band.center >= GATE.rateFloorPerUser && (value - band.center) * users >= GATE.countFloor;
    floor = `the floor (${GATE.rateFloorPerUser * 100} per 100 users and ${GATE.countFloor} events)`;
  }
  const regression = threshold !== undefined && beyond && material && aboveFloor;
  const percent = band.center > 0 ? (value / band.center - 1) * 100 : value > 0 ? Infinity : 0;
  const reason = [
    `${formatFigure(figure, value)} against a band of ${history.length} runs centred on ${formatFigure(figure, band.center)}, upper bound ${formatFigure(figure, band.high)} (${pct(band.confidence)} one-sided${band.scale === "log" ? ", on the log" : ""})`,
    `${beyond ? "above" : value > band.high ? "above, but not its whole 95% interval (from" : "within"}${!beyond && value > band.high ? ` ${formatFigure(figure, lowest)})` : ""} it (t = ${round(position.score)})`,
    threshold === undefined ? `${signed(percent)}% from the centre` : `${signed(percent)}% from the centre, ${material ? "≥" : "<"} ${threshold}%`,
    `${aboveFloor ? "above" : "under"} ${floor}`,
  ].join("; ");
  // Above the band, yet no regression: why, in the section's words.
  const spared =
    regression || !(value > band.high)
      ? null
      : !beyond
        ? `its 95% interval reaches into the band (from ${formatFigure(figure, lowest)})`
        : threshold !== undefined && !material
          ? `under the ${threshold}% threshold`
          : !aboveFloor
            ? `under ${floor}`
            : null;
  return { figure, column: column.name, value, history, band, position, regression, notJudged: null, spared, reason };
}

/** The 95% interval of a percentile from the column's merged sketch; null without one (≈ values) or with too few samples. */
function percentileInterval(column: Column, metric: string, q: number): { low: number; high: number } | null {
  const d = column.histograms[metric];
  if (!d || d.approximate || !d.sketch) return null;
  return quantileInterval(DDSketch.fromProto(Buffer.from(d.sketch, "base64")), q);
}

/** As the two-run gate (compare.ts quantileInterval): a percentile needs samples, and some in its tail. */
function tooFewSamples(column: Column, metric: string, q: number): string | undefined {
  const count = column.histograms[metric]?.count ?? 0;
  const needed = Math.max(GATE.minSamples, Math.ceil(GATE.minTailSamples / (1 - q)));
  return count < needed ? `too few samples (${count}, under ${needed})` : undefined;
}

function regressionOf(v: FigureVerdict): Regression {
  const center = v.band!.center;
  const percent = center > 0 ? (v.value / center - 1) * 100 : Infinity;
  const toPercent = (bound: number) => (bound > 0 ? (v.value / bound - 1) * 100 : Infinity);
  return {
    row: v.figure.title,
    column: v.column,
    baseline: center,
    current: v.value,
    percent,
    // How far beyond the band's two bounds: the change's range against the band.
    interval: [toPercent(v.band!.high), toPercent(v.band!.low)],
    regression: true,
    reason: v.reason,
  };
}

/**
 * ▁▂▃▄▅▆▇█ of the history then this run (after a gap), from zero to the largest of them: a trend
 * line that fits in a table cell. From zero, as a bar chart is drawn: scaled from the smallest, a
 * p99 of 43.4 ms beside one of 43.5 would read as a cliff.
 */
export function sparkline(history: number[], current?: number): string {
  const all = current === undefined ? history : [...history, current];
  const finite = all.filter(Number.isFinite);
  if (finite.length === 0) return "";
  const hi = Math.max(...finite);
  const bar = (v: number) => (Number.isFinite(v) ? BARS[hi <= 0 ? 0 : Math.round((Math.max(0, v) / hi) * (BARS.length - 1))] : " ");
  return `${history.map(bar).join("")}${current === undefined ? "" : ` ${bar(current)}`}`;
}

const BARS = ["▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"];

function round(x: number): string {
  if (!Number.isFinite(x)) return x > 0 ? "∞" : "−∞";
  return (Math.round(x * 10) / 10).toString();
}

function signed(x: number): string {
  if (!Number.isFinite(x)) return "+∞";
  const r = Math.round(x * 10) / 10;
  return r < 0 ? `−${Math.abs(r)}` : `+${r}`;
}

function pct(confidence: number): string {
  return `${Number((confidence * 100).toPrecision(4))}%`;
}

// `cable-report trend`: how each main figure moved per region across the kept runs. Pure: the
// history's records in, the model trend.md and trend.html draw out.
//
// Which runs: those comparable with the newest run on the branch (of --scenario, when given: its
// scenario hash and target, gate.ts comparableRuns), the last `last` of them; the rest are counted as left out, and why. The
// band at each run is the one the gate would have judged that run against: the prediction interval
// of the up-to-20 comparable runs before it (none before the 8th), so a point outside it is a run
// the gate would have flagged, and the line of upper bounds shows the threshold moving with the
// history, as Bencher draws its thresholds. Change points (changepoints.ts) are found on each
// column's series and named by the run where the new level starts.
import { ALL_REGIONS, type Column, type MergedResults } from "../model.js";
import { mainLatency } from "../series.js";
import { bonferroniConfidence, predictionBand } from "./band.js";
import { changePoints, type ChangePoint } from "./changepoints.js";
import { FIGURE_KEYS, historyFigures, pickFigures, type Figure } from "./figures.js";
import { comparableRuns, HISTORY_GATE, outOfBand, type LeftOut } from "./gate.js";
import type { HistoryRecord } from "./record.js";
import type { HistoryRead, SkippedRecord } from "./store.js";

export interface TrendOptions {
  /** The branch whose runs are drawn; null: every branch. */
  branch: string | null;
  /** The newest this many comparable runs. */
  last: number;
  /** --metric: figure keys or prefixes; empty: the main ones (see mainFigures). */
  metrics: string[];
  /** --scenario: its file (as recorded, or its base name) or the start of its hash; absent: the newest run's. */
  scenario?: string;
}

export interface TrendRun {
  id: string;
  at: number;
  /** The run on an axis, UTC: its day, or its day and minute when some day holds more than one run. */
  when: string;
  branch: string | null;
  commit: string | null;
  label: string | null;
  state: HistoryRecord["verdict"]["state"];
  words: string;
  costUsd: number | null;
}

export interface TrendLine {
  column: string;
  /** One per run, oldest first; null: the run has no value for it. */
  values: Array<number | null>;
  /** The band each run was judged against (from the runs before it); null before it has enough. */
  band: Array<{ center: number; low: number; high: number } | null>;
  changePoints: ChangePoint[];
  /** Runs above their band's upper bound. */
  above: number[];
}

export interface TrendFigure {
  figure: Pick<Figure, "key" | "title" | "unit" | "scale" | "worse">;
  lines: TrendLine[];
}

export interface TrendModel {
  scenario: { file: string; hash: string };
  target: string | null;
  branch: string | null;
  runs: TrendRun[];
  /** Regions (the newest run's first, then any other) and all regions, last. */
  columns: string[];
  figures: TrendFigure[];
  /** Per-figure one-sided confidence of the bands. */
  confidence: number;
  left: LeftOut[];
  skipped: SkippedRecord[];
  /** Files not read (beyond the store's cap). */
  unread: number;
}

export class TrendInputError extends Error {}

/** The main figures by default: the main latency's percentiles (broadcast latency when there is one) and the five others. */
export function mainFigures(figures: Figure[], runs: MergedResults[]): Figure[] {
  const main = mainLatency(runs.flatMap((r) => Object.keys(r.all.histograms)));
  return figures.filter((f) => (main !== null && f.key.startsWith(`${main}.`)) || Object.values(FIGURE_KEYS).includes(f.key as never));
}

function scenarioMatches(record: HistoryRecord, wanted: string): boolean {
  const { file, hash } = record.run.scenario;
  return file === wanted || file.split("/").pop() === wanted || (wanted.length >= 6 && hash.startsWith(wanted.toLowerCase()));
}

export function trendModel(read: HistoryRead, options: TrendOptions): TrendModel {
  const onBranch = read.records.filter((r) => options.branch === null || r.run.branch === options.branch);
  const wanted = options.scenario;
  const newest = (wanted === undefined ? onBranch : onBranch.filter((r) => scenarioMatches(r, wanted))).at(-1);
  if (!newest && wanted !== undefined && onBranch.length > 0) {
    const files = [...new Set(onBranch.map((r) => r.run.scenario.file))].slice(0, 10);
    throw new TrendInputError(`--scenario ${JSON.stringify(wanted)}: no such run${options.branch === null ? "" : ` on branch ${options.branch}`} (its scenarios: ${files.join(", ")})`);
  }
  if (!newest) {
    const branches = [...new Set(read.records.map((r) => r.run.branch ?? "(none)"))].slice(0, 10);
    throw new TrendInputError(
      read.records.length === 0
        ? `no run in the history${read.skipped.length > 0 ? ` (${read.skipped.length} record(s) skipped: ${read.skipped[0].reason})` : ""}`
        : `no run on branch ${options.branch} in the history (its runs are on ${branches.join(", ")}; --branch picks one, --all-branches takes every one)`,
    );
  }
  const { runs: picked, left } = comparableRuns(read.records, { ...newest.run, id: "" }, { branch: options.branch, window: Number.MAX_SAFE_INTEGER, keepOutOfBand: true });
  const all = picked;
  const shownFrom = Math.max(0, all.length - options.last);
  const runs = all.slice(shownFrom);
  if (shownFrom > 0) left.push({ why: `older than the last ${options.last}`, runs: shownFrom });

  const results = all.map((r) => r.results);
  const inBand = all.flatMap((r, i) => (outOfBand(r) ? [] : [i]));
  const known = historyFigures(results);
  const { figures, unknown } = options.metrics.length === 0 ? { figures: mainFigures(known, results), unknown: [] } : pickFigures(known, options.metrics);
  if (unknown.length > 0) throw new TrendInputError(`--metric ${unknown.map((u) => JSON.stringify(u)).join(", ")}: no such figure in these runs (they have ${known.map((f) => f.key).join(", ")})`);

  const regionNames: string[] = [];
  for (const r of [...runs].reverse()) for (const region of r.results.regions) if (!regionNames.includes(region.name)) regionNames.push(region.name);
  const columns = [...regionNames, ALL_REGIONS];
  const gated = known.filter((f) => f.gate).length * columns.length;
  const confidence = bonferroniConfidence(HISTORY_GATE.familyAlpha, Math.max(1, gated));

  const columnOf = (r: MergedResults, name: string): Column | undefined => (name === ALL_REGIONS ? r.all : r.regions.find((c) => c.name === name && c.tasks > 0));
  const trendFigures = figures.map((figure): TrendFigure => ({
    figure: { key: figure.key, title: figure.title, unit: figure.unit, scale: figure.scale, worse: figure.worse },
    lines: columns.map((column): TrendLine => {
      // Every comparable run's value (the bands look back past the shown window), then the shown ones.
      const everyValue = results.map((r) => {
        const c = columnOf(r, column);
        return c ? figure.value(c) : null;
      });
      const band = runs.map((_, i) => {
        const at = shownFrom + i;
        // The runs the gate would have counted: the last `window` before this one that a band takes (gate.ts outOfBand).
        const before = inBand.filter((j) => j < at).slice(-HISTORY_GATE.window).flatMap((j) => (everyValue[j] === null ? [] : [everyValue[j]!]));
        if (before.length < HISTORY_GATE.minRuns) return null;
        const b = predictionBand(before, confidence, figure.scale);
        return b && { center: b.center, low: b.low, high: b.high };
      });
      const values = everyValue.slice(shownFrom);
      const above = values.flatMap((v, i) => (v !== null && band[i] !== null && v > band[i]!.high ? [i] : []));
      return { column, values, band, changePoints: changePoints(values, { scale: figure.scale }), above };
    }),
  }));
  const days = runs.map((r) => new Date(r.run.at).toISOString().slice(0, 10));
  const oneADay = new Set(days).size === days.length;
  return {
    scenario: newest.run.scenario,
    target: newest.run.target.url,
    branch: options.branch,
    runs: runs.map((r) => ({
      id: r.run.id,
      at: r.run.at,
      when: new Date(r.run.at).toISOString().slice(0, oneADay ? 10 : 16).replace("T", " "),
      branch: r.run.branch,
      commit: r.run.commit,
      label: r.run.label,
      state: r.verdict.state,
      words: r.verdict.words,
      costUsd: r.cost.billedUsd ?? r.cost.estimateUsd,
    })),
    columns,
    figures: trendFigures,
    confidence,
    left,
    skipped: read.skipped,
    unread: read.unread,
  };
}

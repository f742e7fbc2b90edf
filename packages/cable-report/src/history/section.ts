// report.md's "Against the history" section and its header line: which comparison the gate used,
// and for each gated figure where this run sits in the band of the last comparable runs. Pure.
import { cell, code, inline, LIMITS } from "../text.js";
import { ALL_REGIONS } from "../model.js";
import { formatFigure } from "./figures.js";
import { sparkline, type FigureVerdict, type HistoryVerdict, type LeftOut } from "./gate.js";
import type { SkippedRecord } from "./store.js";

/** Rows shown outside the fold: every all-regions figure and every figure not within its band; the rest folded. */
const MAX_OPEN_ROWS = 24;
const MAX_FOLDED_ROWS = 200;

/** The header's line: what the gate compared with. */
export function historyHeaderLine(verdict: HistoryVerdict, where: string, baselineGiven: boolean): string {
  const place = code(where, LIMITS.label);
  if (verdict.mode === "band") {
    const n = verdict.regressions.length;
    const outcome = verdict.threshold === undefined ? "" : n === 0 ? ` — no regression beyond its band` : ` — ❌ **${n} figure${n === 1 ? "" : "s"} above ${n === 1 ? "its" : "their"} band**`;
    return `- **History:** ${place}: judged against the band of the last ${verdict.runs} comparable runs${outcome}`;
  }
  const fallback = baselineGiven ? "the baseline below" : verdict.newest ? `the newest comparable run (${inline(verdict.newest.run.id, LIMITS.name)})` : "nothing: this run starts it";
  return `- **History:** ${place}: ${verdict.runs} comparable run${verdict.runs === 1 ? "" : "s"}, fewer than a band needs: compared with ${fallback}`;
}

export function historySection(verdict: HistoryVerdict, options: { minRuns: number; branch: string | null }): string[] {
  const out = ["", "### Against the history", ""];
  const scope = `same scenario, load and target${options.branch === null ? "" : `, branch ${inline(options.branch, LIMITS.name)}`}`;
  if (verdict.mode === "two-run") {
    out.push(
      verdict.runs === 0
        ? `No comparable run (${scope}) in the history yet: nothing to judge this run against; it is kept for the next.`
        : `${verdict.runs} comparable run${verdict.runs === 1 ? "" : "s"} (${scope}); a band needs ${options.minRuns}, so the gate compared this run with one run, as a baseline (the Baseline line above).`,
    );
    out.push(...leftOut(verdict.left, verdict.skipped));
    // The runs so far, as the band will judge them once there are enough: the trend line starts with the second run.
    if (verdict.runs > 0) out.push("", ...runsSoFar(verdict.figures.filter((f) => f.column === ALL_REGIONS).slice(0, MAX_OPEN_ROWS)));
    return out;
  }
  const threshold = verdict.threshold;
  out.push(
    `Each figure against the band of the last ${verdict.runs} comparable runs (${scope}): the one-sided ${percent(verdict.confidence)} prediction interval of one more run ` +
      `(1% for the whole run, split over its ${verdict.figures.filter((f) => f.band).length} figures), on the logarithm for latencies. ` +
      (threshold === undefined
        ? "Not gated (no --fail-on-regression)."
        : `A figure regresses when it is above the band, at least ${threshold}% above its centre, and above the floor.`),
  );
  out.push(...leftOut(verdict.left, verdict.skipped));
  const interesting = (f: FigureVerdict) => f.column === ALL_REGIONS || f.regression || (f.band !== null && f.value > f.band.high);
  const open = verdict.figures.filter(interesting).slice(0, MAX_OPEN_ROWS);
  const folded = verdict.figures.filter((f) => !open.includes(f)).slice(0, MAX_FOLDED_ROWS);
  out.push("", ...table(open));
  if (folded.length > 0) out.push("", "<details><summary>Every region's figures</summary>", "", ...table(folded), "", "</details>");
  return out;
}

function table(rows: FigureVerdict[]): string[] {
  const lines = ["| Figure | Column | This run | Band: centre · upper | Last runs → this run | Where |", "|:--|:--|--:|--:|:--|:--|"];
  for (const f of rows) {
    const band = f.band ? `${formatFigure(f.figure, f.band.center)} · ${formatFigure(f.figure, f.band.high)}` : "—";
    const where = f.notJudged
      ? `⚪ not judged: ${cell(f.notJudged, LIMITS.reason)}`
      : f.regression
        ? `❌ above the band (t = ${score(f)})`
        : f.band && f.value > f.band.high
          ? `⚠️ above the band (t = ${score(f)})${f.spared ? `, ${cell(f.spared, LIMITS.reason)}` : ""}`
          : `✅ within (t = ${score(f)})`;
    lines.push(`| ${cell(f.figure.title, LIMITS.label)} | ${cell(f.column, LIMITS.column)} | ${formatFigure(f.figure, f.value)} | ${band} | ${sparkline(f.history, f.value)} | ${where} |`);
  }
  return lines;
}

/** Too few runs for a band: each figure's runs so far, all regions. */
function runsSoFar(rows: FigureVerdict[]): string[] {
  const lines = ["| Figure (all regions) | This run | Last runs → this run |", "|:--|--:|:--|"];
  for (const f of rows) lines.push(`| ${cell(f.figure.title, LIMITS.label)} | ${formatFigure(f.figure, f.value)} | ${sparkline(f.history, f.value)} |`);
  return lines;
}

function leftOut(left: LeftOut[], skipped: SkippedRecord[]): string[] {
  const lines: string[] = [];
  if (left.length > 0) lines.push("", `Left out of the band: ${left.map((l) => `${l.runs} run${l.runs === 1 ? "" : "s"} of ${inline(l.why, LIMITS.label)}`).join("; ")}.`);
  if (skipped.length > 0) {
    const shown = skipped.slice(0, 5).map((s) => `${inline(s.file, LIMITS.name)} (${inline(s.reason, LIMITS.reason)})`);
    lines.push("", `⚠️ ${skipped.length} history record${skipped.length === 1 ? "" : "s"} skipped: ${shown.join("; ")}${skipped.length > 5 ? `; … ${skipped.length - 5} more` : ""}.`);
  }
  return lines;
}

function score(f: FigureVerdict): string {
  const s = f.position?.score ?? 0;
  if (!Number.isFinite(s)) return s > 0 ? "∞" : "−∞";
  return (Math.round(s * 10) / 10).toString();
}

function percent(confidence: number): string {
  return `${Number((confidence * 100).toPrecision(4))}%`;
}

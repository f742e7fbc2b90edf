// trend.md: per main figure a table (each region and all regions: the newest run, its band, the runs
// as a sparkline, the change points) and a mermaid line chart (GitHub renders it), fit for a pull
// request comment. Pure. Outside text (regions, run ids, branches, metric names) through text.ts.
import { chartLabel, cell, code, inline, LIMITS, niceCeiling } from "../text.js";
import { ALL_COLOUR as ALL, PALETTE } from "../over-time.js";
import { formatFigure, shownValue } from "./figures.js";
import { sparkline } from "./gate.js";
import type { TrendFigure, TrendLine, TrendModel } from "./trend-model.js";

/** GitHub refuses comments over 65,536 characters. */
export const TREND_MAX_BYTES = 60_000;

/** The band's upper bound: Tableau 10's grey, beside report.md's own region colours (over-time.ts). */
const BAND = { colour: "#bab0ac", square: "⬜" };

export function renderTrendMarkdown(model: TrendModel, options: { title?: string } = {}): string {
  // Charts first; without them if they do not fit; then fewer region rows.
  for (const charts of [true, false]) {
    const text = render(model, options, charts);
    if (Buffer.byteLength(text) <= TREND_MAX_BYTES) return text;
  }
  return render({ ...model, columns: model.columns.slice(-1), figures: model.figures.map((f) => ({ ...f, lines: f.lines.slice(-1) })) }, options, false);
}

function render(model: TrendModel, options: { title?: string }, charts: boolean): string {
  const out: string[] = [];
  const runs = model.runs;
  const first = runs[0];
  const last = runs[runs.length - 1];
  out.push(`## ${inline(options.title ?? `Trend: ${model.scenario.file}`, LIMITS.title)}`, "");
  out.push(
    `- **Runs:** ${runs.length}${model.branch === null ? " (every branch)" : ` on ${cell(model.branch, LIMITS.name)}`}, ${day(first.at)} to ${day(last.at)}; the newest ${inline(last.id, LIMITS.name)}${last.commit ? ` at ${inline(last.commit.slice(0, 12), LIMITS.name)}` : ""}: ${inline(last.words, LIMITS.label)}`,
    `- **Scenario:** ${inline(model.scenario.file, LIMITS.name)} (${model.scenario.hash.slice(0, 12)}), target ${model.target ? code(model.target, LIMITS.label) : "not known"}`,
    `- **Band:** where the gate expected each run from the up-to-20 comparable runs before it (a ${pct(model.confidence)} one-sided prediction interval; none before the 8th run); ▲ marks a run above it`,
  );
  const failing = runs.filter((r) => r.state === "failed").length;
  if (failing > 0) out.push(`- **❌ ${failing} of the runs failed** (users over the line, checks, or regressions): trend.html lists them`);
  if (model.left.length > 0) out.push(`- **Left out:** ${model.left.map((l) => `${l.runs} run${l.runs === 1 ? "" : "s"} of ${inline(l.why, LIMITS.label)}`).join("; ")}`);
  if (model.skipped.length > 0) out.push(`- **⚠️ Skipped:** ${model.skipped.length} record${model.skipped.length === 1 ? "" : "s"} that could not be read: ${model.skipped.slice(0, 3).map((s) => `${inline(s.file, LIMITS.name)} (${inline(s.reason, LIMITS.reason)})`).join("; ")}${model.skipped.length > 3 ? "; …" : ""}`);
  if (model.unread > 0) out.push(`- **Not read:** the ${model.unread} oldest records (past the cap)`);
  for (const figure of model.figures) out.push(...figureSection(model, figure, charts));
  return `${out.join("\n")}\n`;
}

function figureSection(model: TrendModel, figure: TrendFigure, charts: boolean): string[] {
  const out = ["", `### ${inline(figure.figure.title, LIMITS.label)}`, ""];
  out.push("| Column | Newest | Band: centre · upper | Runs, oldest to newest | Change points |", "|:--|--:|--:|:--|:--|");
  for (const line of figure.lines) {
    const newest = line.values[line.values.length - 1] ?? null;
    const band = line.band[line.band.length - 1];
    const mark = newest !== null && band && newest > band.high ? " ▲" : "";
    const spark = sparkline(line.values.map((v) => v ?? Number.NaN));
    const points = line.changePoints.slice(0, 5).map((c) => `${inline(model.runs[c.index].id, LIMITS.name)} (${model.runs[c.index].when}): ${formatFigure(figure.figure, c.before)} → ${formatFigure(figure.figure, c.after)}`);
    out.push(
      `| ${cell(line.column, LIMITS.column)} | ${formatFigure(figure.figure, newest)}${mark} | ${band ? `${formatFigure(figure.figure, band.center)} · ${formatFigure(figure.figure, band.high)}` : "—"} | ${spark} | ${points.length > 0 ? points.join("; ") : "none"} |`,
    );
  }
  if (charts) out.push(...chart(model, figure));
  return out;
}

/** One line per column (the palette's colours), and the all-regions band's upper bound in grey. */
function chart(model: TrendModel, figure: TrendFigure): string[] {
  const regions = figure.lines.slice(0, -1).slice(0, PALETTE.length);
  const all = figure.lines[figure.lines.length - 1];
  const drawn: Array<{ line: TrendLine; colour: string; square: string; name: string; values: number[] }> = [];
  const filled = (values: Array<number | null>) => fillGaps(values.map((v) => (v === null ? null : shownValue(figure.figure, v))));
  regions.forEach((line, i) => drawn.push({ line, ...PALETTE[i], name: line.column, values: filled(line.values) }));
  drawn.push({ line: all, ...ALL, name: all.column, values: filled(all.values) });
  const upper = all.band.map((b) => (b ? b.high : null));
  if (upper.some((v) => v !== null)) drawn.unshift({ line: all, ...BAND, name: "band's upper bound, all regions", values: filled(upper.map((v) => (v === null ? null : shownValue(figure.figure, v)))) });
  const usable = drawn.filter((d) => d.values.length > 0);
  if (usable.length === 0 || model.runs.length < 2) return [];
  const top = niceCeiling(Math.max(...usable.flatMap((d) => d.values), 0));
  const unit = figure.figure.unit === "per-user" ? "per 100 users" : figure.figure.unit;
  return [
    "",
    "```mermaid",
    `%%{init: {"themeVariables": {"xyChart": {"plotColorPalette": "${usable.map((d) => d.colour).join(", ")}"}}}}%%`,
    "xychart-beta",
    `    title "${chartLabel(figure.figure.title)}"`,
    `    x-axis [${model.runs.map((r) => `"${chartLabel(r.when.slice(5))}"`).join(", ")}]`,
    `    y-axis "${chartLabel(unit)}" 0 --> ${top}`,
    ...usable.map((d) => `    line [${d.values.map((v) => Math.round(v * 100) / 100).join(", ")}]`),
    "```",
    "",
    `${usable.map((d) => `${d.square} ${inline(d.name, LIMITS.column)}`).join(" · ")}; one point per run (runs without a value drawn from their neighbours)`,
  ];
}

/** Mermaid's lines have no gaps: a missing run takes its nearest earlier value (or the first one after). [] when none. */
function fillGaps(values: Array<number | null>): number[] {
  const firstKnown = values.find((v): v is number => v !== null);
  if (firstKnown === undefined) return [];
  let lastKnown = firstKnown;
  return values.map((v) => (v === null ? lastKnown : (lastKnown = v)));
}

function day(at: number): string {
  return new Date(at).toISOString().slice(0, 10);
}

function pct(confidence: number): string {
  return `${Number((confidence * 100).toPrecision(4))}%`;
}

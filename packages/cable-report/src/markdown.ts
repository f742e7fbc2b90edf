// Markdown for a pull-request comment, pure: merged results in, text out,
// always under the comment size limit.
import { changeOf, baselineColumn, findRegressions } from "./compare.js";
import type { Column, MergedResults, RegionColumn } from "./model.js";
import { latencyMetrics, tableRows, type NumericRow, type Row, type Unit } from "./rows.js";

export interface RenderOptions {
  title?: string;
  baseline?: MergedResults;
  /** Where the baseline came from, shown in the header. */
  baselineLabel?: string;
  /** Percent; cells worse than the baseline by more are marked as regressions. */
  regressionThreshold?: number;
  /** GitHub rejects PR comments over 65,536 characters; stay well below. */
  maxBytes?: number;
}

export const DEFAULT_MAX_BYTES = 60_000;

interface Limits {
  maxRegions: number;
  maxErrorRows: number;
  charts: boolean;
}

/**
 * Tries the full layout first, then fewer error rows and no charts, then
 * fewer region columns, until the text fits.
 */
export function renderMarkdown(merged: MergedResults, options: RenderOptions = {}): string {
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES;
  const regionCount = merged.regions.length;
  const attempts: Limits[] = [
    { maxRegions: regionCount, maxErrorRows: 20, charts: true },
    { maxRegions: regionCount, maxErrorRows: 10, charts: false },
  ];
  for (let n = Math.floor(regionCount / 2); n >= 1; n = Math.floor(n / 2)) {
    attempts.push({ maxRegions: n, maxErrorRows: 5, charts: false });
  }
  const threshold = options.regressionThreshold;
  const regressions =
    options.baseline && threshold !== undefined ? findRegressions(merged, options.baseline, threshold).length : undefined;
  let text = "";
  for (const limits of attempts) {
    text = render(merged, options, limits, regressions);
    if (Buffer.byteLength(text) <= maxBytes) return text;
  }
  throw new Error(`the report does not fit in ${maxBytes} bytes even with one region column`);
}

/** `regressions`: how many cells regressed beyond the threshold, if one was given. */
function render(merged: MergedResults, options: RenderOptions, limits: Limits, regressions?: number): string {
  const shown = pickRegions(merged.regions, limits.maxRegions);
  const view: MergedResults = { ...merged, regions: shown };
  const columns: Column[] = [...shown, merged.all];
  const out: string[] = [];

  out.push(`## ${inline(options.title ?? `Load test: ${merged.test.name || merged.test.scenarios.join(", ")}`)}`, "");
  out.push(...header(merged, options, regressions));
  out.push("", ...table(view, columns, options, limits));
  out.push(...regionMarks(merged.regions));
  if (shown.length < merged.regions.length) {
    const left = merged.regions.filter((r) => !shown.includes(r)).map((r) => r.name);
    out.push(
      "",
      `${left.length} more regions are left out to stay under the PR comment size limit (see the --json output): ` +
        truncate(left.join(", "), 1_000),
    );
  }
  if (limits.charts) out.push(...charts(view, columns));
  out.push(...notes(merged, options));
  return out.join("\n") + "\n";
}

/** Flagged regions (missing or short) first: a reviewer must see them. */
function pickRegions(regions: RegionColumn[], max: number): RegionColumn[] {
  if (regions.length <= max) return regions;
  const flagged = regions.filter(isFlagged);
  const keep = new Set([...flagged, ...regions.filter((r) => !isFlagged(r))].slice(0, max));
  return regions.filter((r) => keep.has(r));
}

function isFlagged(r: RegionColumn): boolean {
  return r.tasks < r.expectedTasks;
}

function header(merged: MergedResults, options: RenderOptions, regressions?: number): string[] {
  const { all } = merged;
  const lines: string[] = [];
  if (merged.test.name) lines.push(`- **Test:** ${inline(merged.test.name)}`);
  lines.push(`- **Scenarios:** ${inline(merged.test.scenarios.join(", ") || "—")}`);
  if (all.firstMetricAt !== null && all.lastMetricAt !== null) {
    lines.push(`- **Run:** ${utc(all.firstMetricAt)}, ${duration(all.lastMetricAt - all.firstMetricAt)}`);
  }
  const perRegion = merged.regions.map((r) => `${inline(r.name)}: ${r.tasks}`).join(", ");
  lines.push(`- **Tasks per region:** ${truncate(perRegion, 2_000)} (${all.tasks} in all)`);
  if (merged.test.phases.length > 0) {
    const phases = merged.test.phases.slice(0, 20).map(phase);
    const more = merged.test.phases.length > 20 ? `; … ${merged.test.phases.length - 20} more` : "";
    lines.push(`- **Phases:** ${inline(phases.join("; "))}${more}`);
  }
  if (options.baseline) {
    const threshold = options.regressionThreshold;
    const verdict =
      regressions === undefined
        ? ""
        : regressions === 0
          ? ` — no regression beyond ${threshold}%`
          : ` — ❌ **${regressions} regression${regressions === 1 ? "" : "s"} beyond ${threshold}%** (bold cells)`;
    lines.push(`- **Baseline:** ${inline(options.baselineLabel ?? "given")}${verdict}`);
  }
  return lines;
}

function table(view: MergedResults, columns: Column[], options: RenderOptions, limits: Limits): string[] {
  const heading = columns.map((c) => (c === view.all ? `**${c.name}**` : `${cell(truncate(c.name, 40))}${regionMark(c as RegionColumn)}`));
  const lines = [`| Metric | ${heading.join(" | ")} |`, `|:--|${columns.map(() => "--:").join("|")}|`];
  let section = "";
  for (const row of tableRows(view, { maxErrorRows: limits.maxErrorRows })) {
    if (row.section !== section) {
      section = row.section;
      lines.push(`| **${cell(section)}** |${columns.map(() => " ").join("|")}|`);
    }
    const cells = columns.map((c) => cellText(row, c, options));
    lines.push(`| ${cell(truncate(row.label, 120))} | ${cells.join(" | ")} |`);
  }
  return lines;
}

function cellText(row: Row, column: Column, options: RenderOptions): string {
  if (column.tasks === 0) return "—";
  if (row.kind === "text") return cell(row.text(column));
  const value = row.value(column);
  if (value === null) return "—";
  const shown = `${row.approximate?.(column) ? "≈" : ""}${format(value, row.unit)}`;
  const before = baselineColumn(options.baseline, column.name);
  const previous = before ? row.value(before) : null;
  if (previous === null) return shown;
  return withChange(row, shown, value, previous, options.regressionThreshold);
}

function withChange(row: NumericRow, shown: string, value: number, previous: number, threshold?: number): string {
  const change = changeOf(row, value, previous, threshold);
  const arrow = change.percent > 0 ? "▲" : change.percent < 0 ? "▼" : "";
  const amount = !Number.isFinite(change.percent)
    ? "▲ new"
    : arrow
      ? `${arrow} ${Math.abs(change.percent).toFixed(1)}%`
      : "±0%";
  return change.regression ? `**${shown} ${amount}**` : `${shown} ${amount}`;
}

function regionMark(column: RegionColumn): string {
  if (column.tasks === 0) return " ❌";
  return column.tasks < column.expectedTasks ? " ⚠️" : "";
}

function regionMarks(regions: RegionColumn[]): string[] {
  const lines = regions.filter(isFlagged).map((r) =>
    r.tasks === 0
      ? `- ❌ **${inline(r.name)}**: no reports (expected ${r.expectedTasks} task${r.expectedTasks === 1 ? "" : "s"})`
      : `- ⚠️ **${inline(r.name)}**: ${r.tasks} of ${r.expectedTasks} tasks reported`,
  );
  return lines.length > 0 ? ["", ...lines.slice(0, 50)] : [];
}

/**
 * One xychart per latency metric. Mermaid draws bar series on top of each
 * other, so p99, p95 and p50 drawn in that order read as nested bars.
 */
function charts(view: MergedResults, columns: Column[]): string[] {
  const out: string[] = [];
  const labels = columns.map((c) => `"${chartLabel(c.name)}"`).join(", ");
  for (const { metric, title } of latencyMetrics(view)) {
    const series = (stat: "p50" | "p95" | "p99") =>
      `[${columns.map((c) => c.histograms[metric]?.[stat] ?? 0).join(", ")}]`;
    out.push(
      "",
      "```mermaid",
      "xychart-beta",
      `    title "${chartLabel(title)} (ms): p99, p95, p50 bars back to front"`,
      `    x-axis [${labels}]`,
      '    y-axis "ms"',
      `    bar ${series("p99")}`,
      `    bar ${series("p95")}`,
      `    bar ${series("p50")}`,
      "```",
    );
  }
  return out;
}

function notes(merged: MergedResults, options: RenderOptions): string[] {
  const lines = merged.notes.slice(0, 20).map((n) => `- ${inline(truncate(n, 300))}`);
  if (merged.notes.length > 20) lines.push(`- … ${merged.notes.length - 20} more notes in the --json output`);
  lines.push(
    "- Percentiles are merged from the tasks' DDSketch histograms (1% relative accuracy), as Artillery merges its workers; " +
      "peaks are the highest 10 s period after summing the tasks' periods by timestamp.",
  );
  if (options.baseline) lines.push("- ▲/▼: change from the baseline; bold: a regression beyond the threshold.");
  return ["", "<details><summary>Notes</summary>", "", ...lines, "", "</details>"];
}

function phase(p: Record<string, unknown>): string {
  const parts: string[] = [];
  if (p.duration !== undefined) parts.push(`${String(p.duration)} s`);
  if (p.arrivalRate !== undefined) {
    parts.push(p.rampTo !== undefined ? `${String(p.arrivalRate)}→${String(p.rampTo)}/s` : `${String(p.arrivalRate)}/s`);
  }
  if (p.arrivalCount !== undefined) parts.push(`${String(p.arrivalCount)} users`);
  if (p.pause !== undefined) parts.push(`pause ${String(p.pause)} s`);
  if (p.maxVusers !== undefined) parts.push(`max ${String(p.maxVusers)} users`);
  const body = parts.join(", ") || "—";
  return typeof p.name === "string" ? `${p.name}: ${body}` : body;
}

function format(value: number, unit: Unit): string {
  const digits = unit === "ms" ? 1 : unit === "rate" && !Number.isInteger(value) ? 1 : 0;
  return value.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

function utc(ms: number): string {
  return new Date(ms).toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC");
}

function duration(ms: number): string {
  const s = Math.round(ms / 1000);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const parts = [h ? `${h} h` : "", m ? `${m} min` : "", `${s % 60} s`].filter(Boolean);
  return parts.join(" ");
}

function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** Text inside a table cell: no row breaks, no column breaks, no raw HTML. */
function cell(text: string): string {
  return inline(text).replace(/\|/g, "\\|");
}

function inline(text: string): string {
  return text.replace(/[\r\n]+/g, " ").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

function chartLabel(text: string): string {
  return truncate(text.replace(/["\r\n]/g, "'"), 40);
}

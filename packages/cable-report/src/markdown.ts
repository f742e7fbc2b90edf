// Markdown for a pull-request comment, pure: merged results in, text out,
// always under the comment size limit.
import { errorHints } from "./error-hints.js";
import { headline } from "./headline.js";
import { baselineColumn, changeOf, findRegressions, gateCell, GATE, onlyInBaseline, type Regression } from "./compare.js";
import type { Column, MergedResults, RegionColumn } from "./model.js";
import { latencyMetrics, tableRows, type NumericRow, type Row, type Unit } from "./rows.js";
import { overTimeSection, verdictSection } from "./over-time.js";
import { LAG_MIN_SAMPLES_FOR_P99, SATURATION_THRESHOLDS } from "./saturation.js";
import type { HistoryVerdict } from "./history/gate.js";
import { historyHeaderLine, historySection } from "./history/section.js";
import { cell, chartLabel, clock, code, inline, LIMITS, niceCeiling } from "./text.js";

export interface RenderOptions {
  title?: string;
  baseline?: MergedResults;
  /** Where the baseline came from, shown in the header. */
  baselineLabel?: string;
  /** Percent; cells worse than the baseline by more are marked as regressions. */
  regressionThreshold?: number;
  /** GitHub rejects PR comments over 65,536 characters; stay well below. */
  maxBytes?: number;
  /** false: tables only, no mermaid charts (report.html draws its own). */
  charts?: boolean;
  /**
   * The columns are servers run one after the other (servers.ts), not regions of one run: no
   * "all regions" column (a sum of two servers means nothing), and no charts over time (each
   * server's run has its own report.html).
   */
  servers?: boolean;
  /**
   * The run judged against its history (history/gate.ts): its header line and section; in band
   * mode its regressions are the gate's (the table still shows the deltas against `baseline`).
   */
  history?: { verdict: HistoryVerdict; where: string; minRuns: number; branch: string | null; baselineGiven: boolean };
}

export const DEFAULT_MAX_BYTES = 60_000;

/** The report's heading: `--title`, or the test's name. Outside text: callers escape it for their medium. */
export function reportTitle(merged: MergedResults, options: Pick<RenderOptions, "title">): string {
  return options.title ?? `Load test: ${merged.test.name || merged.test.scenarios.join(", ")}`;
}

/** Names joined, each escaped and capped, at most `max` of them (then "… n more"). */
function names(list: string[], max: number, cap: number = LIMITS.name): string {
  const shown = list.slice(0, max).map((n) => inline(n, cap));
  return list.length > max ? `${shown.join(", ")}, … ${list.length - max} more` : shown.join(", ");
}

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
    { maxRegions: regionCount, maxErrorRows: 20, charts: options.charts !== false },
    { maxRegions: regionCount, maxErrorRows: 10, charts: false },
  ];
  for (let n = Math.floor(regionCount / 2); n >= 1; n = Math.floor(n / 2)) {
    attempts.push({ maxRegions: n, maxErrorRows: 5, charts: false });
  }
  const threshold = options.regressionThreshold;
  const band = options.history?.verdict.mode === "band" ? options.history.verdict : undefined;
  const regressions = band
    ? band.threshold === undefined
      ? undefined
      : band.regressions
    : options.baseline && threshold !== undefined
      ? findRegressions(merged, options.baseline, threshold)
      : undefined;
  let text = "";
  for (const limits of attempts) {
    text = render(merged, options, limits, regressions);
    if (Buffer.byteLength(text) <= maxBytes) return text;
  }
  throw new Error(`the report does not fit in ${maxBytes} bytes even with one region column`);
}

/** `regressions`: the cells that failed the gate, if a threshold was given. */
function render(merged: MergedResults, options: RenderOptions, limits: Limits, regressions?: Regression[]): string {
  const shown = pickRegions(merged.regions, limits.maxRegions);
  const view: MergedResults = { ...merged, regions: shown };
  const columns: Column[] = options.servers ? [...shown] : [...shown, merged.all];
  const out: string[] = [];

  out.push(`## ${inline(reportTitle(merged, options), LIMITS.title)}`);
  // What a person looks for first, above everything: how it ended, users, peak, latency, errors, checks, target.
  out.push(...headline(merged, { servers: options.servers, regressions: regressions?.length, threshold: options.regressionThreshold }), "");
  out.push(...header(merged, options, regressions?.length));
  out.push(...regressionList(regressions ?? [], options.regressionThreshold, options.history?.verdict.mode === "band"));
  out.push(...saturationBanner(merged));
  // Against a band the bold cells would be a second, two-run verdict: the table shows the deltas only.
  const cellOptions = options.history?.verdict.mode === "band" ? { ...options, regressionThreshold: undefined } : options;
  out.push("", ...table(view, columns, cellOptions, limits));
  out.push(...regionMarks(merged.regions));
  out.push(...errorHints(merged));
  if (options.baseline) out.push(...vanished(merged, options.baseline));
  if (options.history) out.push(...historySection(options.history.verdict, options.history));
  if (shown.length < merged.regions.length) {
    const left = merged.regions.filter((r) => !shown.includes(r)).map((r) => r.name);
    out.push(
      "",
      `${left.length} more regions are left out to stay under the PR comment size limit (see the --json output): ${names(left, 20)}`,
    );
  }
  if (limits.charts && !options.servers) out.push(...overTimeSection(merged, columns));
  out.push(...verdictSection(merged, columns));
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
  return r.tasks < r.expectedTasks || r.rejected.length > 0;
}

/** Per failed cell: the change, its interval and the three conditions it met. */
function regressionList(regressions: Regression[], threshold?: number, band = false): string[] {
  if (regressions.length === 0) return [];
  const shown = regressions.slice(0, 30).map((r) => `- **${inline(r.row, LIMITS.label)}**, ${inline(r.column, LIMITS.column)}: ${inline(r.reason)}`);
  if (regressions.length > 30) shown.push(`- … ${regressions.length - 30} more (listed on stderr)`);
  const title = band ? `above the band of the history, ≥ ${threshold}% above its centre, above the floor` : `significantly ≥ ${threshold}%, above the floor`;
  return ["", `### ❌ Regressions (${title})`, "", ...shown];
}

/**
 * A saturated generator's latencies include its own delay: say so above the
 * table, naming the tasks, before anyone reads them as the server's.
 */
function saturationBanner(merged: MergedResults): string[] {
  const tasks = merged.regions.flatMap((r) => r.generator);
  const saturated = tasks.filter((t) => t.saturated);
  // Starved: late while its machine was busy with other work. Marked as much as saturation, in its own words, without its advice.
  const starved = tasks.filter((t) => !t.saturated && t.starved);
  const named = (list: typeof tasks, join: string) => {
    const shown = list.slice(0, 10).map((t) => `${code(t.file, LIMITS.label)} (${t.reasons.join(join)})`);
    return `${shown.join("; ")}${list.length > 10 ? `, and ${list.length - 10} more` : ""}`;
  };
  const count = (n: number) => `${n} task${n === 1 ? "" : "s"}`;
  const out: string[] = [];
  if (saturated.length > 0) {
    out.push(
      "",
      `> ⚠️ **The load generator was saturated** in ${count(saturated.length)}: ${named(saturated, ", ")}. ` +
        "Their latencies include the generator's own delay, so they describe the generator, not the server " +
        "(the regression gate leaves their regions' latencies out). " +
        `Limits: event-loop lag ≤ ${SATURATION_THRESHOLDS.lagP99Ms} ms (p99, or the max under ${LAG_MIN_SAMPLES_FOR_P99} samples), CPU ≤ ${SATURATION_THRESHOLDS.cpuPercent}%; ` +
        "run fewer virtual users per task, or more tasks.",
    );
  }
  if (starved.length > 0) {
    out.push(
      "",
      `> ⚠️ **The load generator was starved** in ${count(starved.length)}: ${named(starved, "; ")}. ` +
        "This machine was busy with other work: the generator's event loop ran late while it used little CPU of its own (it waited for a CPU, it did not use one), " +
        "so their latencies include that delay (the regression gate leaves their regions' latencies out). " +
        "More workers would not help; run it where nothing else competes for its cores.",
    );
  }
  return out;
}

function vanished(merged: MergedResults, baseline: MergedResults): string[] {
  const gone = onlyInBaseline(merged, baseline);
  if (gone.length === 0) return [];
  const shown = gone.slice(0, 30).map((m) => code(m, LIMITS.name));
  const more = gone.length > 30 ? `, … ${gone.length - 30} more` : "";
  return ["", `- Only in the baseline (not recorded by this run): ${shown.join(", ")}${more}`];
}

function header(merged: MergedResults, options: RenderOptions, regressions?: number): string[] {
  const { all } = merged;
  const lines: string[] = [];
  if (merged.test.name) lines.push(`- **Test:** ${inline(merged.test.name, LIMITS.name)}`);
  lines.push(`- **Scenarios:** ${names(merged.test.scenarios, 20) || "—"}`);
  if (all.firstMetricAt !== null && all.lastMetricAt !== null && !options.servers) {
    lines.push(`- **Run:** ${utc(all.firstMetricAt)}, ${duration(all.lastMetricAt - all.firstMetricAt)}`);
  }
  const aborted = merged.timeline?.aborted;
  if (aborted) {
    const at = merged.timeline?.start ? ` at ${clock(aborted.at - merged.timeline.start)}` : "";
    lines.push(`- **⛔ Stopped early${at}** by ${code(`--abort-on ${aborted.condition}`)}: ${code(aborted.figure)}`);
  }
  const perRegion = merged.regions.slice(0, 50).map((r) => `${inline(r.name, LIMITS.name)}: ${r.tasks}`);
  if (merged.regions.length > 50) perRegion.push(`… ${merged.regions.length - 50} more`);
  if (options.servers) lines.push(`- **Servers, one after the other:** ${perRegion.join(", ")} task(s) each, the same scenario and regions`);
  else lines.push(`- **Tasks per region:** ${perRegion.join(", ")} (${all.tasks} in all)`);
  if (merged.test.phases.length > 0) {
    const phases = merged.test.phases.slice(0, 20).map((p) => inline(phase(p), LIMITS.label));
    const more = merged.test.phases.length > 20 ? `; … ${merged.test.phases.length - 20} more` : "";
    lines.push(`- **Phases:** ${phases.join("; ")}${more}`);
  }
  const band = options.history?.verdict.mode === "band";
  if (options.history) lines.push(historyHeaderLine(options.history.verdict, options.history.where, options.history.baselineGiven));
  if (options.baseline) {
    const threshold = options.regressionThreshold;
    const verdict =
      regressions === undefined || band
        ? ""
        : regressions === 0
          ? ` — no regression beyond ${threshold}%`
          : ` — ❌ **${regressions} regression${regressions === 1 ? "" : "s"} beyond ${threshold}%** (bold cells, listed below)`;
    lines.push(`- **Baseline:** ${inline(options.baselineLabel ?? "given", LIMITS.label)}${verdict}`);
  }
  return lines;
}

function table(view: MergedResults, columns: Column[], options: RenderOptions, limits: Limits): string[] {
  const heading = columns.map((c) => (c === view.all ? `**${cell(c.name, LIMITS.column)}**` : `${cell(c.name, LIMITS.column)}${regionMark(c as RegionColumn)}`));
  const lines = [`| Metric | ${heading.join(" | ")} |`, `|:--|${columns.map(() => "--:").join("|")}|`];
  let section = "";
  for (const row of tableRows(view, { maxErrorRows: limits.maxErrorRows })) {
    if (row.section !== section) {
      section = row.section;
      lines.push(`| **${cell(section, LIMITS.label)}** |${columns.map(() => " ").join("|")}|`);
    }
    const cells = columns.map((c) => cellText(row, c, options));
    lines.push(`| ${cell(row.label, LIMITS.label)} | ${cells.join(" | ")} |`);
  }
  return lines;
}

function cellText(row: Row, column: Column, options: RenderOptions): string {
  if (column.tasks === 0) return "—";
  if (row.kind === "text") return cell(row.text(column), LIMITS.label);
  const value = row.value(column);
  if (value === null) return "—";
  const shown = `${row.approximate?.(column) ? "≈" : ""}${format(value, row.unit)}`;
  const before = baselineColumn(options.baseline, column.name);
  const previous = before ? row.value(before) : null;
  if (previous === null || !before) return shown;
  const threshold = options.regressionThreshold;
  const failed = threshold !== undefined && row.gate !== undefined && gateFails(row, column, before, threshold);
  return withChange(row, shown, value, previous, failed);
}

function gateFails(row: NumericRow, column: Column, before: Column, threshold: number): boolean {
  const verdict = gateCell(row, column, before, threshold);
  return verdict.gated && verdict.regression;
}

function withChange(row: NumericRow, shown: string, value: number, previous: number, failed: boolean): string {
  const change = changeOf(row, value, previous);
  const arrow = change.percent > 0 ? "▲" : change.percent < 0 ? "▼" : "";
  const amount = !Number.isFinite(change.percent)
    ? "▲ new"
    : arrow
      ? `${arrow} ${Math.abs(change.percent).toFixed(1)}%`
      : "±0%";
  return failed ? `**${shown} ${amount}**` : `${shown} ${amount}`;
}

function regionMark(column: RegionColumn): string {
  if (column.tasks === 0) return " ❌";
  return isFlagged(column) ? " ⚠️" : "";
}

function regionMarks(regions: RegionColumn[]): string[] {
  const lines = regions.filter(isFlagged).map((r) => {
    const files = r.rejected
      .slice(0, 5)
      .map((f) => `${f.kind === "corrupt" ? "corrupt" : "duplicate"} ${code(f.file, LIMITS.label)} (${inline(f.reason, LIMITS.reason)})`);
    if (r.rejected.length > 5) files.push(`${r.rejected.length - 5} more`);
    const detail = files.length > 0 ? `; ${files.join("; ")}` : "";
    return r.tasks === 0
      ? `- ❌ **${inline(r.name, LIMITS.name)}**: no reports (expected ${r.expectedTasks} task${r.expectedTasks === 1 ? "" : "s"})${detail}`
      : `- ⚠️ **${inline(r.name, LIMITS.name)}**: ${r.tasks} of ${r.expectedTasks} tasks reported${detail}`;
  });
  return lines.length > 0 ? ["", ...lines.slice(0, 50)] : [];
}

/**
 * Charts that do not mislead: the y-axis starts at 0; a column without data
 * gets no bar (it is named under the chart instead of drawn as 0); p99 and
 * p50 share a chart only when they are within 10× of each other (else one
 * chart each), and columns more than 10× apart go to separate charts, so a
 * small series is never crushed. Mermaid's xychart has no legend and draws bar
 * series on top of each other, so the colours are fixed and named under each
 * chart. The first metric's charts are shown; the rest fold into <details>.
 */
function charts(view: MergedResults, columns: Column[]): string[] {
  const metrics = latencyMetrics(view);
  const blocks = metrics.map(({ metric, title }) => metricCharts(metric, title, columns));
  const [first, ...rest] = blocks;
  if (!first) return [];
  const out = ["", "### Latency charts", ...first];
  if (rest.length > 0) {
    out.push("", `<details><summary>${rest.length} more latency chart${rest.length === 1 ? "" : "s"}</summary>`, ...rest.flat(), "", "</details>");
  }
  return out;
}

/** Mermaid's default palette is not fixed across themes; these match the legend's squares. */
const P99_COLOUR = "#4e79a7";
const P50_COLOUR = "#f28e2b";
const RANGE_LIMIT = 10;

interface ChartSeries {
  label: string;
  colour: string;
  square: string;
  values: number[];
}

function metricCharts(metric: string, title: string, columns: Column[]): string[] {
  const withData = columns.filter((c) => c.tasks > 0 && c.histograms[metric]);
  const missing = columns.filter((c) => !withData.includes(c));
  const p99 = withData.map((c) => c.histograms[metric].p99);
  const p50 = withData.map((c) => c.histograms[metric].p50);
  const out: string[] = ["", `**${inline(title, LIMITS.label)} (ms)**`];
  const together = spread([...p99, ...p50]) <= RANGE_LIMIT;
  const seriesSets: ChartSeries[][] = together
    ? [[{ label: "p99", colour: P99_COLOUR, square: "🟦", values: p99 }, { label: "p50", colour: P50_COLOUR, square: "🟧", values: p50 }]]
    : [[{ label: "p99", colour: P99_COLOUR, square: "🟦", values: p99 }], [{ label: "p50", colour: P50_COLOUR, square: "🟧", values: p50 }]];
  for (const series of seriesSets) {
    for (const band of bands(withData.map((_, i) => i), (i) => Math.max(...series.map((s) => s.values[i])))) {
      out.push(...xychart(title, band.map((i) => withData[i].name), series.map((s) => ({ ...s, values: band.map((i) => s.values[i]) }))));
    }
  }
  if (missing.length > 0) out.push("", `No data (no bar): ${names(missing.map((c) => c.name), 20)}`);
  return out;
}

/** Largest over smallest positive value (1 when there is nothing to compare). */
function spread(values: number[]): number {
  const positive = values.filter((v) => v > 0);
  return positive.length < 2 ? 1 : Math.max(...positive) / Math.min(...positive);
}

/** Columns grouped so that within a group the largest value is at most 10× the smallest, in column order. */
function bands(indices: number[], value: (i: number) => number): number[][] {
  const sorted = [...indices].sort((a, b) => value(a) - value(b));
  const groups: number[][] = [];
  for (const i of sorted) {
    const group = groups[groups.length - 1];
    const floor = group ? Math.max(value(group[0]), Number.MIN_VALUE) : 0;
    if (group && value(i) <= floor * RANGE_LIMIT) group.push(i);
    else groups.push([i]);
  }
  return groups.map((g) => g.sort((a, b) => a - b));
}

function xychart(title: string, labels: string[], series: ChartSeries[]): string[] {
  const top = niceCeiling(Math.max(...series.flatMap((s) => s.values), 0));
  const palette = series.map((s) => s.colour).join(", ");
  return [
    "",
    "```mermaid",
    `%%{init: {"themeVariables": {"xyChart": {"plotColorPalette": "${palette}"}}}}%%`,
    "xychart-beta",
    `    title "${chartLabel(`${title}: ${series.map((s) => s.label).join(" and ")}`)}"`,
    `    x-axis [${labels.map((l) => `"${chartLabel(l)}"`).join(", ")}]`,
    `    y-axis "ms" 0 --> ${top}`,
    ...series.map((s) => `    bar [${s.values.join(", ")}]`),
    "```",
    "",
    series.length > 1
      ? `${series.map((s) => `${s.square} ${s.label}`).join(" · ")} (${series[series.length - 1].label} drawn in front); one bar per column`
      : `${series[0].square} ${series[0].label}; one bar per column`,
  ];
}

function notes(merged: MergedResults, options: RenderOptions): string[] {
  const lines = merged.notes.slice(0, 20).map((n) => `- ${inline(n, LIMITS.note)}`);
  if (merged.notes.length > 20) lines.push(`- … ${merged.notes.length - 20} more notes in the --json output`);
  lines.push(
    "- Percentiles are merged from the tasks' DDSketch histograms (1% relative accuracy), as Artillery merges its workers; " +
      "peaks are the highest 10 s period after summing the tasks' periods by timestamp.",
  );
  if (options.baseline) {
    lines.push(
      "- ▲/▼: change from the baseline. Bold: the cell failed the regression gate, which needs both: the whole 95% interval of the change " +
        "at or above the threshold (from the two runs' percentile intervals, read from the merged sketches, or the error rates per user); " +
        `and a change above the floor (${GATE.latencyFloorMs} ms or the generator's event-loop lag (p99, or the max under ${LAG_MIN_SAMPLES_FOR_P99} samples), whichever is larger; ` +
        `${GATE.rateFloorPerUser * 100} per 100 users and ${GATE.countFloor} events). ` +
        "Only server latencies (p50, p95, p99), failed and incomplete users and errors are gated: never Max, ≈ values, " +
        `metrics with fewer than ${GATE.minSamples} samples (p99: ${GATE.minTailSamples * 100}), the generator's lag or CPU, or custom metrics.`,
    );
  }
  lines.push(
    `- Load generator: event-loop lag is the engine's worst delay per second, one sample a second per thread; CPU is process CPU time over wall time, in % of Artillery's ` +
      `worker threads. Over ${SATURATION_THRESHOLDS.cpuPercent}% CPU a task counts as saturated. Over ${SATURATION_THRESHOLDS.lagP99Ms} ms lag it counts as saturated when its own CPU reached ` +
      `${SATURATION_THRESHOLDS.busyCpuPercent}% in a period or most of its late seconds were spent running (the engine counts each by the CPU its thread used while late: ` +
      "`cable.event_loop_late_saturated`, `cable.event_loop_late_starved`), and as starved when it waited for a CPU instead: its machine was busy with other work. " +
      "The regression gate leaves the latencies of either out. " +
      `Under ${LAG_MIN_SAMPLES_FOR_P99} samples a p99 is only the largest or second-largest of them, so a column shows "—" for it and the lag is judged by its max, for a task, a region and the whole run alike.`,
  );
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
  const digits = unit === "ms" || unit === "value" ? 1 : (unit === "rate" || unit === "percent") && !Number.isInteger(value) ? 1 : 0;
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

// report.md's "Over time" section, pure: the columns' series in, mermaid line charts (which GitHub
// renders) out. Mermaid's xychart has no legend, no gaps and no time axis, so: the colours are fixed
// and named under each chart; a period without samples is drawn from its neighbours (and said so);
// the x-axis is minutes since the load's start, each period drawn at its end; long runs are folded into at most
// MAX_POINTS points (the worst period of each fold for latencies and peaks, the mean for rates).
import type { Column, MergedResults, Series } from "./model.js";
import { PERIOD_MS } from "./period.js";
import { describeRecovery, RECOVERY_FLOOR_MS, RECOVERY_TOLERANCE, STAY_PERIODS } from "./recovery.js";
import { mainLatency } from "./series.js";
import { cell, chartLabel, clock, code, inline, LIMITS, niceCeiling } from "./text.js";

export const MAX_POINTS = 60;

/** Tableau 10's first seven, each with the emoji square GitHub shows closest to it; all regions in black. */
export const PALETTE = [
  { colour: "#4e79a7", square: "🟦" },
  { colour: "#f28e2b", square: "🟧" },
  { colour: "#e15759", square: "🟥" },
  { colour: "#59a14f", square: "🟩" },
  { colour: "#edc948", square: "🟨" },
  { colour: "#b07aa1", square: "🟪" },
  { colour: "#9c755f", square: "🟫" },
];
export const ALL_COLOUR = { colour: "#333333", square: "⬛" };

type Fold = "max" | "mean" | "sum";

interface Line {
  name: string;
  colour: string;
  square: string;
  values: Array<number | null>;
}

/** The charts of the section; empty when no column has more than one period. */
export function overTimeSection(merged: MergedResults, columns: Column[]): string[] {
  const all = merged.all.series;
  if (!all || all.periods.length < 2) return [];
  const start = merged.timeline?.start ?? all.periods[0];
  // Every column's series on the run's axis (a region that started late has fewer periods).
  const axis = all.periods;
  const regions = columns.filter((c) => c !== merged.all);
  const drawn = [...regions.slice(0, PALETTE.length).map((c, i) => ({ column: c, ...PALETTE[i] })), { column: merged.all, ...ALL_COLOUR }];
  // Each line's values are picked once and placed by period: linear in the periods (a 7-day soak has 60,480).
  const onAxis = (series: Series | undefined, pick: (s: Series) => Array<number | null> | undefined): Array<number | null> => {
    const picked = series ? pick(series) : undefined;
    if (!series || !picked) return axis.map(() => null);
    const byPeriod = new Map(series.periods.map((t, i) => [t, picked[i]]));
    return axis.map((t) => byPeriod.get(t) ?? null);
  };
  const lines = (pick: (s: Series) => Array<number | null> | undefined) =>
    drawn.map(({ column, colour, square }) => ({ name: column.name, colour, square, values: onAxis(column.series, pick) }));

  const out: string[] = ["", "### Over time", ""];
  const foldSize = Math.max(1, Math.ceil(axis.length / MAX_POINTS));
  const foldS = (foldSize * PERIOD_MS) / 1000;
  // Each point sits at the end of the seconds it covers, evenly spaced from the first period's end to the last one's.
  const span: [number, number] = [(axis[0] + PERIOD_MS - start) / 60_000, (axis[axis.length - 1] + PERIOD_MS - start) / 60_000];
  out.push(
    `Per ${foldS} s, each point at the end of the seconds it covers, from ${clock(axis[0] + PERIOD_MS - start)} to ${clock(axis[axis.length - 1] + PERIOD_MS - start)} after the load's start (0:00); x-axis in minutes.` +
      (foldSize > 1 ? ` Each point folds ${foldSize} periods: the worst one for latencies, connections and errors, the mean for rates.` : ""),
  );
  const main = mainLatency(Object.keys(all.latency));
  const charts: Array<{ title: string; unit: string; fold: Fold; lines: Line[] }> = [];
  if (main) charts.push({ title: `${main} p95`, unit: "ms", fold: "max", lines: lines((s) => s.latency[main]?.p95) });
  charts.push({ title: "Open connections", unit: "connections", fold: "max", lines: lines((s) => s.connections) });
  charts.push({ title: "Messages received per second", unit: "msg/s", fold: "mean", lines: lines((s) => s.messages.received) });
  charts.push({ title: `Errors per ${foldS} s`, unit: "errors", fold: "sum", lines: lines((s) => s.errors.total ?? s.periods.map((_, i) => (s.users.created[i] === null ? null : 0))) });
  for (const chart of charts) {
    const drawn = lineChart(chart.title, chart.unit, span, chart.lines, chart.fold, foldSize);
    // A chart of zeros says less than one line: "no errors".
    if (drawn.length === 0 && chart.unit === "errors") out.push("", "No errors in any period.");
    out.push(...drawn);
  }
  out.push(...serverCharts(merged, axis, start, span, foldSize));
  out.push(...phaseLine(merged, start));
  return out;
}

/**
 * The answers the charts ask for, as tables and lines (in report.md with or without its charts, and
 * so in report.html): did latency come back after each spike, and how fast; how long until a
 * reconnect storm's users were back; does anything creep up over a soak.
 */
export function verdictSection(merged: MergedResults, columns: Column[]): string[] {
  const start = merged.timeline?.start ?? merged.all.series?.periods[0] ?? 0;
  const out = [...spikeTable(merged, columns, start), ...connectTable(merged, columns), ...stormTable(merged, columns), ...driftLines(merged, columns), ...checkTable(merged, columns)];
  return out.length > 0 ? ["", "### What happened when: the verdicts", ...out] : [];
}

/** The plugin's own `ensure` conditions on the verdicts: one row each, a cell per column. */
function checkTable(merged: MergedResults, columns: Column[]): string[] {
  const checks = merged.verdicts?.checks ?? [];
  if (checks.length === 0) return [];
  const rows = checks.slice(0, 20).map((c) => `| ${code(c.check, LIMITS.label, true)} | ${columns.map((col) => { const o = c.columns[col.name]; return o ? `${o.passed ? "✅" : "❌"} ${cell(o.value, LIMITS.reason)}` : "—"; }).join(" | ")} |`);
  return ["", "**Checks on the verdicts** (`config.plugins.cable-report.ensure`)", "", `| Check | ${columns.map((c) => cell(c.name, LIMITS.column)).join(" | ")} |`, `|:--|${columns.map(() => ":--").join("|")}|`, ...rows];
}

function driftLines(merged: MergedResults, columns: Column[]): string[] {
  const drift = merged.verdicts?.drift;
  if (!drift) return [];
  const mark = (kind: string) => (kind === "drifting" ? "❌ drifting" : kind === "flat" ? "✅ flat" : kind);
  const lines = columns.filter((c) => drift.latency[c.name]).map((c) => `- ${inline(c.name, LIMITS.name)}: ${mark(drift.latency[c.name].kind)}: ${inline(drift.latency[c.name].reason, LIMITS.note)}`);
  if (drift.memory) lines.push(`- server memory: ${mark(drift.memory.kind)}: ${inline(drift.memory.reason, LIMITS.note)}`);
  if (lines.length === 0) return [];
  return ["", `**Soak drift** (Theil–Sen trend per hour with its 95% interval; drifting only when the whole interval is above the floor)`, "", ...lines];
}

/** One row per spike and column: p95 before, worst during, and when it was back. */
function spikeTable(merged: MergedResults, columns: Column[], start: number): string[] {
  const spikes = merged.verdicts?.spikes ?? [];
  if (spikes.length === 0) return [];
  const out = ["", `**Recovery after each spike** (${code(spikes[0].metric, LIMITS.name)} p95; back = within ${RECOVERY_TOLERANCE * 100}% or ${RECOVERY_FLOOR_MS} ms of before, or under the worst period before, for ${STAY_PERIODS} periods in a row)`, "", "| Spike | Column | p95 before | Worst p95 | Back under | Recovered |", "|:--|:--|--:|--:|--:|:--|"];
  const ms = (v: number | null) => (v === null ? "—" : `${v.toLocaleString("en-US", { maximumFractionDigits: 1 })} ms`);
  for (const spike of spikes.slice(0, 10)) {
    const when = `${cell(spike.phase, LIMITS.name)} ${clock(spike.start - start)}–${spike.end === null ? "end" : clock(spike.end - start)} (${spike.rate}/s after ${spike.rateBefore}/s)`;
    for (const column of columns) {
      const c = spike.columns[column.name];
      if (!c) continue;
      out.push(`| ${when} | ${cell(column.name, LIMITS.column)} | ${ms(c.before)} | ${ms(c.worst)} | ${ms(c.threshold)} | ${c.before === null ? "" : c.recoveredAfterMs === null ? "❌ " : "✅ "}${describeRecovery(c)} |`);
    }
  }
  return out;
}

/** In a connection storm: how long after its phase began the users were connected, per column. */
function connectTable(merged: MergedResults, columns: Column[]): string[] {
  const connects = merged.verdicts?.connects ?? {};
  const shown = columns.filter((c) => connects[c.name]);
  if (shown.length === 0) return [];
  const sec = (ms: number | null) => (ms === null ? "never" : `${(ms / 1000).toFixed(1)} s`);
  const rows = shown.map((c) => {
    const s = connects[c.name];
    const near = s.basis === "periods" ? "≈" : "";
    return `| ${cell(c.name, LIMITS.column)} | ${s.users.toLocaleString("en-US")} | ${near}${sec(s.halfMs)} | ${near}${sec(s.mostMs)} | ${near}${sec(s.allMs)} | ${s.never > 0 ? `❌ ${s.never.toLocaleString("en-US")}` : "0"} |`;
  });
  const first = connects[shown[0].name];
  return [
    "",
    `**Connection storm: connected after "${inline(first.phase, LIMITS.name)}" began** (the periods' \`cable.connections\`, held to the arrivals and the engine's \`cable.handshake_latency\`; ≈: the 10 s periods alone)`,
    "",
    "| Column | Users | 50% connected | 95% connected | All connected | Never connected |",
    "|:--|--:|--:|--:|--:|--:|",
    ...rows,
  ];
}

/** After a reconnect storm: how long until the dropped users were back, per column. */
function stormTable(merged: MergedResults, columns: Column[]): string[] {
  const storms = merged.verdicts?.storms ?? {};
  const rows = columns.filter((c) => storms[c.name]).map((c) => {
    const s = storms[c.name];
    const sec = (ms: number | null) => (ms === null ? "never" : `${(ms / 1000).toFixed(1)} s`);
    return `| ${cell(c.name, LIMITS.column)} | ${s.dropped.toLocaleString("en-US")} | ${s.approximate ? "≈" : ""}${sec(s.halfBackMs)} | ${s.approximate ? "≈" : ""}${sec(s.mostBackMs)} | ${sec(s.allBackMs)} | ${s.never > 0 ? `❌ ${s.never.toLocaleString("en-US")}` : "0"} |`;
  });
  if (rows.length === 0) return [];
  return [
    "",
    "**Reconnect storm: back after the drop** (from each user's drop to every channel usable again, the engine's `cable.restore_latency`)",
    "",
    "| Column | Dropped | 50% back | 95% back | All back | Never came back |",
    "|:--|--:|--:|--:|--:|--:|",
    ...rows,
  ];
}

/**
 * The server's own CPU and memory (`--server-metrics`) from the load's start on, resampled onto the
 * periods; the idle scrapes before the load are said in a line, not drawn.
 */
function serverCharts(merged: MergedResults, axis: number[], start: number, span: [number, number], foldSize: number): string[] {
  const server = merged.timeline?.server;
  if (!server || server.at.length === 0) return [];
  const out: string[] = [];
  const from = server.at.findIndex((t) => t >= start);
  const cut = from === -1 ? server.at.length : from;
  const at = server.at.slice(cut);
  const vcpu = resample(axis, at, server.vcpu.slice(cut), "mean");
  const memory = resample(axis, at, server.memoryMiB.slice(cut), "max");
  if (vcpu.some((v) => v !== null)) out.push(...lineChart("Server CPU (vCPU)", "vCPU", span, [{ name: "server", ...ALL_COLOUR, values: vcpu }], "mean", foldSize));
  if (memory.some((v) => v !== null)) out.push(...lineChart("Server memory (MiB)", "MiB", span, [{ name: "server", ...ALL_COLOUR, values: memory }], "max", foldSize));
  if (cut > 0) {
    const figure = (v: number | null | undefined, unit: string) => (v === null || v === undefined ? `– ${unit}` : `${Math.round(v * 100) / 100} ${unit}`);
    out.push(
      "",
      `The server before the load (${cut} scrape${cut === 1 ? "" : "s"} from ${clock(server.at[0] - start)}), not drawn: ` +
        `${figure(server.vcpu[cut - 1], "vCPU")}, ${figure(server.memoryMiB[cut - 1], "MiB")}, ${figure(server.connections[cut - 1], "connections")}.`,
    );
  }
  return out;
}

/**
 * Samples taken at `at` onto the periods that start at `axis` (on the 10 s grid): each period gets
 * the mean or the largest of the samples inside it, null when none. One pass over the samples.
 */
export function resample(axis: number[], at: number[], values: Array<number | null>, how: "mean" | "max"): Array<number | null> {
  if (axis.length === 0) return [];
  const index = new Map(axis.map((t, i) => [t, i]));
  const sum = new Array<number>(axis.length).fill(0);
  const count = new Array<number>(axis.length).fill(0);
  const largest = new Array<number>(axis.length).fill(-Infinity);
  const first = axis[0];
  for (let k = 0; k < at.length; k++) {
    const v = values[k];
    if (v === null || v === undefined) continue;
    const i = index.get(first + Math.floor((at[k] - first) / PERIOD_MS) * PERIOD_MS);
    if (i === undefined) continue;
    sum[i] += v;
    count[i]++;
    if (v > largest[i]) largest[i] = v;
  }
  return axis.map((_, i) => (count[i] === 0 ? null : how === "mean" ? sum[i] / count[i] : largest[i]));
}

function phaseLine(merged: MergedResults, start: number): string[] {
  const phases = merged.timeline?.phases ?? [];
  const parts = phases.slice(0, 20).map((p) => `${inline(p.name || `phase ${p.index + 1}`, LIMITS.name)} ${clock(p.startTime - start)}–${p.endTime === null ? "end" : clock(p.endTime - start)}`);
  const lines = parts.length > 0 ? ["", `Phases: ${parts.join(" · ")}${phases.length > 20 ? ` · … ${phases.length - 20} more` : ""}`] : [];
  const aborted = merged.timeline?.aborted;
  if (aborted) lines.push("", `⛔ Stopped at ${clock(aborted.at - start)} by ${code(`--abort-on ${aborted.condition}`)} (${code(aborted.figure)}).`);
  return lines;
}

/** Fills interior gaps linearly and the ends with the nearest value; says whether it had to. Two passes. */
export function fillGaps(values: Array<number | null>): { values: number[]; filled: boolean } | null {
  const n = values.length;
  // The nearest known index after each position, found walking backwards.
  const next = new Array<number>(n).fill(-1);
  for (let i = n - 1, after = -1; i >= 0; i--) {
    next[i] = after;
    if (values[i] !== null) after = i;
  }
  const out = new Array<number>(n);
  let before = -1;
  let filled = false;
  for (let i = 0; i < n; i++) {
    const v = values[i];
    if (v !== null) {
      out[i] = v;
      before = i;
      continue;
    }
    filled = true;
    const after = next[i];
    if (before === -1 && after === -1) return null;
    if (before === -1) out[i] = values[after]!;
    else if (after === -1) out[i] = values[before]!;
    else out[i] = values[before]! + ((values[after]! - values[before]!) * (i - before)) / (after - before);
  }
  return n === 0 ? null : { values: out, filled };
}

export function fold(values: Array<number | null>, size: number, how: Fold): Array<number | null> {
  if (size <= 1) return values;
  const out: Array<number | null> = [];
  for (let i = 0; i < values.length; i += size) {
    const chunk = values.slice(i, i + size).filter((v): v is number => v !== null);
    if (chunk.length === 0) out.push(null);
    else if (how === "max") out.push(Math.max(...chunk));
    else if (how === "sum") out.push(chunk.reduce((a, b) => a + b, 0));
    else out.push(chunk.reduce((a, b) => a + b, 0) / chunk.length);
  }
  return out;
}

function lineChart(title: string, unit: string, span: [number, number], lines: Line[], how: Fold, foldSize: number): string[] {
  const prepared = lines.map((l) => ({ ...l, filled: fillGaps(fold(l.values, foldSize, how)) }));
  const drawn = prepared.filter((l) => l.filled !== null);
  if (drawn.every((l) => l.filled!.values.every((v) => v === 0))) return [];
  const round = (v: number) => Math.round(v * 10) / 10;
  const top = niceCeiling(Math.max(0, ...drawn.flatMap((l) => l.filled!.values)));
  const xFrom = Math.round(span[0] * 100) / 100;
  const xTo = Math.max(xFrom + 0.01, Math.round(span[1] * 100) / 100);
  const missing = prepared.filter((l) => l.filled === null).map((l) => inline(l.name, LIMITS.name));
  const gaps = drawn.some((l) => l.filled!.filled);
  return [
    "",
    `**${inline(title, LIMITS.label)}**`,
    "",
    "```mermaid",
    `%%{init: {"themeVariables": {"xyChart": {"plotColorPalette": "${drawn.map((l) => l.colour).join(", ")}"}}}}%%`,
    "xychart-beta",
    `    title "${chartLabel(title)}"`,
    `    x-axis "minutes" ${xFrom} --> ${xTo}`,
    `    y-axis "${chartLabel(unit)}" 0 --> ${top}`,
    ...drawn.map((l) => `    line [${l.filled!.values.map(round).join(", ")}]`),
    "```",
    "",
    drawn.map((l) => `${l.square} ${inline(l.name, LIMITS.name)}`).join(" · ") +
      (missing.length > 0 ? `; no data: ${missing.join(", ")}` : "") +
      (gaps ? "; periods without samples are drawn from their neighbours" : ""),
  ];
}

// capacity.md: the answer first, a table per region with every step, and a chart people would
// screenshot (users on x, the first latency SLO's figure on y from 0, a line per region, the bound
// as a line). Pure.
import type { StairOptions } from "./plan.js";
import { headline, type Answer } from "./search.js";
import type { Slo } from "./slo.js";

export interface ReportContext {
  slos: Slo[];
  scenario: string;
  stair: StairOptions;
  regions: string[];
}

const n = (v: number) => v.toLocaleString("en-US");
const cell = (v: number | null | undefined, unit = "") => (v === null || v === undefined ? "–" : `${n(v)}${unit}`);

export function renderCapacityMarkdown(answer: Answer, ctx: ReportContext): string {
  const lines: string[] = [];
  lines.push(`## Capacity: ${ctx.scenario}`, "");
  lines.push(`**${headline(answer)}**`, "");
  lines.push(
    `SLO: ${ctx.slos.map((s) => `\`${s.text}\``).join(", ")} · stair ${n(ctx.stair.start)} → ${n(ctx.stair.max)} by ${n(ctx.stair.step)}, each level held ${ctx.stair.holdS} s and judged on its hold only · ${ctx.regions.length} region(s): ${ctx.regions.join(", ")}`,
    "",
  );
  if (ctx.regions.length > 1) {
    lines.push("| region | held | first failing | breached | generator-bound |", "|---|---:|---:|---|---|");
    for (const name of ctx.regions) {
      const r = answer.regions[name];
      if (!r) {
        lines.push(`| ${name} | – | – | no data | |`);
        continue;
      }
      lines.push(`| ${name} | ${cell(r.held)} | ${cell(r.firstFailing)} | ${r.breached.map((b) => `${b.slo} (${b.value ?? "no samples"})`).join(", ") || "–"} | ${r.generatorBound ? "yes" : ""} |`);
    }
    lines.push("");
  }
  if (answer.generatorBound) {
    lines.push(
      `> **Generator-bound** at ${n(answer.generatorBound.at)} users: ${answer.generatorBound.tasks.join("; ")}. The latencies of that step include the generator's own delay, so it is no verdict on the server: it holds **at least ${cell(answer.generatorBound.atLeast)}**. To go further, ${answer.generatorBound.advice}.`,
      "",
    );
  }

  for (const name of ctx.regions) {
    const r = answer.regions[name];
    if (!r) continue;
    lines.push(`### ${name}`, "");
    const serverKeys = [...new Set(r.steps.flatMap((s) => Object.keys(s.server ?? {})))];
    lines.push(
      `| users (all regions) | users here | attempt | verdict | ${ctx.slos.map((s) => `\`${s.text}\``).join(" | ")} | generator lag p90 |${serverKeys.map((k) => ` server ${k} |`).join("")}`,
      `|---:|---:|---|---|${ctx.slos.map(() => "---:|").join("")}---:|${serverKeys.map(() => "---:|").join("")}`,
    );
    for (const s of r.steps) {
      const slos = s.slos.map((res) => `${res.value === null ? "no samples" : n(res.value)}${res.window === "climb" ? " (climb)" : ""} ${res.passed === true ? "✓" : "✗"}`);
      const verdict = s.verdict === "held" ? "held" : s.verdict === "breached" ? (s.passed ? "held here, breached elsewhere" : "**breached**") : s.verdict;
      lines.push(`| ${n(s.level)} | ${n(s.users)} | ${s.attempt} | ${verdict} | ${slos.join(" | ")} | ${cell(s.lagP90, " ms")} |${serverKeys.map((k) => ` ${cell(s.server?.[k] ?? null)} |`).join("")}`);
    }
    lines.push("");
  }

  const chart = renderChart(answer, ctx);
  if (chart) lines.push(chart, "");
  return lines.join("\n");
}

const REGION_COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"];
const BOUND_COLOUR = "#7f7f7f";
const OP_WORDS: Record<Slo["op"], string> = { "<": "below", "<=": "at most", "=": "exactly", ">=": "at least", ">": "above" };

/** A mermaid xychart: the first histogram SLO's figure at each level (its last attempt), per region. */
export function renderChart(answer: Answer, ctx: ReportContext): string | undefined {
  const index = ctx.slos.findIndex((s) => s.kind === "histogram");
  if (index === -1) return undefined;
  const slo = ctx.slos[index];
  if (slo.kind !== "histogram") return undefined;
  const levelsSeen = [...new Set(answer.steps.filter((s) => s.verdict !== "incomplete").map((s) => s.level))].sort((a, b) => a - b);
  if (levelsSeen.length === 0) return undefined;
  const series = ctx.regions.map((name) =>
    levelsSeen.map((level) => {
      // The level's last attempt: the one its verdict rests on (a repeat after a noisy hold).
      const step = answer.regions[name]?.steps.filter((s) => s.level === level && s.verdict !== "incomplete").at(-1);
      return step?.slos[index]?.value ?? 0;
    }),
  );
  const top = Math.max(slo.bound, ...series.flat());
  const yMax = Math.ceil((top * 1.1) / 10) * 10 || 10;
  // A distinct colour per region, the bound last in grey.
  const palette = [...REGION_COLOURS.slice(0, series.length), BOUND_COLOUR].join(", ");
  const init = { themeVariables: { xyChart: { plotColorPalette: palette } } };
  const out = [
    "```mermaid",
    `%%{init: ${JSON.stringify(init)}}%%`,
    "xychart-beta",
    // Words, not "<": mermaid prints an escaped "<" in a title as "&lt;".
    `  title "${slo.metric}.${slo.stat} by concurrent users (SLO: ${OP_WORDS[slo.op]} ${slo.bound})"`,
    `  x-axis "users" [${levelsSeen.join(", ")}]`,
    `  y-axis "${slo.metric}.${slo.stat}" 0 --> ${yMax}`,
    ...series.map((values) => `  line [${values.join(", ")}]`),
    `  line [${levelsSeen.map(() => slo.bound).join(", ")}]`,
    "```",
    "",
    `Lines: ${ctx.regions.map((r, i) => `${i + 1}. ${r}`).join(", ")}, ${ctx.regions.length + 1}. the bound (${slo.bound}). Levels a region did not measure show as 0.`,
  ];
  return out.join("\n");
}

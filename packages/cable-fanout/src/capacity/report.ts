// capacity.md: the answer first, a table per region with every step, and a chart people would
// screenshot (users, or messages a second, on x, the first latency SLO's figure on y from 0, a line
// per region, the bound as a line). Pure.
import type { Axis, StairOptions } from "./plan.js";
import { headline, SEND_RATE_FLOOR, type Answer } from "./search.js";
import type { Slo } from "../slo.js";

export interface ReportContext {
  slos: Slo[];
  scenario: string;
  stair: StairOptions;
  regions: string[];
  /** By rate: the levels are msg/s, from `users` users held in every level. */
  vary?: Axis;
  users?: number;
  /** --refine's resolution. */
  refine?: number;
}

const n = (v: number) => v.toLocaleString("en-US");
const cell = (v: number | null | undefined, unit = "") => (v === null || v === undefined ? "–" : `${n(v)}${unit}`);

export function renderCapacityMarkdown(answer: Answer, ctx: ReportContext): string {
  const lines: string[] = [];
  lines.push(`## Capacity: ${ctx.scenario}`, "");
  lines.push(`**${headline(answer)}**`, "");
  const byRate = ctx.vary === "rate";
  const unit = byRate ? " msg/s" : " users";
  const stair = byRate
    ? `stair ${n(ctx.stair.start)} → ${n(ctx.stair.max)} msg/s by ${n(ctx.stair.step)}, sent by ${cell(ctx.users ?? null)} users (all regions together), each level a run of its own (the users arrive in ${ctx.stair.climbS} s), held ${ctx.stair.holdS} s and judged on its hold only, where the users must have sent at least ${Math.round(SEND_RATE_FLOOR * 100)} % of the level`
    : `stair ${n(ctx.stair.start)} → ${n(ctx.stair.max)} by ${n(ctx.stair.step)}, each level held ${ctx.stair.holdS} s and judged on its hold only`;
  const refine = ctx.refine === undefined ? "" : ` · refined to ${n(ctx.refine)}${byRate ? " msg/s" : ""} between the last level held and the first breach`;
  lines.push(`SLO: ${ctx.slos.map((s) => `\`${s.text}\``).join(", ")} · ${stair}${refine} · ${ctx.regions.length} region(s): ${ctx.regions.join(", ")}`, "");
  if (ctx.regions.length > 1) {
    lines.push("| region | held | first failing | breached | generator-bound |", "|---|---:|---:|---|---|");
    for (const name of ctx.regions) {
      const r = answer.regions[name];
      if (!r) {
        lines.push(`| ${name} | – | – | no data | |`);
        continue;
      }
      lines.push(`| ${name} | ${cell(r.held)} | ${cell(r.firstFailing)} | ${r.breached.map((b) => `${b.slo} (${b.value ?? "no samples"})`).join(", ") || "–"} | ${r.generatorBound ? "yes" : r.generatorStarved ? "no: starved" : ""} |`);
    }
    lines.push("");
  }
  if (answer.generatorBound) {
    lines.push(
      `> **Generator-bound** at ${n(answer.generatorBound.at)}${unit}: ${answer.generatorBound.tasks.join("; ")}. The latencies of that step include the generator's own delay, so it is no verdict on the server: it holds **at least ${cell(answer.generatorBound.atLeast)}${byRate ? " msg/s" : ""}**. To go further, ${answer.generatorBound.advice}.`,
      "",
    );
  }
  if (answer.generatorStarved) {
    // Starved is not saturated: the generator was not the limit, so no advice to add tasks.
    lines.push(
      `> **Starved** at ${n(answer.generatorStarved.at)}${unit}: ${answer.generatorStarved.tasks.join("; ")}. This machine was busy with other work: the generator's event loop ran late while it used little CPU of its own, so the latencies of that step include that wait and are no verdict on the server: it holds **at least ${cell(answer.generatorStarved.atLeast)}${byRate ? " msg/s" : ""}**. To go further, run the search where nothing else competes for the generator's cores.`,
      "",
    );
  }

  for (const name of ctx.regions) {
    const r = answer.regions[name];
    if (!r) continue;
    lines.push(`### ${name}`, "");
    const serverKeys = [...new Set(r.steps.flatMap((s) => Object.keys(s.server ?? {})))];
    // The generator's CPU only where the tasks measured it.
    const cpu = r.steps.some((s) => s.cpuPeak !== null && s.cpuPeak !== undefined);
    const head = byRate ? ["msg/s (all regions)", "users here", "attempt", "verdict"] : ["users (all regions)", "users here", "attempt", "verdict"];
    const tail = [...(byRate ? ["sent msg/s here", "received msg/s here"] : []), "generator lag p90", ...(cpu ? ["generator CPU"] : []), ...serverKeys.map((k) => `server ${k}`)];
    lines.push(
      `| ${[...head, ...ctx.slos.map((s) => `\`${s.text}\``), ...tail].join(" | ")} |`,
      `|---:|---:|---|---|${ctx.slos.map(() => "---:|").join("")}${tail.map(() => "---:|").join("")}`,
    );
    for (const s of r.steps) {
      const mark = (res: { passed: boolean | null }) => (res.passed === true ? "✓" : "✗");
      const slos = s.slos.map((res) => `${res.value === null ? "no samples" : n(res.value)}${res.window === "climb" ? " (climb)" : ""} ${mark(res)}`);
      const verdict = s.verdict === "held" ? "held" : s.verdict === "breached" ? (s.passed ? "held here, breached elsewhere" : "**breached**") : s.verdict;
      const rates = byRate ? [`${cell(s.sendRate)}${s.sendCheck ? ` ${mark(s.sendCheck)}` : ""}`, cell(s.receiveRate)] : [];
      const cells = [n(s.level), n(s.users), s.attempt, verdict, ...slos, ...rates, cell(s.lagP90, " ms"), ...(cpu ? [cell(s.cpuPeak ?? null, " %")] : []), ...serverKeys.map((k) => cell(s.server?.[k] ?? null))];
      lines.push(`| ${cells.join(" | ")} |`);
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

/** A mermaid xychart: the first histogram SLO's figure at each level (its last attempt), per region; x in users, or in msg/s by rate. */
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
    `  title "${slo.metric}.${slo.stat} by ${ctx.vary === "rate" ? "messages per second" : "concurrent users"} (SLO: ${OP_WORDS[slo.op]} ${slo.bound})"`,
    `  x-axis "${ctx.vary === "rate" ? "messages per second" : "users"}" [${levelsSeen.join(", ")}]`,
    `  y-axis "${slo.metric}.${slo.stat}" 0 --> ${yMax}`,
    ...series.map((values) => `  line [${values.join(", ")}]`),
    `  line [${levelsSeen.map(() => slo.bound).join(", ")}]`,
    "```",
    "",
    `Lines: ${ctx.regions.map((r, i) => `${i + 1}. ${r}`).join(", ")}, ${ctx.regions.length + 1}. the bound (${slo.bound}). Levels a region did not measure show as 0.`,
  ];
  return out.join("\n");
}

// report.html, pure apart from reading its bundled assets: merged results and report.md's text in,
// one self-contained page out. It opens from disk with no network: the charting library, its CSS,
// the page's script and the data are all inline, and a Content-Security-Policy allows nothing else
// (no request of any kind, only the page's own scripts and style sheet by hash). The tables come
// first and are plain HTML, so the page reads without JavaScript; the charts over time follow.
//
// Text from outside (a server's words, region, phase and error names, the title) never becomes
// markup here (src/text.ts has the rule): report.md escapes it, and the markdown-to-HTML pass below
// escapes any raw HTML but report.md's own <details> folds and shows links and images as their
// text; the chart data is `plain` text that the page's script shows through textContent and the
// canvas, read from the element right before the script, which nothing in the tables can replace.
//
// Why uPlot (https://github.com/leeoniya/uPlot) for the charts: 51 KB minified with no dependency
// (Chart.js is ~200 KB, ECharts ~1 MB, Plotly ~3.5 MB: 4× to 70× larger, in a page that would
// otherwise weigh ~100 KB); it draws on a canvas and stays fast with thousands of points per series
// (a long run's 10 s periods × regions × percentiles); and what a load-test report needs is built
// in: a legend with the values under the cursor, clicking a legend entry to hide a series, zoom by
// dragging (double-click resets), gaps for missing values, and a draw hook for the phase bands.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Marked as MarkedClass } from "marked" with { "resolution-mode": "import" };
import { runState, stateWords } from "./headline.js";
import { renderMarkdown, reportTitle, type RenderOptions } from "./markdown.js";
import type { Column, MergedResults, Series, ServerSeries } from "./model.js";
import { PERIOD_MS } from "./period.js";
import { latencyMetrics } from "./rows.js";
import { SATURATION_THRESHOLDS } from "./saturation.js";
import { describeRecovery } from "./recovery.js";
import { mainLatency } from "./series.js";
import { LIMITS, plain } from "./text.js";

export interface HtmlOptions {
  /** The page's title; by default report.md's own (`--title`, or the test's name). */
  title?: string;
  /** report.md's text: its tables become the page's (its mermaid charts are left out). */
  markdown: string;
}

/**
 * Tableau 10, in report.md's order (the same region has the same colour in both), then its last
 * three; colour-blind safe and distinct in print. All regions in near-black.
 */
export const REGION_PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#59a14f", "#edc948", "#b07aa1", "#9c755f", "#76b7b2", "#ff9da7", "#bab0ac"];
export const ALL_REGIONS_COLOUR = "#333333";

type Values = Array<number | null>;

/** What the page's script reads (assets/report-page.js); times are seconds since the run's start. */
export interface PageData {
  /** Epoch ms of elapsed 0: the load's start. */
  start: number;
  /** Period ends, elapsed seconds: each period's figure is drawn at the end of the seconds it covers. */
  x: number[];
  stepS: number;
  columns: Array<{ name: string; colour: string; all: boolean }>;
  latency: {
    main: string | null;
    metrics: Array<{ metric: string; title: string; approximate: boolean }>;
    /** metric → percentile → one series per column. */
    values: Record<string, { p50: Values[]; p95: Values[]; p99: Values[] }>;
  };
  connections: Values[];
  received: Values[];
  sent: Values[];
  /** null: no error in any period. */
  errors: Values[] | null;
  active: Values[];
  generator: Array<{ column: number; file: string; lag: Values; cpu: Values }>;
  /** Where a task counts as saturated (saturation.ts). */
  saturation: { lagP99Ms: number; cpuPercent: number };
  phases: Array<{ name: string; from: number; to: number | null }>;
  aborted: { at: number; condition: string; figure: string } | null;
  /** Each spike's recovery (all regions): from the spike phase's end to the first recovered period, or on to the end. */
  recovery: Array<{ from: number; to: number | null; label: string; recovered: boolean }>;
  /** Scrapes from the load's start on, at their own times. */
  server: { x: number[]; vcpu: Values; memory: Values; connections: Values } | null;
  /** The server before the load: how many scrapes, from how long before, and the last one's figures. */
  serverBefore: { scrapes: number; fromS: number; vcpu: number | null; memory: number | null; connections: number | null } | null;
}

/** What report.html holds that changes with the results: the live page sends these on every update (live-server.ts). */
export interface PageParts {
  title: string;
  /** The headline block's HTML (report.md's text above its first table). */
  summary: string;
  /** The tables' HTML. */
  tables: string;
  state: "ok" | "warning" | "failed" | "running";
  data: PageData;
}

export function pageParts(merged: MergedResults, options: HtmlOptions): PageParts {
  const tables = markdownToHtml(withoutCharts(options.markdown));
  const cut = tables.indexOf("<table");
  const [summary, rest] = cut === -1 ? [tables, ""] : [tables.slice(0, cut), tables.slice(cut)];
  return { title: plain(reportTitle(merged, options), LIMITS.title), summary: summary.trim(), tables: rest.trim(), state: pageState(merged), data: pageData(merged) };
}

export function renderHtml(merged: MergedResults, options: HtmlOptions): string {
  return pageHtml(pageParts(merged, options));
}

/**
 * The page's whole text. `live`: the live page's, with where the run is on top (`status`, HTML made
 * by the caller from escaped text), which also runs report-live.js and may open its one event
 * stream to where it was served from (connect-src 'self'); report.html may not.
 */
export function pageHtml(parts: PageParts, live?: { status: string }): string {
  const { title, summary, tables, state, data } = parts;
  const { uplot, uplotCss, axes, pageCss } = pageAssets();
  const pageScript = asset(join(ASSETS, "report-page.js"));
  const liveScript = live ? asset(join(ASSETS, "report-live.js")) : "";
  return pageDocument({
    title,
    styles: `${uplotCss}\n${pageCss}`,
    live: live !== undefined,
    main: [
      '<main id="report">',
      ...(live ? [`<div id="live-status" class="live-status">${live.status}</div>`] : []),
      // What happened when comes right under the headline (run, phases, warnings); the whole-run tables follow.
      `<div id="summary" data-state="${state}">`,
      summary,
      "</div>",
      '<section id="over-time">',
      "<h2>Over time</h2>",
      "<noscript><p class=\"note\">JavaScript is off, so the charts over time are not drawn; the tables below hold the whole-run figures.</p></noscript>",
      '<div id="charts"></div>',
      "</section>",
      '<div id="tables">',
      tables,
      "</div>",
      "</main>",
    ],
    // The page's script reads its data from the element right before it (report-page.js).
    scripts: [uplot, axes, { json: data, id: "report-data" }, pageScript, ...(live ? [liveScript] : [])],
  });
}

/** The bundled files every page of the report carries: uPlot and its style sheet, the axis helpers, the page's look. */
export function pageAssets(): { uplot: string; uplotCss: string; axes: string; pageCss: string } {
  return {
    uplot: asset(requireResolve("uplot/dist/uPlot.iife.min.js")),
    uplotCss: asset(requireResolve("uplot/dist/uPlot.min.css")),
    axes: asset(join(ASSETS, "report-axes.js")),
    pageCss: asset(join(ASSETS, "report-page.css")),
  };
}

/** A script of the page, in order: inline code, or data (JSON) that the next script reads. */
export type PageScript = string | { json: unknown; id: string; round?: (v: number) => number };

/**
 * A whole page of the report (report.html, the live page, trend.html): `main` (HTML lines made by
 * the caller from escaped text) and the scripts after it, under the one Content-Security-Policy
 * (pageCsp) that lets only these scripts and this style sheet run, by their hashes.
 */
export function pageDocument(doc: { title: string; styles: string; main: string[]; scripts: PageScript[]; live?: boolean }): string {
  const code = doc.scripts.filter((s): s is string => typeof s === "string");
  for (const s of code) if (/<\/script|<!--/i.test(s)) throw new Error("an inline script would end its <script> element early");
  if (/<\/style/i.test(doc.styles)) throw new Error("an inline style sheet would end its <style> element early");
  return [
    "<!doctype html>",
    '<html lang="en">',
    "<head>",
    '<meta charset="utf-8">',
    `<meta http-equiv="Content-Security-Policy" content="${pageCsp(code, doc.styles, doc.live === true)}">`,
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<title>${escapeHtml(doc.title)}</title>`,
    `<style>${doc.styles}</style>`,
    "</head>",
    "<body>",
    ...doc.main,
    ...doc.scripts.map((s) => (typeof s === "string" ? `<script>${s}</script>` : `<script type="application/json" id="${escapeHtml(s.id)}">${jsonForScript(s.json, s.round)}</script>`)),
    "</body>",
    "</html>",
    "",
  ].join("\n");
}

/** No request of any kind, only the page's own scripts and style sheet by hash; the live page may also read its event stream. */
export function pageCsp(scripts: string[], styles: string, live: boolean): string {
  const hash = (text: string) => `'sha256-${createHash("sha256").update(text).digest("base64")}'`;
  return [
    "default-src 'none'",
    `script-src ${scripts.map(hash).join(" ")}`,
    // The page's own style sheet only (uPlot styles its elements through the CSSOM, which CSP allows).
    `style-src ${hash(styles)}`,
    "img-src data:",
    ...(live ? ["connect-src 'self'"] : []),
    "base-uri 'none'",
    "form-action 'none'",
  ].join("; ");
}

/** assets/ sits beside src/ and dist/. */
export const ASSETS = join(__dirname, "..", "assets");

function requireResolve(id: string): string {
  return require.resolve(id);
}

/** A bundled file's text (its path from require.resolve, or under assets/: ASSETS). */
export function asset(path: string): string {
  return readFileSync(path, "utf8").trim();
}

/** report.md's own raw HTML: its folds, whose summaries are fixed words (never outside text). */
const OWN_HTML = /^(<details>|<details><summary>[^<>&"]*<\/summary>|<\/details>)$/;

/**
 * Markdown to HTML that keeps no raw HTML but report.md's folds: any other tag is shown as text, and
 * links and images are shown as their text (report.md has none of its own; the page must not
 * navigate or fetch). A second wall behind report.md's escaping.
 */
/** The headline's colour: the same reading as its first words (headline.ts); a run still going, blue unless users failed over the line. */
function pageState(merged: MergedResults): PageParts["state"] {
  const { mark } = stateWords(runState(merged));
  return mark === "✅" ? "ok" : mark === "❌" ? "failed" : mark === "⏳" ? "running" : "warning";
}

export function markdownToHtml(markdown: string): string {
  // marked is an ES module; Node ≥ 22.12 requires it synchronously.
  const { Marked } = require("marked") as { Marked: typeof MarkedClass };
  const marked = new Marked({
    gfm: true,
    async: false,
    renderer: {
      // Only a whole block of report.md's own, never a tag inside a line (where outside text sits).
      html: (token) => (token.block && OWN_HTML.test(token.text.trim()) ? `${token.text.trim()}\n` : escapeHtml(token.text)),
      link({ tokens }) {
        return this.parser.parseInline(tokens);
      },
      image: ({ text }) => escapeHtml(text),
    },
  });
  return marked.parse(markdown, { async: false });
}

/** report.md's sections that only hold charts; the page draws its own. */
const CHART_SECTION = /^#{2,4} +(Over time|Latency charts) *$/;

/**
 * report.md without its mermaid charts: each ```mermaid block goes with the line after it (its
 * colour legend, "🟦 p99 · 🟧 p50 …"), and the sections made of charts go whole (their titles and
 * axis notes would be left describing nothing), up to the next heading or <details> block that is
 * not theirs (the notes).
 */
export function withoutCharts(markdown: string): string {
  const lines = markdown.split("\n");
  const out: string[] = [];
  let inSection = false;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (line.trim() === "```mermaid") {
      while (i < lines.length && !(lines[++i] ?? "").startsWith("```"));
      // The legend: the next non-blank line.
      let j = i + 1;
      while (j < lines.length && lines[j].trim() === "") j++;
      if (j < lines.length && !/^(#|<|\|)/.test(lines[j])) i = j;
      continue;
    }
    if (CHART_SECTION.test(line)) {
      inSection = true;
      continue;
    }
    if (inSection) {
      const ends = /^#{1,6} /.test(line) || (/^<details><summary>/.test(line) && !/chart/i.test(line));
      if (!ends) continue;
      inSection = false;
    }
    out.push(line);
  }
  return out.join("\n").replace(/\n{3,}/g, "\n\n");
}

/** A number as report.html's data holds it: to 0.1. */
const toTenth = (v: number) => Math.round(v * 10) / 10;

/** Inline JSON that no string in it can break out of: `<`, `>` and `&` as escapes; numbers to 0.1 (or as `round` says). */
export function jsonForScript(value: unknown, round: (v: number) => number = toTenth): string {
  return JSON.stringify(value, (_key, v: unknown) => (typeof v === "number" ? round(v) : v))
    .replace(/</g, "\\u003c")
    .replace(/>/g, "\\u003e")
    .replace(/&/g, "\\u0026")
    .replace(/\u2028/g, "\\u2028")
    .replace(/\u2029/g, "\\u2029");
}

export function escapeHtml(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

function pageData(merged: MergedResults): PageData {
  const all = merged.all.series;
  const axis = all?.periods ?? [];
  const start = merged.timeline?.start ?? axis[0] ?? merged.all.firstMetricAt ?? 0;
  const elapsed = (t: number) => (t - start) / 1000;
  const columns: Column[] = [...merged.regions, merged.all];
  /** A column's series on the run's axis: a region that started late has fewer periods. */
  const onAxis = (series: Series | undefined, values: (s: Series) => Values | undefined): Values => {
    const picked = series ? values(series) : undefined;
    if (!series || !picked) return axis.map(() => null);
    const index = new Map(series.periods.map((t, i) => [t, i]));
    return axis.map((t) => {
      const i = index.get(t);
      return i === undefined ? null : (picked[i] ?? null);
    });
  };
  const perColumn = (values: (s: Series) => Values | undefined) => columns.map((c) => onAxis(c.series, values));

  // The table's order and names (handshake, subscription, rtt, broadcast, publish, others).
  const recorded = Object.keys(all?.latency ?? {});
  const known = latencyMetrics(merged).filter((m) => recorded.includes(m.metric));
  const metrics = [...known, ...recorded.filter((m) => !known.some((k) => k.metric === m)).sort().map((metric) => ({ metric, title: metric }))].map(
    ({ metric, title }) => ({ metric, title: plain(title, LIMITS.name), approximate: all!.latency[metric].approximate }),
  );
  const latencyValues: PageData["latency"]["values"] = {};
  for (const { metric } of metrics) {
    latencyValues[metric] = {
      p50: perColumn((s) => s.latency[metric]?.p50),
      p95: perColumn((s) => s.latency[metric]?.p95),
      p99: perColumn((s) => s.latency[metric]?.p99),
    };
  }

  const hasErrors = columns.some((c) => c.series?.errors.total?.some((v) => v !== null && v > 0));
  const { during: server, before: serverBefore } = splitServer(merged.timeline?.server ?? null, start);
  return {
    start,
    x: axis.map((t) => elapsed(t + PERIOD_MS)),
    stepS: PERIOD_MS / 1000,
    columns: columns.map((c, i) => ({ name: plain(c.name, LIMITS.name), colour: c === merged.all ? ALL_REGIONS_COLOUR : REGION_PALETTE[i % REGION_PALETTE.length], all: c === merged.all })),
    latency: { main: mainLatency(recorded), metrics, values: latencyValues },
    connections: perColumn((s) => s.connections),
    received: perColumn((s) => s.messages.received),
    sent: perColumn((s) => s.messages.sent),
    // A period of a column without any error counter had none: 0, where its tasks reported.
    errors: hasErrors ? perColumn((s) => s.errors.total ?? s.users.created.map((v) => (v === null ? null : 0))) : null,
    active: perColumn((s) => s.users.active),
    generator: merged.regions.flatMap((region, column) =>
      (region.series?.generator ?? []).map((g) => ({
        column,
        file: plain(g.file, LIMITS.label),
        lag: onAxis(region.series, () => g.lagP99),
        cpu: onAxis(region.series, () => g.cpu),
      })),
    ),
    saturation: { ...SATURATION_THRESHOLDS },
    phases: (merged.timeline?.phases ?? []).map((p) => ({
      name: plain(p.name || `phase ${p.index + 1}`, LIMITS.name),
      from: elapsed(p.startTime),
      to: p.endTime === null ? null : elapsed(p.endTime),
    })),
    aborted: merged.timeline?.aborted
      ? { condition: plain(merged.timeline.aborted.condition, LIMITS.label), figure: plain(merged.timeline.aborted.figure, LIMITS.label), at: elapsed(merged.timeline.aborted.at) }
      : null,
    recovery: (merged.verdicts?.spikes ?? []).flatMap((spike) => {
      const all = spike.columns[merged.all.name];
      if (!all || spike.end === null || all.before === null) return [];
      return [{ from: elapsed(spike.end), to: all.recoveredAt === null ? null : elapsed(all.recoveredAt), label: plain(`${plain(spike.phase, LIMITS.name)}: p95 back ${describeRecovery(all)}`, LIMITS.label), recovered: all.recoveredAt !== null }];
    }),
    server: server && server.at.length > 0 ? { x: server.at.map(elapsed), vcpu: server.vcpu, memory: server.memoryMiB, connections: server.connections } : null,
    serverBefore,
  };
}

/**
 * The server's scrapes from the load's start on, and the idle ones before it told apart: the charts
 * start with the load, and the page says what the server looked like before it.
 */
function splitServer(server: ServerSeries | null, start: number): { during: ServerSeries | null; before: PageData["serverBefore"] } {
  if (!server) return { during: null, before: null };
  const first = server.at.findIndex((t) => t >= start);
  const cut = first === -1 ? server.at.length : first;
  const during: ServerSeries = { at: server.at.slice(cut), vcpu: server.vcpu.slice(cut), memoryMiB: server.memoryMiB.slice(cut), connections: server.connections.slice(cut) };
  const last = cut - 1;
  const before =
    cut === 0
      ? null
      : { scrapes: cut, fromS: (server.at[0] - start) / 1000, vcpu: server.vcpu[last] ?? null, memory: server.memoryMiB[last] ?? null, connections: server.connections[last] ?? null };
  return { during, before };
}

/** report.html's tables: far more than a PR comment holds, so that no region or error row is left out. */
const PAGE_MARKDOWN_MAX_BYTES = 8_000_000;

/**
 * report.html for merged results: the tables of report.md with no comment size limit (every region
 * and error row) and no mermaid (the page draws its own charts), plus `extraMarkdown` (the fan-out's
 * start section).
 */
export function renderReportPage(merged: MergedResults, options: RenderOptions, extraMarkdown = ""): string {
  return pageHtml(reportPageParts(merged, options, extraMarkdown));
}

/** report.html's parts, for the live page's updates (the same tables and data as the page). */
export function reportPageParts(merged: MergedResults, options: RenderOptions, extraMarkdown = ""): PageParts {
  const markdown = renderMarkdown(merged, { ...options, charts: false, maxBytes: PAGE_MARKDOWN_MAX_BYTES });
  return pageParts(merged, { title: options.title, markdown: `${markdown.replace(/\n*$/, "\n")}${extraMarkdown}` });
}

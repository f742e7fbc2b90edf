// trend.html: the trend model drawn as report.html draws a run, with the same page code and rules
// (src/html.ts): one self-contained page, uPlot and the page's script and style inlined under a
// Content-Security-Policy that allows no request of any kind, the data in a JSON element the
// script reads by position, every outside text (region and metric names, run ids, branches,
// commits, labels, verdict words) `plain` text in the data and shown through textContent or the
// canvas only. Pure apart from reading its bundled assets.
//
// The page: trend.md's header (above its first figure), one chart per figure (assets/trend-page.js:
// a line per column, the all-regions band shaded, change points as dashed verticals named by the
// run where the new level starts, runs above their band ringed, the hovered run's id, commit,
// branch and verdict under each chart), then trend.md's tables without its mermaid charts.
import { join } from "node:path";
import { ALL_REGIONS_COLOUR, ASSETS, asset, markdownToHtml, pageAssets, pageDocument, REGION_PALETTE, withoutCharts } from "../html.js";
import { LIMITS, plain } from "../text.js";
import { shownValue, type FigureUnit } from "./figures.js";
import type { TrendModel } from "./trend-model.js";

type Values = Array<number | null>;

/** What assets/trend-page.js reads. Values are as people read them (per-user rates per 100 users). */
export interface TrendPageData {
  /** Oldest first; the x axis is their index. */
  runs: Array<{ id: string; day: string; branch: string | null; commit: string | null; label: string | null; state: TrendModel["runs"][number]["state"]; words: string }>;
  columns: Array<{ name: string; colour: string; all: boolean }>;
  figures: Array<{
    key: string;
    title: string;
    /** The y axis's label. */
    unit: string;
    /** One per column, one value per run. */
    lines: Values[];
    /** The all-regions band each run was judged against; null: no run had one. */
    band: { low: Values; center: Values; high: Values } | null;
    changePoints: Array<{ column: number; index: number; before: number; after: number }>;
    /** Runs above their own column's band. */
    above: Array<{ column: number; index: number }>;
  }>;
}

/** trend.html's own look beyond report.html's (report-page.css). */
const TREND_CSS = [
  ".run-line { color: #1f2328; margin: 2px 0 0; font-size: 13px; min-height: 1.5em; font-variant-numeric: tabular-nums; }",
  ".change-points { color: #59636e; margin: 2px 0 0; font-size: 13px; }",
].join("\n");

const UNIT_LABELS: Record<FigureUnit, string> = { ms: "ms", count: "count", "per-user": "per 100 users", "msg/s": "msg/s" };

export function renderTrendHtml(model: TrendModel, options: { title?: string; markdown: string }): string {
  const markdown = withoutCharts(options.markdown);
  // The header: trend.md's text above its first figure's section.
  const cut = markdown.search(/^### /m);
  const [header, rest] = cut === -1 ? [markdown, ""] : [markdown.slice(0, cut), markdown.slice(cut)];
  const { uplot, uplotCss, axes, pageCss } = pageAssets();
  const newest = model.runs[model.runs.length - 1];
  return pageDocument({
    title: plain(options.title ?? `Trend: ${model.scenario.file}`, LIMITS.title),
    styles: `${uplotCss}\n${pageCss}\n${TREND_CSS}`,
    main: [
      '<main id="trend">',
      `<div id="summary" data-state="${newest?.state ?? "ok"}">`,
      markdownToHtml(header).trim(),
      "</div>",
      '<section id="over-runs">',
      "<h2>Over the runs</h2>",
      '<noscript><p class="note">JavaScript is off, so the charts are not drawn; the tables below hold each figure per run.</p></noscript>',
      '<div id="charts"></div>',
      "</section>",
      '<div id="tables">',
      markdownToHtml(rest).trim(),
      "</div>",
      "</main>",
    ],
    // The page's script reads its data from the element right before it (trend-page.js).
    scripts: [uplot, axes, { json: trendPageData(model), id: "trend-data", round: fourDigits }, asset(join(ASSETS, "trend-page.js"))],
  });
}

/** Four significant digits: a rate of 0.03 per 100 users stays, where report.html's 0.1 steps would make it 0. */
function fourDigits(v: number): number {
  return Number.isInteger(v) || !Number.isFinite(v) ? v : Number(v.toPrecision(4));
}

export function trendPageData(model: TrendModel): TrendPageData {
  const last = model.columns.length - 1;
  return {
    runs: model.runs.map((r) => ({
      id: plain(r.id, LIMITS.name),
      day: r.when,
      branch: r.branch === null ? null : plain(r.branch, LIMITS.name),
      commit: r.commit === null ? null : plain(r.commit.slice(0, 12), LIMITS.name),
      label: r.label === null ? null : plain(r.label, LIMITS.name),
      state: r.state,
      words: plain(r.words, LIMITS.label),
    })),
    columns: model.columns.map((name, i) => ({ name: plain(name, LIMITS.name), colour: i === last ? ALL_REGIONS_COLOUR : REGION_PALETTE[i % REGION_PALETTE.length], all: i === last })),
    figures: model.figures.map(({ figure, lines }) => {
      const shown = (v: number | null) => (v === null || !Number.isFinite(v) ? null : shownValue(figure, v));
      const all = lines[lines.length - 1];
      const band = all && all.band.some((b) => b !== null) ? all.band : null;
      return {
        key: plain(figure.key, LIMITS.name),
        title: plain(figure.title, LIMITS.label),
        unit: UNIT_LABELS[figure.unit] ?? plain(figure.unit, LIMITS.name),
        lines: lines.map((l) => l.values.map(shown)),
        band: band && {
          low: band.map((b) => (b ? shown(b.low) : null)),
          center: band.map((b) => (b ? shown(b.center) : null)),
          high: band.map((b) => (b ? shown(b.high) : null)),
        },
        changePoints: lines.flatMap((l, column) => l.changePoints.map((c) => ({ column, index: c.index, before: shownValue(figure, c.before), after: shownValue(figure, c.after) }))),
        above: lines.flatMap((l, column) => l.above.map((index) => ({ column, index }))),
      };
    }),
  };
}

// trend.html: the page's text (unit tests), then the page itself opened from its file in a real
// headless Chromium (Debian's `chromium`, through cable-test-servers/chromium), every request but
// the file refused and counted, from a history of real records (history/record.ts over merges of
// constructed tasks) that holds hostile names and a step in the latency.
// CABLE_WRITE_PICTURE=1 (or UPDATE_GOLDEN=1) writes docs/report-render/trend-page.png: 30 nightly
// runs of two regions, broadcast latency creeping up with a step at run 21.
/// <reference lib="dom" />
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Page } from "playwright-core";
import { PNG } from "pngjs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chartData, launchChromium, openFile, type Browser } from "cable-test-servers/chromium";
import { ALL_REGIONS_COLOUR, REGION_PALETTE } from "../src/html.js";
import { historyRecord, type HistoryRecord } from "../src/history/record.js";
import type { HistoryRead } from "../src/history/store.js";
import { renderTrendHtml, trendPageData, type TrendPageData } from "../src/history/trend-html.js";
import { renderTrendMarkdown } from "../src/history/trend-markdown.js";
import { trendModel, type TrendModel, type TrendOptions } from "../src/history/trend-model.js";
import type { MergedResults } from "../src/model.js";
import { mergeRegions } from "../src/results.js";
import { around, random, taskOf } from "./fixtures.js";

const ROOT = resolve(__dirname, "../../..");
const PICTURE = join(ROOT, "docs", "report-render", "trend-page.png");
const WRITE_PICTURE = Boolean(process.env.CABLE_WRITE_PICTURE || process.env.UPDATE_GOLDEN);
const DAY = 86_400_000;
const FIRST_NIGHT = Date.UTC(2026, 9, 1, 2, 0, 0);
const HASH = "ab".repeat(32);

// Names from outside the report's code.
const REGION = "<img src=x onerror=alert(1)>";
const STEP_ID = "run-11 <script>alert(2)</script>";
const BRANCH = "feat/<script>alert(3)</script>";
const METRIC = "cable.<b>bold</b><img src=x onerror=alert(4)>";
const SCENARIO = "<svg onload=alert(5)>.yml";
const LABEL = "<iframe src=https://evil.example>";
const HOSTILE = [REGION, STEP_ID, BRANCH, METRIC, SCENARIO, LABEL];

interface RunSpec {
  at: number;
  id: string;
  regions: Array<{ name: string; latency: number }>;
  branch: string | null;
  commit: string;
  label?: string | null;
  scenario?: string;
  seed: number;
  /** Failed users in the first task of the first region (of its 40). */
  failed?: number;
  /** Another latency histogram (the hostile metric name), at this value. */
  extra?: { metric: string; latency: number };
}

/** One run's merged results: two tasks per region, 40 users each, its latencies around the given values. */
function runResults(spec: RunSpec): MergedResults {
  const regions = spec.regions.map((region, r) => {
    const tasks = [0, 1].map((t) => {
      const seed = spec.seed * 1000 + r * 10 + t;
      const next = random(seed);
      const periods = Array.from({ length: 6 }, (_, p) => ({
        period: spec.at + p * 10_000,
        counters: { "cable.connections_open_period_peak": 40, "vusers.created": p < 2 ? 20 : 0 },
        rates: { "cable.receive_rate": Math.round(380 + 40 * next()) },
      }));
      // The failures are the first region's first task's.
      const failed = r === 0 && t === 0 ? (spec.failed ?? 0) : 0;
      const histograms: Record<string, number[]> = {
        "cable.broadcast_latency": around(region.latency, 200, seed),
        "cable.rtt": around(region.latency / 4, 100, seed + 1),
        "cable.event_loop_lag": around(6 + 2 * next(), 60, seed + 2),
      };
      if (spec.extra) histograms[spec.extra.metric] = around(spec.extra.latency, 100, seed + 3);
      return taskOf(
        {
          counters: { "vusers.created": 40, "vusers.completed": 40 - failed, "vusers.failed": failed, ...(failed > 0 ? { "errors.ETIMEDOUT": failed } : {}), "cable.messages_received": 24_000 },
          histograms,
          periods,
          firstMetricAt: spec.at,
          lastMetricAt: spec.at + 59_999,
          generator: { workers: 1, cpuMean: 30, cpuPeak: 55 },
          testRunId: `${spec.id}-${r}-${t}`,
        },
        `${region.name}/task-${t + 1}.json`,
      );
    });
    return { name: region.name, tasks, files: tasks.map((t) => t.reportFile) };
  });
  return mergeRegions(regions);
}

function record(spec: RunSpec): HistoryRecord {
  const merged = runResults(spec);
  return historyRecord({
    identity: {
      id: spec.id,
      kind: "run",
      label: spec.label ?? null,
      at: spec.at,
      scenario: { file: spec.scenario ?? "scenarios/chat.yml", hash: HASH },
      target: { url: "wss://staging.example/cable", server: null },
      branch: spec.branch,
      commit: spec.commit,
      tool: "0.1.0",
      regions: spec.regions.map((r) => r.name),
      tasksPerRegion: 2,
    },
    merged,
    usersOverLine: false,
    checksFailed: false,
    regressions: null,
  });
}

function read(records: HistoryRecord[]): HistoryRead {
  return { records, skipped: [], unread: 0 };
}

const commitOf = (i: number) => (0x9a3f0c1d + i * 7919).toString(16).padStart(8, "0") + "e27b41c95d";

/** 14 runs on a hostile branch, a hostile region and metric; the latency doubles from run 11 (index 10), whose id is hostile too. */
function hostileHistory(): { model: TrendModel; markdown: string; options: TrendOptions } {
  const records = Array.from({ length: 14 }, (_, i) => {
    const noise = random(i + 1);
    const level = (i >= 10 ? 2 : 1) * (1 + 0.04 * (noise() - 0.5));
    return record({
      at: FIRST_NIGHT + i * DAY,
      id: i === 10 ? STEP_ID : `run-${i + 1}`,
      regions: [
        { name: REGION, latency: 80 * level },
        { name: "eu-west-2", latency: 60 * level },
      ],
      branch: BRANCH,
      commit: commitOf(i),
      label: i === 13 ? LABEL : null,
      scenario: SCENARIO,
      seed: i + 1,
      failed: i % 5 === 3 ? 1 : 0,
      extra: { metric: METRIC, latency: 20 * (1 + 0.04 * (noise() - 0.5)) },
    });
  });
  const options: TrendOptions = { branch: BRANCH, last: 30, metrics: ["cable.broadcast_latency.p95", `${METRIC}.p95`, "vusers.failed"] };
  const model = trendModel(read(records), options);
  return { model, markdown: renderTrendMarkdown(model), options };
}

/** The picture's history: 30 nightly runs on main, two regions, broadcast latency creeping up ~0.6% a night with a step of a third at run 21. */
function nightlyHistory(): TrendModel {
  const records = Array.from({ length: 30 }, (_, i) => {
    const noise = random(100 + i);
    const level = (1 + 0.006 * i) * (i >= 20 ? 1.33 : 1);
    // Nightly runs on shared cloud machines: a p95 moves by ±8% from one night to the next.
    const jitter = () => 1 + 0.16 * (noise() - 0.5);
    return record({
      at: FIRST_NIGHT + i * DAY + Math.round(noise() * 600_000),
      id: `nightly-${String(i + 1).padStart(2, "0")}`,
      regions: [
        { name: "eu-west-2", latency: 72 * level * jitter() },
        { name: "us-east-1", latency: 88 * level * jitter() },
      ],
      branch: "main",
      commit: commitOf(i),
      seed: 100 + i,
      failed: [6, 17, 26].includes(i) ? 1 : 0,
    });
  });
  return trendModel(read(records), { branch: "main", last: 30, metrics: [] });
}

describe("trend.html's text", () => {
  const { model, markdown } = hostileHistory();
  const html = renderTrendHtml(model, { markdown });

  it("the model has the step: a change point at the hostile run, and runs above the band", () => {
    const p95 = model.figures.find((f) => f.figure.key === "cable.broadcast_latency.p95")!;
    const all = p95.lines[p95.lines.length - 1];
    expect(all.changePoints.map((c) => c.index)).toContain(10);
    expect(all.above).toContain(10);
    expect(model.runs[10].id).toBe(STEP_ID);
    expect(model.columns).toEqual([REGION, "eu-west-2", "all regions"]);
  });

  it("allows no request: no connect-src, nothing but the page's own scripts and style by hash", () => {
    const csp = /<meta http-equiv="Content-Security-Policy" content="([^"]*)">/.exec(html)![1];
    expect(csp).not.toMatch(/connect-src/);
    expect(csp).toMatch(/^default-src 'none'; script-src 'sha256-[^']+' 'sha256-[^']+' 'sha256-[^']+'; style-src 'sha256-[^']+'; img-src data:; base-uri 'none'; form-action 'none'$/);
    // uPlot, the axes, the page's script: three scripts run; the data is one JSON element between them.
    expect(html.match(/<script>/g)).toHaveLength(3);
    expect(html.match(/<script type="application\/json" id="trend-data">/g)).toHaveLength(1);
  });

  it("escapes the data: no `<` in the JSON, every hostile name there as an escape", () => {
    const json = /<script type="application\/json" id="trend-data">(.*?)<\/script>/s.exec(html)![1];
    expect(json).not.toMatch(/[<>&]/);
    expect(json).toContain("\\u003cimg src=x onerror=alert(1)\\u003e");
    expect(json).toContain("\\u003cscript\\u003ealert(2)\\u003c/script\\u003e");
    const data = JSON.parse(json) as TrendPageData;
    expect(data.columns.map((c) => c.name)).toEqual([REGION, "eu-west-2", "all regions"]);
    expect(data.columns.map((c) => c.colour)).toEqual([REGION_PALETTE[0], REGION_PALETTE[1], ALL_REGIONS_COLOUR]);
    expect(data.runs[10].id).toBe(STEP_ID);
    expect(data.runs[0].branch).toBe(BRANCH);
    expect(data.figures.map((f) => f.title)).toContain(`${METRIC} p95`);
    // No outside text on a tag anywhere in the page: only the page's own markup.
    for (const tag of ["<img", "<svg", "<iframe", "<b>", "<script>alert"]) expect(html, tag).not.toContain(tag);
  });

  it("keeps the header and the tables of trend.md, without its mermaid charts", () => {
    expect(markdown).toContain("```mermaid");
    expect(html).not.toContain("mermaid");
    expect(html).not.toContain("xychart-beta");
    const summary = html.slice(html.indexOf('<div id="summary"'), html.indexOf('<section id="over-runs">'));
    expect(summary).toContain("<h2>Trend: &lt;svg onload=alert(5)&gt;.yml</h2>");
    expect(summary).toContain("<strong>Band:</strong>");
    expect(summary).not.toContain("<table");
    const tables = html.slice(html.indexOf('<div id="tables">'));
    expect(tables.match(/<h3>/g)).toHaveLength(model.figures.length);
    expect(tables.match(/<table>/g)).toHaveLength(model.figures.length);
    expect(html).toContain(`<title>Trend: &lt;svg onload=alert(5)&gt;.yml</title>`);
  });

  it("shows per-user rates per 100 users, to four digits rather than report.html's 0.1", () => {
    const failed = trendPageData(model).figures.find((f) => f.key === "vusers.failed")!;
    expect(failed.unit).toBe("per 100 users");
    // 1 failed of a region's 80 users: 1.25 per 100; of all 160: 0.625.
    expect(failed.lines[0][3]).toBeCloseTo(1.25, 6);
    expect(failed.lines[1][3]).toBe(0);
    expect(failed.lines[2][3]).toBeCloseTo(0.625, 6);
    expect(html).toContain("0.625");
  });
});

describe("trend.html in Chromium", () => {
  let browser: Browser | undefined;
  let dir: string;

  beforeAll(async () => {
    browser = await launchChromium({ width: 1200, height: 800 });
    dir = mkdtempSync(join(tmpdir(), "cable-report-trend-html-"));
  });

  afterAll(async () => {
    await browser?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** Per canvas of the charts: its size and how many pixels are not blank. */
  async function canvases(page: Page): Promise<Array<{ width: number; height: number; inked: number; colours: Set<string> }>> {
    const urls = await page.$$eval("#charts canvas", (list) => list.map((c) => (c as HTMLCanvasElement).toDataURL("image/png")));
    return urls.map((url) => {
      const png = PNG.sync.read(Buffer.from(url.slice(url.indexOf(",") + 1), "base64"));
      let inked = 0;
      const colours = new Set<string>();
      for (let i = 0; i < png.data.length; i += 4) {
        if (png.data[i + 3] === 0) continue;
        inked++;
        if (png.data[i + 3] === 255) colours.add(`${png.data[i]},${png.data[i + 1]},${png.data[i + 2]}`);
      }
      return { width: png.width, height: png.height, inked, colours };
    });
  }

  async function open(html: string, name: string) {
    const file = join(dir, name);
    writeFileSync(file, html);
    return openFile(browser!.context, file, 500);
  }

  const noJoiners = (text: string | null) => (text ?? "").replace(/\u2060/g, "");

  it("hostile names: no request, no error, no dialog, one chart per figure, every name as text and none as an element", async () => {
    const { model, markdown } = hostileHistory();
    const opened = await open(renderTrendHtml(model, { markdown }), "hostile-trend.html");
    const { page } = opened;

    expect(opened.requests).toEqual([]);
    expect(opened.errors).toEqual([]);
    expect(opened.dialogs).toEqual([]);
    expect(opened.navigations).toEqual([]);
    expect(await page.title()).toBe(`Trend: ${SCENARIO}`);

    // One drawn chart per figure.
    const drawn = await canvases(page);
    expect(drawn).toHaveLength(model.figures.length);
    for (const [i, c] of drawn.entries()) {
      expect(c.width, `canvas ${i}`).toBeGreaterThan(600);
      expect(c.inked, `canvas ${i}: pixels drawn`).toBeGreaterThan(2_000);
      expect(c.colours.size, `canvas ${i}: colours`).toBeGreaterThanOrEqual(4);
    }
    const charts = await chartData(page);
    expect(charts).toHaveLength(model.figures.length);
    // x, three columns, the band's upper and lower bounds.
    expect(charts[0]).toHaveLength(1 + 3 + 2);
    expect(charts[0][0]).toEqual(model.runs.map((_, i) => i));

    // No element was made from any outside text; only the page's own scripts.
    for (const selector of ["img", "svg", "iframe", "b", "body > script:not([type])"]) {
      const expected = selector.startsWith("body > script") ? 3 : 0;
      expect(await page.locator(selector).count(), selector).toBe(expected);
    }
    // Every outside text shows as text (the page's, not its scripts' or its data element's).
    const text = noJoiners(await page.locator("main").textContent());
    for (const h of HOSTILE) expect(text, h).toContain(h);
    expect(noJoiners(await page.locator(".u-legend").first().textContent())).toContain(REGION);
    expect(await page.locator("#charts h3").allTextContents()).toContain(`${METRIC} p95`);
    // The change point's run, under the latency chart (and drawn on the canvas by its id).
    const p95 = page.locator(".chart-card", { has: page.locator("h3", { hasText: /^Broadcast latency p95$/ }) });
    const changes = await p95.locator(".change-points").textContent();
    expect(changes).toContain(`${STEP_ID} (2026-10-11): ${REGION} `);
    expect(changes).toMatch(/\(2026-10-11\): .*all regions \d+(\.\d+)? ms → \d+(\.\d+)? ms/);
    // The newest run under each chart, with its label; the hovered run when the cursor is on one.
    expect(await p95.locator(".run-line").textContent()).toBe(`Newest: Run 14 of 14: run-14 · 2026-10-14 · commit ${commitOf(13).slice(0, 12)} · branch ${BRANCH} · ${LABEL} · ${model.runs[13].words}`);
    const over = (await p95.locator(".u-over").boundingBox())!;
    // Run 11 of 14 sits at (10 + 0.5) / 14 of the plot's width.
    await page.mouse.move(over.x + (over.width * 10.5) / 14, over.y + over.height / 2);
    await expect.poll(() => p95.locator(".run-line").textContent()).toContain(`Run 11 of 14: ${STEP_ID} · 2026-10-11`);
    await expect.poll(async () => noJoiners(await p95.locator(".u-legend .u-series").first().textContent())).toContain(STEP_ID);
    // The synced charts follow the cursor.
    await expect.poll(() => page.locator(".run-line").last().textContent()).toContain(STEP_ID);

    // A click on a legend entry hides its line; the band's entry hides both its bounds.
    const shown = () => page.evaluate(() => (window as unknown as { reportCharts: Array<{ series: Array<{ show: boolean }> }> }).reportCharts[0].series.map((s) => s.show));
    expect(await shown()).toEqual([true, true, true, true, true, true]);
    await p95.locator(".u-legend .u-series").nth(1).click();
    await p95.locator(".u-legend .u-series").nth(4).click();
    expect(await shown()).toEqual([true, false, true, true, false, false]);
    expect(await p95.locator(".u-legend .u-series").nth(5).isVisible()).toBe(false);

    expect(opened.errors).toEqual([]);
    expect(opened.dialogs).toEqual([]);
    expect(opened.requests).toEqual([]);
    await page.close();
  });

  it("30 nightly runs: every main figure drawn, the step named; the picture at 1200 px", async () => {
    const model = nightlyHistory();
    const markdown = renderTrendMarkdown(model);
    const opened = await open(renderTrendHtml(model, { markdown }), "trend.html");
    const { page } = opened;
    expect(opened.requests).toEqual([]);
    expect(opened.errors).toEqual([]);
    expect(model.runs).toHaveLength(30);
    const drawn = await canvases(page);
    expect(drawn).toHaveLength(model.figures.length);
    expect(model.figures.length).toBeGreaterThanOrEqual(7);
    for (const [i, c] of drawn.entries()) expect(c.inked, `canvas ${i}: ${model.figures[i].figure.key}`).toBeGreaterThan(2_000);
    const p95 = model.figures.find((f) => f.figure.key === "cable.broadcast_latency.p95")!;
    expect(p95.lines[p95.lines.length - 1].changePoints.map((c) => model.runs[c.index].id)).toContain("nightly-21");
    expect(await page.locator(".change-points").first().textContent()).toContain("nightly-21");

    if (WRITE_PICTURE) {
      mkdirSync(join(ROOT, "docs", "report-render"), { recursive: true });
      writeFileSync(PICTURE, await page.screenshot({ fullPage: true }));
    }
    await page.close();
  });
});

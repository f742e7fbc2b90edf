// report.html: the page's text (unit tests), then the page itself in a real headless Chromium
// (Debian's `chromium`, as render.test.ts drives it), every request refused and counted.
// The whole page is saved as docs/report-render/report-html.png for people to look at
// (rewritten with UPDATE_GOLDEN=1, or when missing).
/// <reference lib="dom" />
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Page } from "playwright-core";
import { PNG } from "pngjs";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { EXIT_BAD_INPUT, EXIT_OK, main } from "../src/cli.js";
import { jsonForScript, markdownToHtml, REGION_PALETTE, renderHtml, withoutCharts } from "../src/html.js";
import { renderMarkdown } from "../src/markdown.js";
import type { MergedResults } from "../src/model.js";
import { mergeRegions, type RegionTasks } from "../src/results.js";
import { chartData, launchChromium, openFile, tablesShown, watchPage, type Browser } from "cable-test-servers/chromium";
import { around, taskOf, writeTask, type PeriodSpec } from "./fixtures.js";

const ROOT = resolve(__dirname, "../../..");
const SHOT = join(ROOT, "docs", "report-render", "report-html.png");
const CHARTS_SHOT = join(ROOT, "docs", "report-render", "report-html-charts.png");
const UPDATE = Boolean(process.env.UPDATE_GOLDEN);
const HOSTILE = "</script><img src=x onerror=alert(1)>";
const START = Date.UTC(2026, 10, 24, 12, 0, 0);

interface RunSpec {
  regions: string[];
  tasksPerRegion: number;
  periods: number;
  /** Samples per latency histogram per period and task. */
  samples?: number;
  errorCode?: string;
}

/**
 * A run of constructed tasks: two phases ("ramp" for the first third, "sustain" after), broadcast
 * latency low, then ten times higher over the middle third (with timeouts), then low again.
 */
function syntheticRun(spec: RunSpec): RegionTasks[] {
  const n = spec.periods;
  const samples = spec.samples ?? 40;
  const spike = (p: number) => p >= Math.floor(n / 3) && p < Math.floor((2 * n) / 3);
  const phaseStarts = [
    { index: 0, name: "ramp", startTime: START + 1_000 },
    { index: 1, name: "sustain", startTime: START + Math.floor(n / 3) * 10_000 - 5_000 },
  ];
  return spec.regions.map((name, r) => {
    const tasks = Array.from({ length: spec.tasksPerRegion }, (_, t) => {
      const seed = 1 + r * 100 + t * 10;
      const periods: PeriodSpec[] = Array.from({ length: n }, (_, p) => {
        const users = Math.min(p + 1, Math.ceil(n / 3)) * 5;
        const latency = (spike(p) ? 400 : 40) * (1 + r * 0.3);
        const counters: Record<string, number> = {
          "vusers.created": p < n / 3 ? 5 : 0,
          "vusers.created_by_name.chat": p < n / 3 ? 5 : 0,
          "vusers.completed": p === n - 1 ? users - (spike(p) ? 1 : 0) : 0,
          "cable.messages_sent": 10 * users,
          "cable.messages_received": 200 * users * (1 + r * 0.2),
          "cable.connections_open_period_peak": users,
        };
        if (spike(p)) counters[spec.errorCode ?? "errors.ETIMEDOUT"] = 1 + ((p + t + r) % 3);
        return {
          period: START + p * 10_000,
          counters,
          samples: {
            "cable.broadcast_latency": around(latency, samples, seed + p),
            "cable.rtt": around(latency / 4, samples, seed + p + 7),
            "cable.event_loop_lag": around(spike(p) ? 30 + 10 * t : 5 + t, 10, seed + p + 3),
          },
          cpuPercent: Math.round((spike(p) ? 60 : 25) + 5 * t + r * 3 + (p % 4)),
        };
      });
      const total = (key: string) => periods.reduce((s, p) => s + (p.counters[key] ?? 0), 0);
      const counterNames = [...new Set(periods.flatMap((p) => Object.keys(p.counters)))];
      const whole = (metric: string) => periods.flatMap((p) => p.samples![metric]);
      return taskOf(
        {
          counters: Object.fromEntries(counterNames.map((c) => [c, total(c)])),
          histograms: { "cable.broadcast_latency": whole("cable.broadcast_latency"), "cable.rtt": whole("cable.rtt"), "cable.event_loop_lag": whole("cable.event_loop_lag") },
          periods,
          phaseStarts,
          firstMetricAt: START,
          lastMetricAt: START + n * 10_000 - 1,
          generator: { workers: 1, cpuMean: 30, cpuPeak: 70 },
          testRunId: `run-${r}-${t}`,
        },
        `${name}/task-${t + 1}.json`,
      );
    });
    return { name, tasks, files: tasks.map((t) => t.reportFile) };
  });
}

/** The 3-minute, 2-region, 2-task run of the screenshot, with the server's own figures and an early stop. */
function screenshotRun(): MergedResults {
  const merged = mergeRegions(syntheticRun({ regions: ["eu-west-2", "us-east-1"], tasksPerRegion: 2, periods: 18 }));
  // The first scrape 4.5 s before the load's start (START + 1 s): the idle server, said and not drawn.
  const at = Array.from({ length: 37 }, (_, i) => START - 3_500 + i * 5_000);
  merged.timeline!.server = {
    at,
    vcpu: at.map((_, i) => (i >= 12 && i < 24 ? 1.6 : 0.4) + (i % 3) * 0.05),
    memoryMiB: at.map((_, i) => 300 + i * 4),
    connections: at.map((_, i) => Math.min(i + 1, 12) * 20),
  };
  merged.timeline!.aborted = { condition: "broadcast_latency.p95>300", at: START + 175_000, figure: "p95 412 ms" };
  return merged;
}

function page(merged: MergedResults): string {
  return renderHtml(merged, { markdown: renderMarkdown(merged) });
}

describe("report.html's headline colour", () => {
  it("follows the headline's state: red with failed users over the line, amber within it, green only when every user completed", () => {
    const merged = mergeRegions(syntheticRun({ regions: ["eu-west-2"], tasksPerRegion: 1, periods: 3 }));
    merged.all.counters["vusers.failed"] = 0;
    for (const k of Object.keys(merged.all.counters)) if (k.startsWith("errors.")) delete merged.all.counters[k];
    expect(page(merged)).toContain('<div id="summary" data-state="ok">');
    merged.all.counters["vusers.failed"] = 2;
    expect(page(merged)).toContain('<div id="summary" data-state="failed">');
    merged.test.maxFailedUsers = "50%";
    expect(page(merged)).toContain('<div id="summary" data-state="warning">');
  });
});

describe("report.html's text", () => {
  it("drops report.md's mermaid charts, their legends and their sections, and keeps every table", () => {
    const markdown = [
      "## Title",
      "",
      "| Metric | a |",
      "|:--|--:|",
      "| x | 1 |",
      "",
      "### Latency charts",
      "",
      "**Broadcast latency (ms)**",
      "",
      "```mermaid",
      "xychart-beta",
      '    bar [1, 2]',
      "```",
      "",
      "🟦 p99 · 🟧 p50 (p50 drawn in front); one bar per column",
      "",
      "<details><summary>2 more latency charts</summary>",
      "",
      "```mermaid",
      "xychart-beta",
      "```",
      "",
      "🟦 p99; one bar per column",
      "",
      "</details>",
      "",
      "```mermaid",
      "xychart-beta",
      "```",
      "",
      "🟥 elsewhere",
      "",
      "<details><summary>Notes</summary>",
      "",
      "- a note",
      "",
      "</details>",
      "",
    ].join("\n");
    const kept = withoutCharts(markdown);
    expect(kept).not.toMatch(/mermaid|xychart|🟦|🟥|Latency charts|Broadcast latency|more latency charts/);
    expect(kept).toContain("| x | 1 |");
    expect(kept).toContain("<details><summary>Notes</summary>\n\n- a note\n\n</details>");
  });

  it("embeds data as JSON that cannot end its script element, rounded to 0.1", () => {
    const json = jsonForScript({ name: HOSTILE, amp: "a&b\u2028", x: 1.2345, y: [10.06, null] });
    expect(json).not.toMatch(/[<>&\u2028]/);
    expect(JSON.parse(json)).toEqual({ name: HOSTILE, amp: "a&b\u2028", x: 1.2, y: [10.1, null] });
  });

  it("is one self-contained file: uPlot inline, no URL to fetch, the charts right under the headline, the tables after them", () => {
    const html = page(screenshotRun());
    expect(html).toMatch(/^<!doctype html>/);
    expect(html).toContain("https://github.com/leeoniya/uPlot"); // uPlot's banner, inlined
    expect(html).not.toMatch(/<(script|link|img|iframe)[^>]+(src|href)=/i);
    expect(html).toMatch(/Content-Security-Policy" content="default-src 'none'; script-src 'sha256-[^']+' 'sha256-[^']+' 'sha256-[^']+'; style-src 'sha256-[^']+';/);
    expect(html.indexOf("<table>")).toBeGreaterThan(0);
    expect(html.indexOf('id="charts"')).toBeLessThan(html.indexOf("<table>"));
    expect(html).toContain("<noscript>");
    expect(html).not.toContain("```mermaid");
  });

  it("keeps no raw HTML but report.md's own folds, and shows links and images as their text", () => {
    const html = markdownToHtml(
      [
        "<details><summary>Notes</summary>",
        "",
        "- a [link](https://evil.example) and ![an image](https://evil.example/t.png), <https://evil.example>, www.evil.example",
        "",
        "</details>",
        "",
        '<meta http-equiv="refresh" content="0;url=https://evil.example">',
        "",
        "<style>table{display:none}</style>",
        "",
        '<script type="application/json" id="report-data">{}</script>',
        "",
        "text </details><h1>pwned</h1> and <details open> inline",
        "",
        "<details open>",
        "",
      ].join("\n"),
    );
    expect(html).toContain("<details><summary>Notes</summary>");
    expect(html.match(/<\/details>/g)).toHaveLength(1);
    expect(html).not.toMatch(/<(meta|style|script|h1|a|img)[\s>]|<details open/);
    expect(html).toContain("a link and an image, https://evil.example, www.evil.example");
    expect(html).toContain("&lt;meta http-equiv=&quot;refresh&quot;");
  });

  it("puts the chart data right before the page's script, where its script reads it", () => {
    const html = page(screenshotRun());
    const scripts = [...html.matchAll(/<script([^>]*)>/g)].map((m) => m[1]);
    expect(scripts).toEqual(["", "", ' type="application/json" id="report-data"', ""]);
    expect(html).toMatch(/<script type="application\/json" id="report-data">[^<]*<\/script>\n<script>\/\/ report.html's charts over time/);
  });

  it("stays under 2 MB for a 30-minute run of 3 regions × 6 tasks (180 periods)", () => {
    const merged = mergeRegions(syntheticRun({ regions: ["ap-south-1", "eu-west-2", "us-east-1"], tasksPerRegion: 6, periods: 180, samples: 20 }));
    expect(merged.all.series!.periods).toHaveLength(180);
    const html = page(merged);
    const bytes = Buffer.byteLength(html);
    expect(bytes).toBeLessThan(2 * 1024 * 1024);
    // The data: every region's series for 180 periods, 18 generators.
    const data = JSON.parse(/<script type="application\/json" id="report-data">(.*?)<\/script>/s.exec(html)![1]);
    expect(data.x).toHaveLength(180);
    expect(data.generator).toHaveLength(18);
  });
});

describe("cable-report --html", () => {
  it("writes the page beside the markdown, with every table and no mermaid chart, atomically", () => {
    const dir = mkdtempSync(join(tmpdir(), "cable-report-html-cli-"));
    for (const region of syntheticRun({ regions: ["eu-west-2", "us-east-1"], tasksPerRegion: 1, periods: 6 })) {
      for (const task of region.tasks) {
        const spec = { counters: task.counters, periods: [], phaseStarts: task.phaseStarts, firstMetricAt: task.firstMetricAt, lastMetricAt: task.lastMetricAt };
        writeTask(join(dir, "results", task.reportFile), { ...spec, histograms: { "cable.rtt": around(20, 50, 1) } });
      }
    }
    const html = join(dir, "report.html");
    expect(main([join(dir, "results"), "--out", join(dir, "report.md"), "--html", html, "--title", "Chat"])).toBe(EXIT_OK);
    const page = readFileSync(html, "utf8");
    expect(page).toMatch(/^<!doctype html>/);
    expect(page).toContain("<title>Chat</title>");
    expect(page).toMatch(/<th[^>]*>eu-west-2<\/th>/);
    expect(page).not.toContain("```mermaid");
    expect(readFileSync(join(dir, "report.md"), "utf8")).toMatch(/^## Chat\n/);
    expect(readdirSync(dir).filter((f) => f.startsWith("."))).toEqual([]);
    rmSync(dir, { recursive: true, force: true });
  });

  it("writes nothing when the input is bad", () => {
    const dir = mkdtempSync(join(tmpdir(), "cable-report-html-cli-"));
    const stderr = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
    expect(main([join(dir, "missing"), "--html", join(dir, "report.html")])).toBe(EXIT_BAD_INPUT);
    stderr.mockRestore();
    expect(existsSync(join(dir, "report.html"))).toBe(false);
    rmSync(dir, { recursive: true, force: true });
  });
});

describe("report.html in headless Chromium", () => {
  let browser: Browser | undefined;
  const context = () => browser!.context;

  beforeAll(async () => {
    browser = await launchChromium();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
  });

  interface Opened {
    page: Page;
    requests: string[];
    errors: string[];
    dialogs: string[];
  }

  /** A fresh tab with the page loaded; every request is refused and counted. */
  async function open(html: string): Promise<Opened> {
    const page = await context().newPage();
    const opened: Opened = { page, requests: [], errors: [], dialogs: [] };
    await watchPage(page, opened);
    await page.setContent(html, { waitUntil: "load" });
    await page.waitForTimeout(300);
    return opened;
  }

  /** Per canvas: its size and the distinct colours of its opaque pixels (read back as a PNG). */
  async function canvases(page: Page): Promise<Array<{ width: number; height: number; colours: Set<string> }>> {
    const urls = await page.$$eval("#charts canvas", (list) => list.map((c) => (c as HTMLCanvasElement).toDataURL("image/png")));
    return urls.map((url) => {
      const png = PNG.sync.read(Buffer.from(url.slice(url.indexOf(",") + 1), "base64"));
      const colours = new Set<string>();
      for (let i = 0; i < png.data.length; i += 4) {
        if (png.data[i + 3] === 255) colours.add(`${png.data[i]},${png.data[i + 1]},${png.data[i + 2]}`);
      }
      return { width: png.width, height: png.height, colours };
    });
  }

  const rgb = (hex: string) => [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
  const near = (colour: string, hex: string) => {
    const a = colour.split(",").map(Number);
    return rgb(hex).every((v, i) => Math.abs(v - a[i]) <= 12);
  };

  it("opens offline: no request, no error, every chart drawn, the tables there; saves the screenshot", async () => {
    const merged = screenshotRun();
    const { page, requests, errors, dialogs } = await open(renderHtml(merged, { markdown: renderMarkdown(merged) }));

    expect(requests).toEqual([]);
    expect(errors).toEqual([]);
    expect(dialogs).toEqual([]);
    // The tables, first.
    await expect(page.locator("#tables table th", { hasText: "eu-west-2" }).count()).resolves.toBeGreaterThan(0);
    await expect(page.locator("#tables td", { hasText: "Broadcast latency (ms)" }).count()).resolves.toBeGreaterThan(0);
    // Latency, connections, messages received and sent, errors, active users, lag, CPU, server CPU+memory, server connections.
    const drawn = await canvases(page);
    expect(drawn).toHaveLength(10);
    for (const [i, c] of drawn.entries()) {
      expect(c.width, `canvas ${i}`).toBeGreaterThan(600);
      expect(c.colours.size, `canvas ${i}: colours`).toBeGreaterThanOrEqual(4);
      expect([...c.colours].some((colour) => near(colour, REGION_PALETTE[0]) || near(colour, "#333333")), `canvas ${i}: a series drawn`).toBe(true);
    }
    expect(await page.locator(".chart-card", { hasText: "Load generator" }).innerText()).toContain("Over 90% CPU a task counts as saturated; over 100 ms lag, saturated when it was busy");
    // The legend names the regions and shows hover values.
    const legend = await page.locator(".u-legend").first().innerText();
    expect(legend).toContain("eu-west-2 p95");
    expect(legend).toContain("all regions p95");
    await page.locator("#charts .u-over").first().hover();
    await expect.poll(() => page.locator(".u-legend .u-value").first().innerText()).toMatch(/^1:\d\d · 12:01:\d\d UTC$/);
    await expect.poll(() => page.locator(".u-legend .u-value").nth(1).innerText()).toMatch(/^\d+(\.\d)?$/);

    // The x-axis spans the whole run (from the load's start, 1 s into the first period, to the last period's end, past the early stop).
    const ranges = () => page.evaluate(() => (window as unknown as { reportCharts: Array<{ scales: Record<string, { min: number; max: number }> }> }).reportCharts.map((u) => [u.scales.x.min, u.scales.x.max]));
    expect(new Set((await ranges()).map(String))).toEqual(new Set(["0,179"]));
    // Every client-side series starts inside the first phase (each period drawn at its end), the
    // bands are the phases as they ran, and the server's scrapes before the load are not drawn.
    const data = JSON.parse((await page.locator("#report-data").textContent())!) as { x: number[]; phases: Array<{ from: number; to: number }>; connections: Array<Array<number | null>>; active: Array<Array<number | null>>; server: { x: number[] }; serverBefore: { scrapes: number } | null };
    expect(data.phases[0].from).toBe(0);
    for (const values of [...data.connections, ...data.active]) {
      const first = data.x[values.findIndex((v) => v !== null)];
      expect(first).toBeGreaterThan(data.phases[0].from);
      expect(first).toBeLessThanOrEqual(data.phases[0].to);
    }
    expect(Math.min(...data.server.x)).toBeGreaterThanOrEqual(0);
    expect(data.serverBefore).toEqual({ scrapes: 1, fromS: -4.5, vcpu: 0.4, memory: 300, connections: 20 });
    // Dragging across one chart zooms them all; a double-click zooms back out.
    await page.locator("#charts .u-over").nth(1).scrollIntoViewIfNeeded();
    const over = (await page.locator("#charts .u-over").nth(1).boundingBox())!;
    await page.mouse.move(over.x + over.width * 0.25, over.y + over.height / 2);
    await page.mouse.down();
    await page.mouse.move(over.x + over.width * 0.5, over.y + over.height / 2, { steps: 5 });
    await page.mouse.up();
    const zoomed = await ranges();
    expect(zoomed[0][0]).toBeGreaterThan(30);
    expect(zoomed[0][1]).toBeLessThan(100);
    expect(new Set(zoomed.map(String)).size).toBe(1);
    await page.mouse.dblclick(over.x + over.width / 2, over.y + over.height / 2);
    expect(new Set((await ranges()).map(String))).toEqual(new Set(["0,179"]));

    // The percentile checkboxes and the metric select redraw the latency chart.
    await page.locator("input[type=checkbox][value=p99]").check();
    expect(await page.locator(".u-legend").first().innerText()).toContain("us-east-1 p99");
    await page.locator("#latency-metric").selectOption("cable.rtt");
    expect(await page.locator("#charts canvas").count()).toBe(10);
    await page.locator("input[type=checkbox][value=p99]").uncheck();
    await page.locator("#latency-metric").selectOption("cable.broadcast_latency");
    await page.mouse.move(0, 0);
    expect(errors).toEqual([]);

    mkdirSync(join(ROOT, "docs", "report-render"), { recursive: true });
    // The charts against their golden picture, as report.md's mermaid charts are: a chart that stops
    // drawing, loses a series or its phases' shading fails here (font antialiasing is tolerated).
    const charts = await page.locator("#over-time").screenshot();
    if (UPDATE || !existsSync(CHARTS_SHOT)) writeFileSync(CHARTS_SHOT, charts);
    else {
      const pixelmatch = (await import("pixelmatch")).default;
      const a = PNG.sync.read(charts);
      const b = PNG.sync.read(readFileSync(CHARTS_SHOT));
      expect([a.width, a.height], `${CHARTS_SHOT}: size`).toEqual([b.width, b.height]);
      const differing = pixelmatch(a.data, b.data, undefined, a.width, a.height, { threshold: 0.2 });
      expect(differing / (a.width * a.height), `${differing} pixels differ from ${CHARTS_SHOT} (UPDATE_GOLDEN=1 rewrites it)`).toBeLessThanOrEqual(0.01);
    }
    if (UPDATE || !existsSync(SHOT)) {
      await page.evaluate(() => document.querySelectorAll("details").forEach((d) => d.setAttribute("open", "")));
      writeFileSync(SHOT, await page.screenshot({ fullPage: true }));
    }
    expect(existsSync(SHOT)).toBe(true);
    expect(requests).toEqual([]);
    await page.close();
  }, 60_000);

  it("shows a hostile region or error name as text, never runs it", async () => {
    const merged = mergeRegions(syntheticRun({ regions: [HOSTILE, "us-east-1"], tasksPerRegion: 1, periods: 9, errorCode: `errors.${HOSTILE}` }));
    merged.timeline!.phases[0].name = HOSTILE;
    merged.timeline!.aborted = { condition: HOSTILE, at: START + 60_000, figure: HOSTILE };
    const html = renderHtml(merged, { title: HOSTILE, markdown: renderMarkdown(merged) });
    expect(html).not.toContain("<img");
    const { page, requests, errors, dialogs } = await open(html);

    expect(dialogs).toEqual([]);
    expect(requests).toEqual([]);
    expect(errors).toEqual([]);
    expect(await page.locator("img").count()).toBe(0);
    expect(await page.title()).toBe(HOSTILE);
    expect(await page.locator("#tables th", { hasText: "</script><img" }).count()).toBeGreaterThan(0);
    expect(await page.locator(".u-legend").first().innerText()).toContain(`${HOSTILE} p95`);
    expect(await page.locator("#charts canvas").count()).toBeGreaterThan(5);
    await page.close();
  }, 60_000);

  it("stays on its file, shows every table and draws its own data, even with raw HTML in the markdown it is given", async () => {
    // report.md escapes outside text; this is the page's own wall behind it: raw HTML that reached
    // the markdown (a renderer's mistake) stays text, and the data comes from the page's own element.
    const merged = screenshotRun();
    const hostile = [
      '<meta http-equiv="refresh" content="0;url=https://evil.example">',
      "<style>table{display:none}</style>",
      '<script type="application/json" id="report-data">{"x":[]}</script>',
      "</details><h1>pwned</h1>",
      "<details open>",
    ].join("\n\n");
    const markdown = renderMarkdown(merged).replace("\n| Metric |", `\n${hostile}\n\n| Metric |`);
    const dir = mkdtempSync(join(tmpdir(), "cable-report-html-hostile-"));
    const file = join(dir, "report.html");
    writeFileSync(file, renderHtml(merged, { markdown }));
    const opened = await openFile(context(), file);
    const { page } = opened;

    expect(page.url()).toBe(opened.url);
    expect(opened.navigations).toEqual([]);
    expect(opened.requests).toEqual([]);
    expect(opened.errors).toEqual([]);
    for (const injected of ["h1", "body meta", "details[open]", "body style", "body script[type='application/json']"]) {
      expect(await page.locator(injected).count(), injected).toBe(injected.includes("json") ? 1 : 0);
    }
    const tables = await tablesShown(page);
    expect(tables.length).toBe(markdown.split("\n").filter((l) => /^\|:?--/.test(l)).length);
    expect(tables.every((t) => t.visible), JSON.stringify(tables)).toBe(true);
    // The data drawn is the run's: every period, and the open connections of all regions as merged.
    const charts = await chartData(page);
    expect(charts.length).toBe(10);
    expect(charts[0][0]).toHaveLength(merged.all.series!.periods.length);
    const connections = charts.find((c) => c.length === merged.regions.length + 2 && c[c.length - 1].every((v, i) => v === merged.all.series!.connections[i]));
    expect(connections, "the connections chart holds the merged figures").toBeDefined();
    await page.close();
    rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  it("reads without JavaScript: the tables, and a note instead of the charts", async () => {
    const merged = screenshotRun();
    const page = await context().newPage();
    const requests: string[] = [];
    await page.route("**/*", (route) => {
      requests.push(route.request().url());
      return route.abort();
    });
    const cdp = await context().newCDPSession(page);
    await cdp.send("Emulation.setScriptExecutionDisabled", { value: true });
    await page.setContent(renderHtml(merged, { markdown: renderMarkdown(merged) }));
    expect(await page.locator("#tables table").count()).toBeGreaterThan(0);
    expect(await page.locator("#charts canvas").count()).toBe(0);
    expect(await page.locator("body").innerText()).toContain("JavaScript is off");
    expect(requests).toEqual([]);
    await page.close();
  }, 60_000);
});

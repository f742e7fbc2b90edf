// `npm start`'s run as a person opens it: scripts/demo.mjs run as written (the local target, two
// local regions of two tasks, its server scrape), then its report.md and report.html read and the
// page opened in headless Chromium. What the page shows must be what happened, to the second: every
// client-side series starts inside the first phase, each phase's band is its written length, the
// x-axis starts at the load's start (no empty half before it), the server's idle scrapes before the
// load are said and not drawn, the headline comes first and names the target. Saves the page as
// docs/report-render/demo-html.png for people to look at.
/// <reference lib="dom" />
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { MergedResults } from "../src/model.js";
import { launchChromium, watchPage, type Browser } from "cable-test-servers/chromium";

const ROOT = resolve(__dirname, "../../..");
const SHOT = join(ROOT, "docs", "report-render", "demo-html.png");

let out: string;
let runDir: string;
let log = "";

beforeAll(async () => {
  out = mkdtempSync(join(tmpdir(), "cable-demo-"));
  const child = spawn(process.execPath, [join(ROOT, "scripts/demo.mjs")], { cwd: ROOT, env: { ...process.env, DEMO_OUT: out }, stdio: ["ignore", "pipe", "pipe"] });
  child.stdout.on("data", (d) => (log += d));
  child.stderr.on("data", (d) => (log += d));
  const timer = setTimeout(() => child.kill("SIGTERM"), 240_000);
  const code = await new Promise<number | null>((done) => child.on("close", done));
  clearTimeout(timer);
  if (code !== 0) throw new Error(`scripts/demo.mjs exited ${code}:\n${log.slice(-4000)}`);
  runDir = join(out, readdirSync(out).find((name) => !name.startsWith("."))!);
}, 300_000);

afterAll(() => {
  if (out) rmSync(out, { recursive: true, force: true });
});

describe("npm start's report, as a person reads it", () => {
  it("merged.json: the four phases as they ran, each its written length, time from the load's start", () => {
    const merged = JSON.parse(readFileSync(join(runDir, "merged.json"), "utf8")) as MergedResults;
    const timeline = merged.timeline!;
    const written = merged.test.phases.map((p) => Number(p.duration) * 1000);
    expect(timeline.phases.map((p) => p.name)).toEqual(["ramp", "hold", "spike", "recover"]);
    expect(timeline.start).toBe(timeline.phases[0].startTime);
    for (const [i, p] of timeline.phases.entries()) {
      // Its written length, unless the next phase began sooner (Artillery starts it when this one's timer fires).
      const next = timeline.phases[i + 1]?.startTime ?? Infinity;
      expect(p.endTime).toBe(Math.min(p.startTime + written[p.index], next));
      // Each phase starts at its earliest over the tasks, so the next may begin up to the tasks' start skew early.
      expect(p.endTime! - p.startTime).toBeGreaterThan(written[p.index] - 1_000);
    }
    expect(merged.target?.url).toMatch(/^ws:\/\/127\.0\.0\.1:\d+\/cable$/);
  });

  it("report.md: the headline first, with the run's state, users, the main latency and the target", () => {
    const md = readFileSync(join(runDir, "report.md"), "utf8");
    const lines = md.split("\n");
    expect(lines[2]).toMatch(/^> \*\*✅ Complete\*\* · \*\*\d+\*\* virtual users \(\d+ completed, 0 failed\) · peak \*\*\d+\*\* open connections$/);
    expect(md.indexOf("> **Broadcast latency** p50")).toBeLessThan(md.indexOf("| Metric |"));
    expect(md).toMatch(/> Target: `ws:\/\/127\.0\.0\.1:\d+\/cable` \(cable-local-target\/[\d.]+\)/);
    expect(md).toMatch(/Per 10 s, each point at the end of the seconds it covers, from 0:\d\d to \d:\d\d after the load's start \(0:00\)/);
    expect(md).toMatch(/The server before the load \(\d+ scrapes? from -0:\d\d\), not drawn:/);
    expect(md).toMatch(/Phases: ramp 0:00–0:10 · hold 0:10–0:30 · spike 0:30–0:35 · recover 0:35–0:55/);
  });

  describe("report.html in Chromium", () => {
    let browser: Browser;
    beforeAll(async () => {
      browser = await launchChromium({ width: 1200, height: 900 });
    }, 60_000);
    afterAll(async () => {
      await browser?.close();
    });

    it("every series starts inside the first phase, the bands are the phases' lengths, the axis starts at the load", async () => {
      const file = join(runDir, "report.html");
      const page = await browser.context.newPage();
      const seen = { requests: [] as string[], errors: [] as string[], dialogs: [] as string[] };
      await watchPage(page, seen, pathToFileURL(file).href);
      await page.goto(pathToFileURL(file).href, { waitUntil: "load" });
      await page.waitForFunction(() => (window as unknown as { reportCharts?: unknown[] }).reportCharts !== undefined);
      expect(seen).toEqual({ requests: [], errors: [], dialogs: [] });

      type Values = Array<number | null>;
      const data = JSON.parse((await page.locator("#report-data").textContent())!) as {
        x: number[];
        stepS: number;
        phases: Array<{ name: string; from: number; to: number | null }>;
        latency: { values: Record<string, { p95: Values[] }> };
        connections: Values[];
        received: Values[];
        sent: Values[];
        active: Values[];
        server: { x: number[] } | null;
        serverBefore: { scrapes: number; fromS: number } | null;
      };
      const [first] = data.phases;
      expect(first.from).toBe(0);
      const series: Array<[string, Values]> = [
        ...Object.entries(data.latency.values).flatMap(([m, v]) => v.p95.map((s, i) => [`${m} p95 #${i}`, s] as [string, Values])),
        ...(["connections", "received", "sent", "active"] as const).flatMap((k) => data[k].map((s, i) => [`${k} #${i}`, s] as [string, Values])),
      ];
      for (const [name, values] of series) {
        const i = values.findIndex((v) => v !== null);
        if (i === -1) continue;
        // Never before the load. A series starts with its first sample, which a first period holding
        // only a moment of the ramp may not have had (the grid is the wall clock's): at most one period on.
        expect(data.x[i], `${name}: first point`).toBeGreaterThan(first.from);
        expect(data.x[i], `${name}: first point`).toBeLessThanOrEqual(first.to! + data.stepS);
      }
      expect(data.phases.map((p) => Math.round(p.to! - p.from))).toEqual([10, 20, 5, 20]);
      // The server's scrapes from the load on; those before it named, not drawn.
      expect(Math.min(...data.server!.x)).toBeGreaterThanOrEqual(0);
      expect(data.serverBefore!.scrapes).toBeGreaterThan(0);
      await expect(page.locator(".chart-card").filter({ has: page.locator("h3", { hasText: /^Server$/ }) }).innerText()).resolves.toMatch(/Before the load \(\d+ scrapes? from -0:\d\d\), idle/);
      // No empty half: every chart's x-axis runs from the load's start to the last period's end.
      const ranges = await page.evaluate(() => (window as unknown as { reportCharts: Array<{ scales: Record<string, { min: number; max: number }> }> }).reportCharts.map((u) => [u.scales.x.min, u.scales.x.max]));
      for (const [min, max] of ranges) {
        expect(min).toBe(0);
        expect(max).toBeGreaterThanOrEqual(data.x[data.x.length - 1]);
        // The first period drawn is the first with a record: a load starting late in a wall-clock
        // period may have sent nothing before that period ended (the ramp's first arrival is 1 s in).
        expect(data.x[0] - min).toBeLessThanOrEqual(first.to! + data.stepS);
      }
      // The headline is the first thing on the page.
      const summary = await page.locator("#summary").innerText();
      expect(summary.indexOf("Complete")).toBeLessThan(summary.indexOf("Test:"));
      writeFileSync(SHOT, await page.screenshot({ fullPage: false }));
      await page.close();
    }, 60_000);
  });
});

/// <reference lib="dom" />
// `cable-fanout run --live` with two --local regions, the page open in real headless Chromium while
// the run goes: each period is drawn within 2 s of the live feed reading it (the feed's own time,
// sent with the figures), a reload mid-run shows every period so far, no request leaves the page,
// a request without the token is refused, and at the end the page is report.html, whose figures
// for every period are the ones the page showed live.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { request } from "node:http";
import os from "node:os";
import path from "node:path";
import { startTarget, type LocalTarget } from "cable-local-target";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchChromium, type Browser } from "cable-test-servers/chromium";
import { runCli } from "./cli";

const ROOT = path.resolve(__dirname, "../../..");
const CHAT = path.join(ROOT, "scenarios/chat.yml");
// Long enough that the page is read live well before the end (a slow machine takes ~20 s to start).
const LOAD = JSON.stringify({ config: { phases: [{ duration: 50, arrivalRate: 2 }] } });

interface Drawn {
  readAt: number;
  drawnAt: number;
  periods: number;
}

describe("cable-fanout run --live (--local, two regions) in headless Chromium", () => {
  let target: LocalTarget;
  let work: string;
  let browser: Browser;

  beforeAll(async () => {
    target = await startTarget({ port: 0 });
    work = mkdtempSync(path.join(os.tmpdir(), "cable-live-page-"));
    browser = await launchChromium();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await target?.close();
    rmSync(work, { recursive: true, force: true });
  });

  it("draws each period within 2 s of the feed reading it, keeps every period across a reload, and becomes report.html", async () => {
    let announce: (url: string) => void = () => undefined;
    const announced = new Promise<string>((resolve) => (announce = resolve));
    let said = "";
    const run = runCli(["run", CHAT, "--local", "--store", path.join(work, "store"), "--regions", "local-a,local-b", "--count", "1", "--target", target.cableUrl, "--overrides", LOAD, "--start-delay", "2", "--out", path.join(work, "results"), "--live"], {
      cwd: work,
      timeoutMs: 150_000,
      onSpawn: (child) =>
        child.stderr?.on("data", (d) => {
          said += d;
          const url = /live page: (http:\/\/127\.0\.0\.1:\d+\/[\w-]+\/)/.exec(said)?.[1];
          if (url) announce(url);
        }),
    });
    const url = await Promise.race([announced, run.then((r) => Promise.reject(new Error(`no live page URL:\n${r.stderr}`)))]);

    // Without the token, or with another, nothing.
    const origin = new URL(url).origin;
    for (const p of ["/", "/events", `/${"x".repeat(22)}/`, `/${"x".repeat(22)}/events`]) expect(await status(`${origin}${p}`), p).toBe(404);

    const page = await browser.context.newPage();
    const elsewhere: string[] = [];
    const errors: string[] = [];
    await page.route("**/*", (route) => (route.request().url().startsWith(url) ? route.continue() : (elsewhere.push(route.request().url()), route.abort())));
    page.on("pageerror", (e) => errors.push(e.message));
    await page.goto(url, { waitUntil: "load" });
    await page.waitForFunction(() => ((window as unknown as { reportCharts?: Array<{ data: number[][] }> }).reportCharts?.[0]?.data[0].length ?? 0) >= 2, undefined, { timeout: 60_000, polling: 250 });
    const before = await drawnUpdates(page);
    expect(await page.locator("#live-status").innerText()).toMatch(/Live · \d+:\d\d of 0:50/);
    expect(await page.locator("#live-status").innerText()).toMatch(/local-a: \d+ pending, \d+ running, \d+ stopped/);

    // A reload mid-run shows every period so far, at once, from the page itself.
    const periodsSoFar = await periods(page);
    await page.reload({ waitUntil: "load" });
    expect(await periods(page)).toBeGreaterThanOrEqual(periodsSoFar);
    await page.waitForFunction(() => ((window as unknown as { reportCharts?: Array<{ data: number[][] }> }).reportCharts?.[0]?.data[0].length ?? 0) >= 3, undefined, { timeout: 60_000, polling: 250 });
    const live = await chartsByTitle(page);
    // docs/report-render/live-page.png is this, taken with LIVE_PAGE_SCREENSHOT set to that path.
    await page.screenshot({ path: process.env.LIVE_PAGE_SCREENSHOT ?? path.join(work, "live-page.png"), fullPage: false });
    const drawn = [...before, ...(await drawnUpdates(page))];

    const result = await run;
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toMatch(/live page: now the report \(\d+ updates, \d+ KiB streamed, \d+ page loads\)/);
    await page.waitForFunction(() => document.getElementById("live-status") === null, undefined, { timeout: 10_000 });
    const runDir = path.join(work, "results", (await readRunId(work)) ?? "");
    expect(await page.content()).toContain(readFileSync(path.join(runDir, "report.html"), "utf8").match(/<title>.*<\/title>/)![0]);
    await page.waitForFunction(() => (window as unknown as { reportCharts?: unknown[] }).reportCharts !== undefined);
    const final = await chartsByTitle(page);

    // Every period the page drew live with both regions in it has, at the end, the same figures in report.html.
    let compared = 0;
    for (const title of ["users", "connections"]) {
      const [liveX, ...liveSeries] = live.get(title)!;
      const [finalX, ...finalSeries] = final.get(title)!;
      liveX.forEach((x, i) => {
        // A period one region had not sent yet when the page was read is not whole.
        if (liveSeries.some((s) => s[i] === null)) return;
        const j = finalX.indexOf(x);
        expect(j, `${title} at ${x} s`).toBeGreaterThanOrEqual(0);
        liveSeries.forEach((s, k) => expect(finalSeries[k][j], `${title} series ${k} at ${x} s`).toBe(s[i]));
        compared++;
      });
    }
    expect(compared).toBeGreaterThanOrEqual(2);
    // Each update drawn within 2 s of the feed reading it.
    const delays = drawn.filter((d) => typeof d.readAt === "number").map((d) => d.drawnAt - d.readAt);
    expect(delays.length).toBeGreaterThanOrEqual(3);
    // Within 2 s, but for one in ten on a machine busy with the suite's other files (here alone: worst 460 ms; beside them: 1.1 s).
    expect(delays.filter((d) => d >= 2_000).length, delays.join(", ")).toBeLessThanOrEqual(Math.floor(delays.length / 10));
    expect(Math.max(...delays), delays.join(", ")).toBeLessThan(5_000);
    console.log(`live page: ${delays.length} updates drawn, delay from the feed's read: median ${median(delays)} ms, worst ${Math.max(...delays)} ms`);
    expect(elsewhere).toEqual([]);
    expect(errors).toEqual([]);
  }, 180_000);
});

function status(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on("error", reject);
    req.end();
  });
}

async function drawnUpdates(page: Page): Promise<Drawn[]> {
  return page.evaluate(() => ((window as unknown as { cableLive?: { drawn: Drawn[] } }).cableLive?.drawn ?? []).slice());
}

async function periods(page: Page): Promise<number> {
  return page.evaluate(() => (window as unknown as { reportCharts?: Array<{ data: number[][] }> }).reportCharts?.[0]?.data[0].length ?? 0);
}

/** Each chart by its left axis's unit: its x values, then each series. */
async function chartsByTitle(page: Page): Promise<Map<string, Array<Array<number | null>>>> {
  const entries = await page.evaluate(() =>
    (window as unknown as { reportCharts: Array<{ data: Array<Array<number | null>>; axes: Array<{ label?: string }> }> }).reportCharts.map((u) => [u.axes[1]?.label ?? "", u.data.map((s) => Array.from(s))] as const),
  );
  return new Map(entries as Array<[string, Array<Array<number | null>>]>);
}

async function readRunId(work: string): Promise<string | undefined> {
  const { readdirSync } = await import("node:fs");
  return readdirSync(path.join(work, "results"))[0];
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

// The live page: a run so far as merged results (live.ts) equals the merge of its tasks; its server
// (live-server.ts) answers only at its token and streams the page's parts; in real Chromium the
// page draws each update, keeps outside text as text, makes no other request, and becomes the
// report at the end.
import { request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { renderMarkdown } from "../src/markdown.js";
import { runState } from "../src/headline.js";
import { reportPageParts, renderReportPage } from "../src/html.js";
import { liveResults } from "../src/live.js";
import { LivePageServer } from "../src/live-server.js";
import { PERIOD_MS } from "../src/period.js";
import { mergeRegions } from "../src/results.js";
import type { TaskResult } from "../src/task.js";
import { launchChromium, type Browser } from "cable-test-servers/chromium";
import { around, liveRegionOf, taskOf, TEST, type PeriodSpec } from "./fixtures.js";

const T0 = Date.UTC(2026, 10, 29, 12, 0, 0);
const MAIN = "cable.broadcast_latency";

/** A task's periods: users arriving and finishing, connections, messages, a latency around `center` ms. */
function periods(count: number, center: number, seed: number, from = 0): PeriodSpec[] {
  return Array.from({ length: count }, (_, i) => ({
    period: T0 + (from + i) * PERIOD_MS,
    counters: { "vusers.created": 5, "vusers.completed": i > 0 ? 4 : 0, "vusers.failed": i === 2 ? 1 : 0, "cable.connections_open_period_peak": 20 + i, "cable.messages_received": 300 + i, ...(i === 3 ? { "errors.cable.timeout": 2 } : {}) },
    samples: { [MAIN]: around(center + i * 3, 40, seed + i), "cable.handshake": around(20, 10, seed * 7 + i) },
    cpuPercent: 30 + seed,
  }));
}

const phaseStarts = [{ index: 0, name: "steady", startTime: T0 }];

/** A task whose whole-run figures are its periods' (as Artillery's aggregate is). */
function task(specs: PeriodSpec[], file: string): TaskResult {
  const counters: Record<string, number> = {};
  const histograms: Record<string, number[]> = {};
  for (const p of specs) {
    for (const [k, v] of Object.entries(p.counters)) counters[k] = (counters[k] ?? 0) + v;
    for (const [k, samples] of Object.entries(p.samples ?? {})) (histograms[k] ??= []).push(...samples);
  }
  return taskOf({ periods: specs, phaseStarts, counters, histograms }, file);
}

const east = [task(periods(6, 40, 1), "us-east-1/a.json"), task(periods(6, 60, 2), "us-east-1/b.json")];
const west = [task(periods(5, 90, 3, 1), "eu-west-1/c.json")];

describe("a run so far as merged results", () => {
  const live = liveResults({ regions: [liveRegionOf("us-east-1", east), liveRegionOf("eu-west-1", west, 2)], test: TEST, asOf: T0 + 70_000 });
  const merged = mergeRegions([
    { name: "us-east-1", tasks: east, files: east.map((t) => t.reportFile) },
    { name: "eu-west-1", tasks: west, files: west.map((t) => t.reportFile) },
  ]);

  it("has, period by period, the figures the merge of its tasks has: latency percentiles, connections, users, messages, errors", () => {
    for (const [got, want] of [[live.all, merged.all], ...merged.regions.map((r) => [live.regions.find((l) => l.name === r.name)!, r])] as const) {
      expect(got.series!.periods).toEqual(want.series!.periods);
      for (const metric of [MAIN, "cable.handshake"]) expect(got.series!.latency[metric]).toEqual(want.series!.latency[metric]);
      expect(got.series!.connections).toEqual(want.series!.connections);
      expect(got.series!.users).toEqual(want.series!.users);
      expect(got.series!.messages).toEqual(want.series!.messages);
      expect(got.series!.errors).toEqual(want.series!.errors);
      expect(got.counters).toEqual(want.counters);
      // The whole run's distribution too (the merged sketches against every sample's).
      expect(Math.abs(got.histograms[MAIN].p95 - want.histograms[MAIN].p95)).toBeLessThanOrEqual(want.histograms[MAIN].p95 * 0.02);
    }
  });

  it("counts the region's own tasks, says the run is going, and its generator is each period's busiest task", () => {
    expect(live.regions.map((r) => [r.name, r.tasks, r.expectedTasks])).toEqual([["eu-west-1", 1, 2], ["us-east-1", 2, 2]]);
    expect(live.all.tasks).toBe(3);
    expect(runState(live).state).toBe("running");
    expect(renderMarkdown(live, {})).toMatch(/\*\*⏳ Running, 1\.?\d* of \d+ virtual users failed\*\*|\*\*❌ Running, \d+ of \d+ virtual users failed/);
    const east1 = live.regions.find((r) => r.name === "us-east-1")!;
    expect(east1.series!.generator).toHaveLength(1);
    expect(east1.series!.generator[0].cpu.every((c) => c === 32)).toBe(true);
  });
});

/** GET on the server: status, headers and body. */
function get(url: string): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => (body += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

/** Reads an event stream until `until` holds of what came, or `ms` pass. */
function readEvents(url: string, until: (text: string) => boolean, ms = 5_000): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = "";
    const req = request(url, (res) => {
      res.setEncoding("utf8");
      res.on("data", (c: string) => {
        text += c;
        if (until(text)) {
          req.destroy();
          resolve(text);
        }
      });
    });
    req.on("error", (err) => (text ? resolve(text) : reject(err)));
    setTimeout(() => {
      req.destroy();
      resolve(text);
    }, ms).unref();
    req.end();
  });
}

describe("the live page's server", () => {
  it("answers only at its token, streams each change of the page, then serves the report", async () => {
    const server = await LivePageServer.start({ host: "127.0.0.1", port: 0 });
    try {
      expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/[A-Za-z0-9_-]{22}\/$/);
      const origin = new URL(server.url).origin;
      for (const path of ["/", "/events", "/x/", `/${"a".repeat(22)}/`, `${new URL(server.url).pathname}nothing`]) {
        const res = await get(`${origin}${path}`);
        expect(res.status, path).toBe(404);
        expect(res.body).toBe("not found\n");
      }
      const waiting = await get(server.url);
      expect(waiting.body).toContain("reloads by itself");

      const parts = reportPageParts(liveResults({ regions: [liveRegionOf("us-east-1", east)], test: TEST, asOf: T0 }), { title: "chat.yml: live" });
      server.update(parts);
      server.status("<p>⏳ Live</p>");
      const page = await get(server.url);
      expect(page.status).toBe(200);
      expect(page.headers["referrer-policy"]).toBe("no-referrer");
      expect(page.body).toContain("connect-src 'self'");
      expect(page.body).toContain('<div id="live-status" class="live-status"><p>⏳ Live</p></div>');

      const stream = readEvents(`${server.url}events`, (t) => t.includes("event: final"));
      await new Promise((r) => setTimeout(r, 200));
      server.update(parts); // unchanged: not sent again
      server.status("<p>⏳ Live 2</p>");
      const done = server.final("<!doctype html><title>report</title>");
      const events = await stream;
      expect(events.match(/^event: update$/gm)).toHaveLength(1);
      expect(events.match(/^event: status$/gm)).toHaveLength(2);
      expect(events).toContain("⏳ Live 2");
      await done;
      expect(server.transfer.eventBytes).toBeGreaterThan(0);

    } finally {
      await server.close();
    }
  });
});

describe("the live page's server at the end", () => {
  it("tells a stream that (re)connects after the end that it ended, while open pages reload", async () => {
    const server = await LivePageServer.start({ host: "127.0.0.1", port: 0 });
    try {
      server.update(reportPageParts(liveResults({ regions: [liveRegionOf("us-east-1", east)], test: TEST, asOf: T0 }), {}));
      // An open page that has not reloaded yet holds the server open.
      const open = readEvents(`${server.url}events`, () => false, 1_500);
      await new Promise((r) => setTimeout(r, 100));
      const done = server.final("<!doctype html><title>report</title>");
      expect(await readEvents(`${server.url}events`, (t) => t.includes("event: final"), 1_000)).toBe("event: final\ndata: {}\n\n");
      expect((await get(server.url)).body).toBe("<!doctype html><title>report</title>");
      await open;
      await done;
    } finally {
      await server.close();
    }
  });
});

describe("the live page in headless Chromium", () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchChromium();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
  });

  it("draws each update within 2 s, shows outside text as text, asks nothing of anyone else, and becomes the report", async () => {
    const hostileRegion = '<img src=x onerror="document.title=1">';
    const regionsAt = (n: number) => [
      liveRegionOf("us-east-1", east.map((t) => ({ ...t, periods: t.periods.slice(0, n) }))),
      liveRegionOf(hostileRegion, west.map((t) => ({ ...t, periods: t.periods.slice(0, n) }))),
    ];
    const periodsAt = (n: number) => liveResults({ regions: regionsAt(n), test: TEST, asOf: 0 }).all.series!.periods.length;
    const partsAt = (n: number) => reportPageParts(liveResults({ regions: regionsAt(n), test: TEST, asOf: T0 + n * PERIOD_MS }), { title: "chat.yml: live" });
    const server = await LivePageServer.start({ host: "127.0.0.1", port: 0 });
    const requests: string[] = [];
    const errors: string[] = [];
    try {
      server.update(partsAt(2));
      server.status("<p>⏳ Live</p>");
      const page = await browser.context.newPage();
      await page.route("**/*", (route) => {
        if (route.request().url().startsWith(server.url)) return route.continue();
        requests.push(route.request().url());
        return route.abort();
      });
      page.on("pageerror", (e) => errors.push(e.message));
      page.on("console", (m) => m.type() === "error" && errors.push(m.text()));
      page.on("dialog", (d) => {
        errors.push(`dialog ${d.message()}`);
        void d.dismiss();
      });
      await page.goto(server.url, { waitUntil: "load" });
      const points = () => page.evaluate(() => ((window as unknown as { reportCharts: Array<{ data: number[][] }> }).reportCharts[0]?.data[0].length ?? 0));
      await page.waitForFunction(() => (window as unknown as { cableLive?: unknown }).cableLive !== undefined);
      expect(await points()).toBe(periodsAt(2));

      // The reader hides a line and picks p99 too: an update keeps both.
      await page.locator(".u-legend tr.u-series").nth(1).click();
      await page.locator('input[type="checkbox"][value="p99"]').check();
      const hiddenBefore = await page.evaluate(() => (window as unknown as { reportCharts: Array<{ series: Array<{ label: string; show: boolean }> }> }).reportCharts[0].series.filter((s) => !s.show).map((s) => s.label));
      expect(hiddenBefore).toHaveLength(1);

      for (const n of [3, 4, 5]) {
        const sentAt = Date.now();
        server.update(partsAt(n));
        await page.waitForFunction((want) => ((window as unknown as { reportCharts: Array<{ data: number[][] }> }).reportCharts[0]?.data[0].length ?? 0) === want, periodsAt(n), { timeout: 2_000 });
        expect(Date.now() - sentAt).toBeLessThan(2_000);
      }
      const shown = await page.evaluate(() => (window as unknown as { reportCharts: Array<{ series: Array<{ label: string; show: boolean }> }> }).reportCharts[0].series.map((s) => [s.label, s.show] as const));
      expect(shown.filter(([, show]) => !show).map(([label]) => label)).toEqual(hiddenBefore);
      expect(shown.some(([label]) => label.endsWith(" p99"))).toBe(true);
      await page.locator('input[type="checkbox"][value="p99"]').uncheck();
      // The latency chart's figures are the merged results' own.
      const drawn = await page.evaluate(() => (window as unknown as { reportCharts: Array<{ data: Array<Array<number | null>> }> }).reportCharts[0].data.slice(1));
      const want = liveResults({ regions: regionsAt(5), test: TEST, asOf: 0 }).all.series!.latency[MAIN].p95;
      expect(drawn[drawn.length - 1]).toEqual(want);

      // A reload shows every period so far.
      await page.reload({ waitUntil: "load" });
      await page.waitForFunction(() => (window as unknown as { reportCharts?: unknown[] }).reportCharts !== undefined);
      expect(await points()).toBe(periodsAt(5));
      expect(await page.$$("img")).toHaveLength(0);
      expect(await page.locator("#tables").innerText()).toContain("onerror");

      const final = renderReportPage(merged5(), {});
      await server.final(final);
      await page.waitForFunction(() => document.getElementById("live-status") === null, undefined, { timeout: 5_000 });
      expect(await page.title()).not.toContain("live");
      expect(requests).toEqual([]);
      expect(errors).toEqual([]);
    } finally {
      await server.close();
    }

    function merged5() {
      return mergeRegions([{ name: "us-east-1", tasks: east, files: ["a"] }]);
    }
  }, 60_000);
});

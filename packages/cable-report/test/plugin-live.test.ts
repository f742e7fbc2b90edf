// The plugin's live page for one real `artillery run` (CABLE_LIVE=1) against the local target, in
// headless Chromium: the page prints its URL, draws periods while the run goes, and at the end
// becomes the run's report, whose figures for each period are the ones the page showed live.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runArtillery } from "cable-test-servers";
import { readLiveSetting } from "../src/plugin-live.js";
import { launchChromium, type Browser } from "cable-test-servers/chromium";

describe("the live setting", () => {
  it("reads live: true, a port, CABLE_LIVE, and names what it cannot read", () => {
    expect(readLiveSetting({}, {})).toBeNull();
    expect(readLiveSetting({ live: false }, { CABLE_LIVE: "1" })).toBeNull();
    expect(readLiveSetting({ live: true }, {})).toEqual({ port: 0, host: "127.0.0.1" });
    expect(readLiveSetting({ live: 5665 }, {})).toEqual({ port: 5665, host: "127.0.0.1" });
    expect(readLiveSetting({}, { CABLE_LIVE: "1" })).toEqual({ port: 0, host: "127.0.0.1" });
    expect(readLiveSetting({}, { CABLE_LIVE: "8080" })).toEqual({ port: 8080, host: "127.0.0.1" });
    expect(readLiveSetting({}, { CABLE_LIVE: "0" })).toBeNull();
    expect(readLiveSetting({ live: "yes" }, {})).toEqual({ problem: "config.plugins.cable-report.live: give true (any free port) or a port number from 1 to 65535" });
    expect(readLiveSetting({}, { CABLE_LIVE: "many" })).toEqual({ problem: "CABLE_LIVE: give true (any free port) or a port number from 1 to 65535" });
    expect(readLiveSetting({ live: true, liveHost: 7 }, {})).toHaveProperty("problem");
    // A fan-out task leaves the page to its runner, whatever the scenario or the shell asks.
    expect(readLiveSetting({ live: true }, { CABLE_LIVE: "1", CABLE_FAILED_USERS_JUDGED_BY_RUNNER: "1" })).toBeNull();
  });
});

describe("the plugin's live page in headless Chromium", () => {
  let browser: Browser;
  let target: { cableUrl: string; close(): Promise<void> } | undefined;
  beforeAll(async () => {
    browser = await launchChromium();
    const { startTarget } = (await import("cable-local-target")) as { startTarget(o: { port: number }): Promise<{ cableUrl: string; close(): Promise<void> }> };
    target = await startTarget({ port: 0 });
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await target?.close();
  });

  it("draws the run while it goes and becomes its report, with the same figures per period", async () => {
    let announce: (url: string) => void = () => undefined;
    const announced = new Promise<string>((resolve) => (announce = resolve));
    let output = "";
    const run = runArtillery({
      script: {
        config: {
          target: target!.cableUrl,
          engines: { cable: {} },
          phases: [{ name: "steady", duration: 24, arrivalRate: 2 }],
          plugins: { "cable-report": {} },
        },
        scenarios: [{ name: "chat", engine: "cable", flow: [{ connect: { cookies: { uid: "live/{{ $uuid }}" } } }, { subscribe: { channel: "ChatChannel", params: { id: "live" }, as: "chat" } }, { think: 2 }, { disconnect: {} }] }],
      },
      env: { CABLE_LIVE: "1" },
      timeoutMs: 90_000,
      onOutput(text) {
        output += text;
        const url = /live page at (http:\/\/127\.0\.0\.1:\d+\/[\w-]+\/)/.exec(output)?.[1];
        if (url) announce(url);
      },
    });
    const url = await Promise.race([announced, run.then((r) => Promise.reject(new Error(`artillery ended without a live page:\n${r.output}`)))]);
    const page = await browser.context.newPage();
    const requests: string[] = [];
    await page.route("**/*", (route) => (route.request().url().startsWith(url) ? route.continue() : (requests.push(route.request().url()), route.abort())));
    await page.goto(url, { waitUntil: "load" });
    // Two periods drawn while Artillery runs (the waiting page reloads itself until the first).
    await page.waitForFunction(() => ((window as unknown as { reportCharts?: Array<{ data: number[][] }> }).reportCharts?.[0]?.data[0].length ?? 0) >= 2, undefined, { timeout: 40_000, polling: 250 });
    const liveActive = await activeUsers(page);
    expect(await page.locator("#live-status").innerText()).toMatch(/Live · \d+:\d\d of 0:24/);
    expect(await page.locator("#summary").innerText()).toContain("Running");

    const result = await run;
    expect(result.code, result.output).toBe(0);
    await page.waitForFunction(() => document.getElementById("live-status") === null, undefined, { timeout: 10_000 });
    await page.waitForFunction(() => (window as unknown as { reportCharts?: unknown[] }).reportCharts !== undefined);
    const finalActive = await activeUsers(page);
    expect(await page.locator("#summary").innerText()).toMatch(/✅ Complete/);
    // Every period the live page drew has the same figure in the report.
    for (const [x, value] of liveActive) expect(finalActive.get(x), `period ending at ${x} s`).toBe(value);
    expect(requests).toEqual([]);
  }, 120_000);
});

/** The "Active virtual users" chart's all-regions line: period end (s) → users. */
async function activeUsers(page: import("playwright-core").Page): Promise<Map<number, number | null>> {
  const pairs = await page.evaluate(() => {
    const charts = (window as unknown as { reportCharts: Array<{ data: Array<Array<number | null>>; series: Array<{ label?: string }>; axes: Array<{ label?: string }> }> }).reportCharts;
    const chart = charts.find((u) => u.axes[1]?.label === "users")!;
    const last = chart.data.length - 1;
    return chart.data[0].map((x, i) => [x, chart.data[last][i]] as [number, number | null]);
  });
  return new Map(pairs as Array<[number, number | null]>);
}

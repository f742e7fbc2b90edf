// Test support: report.html and the live page opened in Debian's headless `chromium` (as
// cable-report's render.test.ts drives it for the golden PNGs), from a file as a user opens it,
// every request but the file itself refused and counted, and what the page did: navigations,
// console errors, dialogs.
/// <reference lib="dom" />
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { chromium, type BrowserContext, type Page } from "playwright-core";

export const CHROMIUM = "/usr/bin/chromium";

export interface Browser {
  context: BrowserContext;
  close(): Promise<void>;
}

/** A fresh profile, no network features, a fixed viewport and scale (screenshots stay comparable). */
export async function launchChromium(viewport = { width: 1200, height: 800 }): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: run scripts/setup-test-servers.sh (it installs Debian's chromium)`);
  const profile = mkdtempSync(join(tmpdir(), "cable-report-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    viewport,
    deviceScaleFactor: 1,
  });
  return {
    context,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

export interface Opened {
  page: Page;
  url: string;
  /** Requests other than the file itself: all refused. */
  requests: string[];
  /** Every main-frame URL the page went to after it loaded. */
  navigations: string[];
  errors: string[];
  dialogs: string[];
}

/**
 * Refuses and counts every request but `allowed`, and records console errors, page errors and
 * dialogs (dismissed): what a page did that a report must never do.
 */
export async function watchPage(page: Page, seen: Pick<Opened, "requests" | "errors" | "dialogs">, allowed?: string): Promise<void> {
  await page.route("**/*", (route) => {
    if (route.request().url() === allowed) return route.continue();
    seen.requests.push(route.request().url());
    return route.abort();
  });
  page.on("console", (m) => {
    if (m.type() === "error" || m.type() === "warning") seen.errors.push(`console ${m.type()}: ${m.text()}`);
  });
  page.on("pageerror", (e) => seen.errors.push(`page error: ${e.message}`));
  page.on("dialog", (d) => {
    seen.dialogs.push(d.message());
    void d.dismiss();
  });
}

/** Opens a report.html file in a new tab and waits `settleMs` for anything it might do (a meta refresh at 0 s, a script). */
export async function openFile(context: BrowserContext, file: string, settleMs = 1_500): Promise<Opened> {
  const page = await context.newPage();
  const url = pathToFileURL(file).href;
  const opened: Opened = { page, url, requests: [], navigations: [], errors: [], dialogs: [] };
  await watchPage(page, opened, url);
  await page.goto(url, { waitUntil: "load" });
  page.on("framenavigated", (frame) => {
    if (frame === page.mainFrame()) opened.navigations.push(frame.url());
  });
  await page.waitForTimeout(settleMs);
  return opened;
}

/** Each table of the page: whether it shows (a box of its own, not hidden by any style) and its first header cell. */
export async function tablesShown(page: Page): Promise<Array<{ visible: boolean; first: string }>> {
  return page.$$eval("#summary table, #tables table", (tables) =>
    tables.map((t) => {
      const box = t.getBoundingClientRect();
      const style = getComputedStyle(t);
      return { visible: box.width > 0 && box.height > 0 && style.display !== "none" && style.visibility !== "hidden" && Number(style.opacity) > 0, first: t.querySelector("th")?.textContent ?? "" };
    }),
  );
}

/** The charts' own data as uPlot holds it: per chart, the x values and every series. */
export async function chartData(page: Page): Promise<Array<Array<Array<number | null>>>> {
  return page.evaluate(() => ((window as unknown as { reportCharts?: Array<{ data: Array<Array<number | null>> }> }).reportCharts ?? []).map((u) => u.data.map((s) => Array.from(s))));
}

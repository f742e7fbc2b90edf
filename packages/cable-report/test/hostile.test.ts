// The proof of issue 38's rule for outside text, end to end: real Artillery runs (the cable engine
// and this plugin) against a hostile server on loopback that speaks Pusher and Action Cable and
// refuses every user with an injection text (cable-test-servers' hostile-server.ts), under a
// scenario, phases, region folders, task files and a --title that hold injection texts too; merged
// by the real `cable-report` CLI. report.md, with fences and code spans set aside, holds no mention,
// link, image, heading or raw tag from any of it; report.html, opened from its file in headless
// Chromium, stays on its file, shows every table and draws the run's own data.
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { INJECTIONS, runArtillery, startHostileServer, type HostileServer } from "cable-test-servers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { MergedResults } from "../src/model.js";
import { code, LIMITS } from "../src/text.js";
import { chartData, launchChromium, openFile, tablesShown, type Browser } from "cable-test-servers/chromium";
import { liveMarkup, renderedTags } from "./hostile-text.js";
import { liveRegionOf } from "./fixtures.js";
import { markdownToHtml, reportPageParts } from "../src/html.js";
import { liveResults } from "../src/live.js";
import { LivePageServer } from "../src/live-server.js";
import { loadResultsDir } from "../src/results.js";
import { inline } from "../src/text.js";

const run = promisify(execFile);
const ROOT = resolve(__dirname, "../../..");
const PACKAGE = resolve(__dirname, "..");
const CLI = join(PACKAGE, "bin", "cable-report.js");

// Names from outside the report's code: a teammate's scenario, folder names, the command line.
// Folder and file names cannot hold "/"; everything else goes.
const SCENARIO = "</details><h1>scenario</h1> @octocat [x](https://evil.example)";
const PHASE = "<details open> ![p](https://evil.example/p.png) #12";
const SCRIPT = "#1 @octocat <b>chat.yml";
const REGIONS = { pusher: "@octocat [click](evil) <h1>pwned", actioncable: "<details open> | #12 ![x](t.png) ~~a~~" };
const TASK = "<style>table{display:none}<\\style> @octocat.json";
const TITLE = '<meta http-equiv="refresh" content="0;url=https://evil.example"> @octocat [t](https://evil.example)';

const scenario = `
config:
  target: ws://127.0.0.1:1/cable
  engines:
    cable: {}
  cable:
    timeout: 3
    pusher:
      key: hostile-key
  phases:
    - name: ${JSON.stringify(PHASE)}
      duration: 4
      arrivalCount: 24
  plugins:
    cable-report: {}
scenarios:
  - name: ${JSON.stringify(SCENARIO)}
    engine: cable
    flow:
      - connect: {}
      - subscribe:
          channel: hostile
          as: room
      - listen:
          channel: room
          for: 2
`;

let server: HostileServer;
let dir: string;
let markdown: string;
let merged: MergedResults;
let browser: Browser | undefined;

beforeAll(async () => {
  // The plugin Artillery loads is this package's build.
  await run("npx", ["tsc", "-p", join(PACKAGE, "tsconfig.build.json")], { cwd: ROOT });
  server = await startHostileServer();
  dir = mkdtempSync(join(tmpdir(), "cable-report-hostile-"));
  const script = join(dir, SCRIPT);
  writeFileSync(script, scenario);
  // One scenario file, run once per protocol (a results folder holds one test), into a region each.
  const runs = [
    { region: REGIONS.pusher, args: ["--target", server.pusherUrl, "--overrides", JSON.stringify({ config: { cable: { protocol: "pusher" } } })] },
    { region: REGIONS.actioncable, args: ["--target", server.cableUrl] },
  ];
  await Promise.all(
    runs.map(async ({ region, args }) => {
      const folder = join(dir, "results", region);
      mkdirSync(folder, { recursive: true });
      const result = await runArtillery({ script, args, outputDir: folder, timeoutMs: 90_000 });
      expect(result.report, result.output).toBeDefined();
      renameSync(join(folder, "report.json"), join(folder, TASK));
      renameSync(join(folder, "report.json.sketches.json"), join(folder, `${TASK}.sketches.json`));
      rmSync(join(folder, "scenario.yml"), { force: true });
    }),
  );
  const out = (name: string) => join(dir, name);
  await run(process.execPath, [CLI, join(dir, "results"), "--out", out("report.md"), "--json", out("merged.json"), "--html", out("report.html"), "--title", TITLE], { cwd: ROOT });
  markdown = readFileSync(out("report.md"), "utf8");
  merged = JSON.parse(readFileSync(out("merged.json"), "utf8")) as MergedResults;
  browser = await launchChromium();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("a hostile server's words, and hostile names, in the reports of a real run", () => {
  it("reached the reports: every injection text the server sent, the refusals counted, the names", () => {
    expect(server.connections.pusher).toBeGreaterThanOrEqual(9);
    expect(server.connections.actioncable).toBeGreaterThanOrEqual(4);
    expect(merged.all.counters["errors.cable.subscription_rejected"]).toBeGreaterThan(0);
    expect(merged.all.counters["cable.subscription_rejected.app_rejected"]).toBeGreaterThan(0);
    expect(merged.all.counters["errors.cable.server_disconnect"]).toBeGreaterThan(0);
    // The engine keeps each text as one line of printable characters; every one came through.
    const words = merged.serverWords ?? [];
    expect(words).toHaveLength(INJECTIONS.length);
    for (const w of words) expect(markdown, w.text).toContain(code(w.text, LIMITS.quote));
    expect(merged.regions.map((r) => r.name).sort()).toEqual(Object.values(REGIONS).sort());
    expect(merged.test.scenarios).toEqual([SCENARIO]);
  });

  it("report.md: with fences and code spans set aside, no mention, link, image, heading or raw tag", () => {
    expect(liveMarkup(markdown)).toEqual([]);
    const own = new Set(["h2", "h3", "p", "ul", "li", "strong", "code", "pre", "table", "thead", "tbody", "tr", "th", "td", "blockquote", "details", "summary", "br"]);
    expect([...renderedTags(markdown)].filter((t) => !own.has(t))).toEqual([]);
    expect(markdown.split("\n")[0]).toMatch(/^## \\<meta http-equiv="refresh"/);
  });

  it("report.html in Chromium: stays on its file, shows every table, draws the run's own data", async () => {
    const file = join(dir, "report.html");
    const opened = await openFile(browser!.context, file);
    const { page } = opened;
    expect(page.url()).toBe(opened.url);
    expect(opened.navigations).toEqual([]);
    expect(opened.requests).toEqual([]);
    expect(opened.errors).toEqual([]);
    expect(opened.dialogs).toEqual([]);
    expect(await page.title()).toBe(TITLE);
    for (const injected of ["h1", "body meta", "details[open]", "body style", "img", "a[href]"]) expect(await page.locator(injected).count(), injected).toBe(0);

    const html = readFileSync(file, "utf8");
    const tables = await tablesShown(page);
    expect(tables.length).toBe(html.match(/<table>/g)!.length);
    expect(tables.length).toBeGreaterThan(0);
    expect(tables.every((t) => t.visible), JSON.stringify(tables)).toBe(true);
    // A name shows as written (GitHub's links broken by invisible word joiners).
    const headings = await page.$$eval("#tables th", (cells) => cells.map((c) => (c.textContent ?? "").replace(/\u2060/g, "")));
    expect(headings).toContain(REGIONS.pusher);

    const charts = await chartData(page);
    expect(charts.length).toBeGreaterThan(3);
    const periods = merged.all.series!.periods;
    expect(charts[0][0]).toHaveLength(periods.length);
    // The active users chart: a line per region and one for all regions, the merged figures.
    const active = charts.find((c) => c.length === merged.regions.length + 2 && c[c.length - 1].every((v, i) => v === merged.all.series!.users.active[i]));
    expect(active, "a chart holds the merged active users").toBeDefined();
    await page.close();
  }, 60_000);

  it("the live page in Chromium, then the report it becomes: the same names and words as text, no request but its own", async () => {
    const { regions } = loadResultsDir(join(dir, "results"));
    const live = liveResults({ regions: regions.map((r) => liveRegionOf(r.name, r.tasks)), test: regions[0].tasks[0].test!, asOf: Date.now() });
    const server = await LivePageServer.start({ host: "127.0.0.1", port: 0 });
    try {
      server.update(reportPageParts(live, { title: TITLE }));
      server.status(markdownToHtml(`**⏳ Live** · Tasks: ${regions.map((r) => `${inline(r.name, 40)}: 1 running`).join(" · ")}`));
      const page = await browser!.context.newPage();
      const elsewhere: string[] = [];
      const dialogs: string[] = [];
      const navigations: string[] = [];
      await page.route("**/*", (route) => (route.request().url().startsWith(server.url) ? route.continue() : (elsewhere.push(route.request().url()), route.abort())));
      page.on("dialog", (d) => {
        dialogs.push(d.message());
        void d.dismiss();
      });
      await page.goto(server.url, { waitUntil: "load" });
      page.on("framenavigated", (frame) => frame === page.mainFrame() && navigations.push(frame.url()));
      const injected = async () => {
        for (const selector of ["h1", "body meta", "details[open]", "body style", "img", "a[href]"]) expect(await page.locator(selector).count(), selector).toBe(0);
      };
      await injected();
      // The region's name as written (GitHub's links broken by invisible word joiners), cut to its cap.
      expect((await page.locator("#live-status").innerText()).replace(/\u2060/g, "")).toContain(REGIONS.pusher.slice(0, 16));
      const tables = await tablesShown(page);
      expect(tables.length).toBeGreaterThan(0);
      expect(tables.every((t) => t.visible)).toBe(true);
      // An update through the stream: the same rule.
      server.update(reportPageParts({ ...live, live: { asOf: Date.now() + 1 } }, { title: `${TITLE} 2` }));
      await page.waitForFunction(() => ((window as unknown as { cableLive?: { updates: number } }).cableLive?.updates ?? 0) >= 1);
      await injected();
      // The end: the report with the server's words.
      await server.final(readFileSync(join(dir, "report.html"), "utf8"));
      await page.waitForFunction(() => document.getElementById("live-status") === null);
      await injected();
      expect((await page.locator("#tables").innerText()).replace(/\u2060/g, "")).toContain(merged.serverWords![0].text.slice(0, 12));
      expect(elsewhere).toEqual([]);
      expect(dialogs).toEqual([]);
      expect(navigations.every((u) => u === server.url)).toBe(true);
      await page.close();
    } finally {
      await server.close();
    }
  }, 60_000);
});

// report.md's charts rendered by mermaid in a real headless Chromium (Debian's
// `chromium`, installed by scripts/setup-test-servers.sh), compared with the
// golden PNGs in docs/report-render/. A change that breaks the rendering (a
// syntax mermaid refuses, an axis that no longer starts at 0, a lost series)
// fails here. The comparison tolerates font antialiasing: pixelmatch with a
// colour threshold, and at most 1% of the pixels may differ.
// UPDATE_GOLDEN=1 rewrites the PNGs; the whole rendered report is saved as
// docs/report-render/report.png for people to look at.
/// <reference lib="dom" />
import { createRequire } from "node:module";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { chromium, type BrowserContext, type Page } from "playwright-core";
import { PNG } from "pngjs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const ROOT = resolve(__dirname, "../../..");
const GOLDEN_DIR = join(ROOT, "docs", "report-render");
const REPORT = join(__dirname, "golden", "report.md");
const MERMAID = createRequire(__filename).resolve("mermaid/dist/mermaid.min.js");
const CHROMIUM = "/usr/bin/chromium";
const UPDATE = Boolean(process.env.UPDATE_GOLDEN);

let context: BrowserContext | undefined;
let page: Page;
let profile: string;

/** The ```mermaid blocks of a markdown text, in order. */
function mermaidBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/```mermaid\n([\s\S]*?)```/g)].map((m) => m[1]);
}

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: run scripts/setup-test-servers.sh (it installs Debian's chromium)`);
  profile = mkdtempSync(join(tmpdir(), "cable-report-chromium-"));
  context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
    viewport: { width: 900, height: 600 },
    deviceScaleFactor: 1,
  });
  page = context.pages()[0] ?? (await context.newPage());
  // Nothing leaves the machine: every request but the inline page is refused.
  await page.route("**/*", (route) => route.abort());
  await page.setContent("<!doctype html><html><body style='margin:0;background:#fff;font-family:sans-serif'></body></html>");
  await page.addScriptTag({ path: MERMAID });
  await page.evaluate(() => {
    (window as unknown as { mermaid: { initialize(o: object): void } }).mermaid.initialize({ startOnLoad: false, theme: "default" });
  });
}, 60_000);

afterAll(async () => {
  await context?.close();
  if (profile) rmSync(profile, { recursive: true, force: true });
});

interface Rendered {
  svg: string;
  error?: string;
}

async function render(code: string, id: string): Promise<Rendered> {
  return page.evaluate(
    async ({ code, id }) => {
      const mermaid = (window as unknown as { mermaid: { render(id: string, text: string): Promise<{ svg: string }> } }).mermaid;
      try {
        return { svg: (await mermaid.render(id, code)).svg };
      } catch (err) {
        return { svg: "", error: String((err as Error).message ?? err) };
      }
    },
    { code, id },
  );
}

/** Renders one chart alone on the page and screenshots it. */
async function screenshot(svg: string): Promise<Buffer> {
  await page.evaluate((markup) => {
    document.body.innerHTML = `<div id="chart" style="display:inline-block;width:700px;padding:8px;background:#fff">${markup}</div>`;
  }, svg);
  return page.locator("#chart").screenshot();
}

/** pixelmatch and marked are ES modules; this package's tests are CommonJS. */
const esm = { pixelmatch: import("pixelmatch").then((m) => m.default), marked: import("marked").then((m) => m.marked) };

async function compare(actual: Buffer, goldenFile: string): Promise<{ differing: number; total: number }> {
  const pixelmatch = await esm.pixelmatch;
  const a = PNG.sync.read(actual);
  const b = PNG.sync.read(readFileSync(goldenFile));
  expect([a.width, a.height], `${goldenFile}: size`).toEqual([b.width, b.height]);
  const diff = new PNG({ width: a.width, height: a.height });
  const differing = pixelmatch(a.data, b.data, diff.data, a.width, a.height, { threshold: 0.2 });
  if (differing > 0) writeFileSync(goldenFile.replace(/\.png$/, ".diff.png"), PNG.sync.write(diff));
  return { differing, total: a.width * a.height };
}

describe("report.md rendered in headless Chromium", () => {
  const markdown = readFileSync(REPORT, "utf8");
  const blocks = mermaidBlocks(markdown);

  it("has charts, every one with a y-axis from 0", () => {
    expect(blocks.length).toBeGreaterThan(0);
    for (const block of blocks) expect(block).toMatch(/\n {4}y-axis "[^"]+" 0 --> \d/);
  });

  it("renders every chart as mermaid draws it on GitHub, matching the golden PNGs", async () => {
    mkdirSync(GOLDEN_DIR, { recursive: true });
    for (const [i, block] of blocks.entries()) {
      const rendered = await render(block, `chart${i}`);
      expect(rendered.error, `chart ${i} does not render`).toBeUndefined();
      expect(rendered.svg).not.toMatch(/Syntax error/i);
      // The axis ticks start at 0 and the bars are there.
      expect(rendered.svg).toMatch(/>0<\/text>/);
      const drawn = block.includes("    line [") ? (rendered.svg.match(/line-plot/g) ?? []).length : (rendered.svg.match(/<rect[^>]*class="[^"]*bar/g) ?? []).length + (rendered.svg.match(/bar-plot/g) ?? []).length;
      expect(drawn, `chart ${i}: no bar or line drawn`).toBeGreaterThan(0);
      const png = await screenshot(rendered.svg);
      const golden = join(GOLDEN_DIR, `chart-${i + 1}.png`);
      if (UPDATE || !existsSync(golden)) {
        writeFileSync(golden, png);
        continue;
      }
      const { differing, total } = await compare(png, golden);
      expect(differing / total, `chart ${i + 1}: ${differing} of ${total} pixels differ from ${golden}`).toBeLessThanOrEqual(0.01);
    }
  }, 120_000);

  it("notices a chart mermaid cannot draw", async () => {
    const broken = await render('xychart-beta\n    x-axis ["a", "b"]\n    y-axis "ms" 0 --> 10\n    bar [1, , 2]\n', "broken");
    expect(broken.error).toBeDefined();
  });

  it("saves a screenshot of the whole rendered report", async () => {
    // GitHub's own look is out of reach offline; marked's HTML with the charts rendered is close enough to review.
    const marked = await esm.marked;
    const html = await marked.parse(markdown.replace(/```mermaid\n[\s\S]*?```/g, () => `<div class="mermaid-slot"></div>`));
    const svgs: string[] = [];
    for (const [i, block] of blocks.entries()) svgs.push((await render(block, `full${i}`)).svg);
    await page.evaluate(
      ({ html, svgs }) => {
        document.body.innerHTML = `<style>body{font:14px sans-serif;padding:16px;width:1100px}table{border-collapse:collapse}td,th{border:1px solid #d0d7de;padding:2px 8px}
          blockquote{border-left:4px solid #d0d7de;margin:8px 0;padding:0 12px;color:#57606a}.mermaid-slot svg{max-width:700px}</style>${html}`;
        document.querySelectorAll("details").forEach((d) => d.setAttribute("open", ""));
        document.querySelectorAll(".mermaid-slot").forEach((slot, i) => (slot.innerHTML = svgs[i] ?? ""));
      },
      { html, svgs },
    );
    await page.setViewportSize({ width: 1150, height: 800 });
    const shot = join(GOLDEN_DIR, "report.png");
    if (UPDATE || !existsSync(shot)) writeFileSync(shot, await page.screenshot({ fullPage: true }));
    expect(existsSync(shot)).toBe(true);
    await page.setViewportSize({ width: 900, height: 600 });
  }, 60_000);
});

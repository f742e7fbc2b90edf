#!/usr/bin/env node
// By hand: renders the mermaid chart of a capacity.md in headless Chromium (Debian's `chromium`,
// as cable-report's render test does) to a PNG, the chart people screenshot. Offline: every
// request but the inline page is refused. Fails when mermaid refuses the chart.
//
//   node packages/cable-fanout/test/capacity-render.js results/…/capacity.md docs/capacity-render/anycable.png
const { mkdirSync, mkdtempSync, readFileSync, rmSync } = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { chromium } = require("playwright-core");

async function main() {
  const [markdownFile, pngFile] = process.argv.slice(2);
  const block = /```mermaid\n([\s\S]*?)```/.exec(readFileSync(markdownFile, "utf8"));
  if (!block) throw new Error(`${markdownFile} has no mermaid chart`);
  const profile = mkdtempSync(path.join(os.tmpdir(), "capacity-render-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"],
    viewport: { width: 900, height: 600 },
  });
  try {
    const page = context.pages()[0] ?? (await context.newPage());
    await page.route("**/*", (route) => route.abort());
    await page.setContent("<!doctype html><html><body style='margin:0;background:#fff;font-family:sans-serif'><div id='chart' style='display:inline-block'></div></body></html>");
    await page.addScriptTag({ path: require.resolve("mermaid/dist/mermaid.min.js") });
    const result = await page.evaluate(async (code) => {
      const mermaid = window.mermaid;
      mermaid.initialize({ startOnLoad: false, theme: "default" });
      try {
        const { svg } = await mermaid.render("capacity", code);
        document.getElementById("chart").innerHTML = svg;
        return { ok: true };
      } catch (err) {
        return { ok: false, error: String(err && err.message ? err.message : err) };
      }
    }, block[1]);
    if (!result.ok) throw new Error(`mermaid refused the chart: ${result.error}`);
    mkdirSync(path.dirname(pngFile), { recursive: true });
    await page.locator("#chart").screenshot({ path: pngFile });
    console.log(pngFile);
  } finally {
    await context.close();
    rmSync(profile, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err.message);
  process.exit(1);
});

// The saturation flag on real runs: the real `artillery` CLI with the cable
// engine and this plugin against the local target. A processor that blocks
// the event loop makes the generator saturated (its latencies then describe
// the generator); an idle run is not flagged.
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { runArtillery } from "cable-test-servers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EXIT_OK, main } from "../src/cli.js";
import { detectSaturation, SATURATION_THRESHOLDS } from "../src/saturation.js";
import type { MergedResults } from "../src/model.js";

const ROOT = resolve(__dirname, "../../..");
const PACKAGE = resolve(__dirname, "..");
type LocalTarget = { cableUrl: string; close(): Promise<void> };
let target: LocalTarget | undefined;
let dir: string;

const script = (url: string, busy: boolean) => ({
  config: {
    target: url,
    processor: "./processor.js",
    engines: { cable: {} },
    phases: [{ duration: 1, arrivalCount: 2 }],
    plugins: { "cable-report": {} },
  },
  scenarios: [
    {
      name: "hold",
      engine: "cable",
      flow: [
        { connect: { cookies: { uid: "sat/{{ $uuid }}" } } },
        { loop: [busy ? { function: "block" } : { think: 0.4 }, { think: 0.3 }], count: 5 },
        { disconnect: {} },
      ],
    },
  ],
});

/** One region folder `<results>/<region>/task.json` from a real run. */
async function run(results: string, region: string, busy: boolean): Promise<void> {
  const outputDir = join(results, region);
  mkdirSync(outputDir, { recursive: true });
  writeFileSync(join(outputDir, "processor.js"), `module.exports = { block(context, events, done) { const end = Date.now() + 400; while (Date.now() < end); done(); } };`);
  const scriptPath = join(outputDir, "hold.yml");
  writeFileSync(scriptPath, JSON.stringify(script(target!.cableUrl, busy)));
  const done = await runArtillery({ script: scriptPath, outputDir, cwd: ROOT, timeoutMs: 90_000 });
  expect(done.code, done.output).toBe(0);
  // The processor file sits beside the report; the merger only reads *.json.
}

function report(results: string): { markdown: string; merged: MergedResults } {
  const out = join(results, "..", `${results.split("/").pop()}.md`);
  const json = join(results, "..", `${results.split("/").pop()}.merged.json`);
  expect(main([results, "--out", out, "--json", json])).toBe(EXIT_OK);
  return { markdown: readFileSync(out, "utf8"), merged: JSON.parse(readFileSync(json, "utf8")) };
}

beforeAll(async () => {
  await promisify(execFile)("npx", ["tsc", "-p", join(PACKAGE, "tsconfig.build.json")], { cwd: ROOT });
  const { startTarget } = (await import("cable-local-target")) as { startTarget(o: { port: number }): Promise<LocalTarget> };
  target = await startTarget({ port: 0 });
  dir = mkdtempSync(join(tmpdir(), "cable-report-saturation-"));
}, 60_000);

afterAll(async () => {
  await target?.close();
});

describe("the saturation flag on real runs", () => {
  it("puts the ⚠️ banner above the table for a generator that blocks its event loop, naming the task, and none for an idle one", async () => {
    await Promise.all([run(join(dir, "busy"), "eu-west-2", true), run(join(dir, "idle"), "eu-west-2", false)]);

    const busy = report(join(dir, "busy"));
    const task = busy.merged.regions[0].generator[0];
    expect(task.file).toBe("eu-west-2/report.json");
    expect(task.lagP99).toBeGreaterThan(SATURATION_THRESHOLDS.lagP99Ms);
    expect(task.saturated).toBe(true);
    expect(busy.markdown).toMatch(/> ⚠️ \*\*The load generator was saturated\*\* in 1 task: `eu-west-2\/report.json` \(event-loop lag p99 \d+ ms > 100 ms/);
    expect(busy.markdown.indexOf("saturated**")).toBeLessThan(busy.markdown.indexOf("| Metric |"));
    expect(busy.markdown).toMatch(/\| Event-loop lag p99 \(ms\) \| [\d,.]+ \|/);

    const idle = report(join(dir, "idle"));
    const calm = idle.merged.regions[0].generator[0];
    expect(calm.saturated).toBe(false);
    // The engine may record no lag at all in so quiet a run (null): not saturated either way.
    expect(calm.lagP99 ?? 0).toBeLessThan(SATURATION_THRESHOLDS.lagP99Ms);
    // The plugin measured the generator's CPU over the run.
    expect(calm.cpuMean).not.toBeNull();
    expect(calm.cpuMean!).toBeGreaterThan(0);
    expect(idle.markdown).not.toContain("saturated**");
    expect(idle.markdown).toMatch(/\| CPU, whole run, busiest task \(%\) \| [\d.]+ \|/);
  }, 150_000);
});

describe("detectSaturation (pure, shared with the capacity search)", () => {
  it("flags lag p99 over 100 ms or CPU over 90%, with the numbers, and nothing else", () => {
    expect(detectSaturation({ lagP99: 424, cpuMean: 50, cpuPeak: 60 })).toEqual({ saturated: true, reasons: ["event-loop lag p99 424 ms > 100 ms"] });
    expect(detectSaturation({ lagP99: 5, cpuMean: 80, cpuPeak: 95.4 })).toEqual({ saturated: true, reasons: ["CPU 95% > 90%"] });
    expect(detectSaturation({ lagP99: 100, cpuMean: 90, cpuPeak: 90 })).toEqual({ saturated: false, reasons: [] });
    expect(detectSaturation({ lagP99: null, cpuMean: null, cpuPeak: null })).toEqual({ saturated: false, reasons: [] });
  });
});

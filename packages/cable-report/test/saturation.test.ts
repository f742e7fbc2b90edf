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
import { generatorUnfit } from "../src/compare.js";
import { detectSaturation, lagFigure, lateCauseOf, lateSecondsOf, SATURATION_THRESHOLDS } from "../src/saturation.js";
import type { MergedResults } from "../src/model.js";
import { renderMarkdown } from "../src/markdown.js";
import { mergeRegions } from "../src/results.js";
import { taskOf } from "./fixtures.js";

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
    expect(busy.markdown).toMatch(/> ⚠️ \*\*The load generator was saturated\*\* in 1 task: `eu-west-2\/report.json` \(event-loop lag (p99|max) \d+ ms over [\d,]+ samples? > 100 ms/);
    expect(busy.markdown.indexOf("saturated**")).toBeLessThan(busy.markdown.indexOf("| Metric |"));
    // The banner's figure is the table's: one task, one column.
    const figure = Number(/event-loop lag (?:p99|max) (\d+) ms/.exec(busy.markdown)![1]);
    const row = task.lag!.stat === "p99" ? "Event-loop lag p99 (ms)" : "Event-loop lag max (ms)";
    const cell = new RegExp(`\\| ${row.replace(/[()]/g, "\\$&")} \\| ([\\d,.]+) \\|`).exec(busy.markdown)![1];
    expect(Math.round(Number(cell.replace(/,/g, "")))).toBe(figure);

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
  const lag = (ms: number, samples = 500) => lagFigure({ count: samples, p99: ms, max: ms * 2 });
  it("flags lag over 100 ms or CPU over 90%, with the numbers and the sample count, and nothing else", () => {
    expect(detectSaturation({ lag: lag(424, 1200), cpuMean: 50, cpuPeak: 60 })).toEqual({ saturated: true, starved: false, reasons: ["event-loop lag p99 424 ms over 1,200 samples > 100 ms"] });
    expect(detectSaturation({ lag: lag(5), cpuMean: 80, cpuPeak: 95.4 })).toEqual({ saturated: true, starved: false, reasons: ["CPU 95% > 90%"] });
    expect(detectSaturation({ lag: lag(100), cpuMean: 90, cpuPeak: 90 })).toEqual({ saturated: false, starved: false, reasons: [] });
    expect(detectSaturation({ lag: null, cpuMean: null, cpuPeak: null })).toEqual({ saturated: false, starved: false, reasons: [] });
  });

  it("gives the lag as its max, with the count, under 100 samples: never a small-sample p99", () => {
    expect(lagFigure({ count: 13, p99: 90, max: 103 })).toEqual({ stat: "max", ms: 103, samples: 13 });
    expect(lagFigure({ count: 99, p99: 90, max: 103 })).toEqual({ stat: "max", ms: 103, samples: 99 });
    expect(lagFigure({ count: 100, p99: 90, max: 103 })).toEqual({ stat: "p99", ms: 90, samples: 100 });
    expect(lagFigure({ count: 0, p99: 0, max: 0 })).toBeNull();
    expect(lagFigure(undefined)).toBeNull();
    expect(detectSaturation({ lag: lagFigure({ count: 13, p99: 90, max: 103 }), cpuMean: null, cpuPeak: null }).reasons).toEqual(["event-loop lag max 103 ms over 13 samples > 100 ms"]);
  });
});

describe("saturated or starved (pure): lag with the generator's own CPU", () => {
  const late = (ms: number) => lagFigure({ count: 13, p99: ms, max: ms });
  const machine = { stealPercent: 0, load: 3.14, cores: 2 };
  const quiet = { cpuMean: 4.6, cpuPeak: 6, machine };

  it("cuts at half the generator's capacity, as the engine does: lag with under 50% CPU of its own is starved, with its figures and no advice", () => {
    expect(SATURATION_THRESHOLDS).toEqual({ lagP99Ms: 100, cpuPercent: 90, busyCpuPercent: 50 });
    expect(detectSaturation({ lag: late(133), ...quiet, late: { saturated: 0, starved: 4 } })).toEqual({
      saturated: false,
      starved: true,
      reasons: ["event-loop lag max 133 ms over 13 samples > 100 ms", "the generator used 4.6% CPU (6% in its busiest period); 4 of 4 late seconds waiting for a CPU; steal 0%, load 3.1 on 2 cores"],
    });
    // Its own CPU at half its capacity in a period: it was the limit, whatever its late seconds say.
    expect(detectSaturation({ lag: late(133), cpuMean: 30, cpuPeak: 50, late: { saturated: 0, starved: 4 } })).toMatchObject({ saturated: true, starved: false });
    expect(detectSaturation({ lag: late(133), cpuMean: 30, cpuPeak: 49.9, late: { saturated: 0, starved: 4 } })).toMatchObject({ saturated: false, starved: true });
    // Over 90% CPU is saturation with or without lag.
    expect(detectSaturation({ lag: late(133), cpuMean: 80, cpuPeak: 95, late: { saturated: 0, starved: 4 } })).toMatchObject({ saturated: true, starved: false });
  });

  it("reads the engine's late seconds: mostly running is saturated (a blocking callback in a quiet run), a tie too", () => {
    expect(detectSaturation({ lag: late(400), ...quiet, late: { saturated: 3, starved: 1 } })).toEqual({ saturated: true, starved: false, reasons: ["event-loop lag max 400 ms over 13 samples > 100 ms"] });
    expect(detectSaturation({ lag: late(400), ...quiet, late: { saturated: 2, starved: 2 } })).toMatchObject({ saturated: true, starved: false });
    expect(lateCauseOf({ lag: late(400), ...quiet, late: { saturated: 1, starved: 2 } })).toBe("starved");
  });

  it("without the engine's count (an older engine) judges by the CPU alone; without either, saturated as before", () => {
    expect(detectSaturation({ lag: late(133), cpuMean: 4.6, cpuPeak: 4.6 })).toEqual({ saturated: false, starved: true, reasons: ["event-loop lag max 133 ms over 13 samples > 100 ms", "the generator used 4.6% CPU"] });
    expect(detectSaturation({ lag: late(133), cpuMean: null, cpuPeak: null })).toMatchObject({ saturated: true, starved: false });
    expect(lateSecondsOf({ "cable.event_loop_late_starved": 3 })).toEqual({ saturated: 0, starved: 3 });
    expect(lateSecondsOf({ "vusers.created": 3 })).toBeNull();
    expect(lateSecondsOf(undefined)).toBeNull();
  });

  it("marks a starved task in the report in its own words: a banner without the advice to add workers, the gate leaving its latencies out", () => {
    const task = (file: string, starved: boolean) =>
      taskOf(
        {
          histograms: { "cable.event_loop_lag": [5, 6, 7, starved ? 290 : 8], "cable.broadcast_latency": [5, 6, 7] },
          counters: { "vusers.created": 1, ...(starved ? { "cable.event_loop_late_starved": 1 } : {}) },
          generator: { workers: 1, cpuMean: 0.5, cpuPeak: 2, stealPercent: 0.2, loadPeak: 2.4, cores: 2 },
        },
        file,
      );
    const merged = mergeRegions([
      { name: "busy-box", tasks: [task("busy-box/t1.json", true)], files: ["busy-box/t1.json"] },
      { name: "quiet-box", tasks: [task("quiet-box/t1.json", false)], files: ["quiet-box/t1.json"] },
    ]);
    const [busy, quietOne] = merged.regions.map((r) => r.generator[0]);
    expect(busy).toMatchObject({ saturated: false, starved: true });
    expect(quietOne.saturated).toBe(false);
    expect(quietOne.starved).toBeUndefined();
    const markdown = renderMarkdown(merged);
    expect(markdown).toContain(
      "> ⚠️ **The load generator was starved** in 1 task: `busy-box/t1.json` (event-loop lag max 290 ms over 4 samples > 100 ms; the generator used 0.5% CPU (2% in its busiest period); 1 of 1 late second waiting for a CPU; steal 0.2%, load 2.4 on 2 cores). This machine was busy with other work",
    );
    expect(markdown).not.toContain("The load generator was saturated");
    expect(markdown).not.toMatch(/run fewer virtual users per task|Add workers/);
    expect(markdown).toMatch(/\| Late seconds, waiting for a CPU \(starved\) \| 1 \| 0 \| 1 \|/);
    expect(markdown).not.toContain("| cable.event_loop_late_starved |");
    expect(generatorUnfit(merged.regions[0])).toBe("the load generator was starved (its machine was busy with other work)");
    expect(generatorUnfit(merged.regions[1])).toBeUndefined();
  });
});

describe("the generator's lag reads one way (banner, table, chart)", () => {
  // The shape: a few dozen one-second samples per region, where a "p99" is the largest or
  // second-largest sample depending on the count, and the all-regions figure came out above both regions'.
  // Their generators were busy (60% CPU in a period): saturated, so the banner is the saturated one.
  const lagTask = (samples: number[], file: string) =>
    taskOf({ histograms: { "cable.event_loop_lag": samples, "cable.broadcast_latency": [5, 6, 7] }, counters: { "vusers.created": 1 }, generator: { workers: 1, cpuMean: 40, cpuPeak: 60 } }, file);
  const merged = mergeRegions([
    { name: "local-a", tasks: [lagTask([...Array(12).fill(5), 103], "local-a/t1.json"), lagTask([...Array(12).fill(6), 130], "local-a/t2.json")], files: ["local-a/t1.json", "local-a/t2.json"] },
    { name: "local-b", tasks: [lagTask([...Array(12).fill(4), 108.9], "local-b/t1.json"), lagTask([...Array(12).fill(7), 149.9], "local-b/t2.json")], files: ["local-b/t1.json", "local-b/t2.json"] },
  ]);
  const markdown = renderMarkdown(merged);
  const row = (label: string) => new RegExp(`\\| ${label.replace(/[()]/g, "\\$&")} \\| ([^|]+) \\| ([^|]+) \\| ([^|]+) \\|`).exec(markdown)!.slice(1).map((c) => c.trim());

  it("shows the max and the count, never a p99, for columns under 100 samples, and no column above its parts", () => {
    expect(row("Event-loop lag samples")).toEqual(["26", "26", "52"]);
    // No column has a p99 to show: the row goes.
    expect(markdown).not.toContain("Event-loop lag p99");
    const max = row("Event-loop lag max (ms)").map(Number);
    expect(max).toEqual([130, 149.9, 149.9]);
    expect(max[2]).toBe(Math.max(max[0], max[1]));
  });

  it("names in the banner the same figure, statistic and count as the task's own", () => {
    const tasks = merged.regions.flatMap((r) => r.generator);
    expect(tasks.map((t) => t.lag)).toEqual([
      { stat: "max", ms: 103, samples: 13 },
      { stat: "max", ms: 130, samples: 13 },
      { stat: "max", ms: 108.9, samples: 13 },
      { stat: "max", ms: 149.9, samples: 13 },
    ]);
    expect(markdown).toContain("`local-a/t2.json` (event-loop lag max 130 ms over 13 samples > 100 ms)");
    expect(markdown).toContain("`local-b/t2.json` (event-loop lag max 150 ms over 13 samples > 100 ms)");
    // Every task's figure is at most its region's, every region's at most all regions'.
    for (const region of merged.regions) for (const t of region.generator) expect(t.lag!.ms).toBeLessThanOrEqual(region.histograms["cable.event_loop_lag"].max);
  });
});

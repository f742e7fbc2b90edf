// Starved is not saturated, through the real `artillery run` CLI (the cable engine and this plugin)
// against the local target, on this machine. (a) A generator at a low rate pinned to core 0 beside
// a CPU hog pinned there too: its event loop runs late while it uses almost no CPU of its own, and
// the console, the sidecar and the report say the machine was busy with other work, never
// "saturated", never "add workers". (b) A generator whose processor blocks its event loop with more
// work than a core does: "saturated", with the advice. Both runs' figures are printed (docs/benchmarks.md,
// "Saturated or starved").
//
// The hog runs at real-time priority (SCHED_FIFO, `chrt -f 1`) in bursts of 300 ms every second:
// an ordinary hog at the same priority hardly delays a mostly idle event loop on a current kernel
// (its scheduler runs a thread that just woke almost at once: 3-30 ms measured here), so only a
// higher priority makes the wait certain, as a busy machine's more important work would. Where
// real-time priority is not allowed (not root), the generator runs at nice 19 beside two plain
// hogs instead: the same reading, a less even lag. The hog's life is bounded three ways: it exits by
// itself, `timeout 60` kills it, and the test kills it in `finally`.
import { type ChildProcess, execFile, spawn, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { runArtillery } from "cable-test-servers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EXIT_OK, main } from "../src/cli.js";
import type { MergedResults } from "../src/model.js";
import { sidecarSchema } from "../src/sidecar.js";

const ROOT = resolve(__dirname, "../../..");
const PACKAGE = resolve(__dirname, "..");
type LocalTarget = { cableUrl: string; close(): Promise<void> };
let target: LocalTarget | undefined;
let dir: string;

/** Spins `burst` ms, rests `rest` ms, until `life` ms have passed. */
const HOG = `const [burst, rest, life] = process.argv.slice(2).map(Number);
const end = Date.now() + life;
(function tick() { const t = Date.now(); while (Date.now() - t < burst); if (Date.now() < end) setTimeout(tick, rest); })();`;

const realtime = spawnSync("chrt", ["-f", "1", "true"]).status === 0;
const canRaise = spawnSync("nice", ["-n", "-10", "true"]).status === 0;

function startHogs(hogFile: string): ChildProcess[] {
  const hog = (args: string[]) => spawn("timeout", ["60", "taskset", "-c", "0", ...args], { stdio: "ignore" });
  if (realtime) return [hog(["chrt", "-f", "1", process.execPath, hogFile, "300", "700", "20000"])];
  return [0, 1].map(() => hog([process.execPath, hogFile, "1000", "0", "20000"]));
}

const script = (url: string, mode: "starved" | "saturated") => ({
  config: {
    target: url,
    processor: "./processor.js",
    engines: { cable: {} },
    // (a) a low rate; (b) 6 users, each blocking its thread 1 s in all: more than a core can do.
    phases: mode === "starved" ? [{ duration: 6, arrivalRate: 2 }] : [{ duration: 3, arrivalRate: 2 }],
    plugins: { "cable-report": {} },
  },
  scenarios: [
    {
      name: mode,
      engine: "cable",
      flow:
        mode === "starved"
          ? [{ connect: { cookies: { uid: "starved/{{ $uuid }}" } } }, { think: 2 }, { disconnect: {} }]
          : [{ connect: { cookies: { uid: "saturated/{{ $uuid }}" } } }, { loop: [{ function: "block" }, { think: 0.05 }], count: 4 }, { disconnect: {} }],
    },
  ],
});

interface Run {
  output: string;
  merged: MergedResults;
  markdown: string;
  late: { saturated: number; starved: number };
  generator: NonNullable<ReturnType<typeof sidecarSchema.parse>["generator"]>;
}

async function run(mode: "starved" | "saturated"): Promise<Run> {
  const results = join(dir, mode);
  const outputDir = join(results, "local");
  mkdirSync(outputDir, { recursive: true });
  writeFileSync(join(outputDir, "processor.js"), `module.exports = { block(context, events, done) { const end = Date.now() + 250; while (Date.now() < end); done(); } };`);
  const hogFile = join(dir, "hog.js");
  writeFileSync(hogFile, HOG);
  const scriptPath = join(outputDir, `${mode}.yml`);
  writeFileSync(scriptPath, JSON.stringify(script(target!.cableUrl, mode)));
  // (a) beside the hog on core 0, lowered where real-time priority is not allowed. (b) on both cores (its main thread, which
  // takes its worker's metrics, must not share the worker's core), raised where allowed, so that the machine's other work
  // cannot starve it: its verdict is its own work's.
  const wrap = mode === "starved" ? ["taskset", "-c", "0", ...(realtime ? [] : ["nice", "-n", "19"])] : canRaise ? ["nice", "-n", "-10"] : [];
  const hogs = mode === "starved" ? startHogs(hogFile) : [];
  let done;
  try {
    done = await runArtillery({ script: scriptPath, outputDir, cwd: ROOT, wrap, timeoutMs: 60_000 });
  } finally {
    for (const hog of hogs) hog.kill();
  }
  expect(done.code, done.output).toBe(0);
  const sidecar = sidecarSchema.parse(JSON.parse(readFileSync(join(outputDir, "report.json.sketches.json"), "utf8")));
  const counters = sidecar.aggregate.counters;
  const out = join(dir, `${mode}.md`);
  const json = join(dir, `${mode}.merged.json`);
  expect(main([results, "--out", out, "--json", json])).toBe(EXIT_OK);
  return {
    output: done.output,
    merged: JSON.parse(readFileSync(json, "utf8")),
    markdown: readFileSync(out, "utf8"),
    late: { saturated: counters["cable.event_loop_late_saturated"] ?? 0, starved: counters["cable.event_loop_late_starved"] ?? 0 },
    generator: sidecar.generator!,
  };
}

/** The run's figures as docs/benchmarks.md gives them. */
function figures(mode: string, r: Run): string {
  const task = r.merged.regions[0].generator[0];
  const g = r.generator;
  const verdict = task.saturated ? "saturated" : task.starved ? "starved" : "ok";
  return (
    `${mode}: lag ${task.lag?.stat} ${task.lag?.ms} ms over ${task.lag?.samples} samples · process CPU ${g.cpuMean}% (busiest period ${g.cpuPeak}%) · ` +
    `late seconds ${r.late.starved} waiting, ${r.late.saturated} running · steal ${g.stealPercent ?? "–"}%, load ${g.loadPeak ?? "–"} on ${g.cores ?? "–"} core${g.cores === 1 ? "" : "s"} · verdict ${verdict}\n` +
    `  console: ${r.output.split("\n").find((l) => l.includes("the event loop was")) ?? "(no warning)"}`
  );
}

beforeAll(async () => {
  await promisify(execFile)("npx", ["tsc", "-p", join(PACKAGE, "tsconfig.build.json")], { cwd: ROOT });
  const { startTarget } = (await import("cable-local-target")) as { startTarget(o: { port: number }): Promise<LocalTarget> };
  target = await startTarget({ port: 0 });
  dir = mkdtempSync(join(tmpdir(), "cable-report-starved-"));
}, 60_000);

afterAll(async () => {
  await target?.close();
});

describe("starved is not saturated, through the real CLI on this machine", () => {
  it("(a) a generator beside a CPU hog on its core: 'busy with other work' in the console, the sidecar and the report, never 'saturated'", async () => {
    const r = await run("starved");
    console.log(figures(`starved (${realtime ? "hog at SCHED_FIFO, 300 ms a second" : "generator at nice 19, two plain hogs"})`, r));
    expect(r.output).toMatch(/artillery-engine-cable: the event loop was \d+ ms late: this machine was busy with other work \(the generator used [\d.]+% CPU[^)]*\): latencies include that delay\./);
    // Pinned to core 0, the process may use one core; Linux gives the load and the steal.
    if (process.platform === "linux") expect(r.output).toMatch(/busy with other work \(the generator used [\d.]+% CPU; steal [\d.]+%, load [\d.]+ on 1 core\)/);
    expect(r.output).not.toMatch(/saturated|Add workers/);
    expect(r.late.starved).toBeGreaterThan(r.late.saturated);
    expect(r.generator.cpuPeak!).toBeLessThan(50);
    const task = r.merged.regions[0].generator[0];
    expect(task).toMatchObject({ saturated: false, starved: true });
    expect(task.lag!.ms).toBeGreaterThan(100);
    expect(r.markdown).toMatch(/> ⚠️ \*\*The load generator was starved\*\* in 1 task: `local\/report.json` \(event-loop lag (p99|max) \d+ ms over \d+ samples > 100 ms; the generator used [\d.]+% CPU/);
    expect(r.markdown).toContain("This machine was busy with other work");
    expect(r.markdown).not.toMatch(/was saturated\*\*|run fewer virtual users per task/);
  }, 120_000);

  it("(b) a generator with more work than its core does: 'saturated', with the advice, in the console and the report", async () => {
    const r = await run("saturated");
    console.log(figures(`saturated (a 250 ms blocking processor step, 6 users${canRaise ? ", at nice -10" : ""})`, r));
    expect(r.output).toMatch(/artillery-engine-cable: the event loop was \d+ ms late: this load generator is saturated \(it used \d+% CPU while late\), so latencies include its own delay\. Add workers or machines, or lower the load per process\./);
    expect(r.output).not.toContain("busy with other work");
    expect(r.late.saturated).toBeGreaterThan(r.late.starved);
    const task = r.merged.regions[0].generator[0];
    expect(task.saturated).toBe(true);
    expect(task.starved).toBeUndefined();
    expect(r.markdown).toMatch(/> ⚠️ \*\*The load generator was saturated\*\* in 1 task: `local\/report.json`/);
    expect(r.markdown).not.toContain("was starved**");
  }, 120_000);
});

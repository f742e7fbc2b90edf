// How long `cable-report` takes on a 7-day soak: one task's sidecar of 60,480 periods of 10 s (its
// per-period DDSketches, counters and CPU), the Artillery report beside it, and the runner's
// server-metrics.json (a scrape every 5 s: 120,960 of them), written as real files. Then the CLI
// runs as a user runs it, with every output.
//
//   npm run build && node bench/report-week.mjs [--days 7] [--runs 3] [--keep]
//
// Goal: rendering (report.md with its charts over time, and report.html) under 10 s. It also times,
// in this process, where the whole CLI's time goes: merging the sidecar, report.md, report.html,
// merged.json. A benchmark, not a test: it prints figures (see docs/benchmarks.md) and exits 1 only
// when the goal is missed.
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { random } from "./lib/random.mjs";
import { sketchOf, taskFiles, writeTaskFiles } from "./lib/task-files.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const pkg = path.join(here, "..", "packages", "cable-report");
const report = await import(path.join(pkg, "dist", "index.js"));

const { values: flags } = parseArgs({
  options: { days: { type: "string", default: "7" }, runs: { type: "string", default: "3" }, keep: { type: "boolean", default: false } },
});
const PERIOD_MS = 10_000;
const PERIODS = Math.round((Number(flags.days) * 86_400_000) / PERIOD_MS);
const RUNS = Number(flags.runs);
// In the past: the merger refuses a task whose metrics end in the future.
const START = Date.UTC(2026, 0, 5, 12, 0, 0);
const GOAL_SECONDS = 10;

/** A steady soak: 200 users held, one arriving and one leaving per period; latency with a slow daily wave. */
function writeTask(file) {
  const next = random(7);
  const periods = [];
  for (let p = 0; p < PERIODS; p++) {
    const wave = 1 + 0.3 * Math.sin((2 * Math.PI * p) / 8_640);
    const histograms = {
      "cable.broadcast_latency": sketchOf(20 * wave, 40, next),
      "cable.rtt": sketchOf(6 * wave, 10, next),
      "cable.event_loop_lag": sketchOf(3, 10, next),
    };
    const counters = {
      "vusers.created": 1,
      "vusers.created_by_name.soak": 1,
      "vusers.completed": p === 0 ? 0 : 1,
      "cable.connections": 1,
      "cable.messages_sent": 400,
      "cable.messages_received": 8_000,
      "cable.connections_open_period_peak": 200,
    };
    if (next() < 0.01) counters["errors.ECONNRESET"] = 1;
    periods.push({ period: START + p * PERIOD_MS, counters, rates: { "cable.send_rate": 40 }, histograms, cpuPercent: Math.round(20 + 10 * next()) });
  }
  writeTaskFiles(file, taskFiles({
    periods,
    testRunId: "bench-week",
    test: { name: "soak.yml", scenarios: ["soak"], phases: [{ name: "soak", duration: PERIODS * 10, arrivalRate: 0.1 }] },
    phaseStarts: [{ index: 0, name: "soak", startTime: START + 100 }],
    generator: { workers: 1, cpuMean: 25, cpuPeak: 30 },
  }));
}

function writeServerMetrics(dir) {
  const at = Array.from({ length: PERIODS * 2 }, (_, i) => START + 5_000 * i);
  const next = random(99);
  writeFileSync(
    path.join(dir, "server-metrics.json"),
    JSON.stringify({ at, vcpu: at.map(() => Math.round((1 + next() * 0.3) * 100) / 100), memoryMiB: at.map((_, i) => 400 + i * 0.001), connections: at.map(() => 200) }),
  );
}

const work = mkdtempSync(path.join(tmpdir(), "cable-report-week-bench-"));
const results = path.join(work, "results");
const t0 = performance.now();
writeTask(path.join(results, "eu-west-2", "task-1.json"));
writeServerMetrics(results);
console.log(`wrote 1 task × ${PERIODS.toLocaleString("en-US")} periods (+ ${(PERIODS * 2).toLocaleString("en-US")} server scrapes) to ${results} in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

const cli = path.join(pkg, "bin", "cable-report.js");
const out = (name) => path.join(work, name);
const times = [];
for (let i = 0; i < RUNS; i++) {
  const begin = performance.now();
  const run = spawnSync(process.execPath, [cli, results, "--out", out("report.md"), "--json", out("merged.json"), "--html", out("report.html")], { encoding: "utf8", timeout: 600_000 });
  const seconds = (performance.now() - begin) / 1000;
  if (run.status !== 0) {
    console.error(run.stderr, run.error ?? "");
    throw new Error(`cable-report exited ${run.status ?? run.signal} after ${seconds.toFixed(1)} s`);
  }
  times.push(seconds);
  console.log(`run ${i + 1}: ${seconds.toFixed(2)} s`);
}
times.sort((a, b) => a - b);

// Where the time goes, in this process: each step once.
const phases = {};
let mark = performance.now();
const lap = (name) => {
  const now = performance.now();
  phases[name] = (now - mark) / 1000;
  mark = now;
};
const merged = report.mergeResults(results, {});
lap("merge");
report.renderMarkdown(merged, {});
lap("report.md");
report.renderReportPage(merged, {});
lap("report.html");
JSON.stringify(merged, null, 2);
lap("merged.json");
const rendering = phases["report.md"] + phases["report.html"];
console.log(`in one process: ${Object.entries(phases).map(([name, s]) => `${name} ${s.toFixed(2)} s`).join(", ")}; rendering ${rendering.toFixed(2)} s (goal < ${GOAL_SECONDS} s)`);

const kb = (name) => `${(statSync(out(name)).size / 1024).toFixed(1)} KiB`;
console.log(`machine: ${cpus().length} cores, ${cpus()[0]?.model ?? "unknown CPU"}, Node ${process.version}`);
console.log(`report.html ${kb("report.html")}, report.md ${kb("report.md")}, merged.json ${kb("merged.json")}`);
console.log(`cable-report <dir> --out --json --html, ${RUNS} runs: min ${times[0].toFixed(2)} s, median ${times[Math.floor(times.length / 2)].toFixed(2)} s, max ${times[times.length - 1].toFixed(2)} s`);
if (flags.keep) console.log(`kept ${work}`);
else rmSync(work, { recursive: true, force: true });
if (rendering >= GOAL_SECONDS) {
  console.error("the goal was missed");
  process.exit(1);
}

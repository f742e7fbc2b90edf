// How long `cable-report` takes, and how large report.html gets, for a long multi-region run:
// 30 minutes (180 periods of 10 s), 3 regions × 6 tasks, written as real files (Artillery JSON
// reports and the plugin's version-2 sidecars with per-period DDSketches and CPU), plus the
// runner's server-metrics.json. Then the CLI runs 3 times as a user runs it.
//
//   npm run build && node bench/report-html.mjs [--keep]
//
// Goals: report.html under 2 MB; the whole CLI (merge, markdown, JSON, HTML) under 5 s.
// A benchmark, not a test: it prints figures (see docs/benchmarks.md) and exits 1 only when a goal is missed.
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { random } from "./lib/random.mjs";
import { sketchOf as drawSketch, taskFiles, writeTaskFiles } from "./lib/task-files.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const pkg = path.join(here, "..", "packages", "cable-report");

const { values: flags } = parseArgs({ options: { keep: { type: "boolean", default: false } } });

const REGIONS = ["ap-south-1", "eu-west-2", "us-east-1"];
const TASKS = 6;
const PERIODS = 180;
const PERIOD_MS = 10_000;
const START = Date.UTC(2026, 10, 24, 12, 0, 0);
const RUNS = 3;
const GOALS = { htmlBytes: 2 * 1024 * 1024, seconds: 5 };

/** n samples with a long tail around `median`, 2% of them 4× slower. */
const sketchOf = (median, n, next) => drawSketch(median, n, next, { tail: 0.02 });

const phases = [
  { name: "ramp", duration: 300, arrivalRate: 1, rampTo: 20 },
  { name: "sustain", duration: 1200, arrivalRate: 20 },
  { name: "spike", duration: 300, arrivalRate: 60 },
];
const TEST = { name: "chat.yml", scenarios: ["chat"], phases };

/** One task's report and sidecar: users ramp up, broadcast latency rises in the spike phase. */
function writeTask(file, region, task) {
  const next = random(1 + region * 1000 + task * 37);
  const periods = [];
  let open = 0;
  for (let p = 0; p < PERIODS; p++) {
    const elapsed = p * 10;
    const phase = elapsed < 300 ? 0 : elapsed < 1500 ? 1 : 2;
    const created = Math.round(phase === 0 ? 1 + (19 * elapsed) / 300 : phase === 1 ? 20 : 60);
    const ended = p < 12 ? 0 : Math.round(created * 0.9);
    open = Math.max(0, open + created - ended);
    const load = phase === 2 ? 3 : 1;
    const histograms = {
      "cable.broadcast_latency": sketchOf(25 * load * (1 + region * 0.4), 400, next),
      "cable.rtt": sketchOf(8 * load * (1 + region * 0.4), 200, next),
      "cable.handshake_latency": sketchOf(40 * (1 + region * 0.4), created, next),
      "cable.subscription_latency": sketchOf(15 * (1 + region * 0.4), created, next),
      "cable.event_loop_lag": sketchOf(3 * load, 10, next),
      "cable.open_connections_peak": sketchOf(open, 10, next),
      "vusers.session_length": sketchOf(60_000, ended, next),
    };
    const counters = {
      "vusers.created": created,
      "vusers.created_by_name.chat": created,
      "vusers.completed": ended,
      "cable.connections": created,
      "cable.subscriptions": created,
      "cable.messages_sent": open * 2,
      "cable.messages_received": open * 40,
      "cable.connections_open_period_peak": open,
    };
    if (phase === 2 && next() < 0.6) counters["errors.ETIMEDOUT"] = 1 + Math.floor(next() * 5);
    if (next() < 0.05) counters["errors.ECONNRESET"] = 1;
    periods.push({ period: START + p * PERIOD_MS, counters, rates: { "cable.send_rate": counters["cable.messages_sent"] / 10 }, histograms, cpuPercent: Math.round(20 * load + 10 * next()) });
  }
  writeTaskFiles(file, taskFiles({
    periods,
    periodSummaries: true,
    testRunId: `bench-${region}-${task}`,
    test: TEST,
    phaseStarts: [
      { index: 0, name: "ramp", startTime: START + 200 },
      { index: 1, name: "sustain", startTime: START + 300_000 + 150 },
      { index: 2, name: "spike", startTime: START + 1_500_000 + 120 },
    ],
    generator: { workers: 1, cpuMean: 30, cpuPeak: 70 },
  }));
}

function writeServerMetrics(dir) {
  const at = Array.from({ length: PERIODS * 2 }, (_, i) => START + 5_000 * i);
  const next = random(99);
  writeFileSync(
    path.join(dir, "server-metrics.json"),
    JSON.stringify({
      at,
      vcpu: at.map((t) => Math.round(((t - START > 1_500_000 ? 3 : 1) + next() * 0.3) * 100) / 100),
      memoryMiB: at.map((_, i) => 400 + i * 0.5),
      connections: at.map((_, i) => Math.min(i * 30, 5_000)),
    }),
  );
}

const work = mkdtempSync(path.join(tmpdir(), "cable-report-html-bench-"));
const results = path.join(work, "results");
const t0 = performance.now();
REGIONS.forEach((region, r) => {
  for (let t = 0; t < TASKS; t++) writeTask(path.join(results, region, `task-${t + 1}.json`), r, t);
});
writeServerMetrics(results);
console.log(`wrote ${REGIONS.length} regions × ${TASKS} tasks × ${PERIODS} periods to ${results} in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

const cli = path.join(pkg, "bin", "cable-report.js");
const out = (name) => path.join(work, name);
const times = [];
for (let i = 0; i < RUNS; i++) {
  const begin = performance.now();
  const run = spawnSync(process.execPath, [cli, results, "--out", out("report.md"), "--json", out("merged.json"), "--html", out("report.html")], { encoding: "utf8" });
  const seconds = (performance.now() - begin) / 1000;
  if (run.status !== 0) {
    console.error(run.stderr);
    throw new Error(`cable-report exited ${run.status}`);
  }
  times.push(seconds);
}
times.sort((a, b) => a - b);
const size = (name) => statSync(out(name)).size;
const kb = (bytes) => `${(bytes / 1024).toFixed(1)} KiB`;
const figures = {
  machine: `${cpus().length} cores, ${cpus()[0]?.model ?? "unknown CPU"}, Node ${process.version}`,
  htmlBytes: size("report.html"),
  mdBytes: size("report.md"),
  jsonBytes: size("merged.json"),
  seconds: { min: times[0], median: times[Math.floor(times.length / 2)], max: times[times.length - 1] },
};
console.log(`machine: ${figures.machine}`);
console.log(`report.html: ${kb(figures.htmlBytes)} (goal < ${kb(GOALS.htmlBytes)})`);
console.log(`report.md:   ${kb(figures.mdBytes)}`);
console.log(`merged.json: ${kb(figures.jsonBytes)}`);
console.log(
  `cable-report <dir> --out --json --html, ${RUNS} runs: min ${times[0].toFixed(2)} s, median ${figures.seconds.median.toFixed(2)} s, max ${times[times.length - 1].toFixed(2)} s (goal < ${GOALS.seconds} s)`,
);
if (flags.keep) console.log(`kept ${work}`);
else rmSync(work, { recursive: true, force: true });
if (figures.htmlBytes >= GOALS.htmlBytes || figures.seconds.median >= GOALS.seconds) {
  console.error("a goal was missed");
  process.exitCode = 1;
}

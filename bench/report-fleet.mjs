// How long `cable-report` takes, and how much memory, over a large fan-out: R regions × T tasks ×
// M minutes of real-shaped task files (a report and its sketches sidecar each, 10 s periods with
// five latency sketches, the engine's counters and the generator's CPU). One task is drawn per
// region and copied under its own test run id, as a fleet of identical tasks would write them.
//
//   npm run build && node bench/report-fleet.mjs [--regions 5] [--tasks 100] [--minutes 30] [--runs 1] [--keep]
//
// The CLI runs as a user runs it (`cable-report <dir> --out --json --html`) under /usr/bin/time
// for its peak RSS. Goal (issue 39): 5 regions × 100 tasks × 30 min under 60 s and 1 GiB; 3 × 500
// without running out of memory at Node's default heap. A benchmark, not a test: it prints figures
// (see docs/benchmarks.md) and exits 1 only when the goal is missed.
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { random } from "./lib/random.mjs";
import { sidecarPathFor, sketchOf as drawSketch, taskFiles } from "./lib/task-files.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const pkg = path.join(here, "..", "packages", "cable-report");

const { values: flags } = parseArgs({
  options: {
    regions: { type: "string", default: "5" },
    tasks: { type: "string", default: "100" },
    minutes: { type: "string", default: "30" },
    runs: { type: "string", default: "1" },
    keep: { type: "boolean", default: false },
  },
});
const PERIOD_MS = 10_000;
const REGIONS = Number(flags.regions);
const TASKS = Number(flags.tasks);
const PERIODS = Math.round((Number(flags.minutes) * 60_000) / PERIOD_MS);
const RUNS = Number(flags.runs);
// In the past: the merger refuses a task whose metrics end in the future.
const START = Date.UTC(2026, 0, 5, 12, 0, 0);
const GOAL = { seconds: 60, bytes: 1024 ** 3 };
const REGION_NAMES = ["eu-west-2", "us-east-1", "ap-southeast-1", "sa-east-1", "ap-northeast-1", "eu-central-1", "us-west-2"];

const sketchOf = (median, n, next) => drawSketch(median, n, next, { spread: 0.6 });

/** A chat test of 4,000 users a task: connects in the first minute, then broadcasts; latency drifts by region. */
function regionTask(regionIndex) {
  const next = random(11 + regionIndex);
  const periods = [];
  const base = 20 + 15 * regionIndex;
  for (let p = 0; p < PERIODS; p++) {
    const connecting = p < 6;
    const histograms = {
      "cable.broadcast_latency": sketchOf(base, 400, next),
      "cable.rtt": sketchOf(base / 2, 100, next),
      "cable.subscription_latency": sketchOf(base, connecting ? 300 : 5, next),
      "cable.handshake_latency": sketchOf(base * 2, connecting ? 300 : 5, next),
      "cable.event_loop_lag": sketchOf(4, 10, next),
    };
    const counters = {
      "vusers.created": connecting ? 660 : 5,
      "vusers.created_by_name.chat": connecting ? 660 : 5,
      "vusers.completed": connecting ? 0 : 5,
      "cable.connections": connecting ? 660 : 5,
      "cable.subscriptions": connecting ? 660 : 5,
      "cable.messages_sent": 400,
      "cable.messages_received": 16_000,
      "cable.connections_open_period_peak": Math.min(4_000, 660 * (p + 1)),
    };
    if (next() < 0.05) counters["errors.cable.timeout"] = 1;
    periods.push({ period: START + p * PERIOD_MS, counters, rates: { "cable.send_rate": 40 }, histograms, cpuPercent: Math.round(40 + 20 * next()) });
  }
  return taskFiles({
    periods,
    periodSummaries: true,
    testRunId: "TEST_RUN_ID",
    test: { name: "chat.yml", scenarios: ["chat"], phases: [{ name: "connect", duration: 60, arrivalRate: 66 }, { name: "hold", duration: PERIODS * 10 - 60, arrivalRate: 0.5 }] },
    phaseStarts: [
      { index: 0, name: "connect", startTime: START + 100 },
      { index: 1, name: "hold", startTime: START + 60_100 },
    ],
    generator: { workers: 1, cpuMean: 50, cpuPeak: 60 },
  });
}

const work = mkdtempSync(path.join(tmpdir(), "cable-report-fleet-bench-"));
const results = path.join(work, "results");
const t0 = performance.now();
let bytes = 0;
for (let r = 0; r < REGIONS; r++) {
  const { report, sidecar } = regionTask(r);
  const [head, tail] = sidecar.split("TEST_RUN_ID");
  for (let t = 0; t < TASKS; t++) {
    const file = path.join(results, REGION_NAMES[r % REGION_NAMES.length] + (r >= REGION_NAMES.length ? `-${r}` : ""), `task-${t}`, "report.json");
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, report);
    writeFileSync(sidecarPathFor(file), `${head}bench-${r}-${t}${tail}`);
    bytes += report.length + sidecar.length;
  }
}
console.log(
  `wrote ${REGIONS} regions × ${TASKS} tasks × ${PERIODS} periods (${(bytes / 1024 ** 2).toFixed(0)} MiB) to ${results} in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
);

const cli = path.join(pkg, "bin", "cable-report.js");
const out = (name) => path.join(work, name);
const figures = [];
for (let i = 0; i < RUNS; i++) {
  const begin = performance.now();
  // GNU time's %M: the peak resident set of the process, in KiB.
  const run = spawnSync("/usr/bin/time", ["-f", "peak-rss-kib %M", process.execPath, cli, results, "--out", out("report.md"), "--json", out("merged.json"), "--html", out("report.html")], {
    encoding: "utf8",
    timeout: 1_800_000,
  });
  const seconds = (performance.now() - begin) / 1000;
  const peak = Number(/peak-rss-kib (\d+)/.exec(run.stderr)?.[1] ?? NaN) * 1024;
  if (run.status !== 0) {
    console.error(run.stderr.slice(-4000), run.error ?? "");
    console.log(`run ${i + 1}: exited ${run.status ?? run.signal} after ${seconds.toFixed(1)} s, peak RSS ${(peak / 1024 ** 2).toFixed(0)} MiB`);
    process.exitCode = 1;
    break;
  }
  figures.push({ seconds, peak });
  console.log(`run ${i + 1}: ${seconds.toFixed(1)} s, peak RSS ${(peak / 1024 ** 2).toFixed(0)} MiB`);
}
if (figures.length > 0) {
  const merged = JSON.parse(readFileSync(out("merged.json"), "utf8"));
  const kb = (name) => `${(statSync(out(name)).size / 1024).toFixed(0)} KiB`;
  console.log(`merged ${merged.all.tasks} tasks; report.md ${kb("report.md")}, report.html ${kb("report.html")}, merged.json ${kb("merged.json")}`);
}
console.log(`machine: ${cpus().length} cores, ${cpus()[0]?.model ?? "unknown CPU"}, Node ${process.version}`);
if (flags.keep) console.log(`kept ${work}`);
else rmSync(work, { recursive: true, force: true });
const missed = figures.some((f) => f.seconds >= GOAL.seconds || f.peak >= GOAL.bytes);
if (REGIONS * TASKS <= 500 && missed) {
  console.error(`the goal was missed (${GOAL.seconds} s, ${GOAL.bytes / 1024 ** 3} GiB)`);
  process.exit(1);
}

// `cable-fanout run` on a simulated fleet as large as a real one: R regions × T tasks (default
// 3 × 500), each task a timer writing the contract's real files (a period file every 10 s with real
// DDSketches, phases, ready marker, report.json, sidecar, status.json) through a store that waits
// --latency-ms on every call, as S3 would. The runner is the real one (packages/cable-fanout/src,
// loaded from source by vite-node, as the tests load it), so this measures whatever is on main:
//
//   node bench/sim-fleet.mjs [--regions 3] [--tasks 500] [--minutes 3] [--period-ms 10000]
//                            [--latency-ms 50] [--abort] [--live] [--keep]
//
// It prints how late each live line came after its period's end, how long --abort-on took to stop
// the run (with --abort: every task's users start failing two thirds into the load), the runner
// process's peak RSS, its event-loop delay, collect's time and the store calls. --period-ms 1000
// compresses time tenfold (period timestamps stay on the 10 s grid). The simulated tasks live in the
// runner's process: the RSS and the event-loop delay are the runner's and the fleet's together.
// --live serves the live page and keeps it open in another process (curl reading its event stream,
// as a browser tab does), and prints what the page cost: updates, bytes streamed, bytes per period.
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import path from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { createServer } from "vite";
import { ViteNodeRunner } from "vite-node/client";
import { ViteNodeServer } from "vite-node/server";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const { values: flags } = parseArgs({
  options: {
    regions: { type: "string", default: "3" },
    tasks: { type: "string", default: "500" },
    minutes: { type: "string", default: "3" },
    "period-ms": { type: "string", default: "10000" },
    "latency-ms": { type: "string", default: "50" },
    abort: { type: "boolean", default: false },
    live: { type: "boolean", default: false },
    keep: { type: "boolean", default: false },
  },
});
const REGIONS = ["eu-west-2", "us-east-1", "ap-southeast-1", "sa-east-1", "ap-northeast-1"].slice(0, Number(flags.regions));
const TASKS = Number(flags.tasks);
const LOAD_MS = Number(flags.minutes) * 60_000;
const PERIOD_MS = 10_000;
const FAIL_FROM = Math.floor(((2 / 3) * LOAD_MS) / PERIOD_MS);

/** The fleet and the runner from their TypeScript sources, resolved as vitest resolves them (cable-worker's "development" condition). */
async function loadSources() {
  const server = await createServer({ root, configFile: false, logLevel: "error", optimizeDeps: { noDiscovery: true, include: [] }, server: { hmr: false, watch: null } });
  const node = new ViteNodeServer(server);
  const runner = new ViteNodeRunner({ root, fetchModule: (id) => node.fetchModule(id), resolveId: (id, importer) => node.resolveId(id, importer) });
  const load = (file) => runner.executeFile(path.join(root, "packages/cable-fanout/test/sim-fleet", file));
  const [{ SimClock }, { SimFleet }, { runOnFleet, lateness }] = await Promise.all([load("sim-clock.ts"), load("sim-backend.ts"), load("run-on-fleet.ts")]);
  return { SimClock, SimFleet, runOnFleet, lateness, close: () => server.close() };
}

const quantile = (values, q) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
};
const s = (ms) => `${(ms / 1000).toFixed(1)} s`;
const mib = (bytes) => `${Math.round(bytes / 1024 ** 2)} MiB`;
const vmHwm = () => Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync("/proc/self/status", "utf8"))?.[1] ?? NaN) * 1024;

const sources = await loadSources();
const work = mkdtempSync(path.join(tmpdir(), "cable-sim-fleet-bench-"));
const clock = new sources.SimClock(Number(flags["period-ms"]));
const fleet = new sources.SimFleet({
  dir: path.join(work, "buckets"),
  clock,
  storeLatencyMs: Number(flags["latency-ms"]),
  loadMs: LOAD_MS,
  load: (i) => ({ arrivalRate: 2, samplesPerPeriod: 300, latencyMs: 20 + 15 * i, ...(flags.abort ? { failing: { fromPeriod: FAIL_FROM, usersPerPeriod: 5 } } : {}) }),
});
console.log(
  `${REGIONS.length} region(s) × ${TASKS} task(s), ${flags.minutes} min of load, a 10 s period every ${flags["period-ms"]} ms, ${flags["latency-ms"]} ms per store call${flags.abort ? `, users failing from period ${FAIL_FROM + 1}` : ""}`,
);

const baseline = process.memoryUsage().rss;
let peak = baseline;
const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 500);
const loopDelay = monitorEventLoopDelay({ resolution: 20 });
loopDelay.enable();
const began = performance.now();
const watchers = [];
const run = await sources.runOnFleet(fleet, clock, {
  regions: REGIONS,
  count: TASKS,
  outDir: path.join(work, "results"),
  loadMs: LOAD_MS,
  // 5 failed users in each task's period: a tenth of the tasks failing trips it.
  abortOn: flags.abort ? [`vusers.failed>${Math.ceil((REGIONS.length * TASKS * 5) / 10)}`] : [],
  ...(flags.live ? { live: { port: 0, host: "127.0.0.1" } } : {}),
  echo: (line) => {
    console.log(`  ${new Date(clock.now()).toISOString().slice(11, 19)} ${line}`);
    const url = /^live page: (http:\S+)$/.exec(line)?.[1];
    // The page open in another process for the whole run: its stream is what a tab costs the runner.
    if (url) watchers.push(spawn("curl", ["-sN", "--max-time", "3600", `${url}events`], { stdio: ["ignore", "ignore", "ignore"] }));
  },
});
for (const watcher of watchers) watcher.kill();
await fleet.settled();
loopDelay.disable();
clearInterval(sampler);
peak = Math.max(peak, process.memoryUsage().rss);

const late = run.live.map(sources.lateness);
const record = JSON.parse(readFileSync(path.join(run.result.runDir, "fanout.json"), "utf8"));
const merged = JSON.parse(readFileSync(path.join(run.result.runDir, "merged.json"), "utf8"));
const calls = fleet.storeCalls();
const wall = performance.now() - began;
console.log("");
console.log(`exit ${run.result.exitCode}; ${merged.all.tasks} of ${REGIONS.length * TASKS} task(s) merged; run took ${s(wall)} (real)`);
console.log(
  `live lines: ${run.live.length} (${REGIONS.length} region(s) × ${new Set(run.live.map((l) => l.period)).size} period(s)); late after the period's end (simulated time): ` +
    `median ${s(quantile(late, 0.5))}, p95 ${s(quantile(late, 0.95))}, max ${s(Math.max(...late))}`,
);
if (record.aborted) {
  // The runner collects once every task has stopped.
  const collectAt = run.lines.find((l) => l.line.startsWith("collecting results")).at;
  console.log(`--abort-on: tripped by the period ending ${new Date(record.aborted.at).toISOString().slice(11, 19)}; the stop went out ${s(run.abortedAt - record.aborted.at)} after its end, every task had stopped ${s(collectAt - record.aborted.at)} after it (simulated)`);
}
console.log(`collect: ${s(run.collectMs)} (real)`);
console.log(`runner process (with the simulated fleet in it): peak RSS ${mib(peak)} sampled (${mib(baseline)} before the run), VmHWM ${mib(vmHwm())}; event-loop delay p99 ${(loopDelay.percentile(99) / 1e6).toFixed(0)} ms, max ${(loopDelay.max / 1e6).toFixed(0)} ms`);
const pageLine = run.lines.find((l) => l.line.startsWith("live page: now the report"));
if (pageLine) {
  const periods = new Set(run.live.map((l) => l.period)).size;
  const kib = Number(/(\d+) KiB streamed/.exec(pageLine.line)?.[1] ?? NaN);
  console.log(`live page: ${pageLine.line.slice("live page: now the report ".length)}; ${(kib / Math.max(1, periods)).toFixed(1)} KiB per period over ${periods} period(s)`);
}
console.log(`store calls: the runner ${calls.runner.toLocaleString("en-US")}, the tasks ${calls.tasks.toLocaleString("en-US")}`);
console.log(`machine: ${cpus().length} cores, ${cpus()[0]?.model ?? "unknown CPU"}, Node ${process.version}`);
await sources.close();
if (flags.keep) console.log(`kept ${work}`);
else rmSync(work, { recursive: true, force: true });

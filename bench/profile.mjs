// Where the engine's CPU goes: V8 CPU profiles (--cpu-prof, every thread: Artillery's worker
// threads write their own) of two workloads, cut to the measured window only.
//
//   node bench/profile.mjs       # writes bench/results/profile-<date>.json, prints a summary
//
// 1. listen: 2,000 subscribed VUs receiving 3 × 100 broadcasts; samples inside the broadcast
//    windows only (start-up excluded).
// 2. connect: the CPU cost of one VU's connect + subscribe, for the three subjects without the
//    profiler (ms per VU), then the cable engine's profile of its arrival ramp.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { byArea, mergeSelfTimes, selfTimes } from "./lib/cpuprofile.mjs";
import { artilleryWs, bare, cableEngine } from "./lib/subjects.mjs";
import { startTarget } from "./lib/target.mjs";
import { measureConnect, measureListen } from "./lib/workloads.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const TOP = 25;
setTimeout(() => {
  console.error("profile: still running after 15 min; giving up");
  process.exit(2);
}, 15 * 60_000).unref();
const log = (msg) => console.error(`[profile ${new Date().toISOString().slice(11, 19)}] ${msg}`);

function profiled() {
  const dir = mkdtempSync(path.join(os.tmpdir(), "cable-prof-"));
  return { dir, env: { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${dir}` } };
}

function summarise(dir, windows) {
  const files = readdirSync(dir).filter((f) => f.endsWith(".cpuprofile"));
  const entries = mergeSelfTimes(files.map((f) => selfTimes(JSON.parse(readFileSync(path.join(dir, f), "utf8")), windows)));
  const total = entries.reduce((sum, e) => sum + e.selfUs, 0);
  const idle = entries.filter((e) => e.functionName === "(idle)").reduce((s, e) => s + e.selfUs, 0);
  const busy = total - idle;
  const share = (us) => Math.round((us / busy) * 1000) / 10;
  return {
    profiles: files.length,
    busyMs: Math.round(busy / 1000),
    areas: byArea(entries.filter((e) => e.functionName !== "(idle)")).map(([area, us]) => ({ area, ms: Math.round(us / 1000), percent: share(us) })),
    top: entries
      .filter((e) => e.functionName !== "(idle)")
      .slice(0, TOP)
      .map((e) => ({ function: e.functionName, location: e.location, area: e.area, ms: Math.round(e.selfUs / 100) / 10, percent: share(e.selfUs) })),
  };
}

function printSummary(title, s) {
  console.log(`\n### ${title}\n\n${s.profiles} thread profiles, ${s.busyMs} ms busy in the window.\n`);
  console.log(`By area: ${s.areas.map((a) => `${a.area} ${a.percent}%`).join(", ")}\n`);
  console.log("| self % | self ms | function | where | area |\n|---|---|---|---|---|");
  for (const t of s.top) console.log(`| ${t.percent} | ${t.ms} | \`${t.function}\` | ${t.location} | ${t.area} |`);
}

const target = await startTarget();
const results = { startedAt: new Date().toISOString() };
try {
  log("listen profile: cable engine, N=2000, 3 × 100 broadcasts");
  const listenProf = profiled();
  const listen = await measureListen(target, cableEngine, { n0: 10, n: 2_000, broadcasts: 100, ratePerSecond: 500, env: listenProf.env });
  results.listen = { framesPerCpuSecondProfiled: listen.framesPerCpuSecond, delivery: listen.delivery, profile: summarise(listenProf.dir, listen.windows) };

  results.connect = {};
  for (const subject of [bare, cableEngine, artilleryWs]) {
    log(`connect cost: ${subject.label}, 2,000 VUs at 500/s`);
    const { window, ...cost } = await measureConnect(target, subject, { n0: 10, n: 2_000, ratePerSecond: 500 });
    results.connect[subject.name] = cost;
  }
  log("connect profile: cable engine");
  const connectProf = profiled();
  const connect = await measureConnect(target, cableEngine, { n0: 10, n: 2_000, ratePerSecond: 500, env: connectProf.env });
  results.connectProfile = { cpuMsPerVuProfiled: connect.cpuMsPerVu, profile: summarise(connectProf.dir, [connect.window]) };
} finally {
  await target.stop();
}

mkdirSync(path.join(here, "results"), { recursive: true });
const file = path.join(here, "results", `profile-${results.startedAt.slice(0, 10)}.json`);
writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
console.log(`Connect + subscribe CPU per VU (no profiler): ${Object.entries(results.connect).map(([k, v]) => `${k} ${v.cpuMsPerVu} ms`).join(", ")}`);
printSummary(`Listen: broadcast windows (profiled: ${results.listen.framesPerCpuSecondProfiled} frames/CPU-s)`, results.listen.profile);
printSummary(`Connect + subscribe ramp (profiled: ${results.connectProfile.cpuMsPerVuProfiled} ms CPU per VU)`, results.connectProfile.profile);
console.log(`\nresults: ${path.relative(process.cwd(), file)}`);
process.exit(0);

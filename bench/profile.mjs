// Where the engine's CPU goes: V8 CPU profiles (--cpu-prof, every thread: Artillery's worker
// threads write their own) of two workloads, cut to the measured window only.
//
//   node bench/profile.mjs               # writes bench/results/profile-<date>.json, prints a summary
//   node bench/profile.mjs --only idle   # one section (listen, connect, idle)
//
// 1. listen: 2,000 subscribed VUs receiving 3 × 100 broadcasts; samples inside the broadcast
//    windows only (start-up excluded).
// 2. connect: the marginal CPU cost of one VU's connect + subscribe for the three subjects, without
//    the profiler and without Artillery's arrival-timer spin, then the engine's profile of its ramp.
// 3. idle: 2,000 subscribed users holding 20 s, on the local target and on anycable-go (issue 43:
//    what a real server's pings cost that the local target's do not); samples of the hold only.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { byArea, mergeSelfTimes, selfTimes } from "./lib/cpuprofile.mjs";
import { engineRevision } from "./lib/report.mjs";
import { artilleryWs, bare, cableEngine } from "./lib/subjects.mjs";
import { startTarget } from "./lib/target.mjs";
import { measureConnect, measureIdle, measureListen } from "./lib/workloads.mjs";
import { startAnycableTarget } from "./lib/anycable-target.mjs";
import { parseArgs } from "node:util";

const here = path.dirname(fileURLToPath(import.meta.url));
const TOP = 25;
const NO_SPIN = { NODE_OPTIONS: `--require ${path.join(here, "lib", "no-arrival-spin.cjs")}` };
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

function threadLine(threads) {
  return (threads ?? []).map((t) => `${t.name} ${t.tid}: ${t.user} user + ${t.sys} sys`).join("; ");
}

function printSummary(title, s) {
  console.log(`\n### ${title}\n\n${s.profiles} thread profiles, ${s.busyMs} ms busy in the window.\n`);
  console.log(`By area: ${s.areas.map((a) => `${a.area} ${a.percent}%`).join(", ")}\n`);
  console.log("| self % | self ms | function | where | area |\n|---|---|---|---|---|");
  for (const t of s.top) console.log(`| ${t.percent} | ${t.ms} | \`${t.function}\` | ${t.location} | ${t.area} |`);
}

const { values: flags } = parseArgs({ options: { only: { type: "string" } } });
const sections = new Set((flags.only ?? "listen,connect,idle").split(","));
const target = await startTarget();
const results = { startedAt: new Date().toISOString(), engine: engineRevision(path.join(here, "..")) };
try {
  if (sections.has("listen")) {
    log("listen profile: cable engine, N=2000, 3 × 100 broadcasts");
    const listenProf = profiled();
    const listen = await measureListen(target, cableEngine, { n0: 10, n: 2_000, broadcasts: 100, ratePerSecond: 500, env: listenProf.env });
    results.listen = { framesPerCpuSecondProfiled: listen.framesPerCpuSecond, delivery: listen.delivery, threads: listen.windowCpuByThread, profile: summarise(listenProf.dir, listen.windows) };
  }

  // Artillery's arrival timer (the `arrivals` package, on nanotimer) spins on setImmediate for the
  // last 25 ms before every arrival: during a phase of more than ~20 arrivals/s it fills the worker's
  // idle time, so CPU per VU measured as is mostly measures the spin. The spin's cost is shown on
  // its own (CPU per second of a 100 arrivals/s phase, as is); the engines' own cost per VU is the
  // difference of two runs of equal length (200 vs 2,000 VUs over 2 s) with the spin replaced by a
  // plain interval (bench/lib/no-arrival-spin.cjs).
  if (sections.has("connect")) {
    results.connect = {};
    for (const subject of [bare, cableEngine, artilleryWs]) {
      log(`connect cost: ${subject.label}, 200 and 2,000 VUs, each over 2 s`);
      const asIs = await measureConnect(target, subject, { n0: 10, n: 210, ratePerSecond: 100 });
      const few = await measureConnect(target, subject, { n0: 10, n: 210, ratePerSecond: 100, env: NO_SPIN });
      const many = await measureConnect(target, subject, { n0: 10, n: 2_010, ratePerSecond: 1_000, env: NO_SPIN });
      results.connect[subject.name] = {
        marginalCpuMsPerVu: Math.round(((many.cpuSeconds - few.cpuSeconds) * 1000 * 1000) / (2_000 - 200)) / 1000,
        cpuSecondsPer200VusAsIs: asIs.cpuSeconds,
        cpuSecondsPer200VusWithoutSpin: few.cpuSeconds,
        threads2000: many.threads,
      };
    }
    log("connect profile: cable engine");
    const connectProf = profiled();
    const connect = await measureConnect(target, cableEngine, { n0: 10, n: 2_010, ratePerSecond: 1_000, env: { NODE_OPTIONS: `${connectProf.env.NODE_OPTIONS} ${NO_SPIN.NODE_OPTIONS}` }, endByItself: true });
    results.connectProfile = { cpuMsPerVuProfiled: connect.cpuMsPerVu, profile: summarise(connectProf.dir, [connect.window]) };
  }
  if (sections.has("idle")) {
    results.idle = {};
    for (const [name, start] of [["local target", async () => target], ["anycable-go", () => startAnycableTarget()]]) {
      const t = await start();
      try {
        log(`idle profile: cable engine on ${name}, 2,000 users holding 20 s`);
        const prof = profiled();
        const idle = await measureIdle(t, cableEngine, { n: 2_000, ratePerSecond: 500, settleS: 5, holdS: 20, env: prof.env, endByItself: true });
        results.idle[name] = { cpuUsPerUserSecondProfiled: idle.cpuUsPerUserSecond, threads: idle.holdCpuByThread, profile: summarise(prof.dir, [idle.window]) };
      } finally {
        if (t !== target) await t.stop();
      }
    }
  }
} finally {
  await target.stop();
}

mkdirSync(path.join(here, "results"), { recursive: true });
const file = path.join(here, "results", `profile-${results.startedAt.slice(0, 10)}.json`);
writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
if (results.connect) {
  console.log("Connect + subscribe, no profiler: marginal CPU per VU (2,000 vs 200 VUs over the same 2 s, arrival spin removed); CPU of the 200-VU run as is / without the spin");
  for (const [name, v] of Object.entries(results.connect)) {
    console.log(`  ${name}: ${v.marginalCpuMsPerVu} ms per VU; 200 VUs: ${v.cpuSecondsPer200VusAsIs} CPU-s as is, ${v.cpuSecondsPer200VusWithoutSpin} without the spin; 2,000-VU run by thread: ${threadLine(v.threads2000)}`);
  }
}
if (results.listen) {
  console.log(`Listen windows by thread (profiled run): ${threadLine(results.listen.threads)}`);
  printSummary(`Listen: broadcast windows (profiled: ${results.listen.framesPerCpuSecondProfiled} frames/CPU-s)`, results.listen.profile);
}
if (results.connectProfile) printSummary(`Connect + subscribe ramp, arrival spin removed (profiled: ${results.connectProfile.cpuMsPerVuProfiled} ms CPU per VU)`, results.connectProfile.profile);
for (const [name, idle] of Object.entries(results.idle ?? {})) {
  console.log(`\nIdle hold on ${name} by thread (profiled run): ${threadLine(idle.threads)}`);
  printSummary(`Idle: 2,000 subscribed users holding on ${name} (profiled: ${idle.cpuUsPerUserSecondProfiled} µs CPU per user-second)`, idle.profile);
}
console.log(`\nresults: ${path.relative(process.cwd(), file)}`);
process.exit(0);

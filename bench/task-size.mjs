#!/usr/bin/env node
// What one load-generator task holds, at 1 and 2 vCPU measured and 4 vCPU extrapolated (issue 40):
// the figures of packages/cable-fanout/src/plan/task-capacity.ts. docs/benchmarks.md, "What one
// task holds, at 1, 2 and 4 vCPU (issue 40)", has the method and its limits.
//
//   node bench/task-size.mjs [--workload listen|chat] [--quick] [--out results.json] [--from results.json]
//
// Every run is bounded (a deadline after which the generator is killed); the whole invocation
// gives up after 60 minutes (--quick: 20), killing its target and generator. The local target (built) runs pinned to core 0.
import { readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { startTarget } from "./lib/target.mjs";
import { FARGATE_MEMORY_MIB, FARGATE_NOFILE, MEMORY_SHARE, LAYOUTS, liveGenerators, machineLine, measureArrivalsTask, measureBroadcastTask, measureChatTask, measureListenTask, searchHeld, waitForQuiet } from "./lib/task-size.mjs";

const { values: flags } = parseArgs({
  options: { workload: { type: "string" }, quick: { type: "boolean", default: false }, out: { type: "string" }, from: { type: "string" }, help: { type: "boolean", default: false } },
});
if (flags.help) {
  console.log("Usage: node bench/task-size.mjs [--workload listen|chat|broadcast|arrivals] [--quick] [--out results.json]\n  --workload  one workload only (default: all four)\n  --quick     one run per workload and size (the search's first step), shorter listen holds\n  --out       where the JSON results go (default: $TMPDIR/task-size-<date>.json)\n  --from      no runs: the table and the entries again from an earlier run's results file");
  process.exit(0);
}
const workloads = flags.workload ? [flags.workload] : ["listen", "chat", "broadcast", "arrivals"];
if (!workloads.every((w) => ["listen", "chat", "broadcast", "arrivals"].includes(w))) {
  console.error(`--workload: listen, chat, broadcast or arrivals, not ${JSON.stringify(flags.workload)}`);
  process.exit(2);
}
const quick = flags.quick;
let target = null;
const giveUp = setTimeout(() => {
  console.error("task-size: gave up after the invocation's time bound");
  for (const child of liveGenerators) child.kill("SIGKILL");
  target?.child.kill("SIGKILL");
  process.exit(1);
}, (quick ? 20 : 60) * 60_000);
giveUp.unref();

// The search's steps, bisected from a first guess. listen: users (this machine's open-files limit
// of 20,000 per process caps the generator and the target just under 20,000; a first full run at
// 19,500 on one core had lag p99 over 300 ms in every hold period, from the bursts of the target's
// pings). chat: the replay's sustained arrivals per second (users held ≈ 40 × the rate), from the
// project's figures (60/s held on one core, 100/s did not).
const SEARCH = {
  listen: { steps: [1_000, 2_000, 3_000, 4_000, 5_000, 7_500, 10_000, 15_000, 19_500], start: { 1: 4, 2: 5 }, maxRuns: quick ? 1 : 4 },
  chat: { steps: [20, 30, 40, 50, 60, 70, 80, 90, 100, 115, 130], start: { 1: 4, 2: 6 }, maxRuns: quick ? 1 : 3 },
  // broadcast: frames received a second by the task's 200 users (a fifth sending); issue 55's
  // whole-process figure (about 70,000 frames per CPU-second) puts one core's limit in this range.
  // arrivals: users a second who connect, subscribe, stay 2 s and leave (issue 40's listen ramp
  // read lag p99 over 50 ms at 250/s on one core).
  arrivals: { steps: [25, 50, 75, 100, 150, 200, 250, 300, 400], start: { 1: 4, 2: 5 }, maxRuns: quick ? 1 : 3 },
  broadcast: { steps: [5_000, 10_000, 20_000, 25_000, 30_000, 35_000, 40_000, 50_000, 60_000, 80_000], start: { 1: 4, 2: 4 }, maxRuns: quick ? 1 : 3 },
};

const log = (line) => console.error(`[${new Date().toISOString().slice(11, 19)}] ${line}`);
const started = new Date();
const results = flags.from ? JSON.parse(readFileSync(flags.from, "utf8")) : { startedAt: started.toISOString(), machine: machineLine(), quick, layouts: LAYOUTS, runs: [], held: {} };

target = flags.from ? null : await startTarget({ cpus: LAYOUTS[1].target });
if (target) try {
  for (const workload of workloads) {
    for (const cores of [1, 2]) {
      const { steps, start, maxRuns } = SEARCH[workload];
      const { best, runs, bracket } = await searchHeld(steps, start[cores], maxRuns, async (step) => {
        // Before each run: until other work takes under 0.3 of a core (60 s at most), then say what it took.
        const load = await waitForQuiet([target.child.pid], { belowCores: 0.3, maxMs: quick ? 30_000 : 60_000 });
        log(`${workload}, ${cores} core(s), ${workload === "listen" ? `${step} users` : workload === "broadcast" ? `${step} frames/s` : workload === "arrivals" ? `${step} arrivals/s` : `sustained ${step}/s`}; load average ${load.loadAverage.join(" ")}, other work ${load.othersCores} cores`);
        const r =
          workload === "listen"
            ? await measureListenTask(target, { users: step, cores, holdSeconds: quick ? 25 : 40, load })
            : workload === "broadcast"
              ? await measureBroadcastTask(target, { framesPerSecond: step, cores, load })
              : workload === "arrivals"
                ? await measureArrivalsTask(target, { rate: step, cores, load })
                : await measureChatTask(target, { rate: step, cores, load });
        log(`  ${r.holds ? "holds" : "does not hold"}: users ${r.users}${r.framesPerSecond !== undefined ? `, ${r.framesPerSecond} frames/s received` : ""}, lag p99 ${r.lagMs?.p99} ms, other work during it ${r.othersCoresDuring} cores, peak RSS ${r.peakRssMiB} MiB, ${r.kibPerUser} KiB/user${r.reasons.length ? `; ${r.reasons.join("; ")}` : ""}`);
        return r;
      });
      results.runs.push(...runs);
      results.held[`${workload}-${cores}`] = best;
      results.brackets = { ...results.brackets, [`${workload}-${cores}`]: bracket };
      log(`${workload}, ${cores} core(s): held ${bracket.held ?? "none of the steps tried"}, failed ${bracket.failed ?? "none"} (${workload === "chat" ? "sustained arrivals/s" : workload === "broadcast" ? "frames/s" : workload === "arrivals" ? "arrivals/s" : "users"})`);
    }
  }
} finally {
  await target.stop();
}
if (flags.from && !flags.workload) workloads.splice(0, workloads.length, ...new Set(results.runs.map((r) => r.workload)));

// The entries: 1 and 2 vCPU as measured; 4 vCPU twice the 2-vCPU figure, capped by 80 % of 8 GiB
// at the measured memory per user (above the largest start-up RSS seen) and by Fargate's
// open-files limit (one descriptor per user, 100 kept for the process itself).
const entries = [];
const frameEntries = [];
const arrivalEntries = [];
for (const workload of workloads.filter((w) => w === "arrivals")) {
  for (const cores of [1, 2]) arrivalEntries.push({ vcpu: cores, memoryMiB: FARGATE_MEMORY_MIB[cores], perSecond: results.held[`arrivals-${cores}`]?.arrivalsPerSecond ?? 0, basis: "measured" });
  arrivalEntries.push({ vcpu: 4, memoryMiB: FARGATE_MEMORY_MIB[4], perSecond: 2 * (results.held["arrivals-2"]?.arrivalsPerSecond ?? 0), basis: "extrapolated" });
}
for (const workload of workloads.filter((w) => w === "broadcast")) {
  // Frames a second received in the held run (what the users got, not the pace asked); 4 vCPU twice 2.
  for (const cores of [1, 2]) frameEntries.push({ vcpu: cores, memoryMiB: FARGATE_MEMORY_MIB[cores], perSecond: results.held[`broadcast-${cores}`]?.framesPerSecond ?? 0, basis: "measured" });
  frameEntries.push({ vcpu: 4, memoryMiB: FARGATE_MEMORY_MIB[4], perSecond: 2 * (results.held["broadcast-2"]?.framesPerSecond ?? 0), basis: "extrapolated" });
}
for (const workload of workloads.filter((w) => w === "listen" || w === "chat")) {
  // Memory per user: the largest of the workload's runs, held or not (peak RSS, garbage included,
  // over the RSS when the first user connected, ÷ the most users at once): what the task must fit.
  const all = results.runs.filter((r) => r.workload === workload && r.kibPerUser !== null);
  const kib = Math.max(0, ...all.map((r) => r.kibPerUser));
  const baseMiB = Math.max(0, ...all.map((r) => r.baseRssMiB ?? 0));
  for (const cores of [1, 2]) {
    const r = results.held[`${workload}-${cores}`];
    entries.push({ workload, vcpu: cores, memoryMiB: FARGATE_MEMORY_MIB[cores], users: r ? r.users : 0, basis: "measured", kibPerUser: kib });
  }
  const two = results.held[`${workload}-2`]?.users ?? 0;
  const byMemory = kib > 0 ? Math.floor(((MEMORY_SHARE * FARGATE_MEMORY_MIB[4] - baseMiB) * 1024) / kib) : Infinity;
  entries.push({ workload, vcpu: 4, memoryMiB: FARGATE_MEMORY_MIB[4], users: Math.min(2 * two, byMemory, FARGATE_NOFILE - 100), basis: "extrapolated", kibPerUser: kib });
}
results.entries = entries;
results.frameEntries = frameEntries;
results.arrivalEntries = arrivalEntries;

const pad = (s, n) => String(s).padEnd(n);
console.log(`\n${results.machine}; ${results.quick ? "quick" : "full"} run of ${results.startedAt}`);
console.log([pad("workload", 9), pad("cores", 6), pad("users", 8), pad("held", 6), pad("lag p99 ms", 11), pad("run lag p99", 12), pad("peak RSS MiB", 13), pad("KiB/user", 9), pad("others", 7), "load average"].join(""));
for (const r of results.runs.filter((x) => workloads.includes(x.workload))) {
  console.log([pad(r.workload, 9), pad(r.cores, 6), pad(r.users, 8), pad(r.holds ? "yes" : "no", 6), pad(r.lagMs?.p99 ?? "–", 11), pad(r.runLagMs?.p99 ?? "–", 12), pad(r.peakRssMiB, 13), pad(r.kibPerUser ?? "–", 9), pad(r.othersCoresDuring ?? "–", 7), r.loadAverage.join(" ")].join(""));
}
console.log("\nentries:");
console.log(JSON.stringify(entries, null, 2));
if (arrivalEntries.length > 0) console.log(`\narrival entries (ARRIVAL_CAPACITY):\n${JSON.stringify(arrivalEntries, null, 2)}`);
if (frameEntries.length > 0) console.log(`\nframe entries (FRAME_CAPACITY):\n${JSON.stringify(frameEntries, null, 2)}`);
if (!flags.from) {
  const out = flags.out ?? path.join(os.tmpdir(), `task-size-${started.toISOString().slice(0, 10)}.json`);
  writeFileSync(out, JSON.stringify(results, null, 2));
  log(`results: ${out}`);
}

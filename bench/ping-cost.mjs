// What a real server's pings cost an idle user (issue 43): the idle workload (bench/lib/workloads.mjs
// measureIdle) for the engine and k6 + xk6-cable on the local target (one interval pings every
// connection together), on anycable-go (each connection pinged on its own 3 s timer) and on
// anycable-go pinging every second. The difference between the last two, per extra ping, is what one
// separately timed ping costs a client; docs/benchmarks.md has the figures.
//
//   node bench/ping-cost.mjs [--users 2000] [--hold 20]   # about 5 minutes
import { parseArgs } from "node:util";
import { startAnycableTarget } from "./lib/anycable-target.mjs";
import { k6Subject } from "./lib/k6.mjs";
import { cableEngine } from "./lib/subjects.mjs";
import { startTarget } from "./lib/target.mjs";
import { measureIdle } from "./lib/workloads.mjs";

const { values: flags } = parseArgs({ options: { users: { type: "string", default: "2000" }, hold: { type: "string", default: "20" } } });
const log = (msg) => console.error(`[ping-cost ${new Date().toISOString().slice(11, 19)}] ${msg}`);
setTimeout(() => {
  console.error("ping-cost: still running after 20 min; giving up");
  process.exit(2);
}, 20 * 60_000).unref();

const k6 = k6Subject();
const subjects = [cableEngine, ...(k6.why ? [] : [k6])];
if (k6.why) log(k6.why);
const targets = [
  ["local target, pings together every 3 s", () => startTarget()],
  ["anycable-go, each connection pinged every 3 s", () => startAnycableTarget()],
  ["anycable-go, --ping_interval=1", () => startAnycableTarget({ args: ["--ping_interval=1"] })],
];
const rows = [];
for (const [name, start] of targets) {
  const target = await start();
  try {
    const row = { target: name };
    for (const subject of subjects) {
      log(`${subject.label} on ${name}`);
      const idle = await measureIdle(target, subject, { n: Number(flags.users), ratePerSecond: 500, settleS: 5, holdS: Number(flags.hold) });
      row[subject.name] = idle.cpuUsPerUserSecond;
    }
    rows.push(row);
  } finally {
    await target.stop();
  }
}
console.log(`| target | ${subjects.map((s) => `${s.label}, µs CPU per user-second`).join(" | ")} |`);
console.log(`|---|${subjects.map(() => "---").join("|")}|`);
for (const row of rows) console.log(`| ${row.target} | ${subjects.map((s) => row[s.name]).join(" | ")} |`);
const [, every3, every1] = rows;
if (every3 && every1) {
  // From one ping per 3 s to one per second: 2/3 more pings per user-second.
  for (const s of subjects) console.log(`${s.label}: ${(((every1[s.name] - every3[s.name]) * 3) / 2).toFixed(1)} µs per separately timed ping`);
}
process.exit(0);

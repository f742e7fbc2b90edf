// The README's first command (`npm start`): the whole pipeline with no AWS account. It starts the
// local target on a free loopback port, runs scenarios/chat.yml from two local "regions" (two worker
// processes each: the same task entrypoint the Fargate tasks run, with a directory in place of S3),
// merges their results exactly, and prints where report.md is.
//
// `npm start -- scenarios/spike.yml` runs another scenario instead, its phases' rates scaled by
// DEMO_SCALE (default 0.2: four processes share this machine); DEMO_CAPACITY=N makes the target
// deliver broadcasts 300 ms late while more than N connections are open, as a small server would.
// DEMO_MINUTES=M fits the scenario's phases into M minutes (a 30-minute soak in 3: the drift
// verdict then judges runs from 2 minutes, the plugin's soakMinimum); DEMO_LEAK=L makes the target
// leak L MiB and L ms of delivery delay a minute. The target's own /metrics is the run's
// --server-metrics, so the report charts its CPU and memory and judges the memory's drift.
// For scenarios/reconnect-storm.yml (or DEMO_RESTART=1) the target restarts once its connections
// have held steady for 3 s, as a deploy would: every socket drops, the listeners come back.
// DEMO_OUT=DIR writes the run's folder under DIR instead of results/.
import { spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const { startTarget } = require("cable-local-target");

const scenario = process.argv[2] ? path.resolve(process.argv[2]) : path.join(root, "scenarios/chat.yml");
const capacity = process.env.DEMO_CAPACITY ? Number(process.env.DEMO_CAPACITY) : undefined;
const leak = process.env.DEMO_LEAK ? Number(process.env.DEMO_LEAK) : undefined;
const faults = {
  ...(capacity ? { capacityConnections: capacity, overCapacityDelayMs: 300 } : {}),
  ...(leak ? { leakMbPerMinute: leak, leakDelayMsPerMinute: leak } : {}),
};
const restartOnce = process.env.DEMO_RESTART === "1" || path.basename(scenario) === "reconnect-storm.yml";
const target = await startTarget({ port: 0, control: restartOnce, ...(Object.keys(faults).length > 0 ? { faults } : {}) });
console.log(`local target: ${target.cableUrl} (Action Cable), ${target.pusherUrl} (Pusher)`);

/** The scenario's own phases, their arrival rates scaled down for one machine. */
function scaledPhases(file) {
  // The YAML parser cable-fanout reads scenarios with.
  const { parse } = createRequire(require.resolve("cable-fanout"))("yaml");
  const { readFileSync } = require("node:fs");
  const scale = Number(process.env.DEMO_SCALE ?? 0.2);
  const phases = parse(readFileSync(file, "utf8"))?.config?.phases ?? [];
  const minutes = Number(process.env.DEMO_MINUTES ?? 0);
  const total = phases.reduce((n, p) => n + (typeof p.duration === "number" ? p.duration : 0), 0);
  const stretch = minutes > 0 && total > 0 ? (minutes * 60) / total : 1;
  return phases.map((p) => {
    const out = { ...p };
    if (typeof p.duration === "number") out.duration = Math.max(1, Math.round(p.duration * stretch));
    for (const key of ["arrivalRate", "rampTo"]) if (typeof p[key] === "number") out[key] = Math.max(1, Math.round(p[key] * scale));
    if (typeof p.arrivalCount === "number") out.arrivalCount = Math.max(1, Math.round(p.arrivalCount * scale));
    return out;
  });
}

/**
 * The default run's shape, so that its charts show one: a ramp, a hold, a small spike (3× the hold's
 * rate, the spike verdict's factor) and a hold again; DEMO_RATE is the hold's users a second per
 * task, DEMO_DURATION the seconds of each hold (the ramp and the spike take half and a quarter of it).
 */
function demoPhases() {
  const rate = Number(process.env.DEMO_RATE ?? 2);
  const hold = Number(process.env.DEMO_DURATION ?? 20);
  return [
    { name: "ramp", duration: Math.max(1, Math.round(hold / 2)), arrivalRate: 1, rampTo: rate },
    { name: "hold", duration: hold, arrivalRate: rate },
    { name: "spike", duration: Math.max(1, Math.round(hold / 4)), arrivalRate: rate * 3 },
    { name: "recover", duration: hold, arrivalRate: rate },
  ];
}

const phases = process.argv[2] ? scaledPhases(scenario) : demoPhases();
const fanout = path.join(root, "packages/cable-fanout/bin/cable-fanout.js");
const compressed = Number(process.env.DEMO_MINUTES ?? 0) > 0 && Number(process.env.DEMO_MINUTES) < 10;
const overrides = { config: { phases, ...(compressed ? { plugins: { "cable-report": { soakMinimum: "2m" } } } : {}) } };
const args = [
  fanout, "run", scenario,
  "--local", "--regions", "local-a,local-b", "--count", "2",
  "--target", target.cableUrl,
  "--overrides", JSON.stringify(overrides),
  "--server-metrics", new URL("/metrics", target.cableUrl.replace(/^ws/, "http")).href,
  "--out", process.env.DEMO_OUT ? path.resolve(process.env.DEMO_OUT) : path.join(root, "results"),
];
const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "inherit"], env: { ...process.env, ARTILLERY_DISABLE_TELEMETRY: "true" } });
if (restartOnce) {
  let [seen, since] = [0, Date.now()];
  const watch = setInterval(() => {
    const now = target.counters().cableConnections;
    if (now !== seen) [seen, since] = [now, Date.now()];
    else if (now > 0 && Date.now() - since >= 3_000) {
      clearInterval(watch);
      console.log(`local target: restarting with ${target.restart()} sockets open`);
    }
  }, 250);
  watch.unref();
  child.on("close", () => clearInterval(watch));
}
let report = "";
child.stdout.on("data", (chunk) => {
  report += chunk;
  process.stdout.write(chunk);
});
const code = await new Promise((resolve) => child.on("close", resolve));
await target.close();
if (report.trim()) console.log(`\nThe per-region comparison: ${path.relative(process.cwd(), report.trim().split("\n").pop())}`);
process.exit(code ?? 1);

// The README's first command (`npm start`): the whole pipeline with no AWS account. It starts the
// local target on a free loopback port, runs scenarios/chat.yml from two local "regions" (two worker
// processes each: the same task entrypoint the Fargate tasks run, with a directory in place of S3),
// merges their results exactly, and prints where report.md is.
//
// `npm start -- scenarios/spike.yml` runs another scenario instead, its phases' rates scaled by
// DEMO_SCALE (default 0.2: four processes share this machine); DEMO_CAPACITY=N makes the target
// deliver broadcasts 300 ms late while more than N connections are open, as a small server would.
import { spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const { startTarget } = require("cable-local-target");

const scenario = process.argv[2] ? path.resolve(process.argv[2]) : path.join(root, "scenarios/chat.yml");
const capacity = process.env.DEMO_CAPACITY ? Number(process.env.DEMO_CAPACITY) : undefined;
const target = await startTarget({ port: 0, ...(capacity ? { faults: { capacityConnections: capacity, overCapacityDelayMs: 300 } } : {}) });
console.log(`local target: ${target.cableUrl} (Action Cable), ${target.pusherUrl} (Pusher)`);

/** The scenario's own phases, their arrival rates scaled down for one machine. */
function scaledPhases(file) {
  // The YAML parser cable-fanout reads scenarios with.
  const { parse } = createRequire(require.resolve("cable-fanout"))("yaml");
  const { readFileSync } = require("node:fs");
  const scale = Number(process.env.DEMO_SCALE ?? 0.2);
  const phases = parse(readFileSync(file, "utf8"))?.config?.phases ?? [];
  return phases.map((p) => {
    const out = { ...p };
    for (const key of ["arrivalRate", "rampTo"]) if (typeof p[key] === "number") out[key] = Math.max(1, Math.round(p[key] * scale));
    if (typeof p.arrivalCount === "number") out.arrivalCount = Math.max(1, Math.round(p.arrivalCount * scale));
    return out;
  });
}

const phases = process.argv[2]
  ? scaledPhases(scenario)
  : [{ name: "demo", duration: Number(process.env.DEMO_DURATION ?? 10), arrivalRate: Number(process.env.DEMO_RATE ?? 5) }];
const fanout = path.join(root, "packages/cable-fanout/bin/cable-fanout.js");
const args = [
  fanout, "run", scenario,
  "--local", "--regions", "local-a,local-b", "--count", "2",
  "--target", target.cableUrl,
  "--overrides", JSON.stringify({ config: { phases } }),
  "--out", path.join(root, "results"),
];
const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "inherit"], env: { ...process.env, ARTILLERY_DISABLE_TELEMETRY: "true" } });
let report = "";
child.stdout.on("data", (chunk) => {
  report += chunk;
  process.stdout.write(chunk);
});
const code = await new Promise((resolve) => child.on("close", resolve));
await target.close();
if (report.trim()) console.log(`\nThe per-region comparison: ${path.relative(process.cwd(), report.trim().split("\n").pop())}`);
process.exit(code ?? 1);

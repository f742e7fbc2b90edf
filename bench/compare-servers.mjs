// The seed benchmarks' server comparisons, reproduced with `cable-fanout compare` against real
// servers started here (manual runs: minutes each; the figures are in docs/servers.md):
//
//   node bench/compare-servers.mjs pusher [--users 300] [--ramp 120]
//       seed 001's broadcast benchmark (scenarios/pusher-broadcast.yml: a fifth of the users send
//       stamped client events every 200 ms at 40 %, everyone listens on one private channel, each
//       socket lives 45 s), ramping to --users concurrent sockets over --ramp seconds, against
//       anycable-go 1.6.16 (Pusher mode), Soketi 1.6.1 and Reverb 1.10.2, each with --server-pid
//
// Writes bench/results/compare-<mode>/ (the compare's report.md and merged.json, each server's own
// report.md; the raw task files stay in a temporary folder).
// Needs `npm run build` and `bash scripts/setup-test-servers.sh`.
import { spawn } from "node:child_process";
import { cpSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { startAnyCable, startReverb, startSoketi } from "cable-test-servers";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const FANOUT = path.join(root, "packages/cable-fanout/bin/cable-fanout.js");
const { values: flags, positionals } = parseArgs({ allowPositionals: true, options: { users: { type: "string", default: "300" }, ramp: { type: "string", default: "120" } } });
const mode = positionals[0];
if (mode !== "pusher") {
  console.error("usage: node bench/compare-servers.mjs pusher [--users 300] [--ramp 120]");
  process.exit(2);
}
const users = Number(flags.users);
const rampS = Number(flags.ramp);
const LIFETIME_S = 45;
const app = { appId: "cable-test", key: "cable-test-key", secret: "cable-test-secret" };
// Bounded: the whole comparison (three runs of ramp + a socket's life, pauses) or it is killed.
const deadline = setTimeout(() => (console.error("compare-servers: still running after 30 min; giving up"), process.exit(3)), 30 * 60_000);
deadline.unref();

const servers = [];
try {
  const [anycable, soketi, reverb] = await Promise.all([startAnyCable({ pusher: app, broker: "memory" }), startSoketi({ presenceMaxMembers: 100_000 }), startReverb()]);
  servers.push(anycable, soketi, reverb);
  const targets = [
    ["anycable", anycable.pusherUrl, anycable.pid()],
    ["soketi", soketi.url, soketi.pid()],
    ["reverb", reverb.url, reverb.pid()],
  ];
  // Concurrent sockets = arrival rate × a socket's life: ramp the rate so that `users` are connected at the end of the ramp.
  const topRate = Math.max(1, Math.round(users / LIFETIME_S));
  const overrides = { config: { cable: { pusher: { key: app.key, appId: app.appId } }, phases: [{ name: "ramp", duration: rampS, arrivalRate: 1, rampTo: topRate }] } };
  const work = mkdtempSync(path.join(os.tmpdir(), "cable-compare-"));
  const args = [
    FANOUT, "compare", path.join(root, "scenarios/pusher-broadcast.yml"), "--local", "--regions", "local",
    ...targets.flatMap(([name, url, pid]) => ["--target", `${name}=${url}`, "--server-pid", `${name}=${pid}`]),
    "--overrides", JSON.stringify(overrides), "--variables", JSON.stringify({ lifetime: LIFETIME_S, sends: LIFETIME_S * 5 }),
    "--pause", "15s", "--compare-id", `pusher-${users}`, "--out", work,
  ];
  const started = Date.now();
  const code = await new Promise((resolve) => {
    const child = spawn(process.execPath, args, { stdio: "inherit", env: { ...process.env, PUSHER_APP_SECRET: app.secret, ARTILLERY_DISABLE_TELEMETRY: "true" } });
    child.on("exit", (c) => resolve(c));
  });
  const into = path.join(root, "bench/results", `compare-${mode}`);
  rmSync(into, { recursive: true, force: true });
  // Kept: the comparison (report.md, merged.json) and each server's own report.md; the raw task files stay in the work folder.
  const from = path.join(work, `pusher-${users}`);
  cpSync(from, into, { recursive: true, filter: (f) => { const rel = path.relative(from, f); return rel === "" || !rel.includes(path.sep) || /^[^/]+(\/report\.md)?$/.test(rel); } });
  console.error(`compare-servers: exit ${code} after ${Math.round((Date.now() - started) / 1000)} s; ${path.relative(root, into)}/report.md`);
} finally {
  await Promise.all(servers.map((s) => s.stop()));
}
process.exit(0);

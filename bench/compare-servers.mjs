// The seed benchmarks' server comparisons, reproduced with `cable-fanout compare` against real
// servers started here (manual runs: minutes each; the figures are in docs/servers.md):
//
//   node bench/compare-servers.mjs pusher [--users 300] [--ramp 120]
//       seed 001's broadcast benchmark (scenarios/pusher-broadcast.yml: a fifth of the users send
//       stamped client events every 200 ms at 40 %, everyone listens on one private channel, each
//       socket lives 45 s), ramping to --users concurrent sockets over --ramp seconds, against
//       anycable-go 1.6.16 (Pusher mode), Soketi 1.6.1 and Reverb 1.10.2, each with --server-pid
//   node bench/compare-servers.mjs avalanche [--step 4000]
//       seed 001's connection avalanche (scenarios/pusher-avalanche.yml): two steps of --step
//       clients arriving 2,000 a second, all staying connected, against the same three servers
//   node bench/compare-servers.mjs rails [--users 200] [--ramp 120]
//       seed 000's chat (scenarios/chat.yml: connect with a cookie, subscribe to ChatChannel, speak
//       5 times and wait for each message back) ramping to --users concurrent users, against Rails
//       Action Cable 6.1 (puma) and anycable-go 1.6.16 with the same channels behind its HTTP RPC
//       (the RPC app's puma counted in AnyCable's memory and CPU, as the seed counts the RPC server)
//
// Writes bench/results/compare-<mode>/ (the compare's report.md and merged.json, each server's own
// report.md; the raw task files stay in a temporary folder).
// Needs `npm run build` and `bash scripts/setup-test-servers.sh`.
import { spawn } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { startAnyCable, startAnyCableRails, startRails, startReverb, startSoketi } from "cable-test-servers";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const FANOUT = path.join(root, "packages/cable-fanout/bin/cable-fanout.js");
const { values: flags, positionals } = parseArgs({
  allowPositionals: true,
  options: { users: { type: "string" }, ramp: { type: "string", default: "120" }, step: { type: "string", default: "4000" } },
});
const app = { appId: "cable-test", key: "cable-test-key", secret: "cable-test-secret" };
const pusherServers = async () => {
  const [anycable, soketi, reverb] = await Promise.all([startAnyCable({ pusher: app, broker: "memory" }), startSoketi({ presenceMaxMembers: 100_000 }), startReverb()]);
  return [
    { name: "anycable", url: anycable.pusherUrl, pids: [anycable.pid()], server: anycable },
    { name: "soketi", url: soketi.url, pids: [soketi.pid()], server: soketi },
    { name: "reverb", url: reverb.url, pids: [reverb.pid()], server: reverb },
  ];
};
const pusherConfig = { cable: { pusher: { key: app.key, appId: app.appId } } };

// Each mode: its servers, its scenario and the load that sizes it.
const MODES = {
  pusher: () => {
    const users = Number(flags.users ?? 300);
    const lifetime = 45;
    // Concurrent sockets = arrival rate × a socket's life: ramp the rate so that `users` are connected at the end of the ramp.
    const topRate = Math.max(1, Math.round(users / lifetime));
    return {
      id: `pusher-${users}`,
      servers: pusherServers,
      scenario: "scenarios/pusher-broadcast.yml",
      overrides: { config: { ...pusherConfig, phases: [{ name: "ramp", duration: Number(flags.ramp), arrivalRate: 1, rampTo: topRate }] } },
      variables: { lifetime, sends: lifetime * 5 },
    };
  },
  avalanche: () => {
    const step = Number(flags.step);
    const seconds = Math.max(1, Math.round(step / 2_000));
    return {
      id: `avalanche-${step}`,
      servers: pusherServers,
      scenario: "scenarios/pusher-avalanche.yml",
      overrides: {
        config: {
          ...pusherConfig,
          phases: [{ name: "step 1", duration: seconds, arrivalCount: step }, { pause: 20 - seconds }, { name: "step 2", duration: seconds, arrivalCount: step }],
        },
      },
      // Every client stays until the second step has been connected a while: the server holds 2 × step.
      variables: { hold: 40 },
      perStep: "cable.connect_to_confirm",
    };
  },
  rails: () => {
    const users = Number(flags.users ?? 200);
    // A chat session lasts about 5 s (5 × (think 0.75 s + rtt)): `users` at once need users / 5 arrivals a second.
    const topRate = Math.max(1, Math.round(users / 5));
    return {
      id: `rails-${users}`,
      servers: async () => {
        const [actioncable, anycable] = await Promise.all([startRails(), startAnyCableRails()]);
        return [
          { name: "actioncable", url: actioncable.url, pids: [actioncable.pid()], server: actioncable },
          { name: "anycable", url: anycable.url, pids: [anycable.pid(), anycable.rpc.pid()], server: anycable },
        ];
      },
      scenario: "scenarios/chat.yml",
      overrides: { config: { phases: [{ name: "ramp", duration: Number(flags.ramp), arrivalRate: 1, rampTo: topRate }, { name: "peak", duration: 30, arrivalRate: topRate }] } },
    };
  },
};

/**
 * websocket-bench prints one line per step; Artillery's periods hold the same: each period of each
 * server's task report (intermediate) with the histogram's samples, and its errors.
 */
function stepTable(compareDir, names, histogram) {
  const rows = ["| server | period | clients arriving | confirmed | p50 / p95 / p99 / max ms | errors |", "|:--|:--|--:|--:|:--|:--|"];
  for (const name of names) {
    const reportFile = path.join(compareDir, name, "local", "task-1", "report.json");
    if (!existsSync(reportFile)) {
      rows.push(`| ${name} | — | — | — | no report | — |`);
      continue;
    }
    const report = JSON.parse(readFileSync(reportFile, "utf8"));
    const first = Math.min(...report.intermediate.map((p) => Number(p.period)));
    for (const period of report.intermediate) {
      const h = period.summaries?.[histogram];
      const c = period.counters ?? {};
      if (!h && !c["vusers.created"]) continue;
      const errors = Object.entries(c).filter(([k]) => k.startsWith("errors.")).map(([k, v]) => `${k.slice(7)} ${v}`).join(", ");
      const ms = h ? [h.median, h.p95, h.p99, h.max].map((v) => Math.round(v * 10) / 10).join(" / ") : "—";
      rows.push(`| ${name} | +${(Number(period.period) - first) / 1000} s | ${c["vusers.created"] ?? 0} | ${h?.count ?? 0} | ${ms} | ${errors || "none"} |`);
    }
  }
  return `${rows.join("\n")}\n`;
}

const mode = positionals[0];
if (!(mode in MODES)) {
  console.error("usage: node bench/compare-servers.mjs pusher [--users 300] [--ramp 120] | avalanche [--step 4000] | rails [--users 200] [--ramp 120]");
  process.exit(2);
}
const plan = MODES[mode]();
// Bounded: the whole comparison (a run per server, pauses) or it is killed.
const deadline = setTimeout(() => (console.error("compare-servers: still running after 30 min; giving up"), process.exit(3)), 30 * 60_000);
deadline.unref();

let targets = [];
try {
  targets = await plan.servers();
  const work = mkdtempSync(path.join(os.tmpdir(), "cable-compare-"));
  const args = [
    FANOUT, "compare", path.join(root, plan.scenario), "--local", "--regions", "local",
    ...targets.flatMap((t) => ["--target", `${t.name}=${t.url}`, "--server-pid", `${t.name}=${t.pids.join(",")}`]),
    "--overrides", JSON.stringify(plan.overrides), ...(plan.variables ? ["--variables", JSON.stringify(plan.variables)] : []),
    "--pause", "15s", "--compare-id", plan.id, "--out", work,
  ];
  const started = Date.now();
  const code = await new Promise((resolve) => {
    const child = spawn(process.execPath, args, { stdio: "inherit", env: { ...process.env, PUSHER_APP_SECRET: app.secret, ARTILLERY_DISABLE_TELEMETRY: "true" } });
    child.on("exit", (c) => resolve(c));
  });
  const into = path.join(root, "bench/results", `compare-${mode}`);
  const steps = plan.perStep ? stepTable(path.join(work, plan.id), targets.map((t) => t.name), plan.perStep) : undefined;
  rmSync(into, { recursive: true, force: true });
  // Kept: the comparison (report.md, merged.json) and each server's own report.md; the raw task files stay in the work folder.
  const from = path.join(work, plan.id);
  cpSync(from, into, { recursive: true, filter: (f) => { const rel = path.relative(from, f); return rel === "" || !rel.includes(path.sep) || /^[^/]+(\/report\.md)?$/.test(rel); } });
  if (steps) {
    writeFileSync(path.join(into, "steps.md"), steps);
    console.error(steps);
  }
  console.error(`compare-servers: exit ${code} after ${Math.round((Date.now() - started) / 1000)} s; ${path.relative(root, into)}/report.md`);
} finally {
  await Promise.all(targets.map((t) => t.server.stop()));
}
process.exit(0);

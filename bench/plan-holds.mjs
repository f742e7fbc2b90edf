#!/usr/bin/env node
// Does the plan's suggestion hold when run (issue 54)? For each scenario in scenarios/ that runs
// against the local target, the arrivals are scaled until `cable-fanout plan` says one 1-vCPU task
// carries `--share` (default 0.9) of what it holds on the binding dimension (users at once, or
// broadcast frames a second), and that load is then run for real: one `artillery run` pinned to one
// core, the local target alone on the other, judged as bench/task-size.mjs judges (the engine's
// cable.event_loop_lag p99 under 50 ms, no failed user, no error) and against the report's
// saturation line (lag p99 under 100 ms, no failed user). A scenario whose sends are unpaced (as
// fast as the server answers) has no rate to scale: it runs as written.
//
//   node bench/plan-holds.mjs [--only chat.yml,cable-broadcast.yml] [--share 0.9] [--out results.json]
//
// A task's frames come from every task's sends (all run the script against one server): one local
// process stands for a task of a run of `--count 1` in one region, where its own sends are all
// there are. Scenarios that need a real app or server (sign-in, JWT, a restart) are listed and
// skipped: their plans carry a few dozen users. Every run has a deadline; the whole invocation
// gives up after 40 minutes.
import { writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";
import { exitWithin } from "./lib/proc.mjs";
import { startArtillery } from "./lib/subjects.mjs";
import { startTarget } from "./lib/target.mjs";
import { loadAverage, othersCores } from "./lib/task-size.mjs";
import { METRICS } from "artillery-engine-cable/metrics";

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, "..");
const dist = (p) => import(path.join(repo, "packages/cable-fanout/dist", p));
const { makePlan } = await dist("plan/launch.js");
const { effectiveConfig, loadScenario } = await dist("scenario.js");

const { values: flags } = parseArgs({ options: { only: { type: "string" }, share: { type: "string", default: "0.9" }, out: { type: "string" } } });
const share = Number(flags.share);

// Each scenario at a length this machine runs in about a minute: variables that shorten a user's
// stay, and one 30 s phase whose rate the search sets. `pusher`: the local target's Pusher endpoint.
const LOCAL = {
  "chat.yml": {},
  "active-chat.yml": {},
  "bot-stress.yml": { variables: { commands: 20000 } },
  "spike.yml": { variables: { messages: 10 } },
  "soak.yml": { variables: { stay_messages: 3 } },
  "soak-pubsub.yml": { variables: { stay_messages: 3 } },
  "mixed.yml": {},
  "connection-storm.yml": { variables: { hold: 20 } },
  "avalanche.yml": { variables: { hold: 20 } },
  "pusher-avalanche.yml": { variables: { hold: 20 }, pusher: true },
  "cable-broadcast.yml": { variables: { lifetime: 30, sends: 150 } },
  "pusher-broadcast.yml": { variables: { lifetime: 30, sends: 150 }, pusher: true },
  "pubsub-rooms.yml": { variables: { messages: 10, stay: 10 }, pusher: true },
};
const ELSEWHERE = ["rails-devise.yml", "anycable-jwt.yml", "laravel-presence.yml", "laravel-token.yml", "laravel-token-pool.yml", "laravel-presence-html.yml", "reconnect-storm.yml", "capacity-rails.yml", "capacity-anycable.yml", "capacity-pusher.yml"];
const PHASE_S = 30;
/** This machine's open-files limit (20,000 per process) less the target's own: at most this many users at once. */
const MAX_USERS = 9_000;

const only = flags.only ? flags.only.split(",") : Object.keys(LOCAL);
const log = (line) => console.error(`[${new Date().toISOString().slice(11, 19)}] ${line}`);
const giveUp = setTimeout(() => {
  log("plan-holds: gave up after 40 minutes");
  process.exit(1);
}, 40 * 60_000);
giveUp.unref();

/** One phase of PHASE_S at `rate` a second: as a count, since Artillery's arrivalRate must be whole. */
const phaseOf = (rate) => [{ duration: PHASE_S, arrivalCount: Math.max(1, Math.round(rate * PHASE_S)) }];

/** The plan for one 1-vCPU task at `rate` arrivals a second. */
function planAt(file, spec, rate) {
  const scenario = loadScenario(path.join(repo, "scenarios", file));
  const overrides = { config: { phases: phaseOf(rate), variables: spec.variables ?? {} } };
  const config = effectiveConfig(scenario, overrides);
  config.variables = { ...config.variables, ...(spec.variables ?? {}) };
  return makePlan({
    backend: "aws",
    regions: ["us-east-1"],
    count: 1,
    capacity: "on-demand",
    config,
    scenarios: scenario.scenarios,
    phasesMs: PHASE_S * 1000,
    maxDurationMs: 3_600_000,
    startDelayMs: 0,
    size: { cpu: 1024, memory: 2048 },
    facts: new Map(),
  });
}

/** The plan for one 1-vCPU task with the scenario's own phases. */
function planAsWritten(file, spec) {
  const scenario = loadScenario(path.join(repo, "scenarios", file));
  const config = effectiveConfig(scenario, { config: { variables: spec.variables ?? {} } });
  config.variables = { ...config.variables, ...(spec.variables ?? {}) };
  return makePlan({ backend: "aws", regions: ["us-east-1"], count: 1, capacity: "on-demand", config, scenarios: scenario.scenarios, phasesMs: scenario.durationMs, maxDurationMs: 3_600_000, startDelayMs: 0, size: { cpu: 1024, memory: 2048 }, facts: new Map() });
}

/** The arrival rate (to 0.01/s) at which the binding share is `share`, bounded by MAX_USERS. */
function rateFor(file, spec) {
  let lo = 0.01;
  let hi = 2_000;
  for (let i = 0; i < 40; i++) {
    const mid = (lo + hi) / 2;
    const plan = planAt(file, spec, mid);
    const over = (plan.binding?.share ?? 0) > share || (plan.users?.peak ?? 0) > MAX_USERS;
    if (over) hi = mid;
    else lo = mid;
  }
  return Math.floor(lo * 100) / 100;
}

const results = { startedAt: new Date().toISOString(), share, machine: `${os.cpus().length} cores, Node ${process.version}`, runs: [], skipped: ELSEWHERE };
const target = await startTarget({ cpus: "0" });
try {
  for (const file of only) {
    const spec = LOCAL[file];
    if (!spec) {
      log(`${file}: not run here (needs a real app or server)`);
      continue;
    }
    // A flow that sends as fast as the server answers has no rate the plan can scale: run as written.
    const asWritten = planAt(file, spec, 1).users.unpaced;
    const rate = asWritten ? null : rateFor(file, spec);
    const plan = asWritten ? planAsWritten(file, spec) : planAt(file, spec, rate);
    const b = plan.binding;
    log(`${file}: ${asWritten ? "as written (its sends are unpaced)" : `${rate}/s for ${PHASE_S} s`}, ${plan.users.peak} users at once; binds on ${b.dimension}: ${Math.round(b.demand)} of ${b.holds} (${Math.round(b.share * 100)} %)`);
    const url = spec.pusher ? target.httpUrl.replace(/^http/, "ws") : target.cableUrl;
    const overrides = { config: { ...(asWritten ? {} : { phases: phaseOf(rate) }), ...(spec.pusher ? { cable: { pusher: { key: "local-key", appId: "local-app" } } } : {}) } };
    const longest = (plan.users.flowSeconds || 60) + (asWritten ? plan.users.phasesSeconds : PHASE_S) + 60;
    const deadline = Date.now() + longest * 1000;
    const load = { loadAverage: loadAverage(), othersCores: await othersCores([target.child.pid]) };
    const run = startArtillery(`plan-holds-${file}`, path.join(repo, "scenarios", file), {
      deadline,
      cpus: "1",
      args: ["--target", url, "--overrides", JSON.stringify(overrides), ...(spec.variables ? ["-v", JSON.stringify(spec.variables)] : [])],
      env: { PUSHER_APP_SECRET: "local-secret" },
    });
    const code = await exitWithin(run.child, longest * 1000 + 30_000);
    if (run.child.exitCode === null) run.child.kill("SIGKILL");
    let aggregate = null;
    try {
      aggregate = run.collect();
    } catch {}
    const c = aggregate?.counters ?? {};
    const lag = aggregate?.summaries?.[METRICS.eventLoopLag];
    const errors = Object.fromEntries(Object.entries(c).filter(([k, v]) => v && (k.startsWith("errors.") || k === "vusers.failed")));
    const received = c[METRICS.messagesReceived] ?? 0;
    // The table's criterion (50 ms), and the report's saturation line (GENERATOR_LIMITS.lagMs, 100 ms): the plan sizes by the first so that a run stays under the second.
    const holds = Boolean(lag) && lag.p99 < 50 && Object.keys(errors).length === 0;
    const belowLine = Boolean(lag) && lag.p99 < 100 && !c["vusers.failed"];
    const r = {
      file,
      rate,
      peakUsers: plan.users.peak,
      binding: b.dimension,
      demand: Math.round(b.demand),
      holdsPlanned: b.holds,
      planShare: Math.round(b.share * 1000) / 1000,
      code,
      lagP99: lag?.p99 ?? null,
      lagMax: lag?.max ?? null,
      receivedPerSecond: Math.round(received / ((plan.users.flowSeconds ?? PHASE_S) + PHASE_S)),
      errors,
      holds,
      belowLine,
      asWritten,
      loadAverage: load.loadAverage,
      othersCoresBefore: load.othersCores,
    };
    results.runs.push(r);
    log(`  ${holds ? "holds" : "does not hold"} (${belowLine ? "below" : "over"} the saturation line): lag p99 ${r.lagP99} ms, max ${r.lagMax} ms, exit ${code}${Object.keys(errors).length ? `, ${JSON.stringify(errors)}` : ""}`);
  }
} finally {
  target.child.kill("SIGTERM");
}
const pad = (s, n) => String(s).padEnd(n);
console.log(`\n${results.machine}; share ${share}; ${results.startedAt}`);
console.log([pad("scenario", 26), pad("rate/s", 9), pad("users", 7), pad("binds on", 10), pad("share", 7), pad("lag p99", 8), pad("< 50 ms", 8), "< 100 ms"].join(""));
for (const r of results.runs) console.log([pad(r.file, 26), pad(r.rate ?? "written", 9), pad(r.peakUsers, 7), pad(r.binding, 10), pad(r.planShare, 7), pad(r.lagP99, 8), pad(r.holds ? "yes" : "no", 8), r.belowLine ? "yes" : `no ${JSON.stringify(r.errors)}`].join(""));
const out = flags.out ?? path.join(os.tmpdir(), `plan-holds-${results.startedAt.slice(0, 10)}.json`);
writeFileSync(out, JSON.stringify(results, null, 2));
log(`results: ${out}`);

// What one load-generator task holds (issue 40): the two workloads `cable-fanout plan` sizes
// tasks by, run as users run `artillery run`, with the generator pinned to one core or given two.
// - listen: users connect, subscribe to BenchmarkChannel (stream "all") and listen; the harness
//   broadcasts one frame to every user every BROADCAST_EVERY_MS once all are subscribed;
// - chat: seed 004's RelayBox user (the replay of bench/lib/arrivals.mjs: a private room of 100,
//   10 stamped publishes 2 s apart through the HTTP API, 20 s listening, leave) at a sustained
//   arrival rate; users held = the most connections open at once (≈ 40 × the rate).
// - broadcast: scenarios/cable-broadcast.yml's users (200 on one stream, a fifth sending `broadcast`,
//   which every user receives) at a sender pace the search moves; what it holds is frames received
//   a second, the dimension that binds a fan-out.
// A run holds when the engine's cable.event_loop_lag p99 is under 50 ms, nothing failed, and the
// generator's peak RSS is under 80 % of the Fargate memory of the size it stands for.
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { cpuSeconds, exitWithin, memory, sleep } from "./proc.mjs";
import { RELAYBOX_PHASES, replayScript } from "./arrivals.mjs";
import { startArtillery, STREAM } from "./subjects.mjs";
import { METRICS } from "artillery-engine-cable/metrics";

const here = path.dirname(fileURLToPath(import.meta.url));
const processor = path.join(here, "processor.cjs");

export const LAG_P99_LIMIT_MS = 50;
export const MEMORY_SHARE = 0.8;
/** Fargate's memory for each size the plan knows (MiB): the smallest valid pair for 1 vCPU, 2 GiB per vCPU. */
export const FARGATE_MEMORY_MIB = { 1: 2048, 2: 4096, 4: 8192 };
export const BROADCAST_EVERY_MS = 5_000;
/** listen's first arrivals: 20/s for 10 s, then the ramp. */
export const WARMUP = { rate: 20, seconds: 10 };
/** Fargate's open-files limit per container (infra/src/cdk/load-generator.ts: ulimits NOFILE 65,535). */
export const FARGATE_NOFILE = 65_535;

const round = (v, digits = 1) => (v === undefined || v === null || Number.isNaN(v) ? null : Math.round(v * 10 ** digits) / 10 ** digits);

/** The 1-, 5- and 15-minute load averages (/proc/loadavg). */
export function loadAverage() {
  return readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).map(Number);
}

/** The machine's busy CPU-seconds (user + nice + system of /proc/stat; interrupts left out, as loopback traffic is ours). */
export function machineBusySeconds() {
  const f = readFileSync("/proc/stat", "utf8").split("\n")[0].trim().split(/\s+/).slice(1).map(Number);
  return (f[0] + f[1] + f[2]) / 100;
}

/** The bench's own CPU-seconds so far: this harness, the target and (if running) the generator. */
export function ownSeconds(pids) {
  const u = process.cpuUsage();
  let total = (u.user + u.system) / 1e6;
  for (const pid of pids) {
    try {
      total += cpuSeconds(pid);
    } catch {}
  }
  return total;
}

/**
 * The CPU other work takes (cores' worth, neighbours on a shared machine), over `ms`; `pids` are
 * the bench's processes, not counted.
 */
export async function othersCores(pids, ms = 3_000) {
  const b0 = machineBusySeconds();
  const o0 = ownSeconds(pids);
  await sleep(ms);
  return Math.max(0, machineBusySeconds() - b0 - (ownSeconds(pids) - o0)) / (ms / 1000);
}

/**
 * Waits up to `maxMs` for other work to take less than `belowCores` of the machine; returns the
 * load average and that share when the run starts.
 */
export async function waitForQuiet(pids, { belowCores = 0.3, maxMs = 90_000 } = {}) {
  const until = Date.now() + maxMs;
  let others = await othersCores(pids);
  while (others >= belowCores && Date.now() < until) others = await othersCores(pids);
  return { loadAverage: loadAverage(), othersCores: round(others, 2) };
}

/**
 * Artillery's worker thread(s) of `pid`: Node names its V8 helpers and its worker threads alike
 * ("node"); the workers are the "node" threads created after libuv's pool, i.e. with a larger tid
 * than every "libuv-worker" (Artillery starts its workers once the main thread has run a while).
 */
function workerThreads(pid) {
  const threads = [];
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      threads.push({ tid: Number(tid), name: readFileSync(`/proc/${pid}/task/${tid}/comm`, "utf8").trim() });
    } catch {}
  }
  const pool = threads.filter((t) => t.name === "libuv-worker").map((t) => t.tid);
  if (pool.length === 0) return [];
  const after = Math.max(...pool);
  return threads.filter((t) => t.name === "node" && t.tid > after && t.tid !== pid).map((t) => t.tid);
}

/**
 * The "2 cores" layout: the whole generator starts on core `others`; as soon as Artillery's worker
 * thread exists it is moved alone to core `worker`. Returns the tids moved.
 */
async function pinWorkerAlone(child, { worker, deadline }) {
  while (Date.now() < deadline && child.exitCode === null) {
    let tids = [];
    try {
      tids = workerThreads(child.pid);
    } catch {}
    if (tids.length > 0) {
      for (const tid of tids) execFileSync("taskset", ["-p", "-c", String(worker), String(tid)], { stdio: "ignore" });
      return tids;
    }
    await sleep(20);
  }
  throw new Error("Artillery's worker thread did not appear; cannot pin it");
}

/**
 * Where the processes run. "1": the target on core 0, the generator (every thread) on core 1.
 * "2": Artillery's one worker thread alone on core 1; its main thread, V8's GC helpers, libuv's pool
 * and the target on core 0 (on 2 cores Artillery starts one worker, as it does on a 2-vCPU task).
 */
export const LAYOUTS = {
  1: { target: "0", generator: "1", workerAlone: null },
  2: { target: "0", generator: "0", workerAlone: "1" },
};

/** Samples the generator's RSS and the target's open connections every `everyMs` until it exits. */
function sampler(child, target, base, everyMs = 500) {
  const samples = [];
  samples.busy0 = machineBusySeconds();
  samples.own0 = ownSeconds([child.pid, target.child.pid]);
  samples.t0 = Date.now();
  let stopped = false;
  (async () => {
    while (!stopped && child.exitCode === null && child.signalCode === null) {
      try {
        const { rss } = memory(child.pid);
        const h = await target.health();
        samples.push({ at: Date.now(), rss, connections: h.connectionsOpen - base.connectionsOpen, framesIn: h.framesIn - base.framesIn });
        // Other work's CPU over the run so far (the last sample before the generator exits counts).
        samples.others = Math.max(0, machineBusySeconds() - samples.busy0 - (ownSeconds([child.pid, target.child.pid]) - samples.own0)) / ((Date.now() - samples.t0) / 1000);
      } catch {}
      await sleep(everyMs);
    }
  })();
  child.once("exit", () => (stopped = true));
  return samples;
}

function failures(counters) {
  const out = {};
  for (const [k, v] of Object.entries(counters ?? {})) {
    if (!v) continue;
    if (k.startsWith("errors.") || k === "vusers.failed" || [METRICS.failedSubscriptions, METRICS.messagesMissing, METRICS.staleConnection, METRICS.serverDisconnect, METRICS.authFailed, METRICS.subscriptionRejected].includes(k)) out[k] = v;
  }
  return out;
}

/** Reads the run's report and samples into one result, and judges it against `memoryMiB`. */
function judge({ workload, cores, users, aggregate, samples, peakRss, code, extra, memoryMiB, load, wallSeconds, holdLag }) {
  const s = aggregate?.summaries ?? {};
  const c = aggregate?.counters ?? {};
  const runLag = s[METRICS.eventLoopLag];
  // listen is judged on its hold (holdLag); chat, as the replay always was, on the whole run.
  const lag = holdLag === undefined ? runLag : holdLag;
  const errors = failures(c);
  const first = samples.find((x) => x.connections > 0);
  const baseRss = first ? first.rss : samples[0]?.rss ?? 0;
  const peakUsers = Math.max(0, ...samples.map((x) => x.connections));
  const kibPerUser = peakUsers > 0 ? (peakRss - baseRss) / 1024 / peakUsers : null;
  const reasons = [];
  if (code !== 0) reasons.push(`artillery exited ${code}`);
  if (!lag) reasons.push("no event-loop lag in the report (or no whole period in the hold)");
  else if (!(lag.p99 < LAG_P99_LIMIT_MS)) reasons.push(`lag p99 ${lag.p99} ms`);
  if (Object.keys(errors).length > 0) reasons.push(`errors ${JSON.stringify(errors)}`);
  if (peakRss >= MEMORY_SHARE * memoryMiB * 1024 * 1024) reasons.push(`peak RSS ${Math.round(peakRss / 2 ** 20)} MiB ≥ 80 % of ${memoryMiB} MiB`);
  if (extra.undelivered) reasons.push(extra.undelivered);
  return {
    workload,
    cores,
    users,
    peakConnections: peakUsers,
    holds: reasons.length === 0,
    reasons,
    lagMs: lag ? { p99: lag.p99, max: lag.max } : null,
    runLagMs: runLag ? { p50: runLag.p50 ?? runLag.median, p95: runLag.p95, p99: runLag.p99, max: runLag.max } : null,
    errors,
    peakRssMiB: round(peakRss / 2 ** 20, 0),
    baseRssMiB: round(baseRss / 2 ** 20, 0),
    kibPerUser: round(kibPerUser, 1),
    memoryMiB,
    loadAverage: load.loadAverage,
    othersCoresBefore: load.othersCores,
    othersCoresDuring: round(samples.others, 2),
    wallSeconds,
    ...extra.fields,
  };
}

/** The generators running now: killed by the harness if it gives up. */
export const liveGenerators = new Set();

async function runArtillery(name, script, { target, cores, deadline, env = {} }) {
  const layout = LAYOUTS[cores];
  const base = await target.health();
  const run = startArtillery(name, script, { deadline, env, cpus: layout.generator });
  liveGenerators.add(run.child);
  run.child.once("exit", () => liveGenerators.delete(run.child));
  let pinned = null;
  if (layout.workerAlone !== null) {
    try {
      pinned = await pinWorkerAlone(run.child, { worker: layout.workerAlone, deadline: Date.now() + 30_000 });
    } catch (err) {
      run.child.kill("SIGKILL");
      await exitWithin(run.child, 5_000);
      throw err;
    }
  }
  const samples = sampler(run.child, target, base);
  return { run, samples, pinned, base };
}

/**
 * listen: `users` users arrive at `ratePerSecond` (from 4 source addresses), stay subscribed for
 * `holdSeconds` after the last has subscribed, one broadcast to all every BROADCAST_EVERY_MS.
 */
export async function measureListenTask(target, { users, cores, holdSeconds = 30, ratePerSecond = 250, memoryMiB = FARGATE_MEMORY_MIB[cores], load = { loadAverage: loadAverage(), othersCores: null } }) {
  const startedAt = Date.now();
  // A warm-up as the replay's (its first 10 s at 5/s): a cold worker's first connections run in
  // V8's interpreter, and 500 of them in a second stalled the loop for ~1 s (measured).
  const warmup = Math.min(users, WARMUP.rate * WARMUP.seconds);
  const rampSeconds = Math.max(1, Math.ceil((users - warmup) / ratePerSecond));
  const deadline = Date.now() + (12 + WARMUP.seconds + rampSeconds + 10 + holdSeconds) * 1000;
  const script = {
    config: {
      target: target.cableUrl,
      engines: { cable: {} },
      cable: { timeout: 30, localAddress: ["127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4"] },
      processor,
      phases: [
        { name: "warmup", arrivalCount: warmup, duration: WARMUP.seconds },
        ...(users > warmup ? [{ name: "arrive", arrivalCount: users - warmup, duration: rampSeconds }] : []),
      ],
    },
    scenarios: [
      {
        engine: "cable",
        flow: [{ connect: {} }, { subscribe: { channel: "BenchmarkChannel", as: "bench" } }, { function: "untilDeadline" }, { listen: { channel: "bench", for: "{{ listenFor }}" } }],
      },
    ],
  };
  const { run, samples, pinned, base } = await runArtillery(`task-listen-${users}-${cores}c`, script, { target, cores, deadline });
  // Once every user is subscribed (frames in = subscribe frames: the clients send nothing else),
  // broadcast until 3 s before the deadline.
  const all = await target.waitFor((h) => h.framesIn - base.framesIn >= users && h.connectionsOpen - base.connectionsOpen >= users, { deadline: deadline - 5_000, pollMs: 250, abandon: () => run.child.exitCode !== null });
  const allAt = Date.now();
  let broadcasts = 0;
  if (all.ready) {
    while (Date.now() < deadline - 3_000 - BROADCAST_EVERY_MS / 2) {
      await target.broadcast(STREAM, { seq: broadcasts, ts: Date.now() });
      broadcasts++;
      await sleep(BROADCAST_EVERY_MS);
    }
  }
  const code = await exitWithin(run.child, Math.max(0, deadline - Date.now()) + 60_000);
  let peakRss = Math.max(0, ...samples.map((x) => x.rss));
  let aggregate = null;
  try {
    aggregate = run.collect();
  } catch {}
  const received = aggregate?.counters?.[METRICS.messagesReceived] ?? 0;
  const expected = users * broadcasts;
  const undelivered = !all.ready ? `only ${all.counters.framesIn - base.framesIn} of ${users} subscribed` : received < expected ? `received ${received} of ${expected} broadcast frames` : null;
  const bl = aggregate?.summaries?.[METRICS.broadcastLatency];
  // The hold: Artillery's 10 s periods that start after every user had subscribed; their worst
  // lag p99 is the figure (the ramp's, beside it, is what the arrival rate costs).
  let holdLag = null;
  try {
    const periods = JSON.parse(readFileSync(run.logPath.replace(/\.log$/, ".report.json"), "utf8")).intermediate ?? [];
    const inHold = periods.filter((p) => Number(p.period) >= allAt && p.summaries?.[METRICS.eventLoopLag]);
    if (inHold.length > 0) holdLag = { periods: inHold.length, p99: Math.max(...inHold.map((p) => p.summaries[METRICS.eventLoopLag].p99)), max: Math.max(...inHold.map((p) => p.summaries[METRICS.eventLoopLag].max)) };
  } catch {}
  return judge({
    workload: "listen",
    cores,
    users,
    aggregate,
    samples,
    peakRss,
    code,
    memoryMiB,
    load,
    wallSeconds: round((Date.now() - startedAt) / 1000, 0),
    holdLag,
    extra: { undelivered, fields: { ratePerSecond, holdSeconds, broadcasts, delivered: expected ? round(received / expected, 4) : null, broadcastLatencyMs: bl ? { p50: bl.p50 ?? bl.median, p99: bl.p99 } : null, workerThreadsPinned: pinned } },
  });
}

/**
 * chat: the RelayBox replay's user and phases (5/s, 25/s, `rate`/s for 60 s, 20/s), private rooms,
 * against the target's Pusher endpoint. Users held = the most connections open at once.
 */
export async function measureChatTask(target, { rate, cores, rooms = 100, memoryMiB = FARGATE_MEMORY_MIB[cores], load = { loadAverage: loadAverage(), othersCores: null } }) {
  const startedAt = Date.now();
  const phases = RELAYBOX_PHASES.map((p) => (p.name === "sustained" ? { ...p, arrivalRate: rate } : p));
  const messages = 10;
  const stay = 20;
  const seconds = phases.reduce((s, p) => s + p.duration, 0);
  const deadline = Date.now() + (seconds + messages * 2 + stay + 60) * 1000;
  const script = replayScript(target, { phases, rooms, messages, stay });
  const { run, samples, pinned } = await runArtillery(`task-chat-${rate}-${cores}c`, script, { target, cores, deadline, env: { PUSHER_APP_SECRET: "local-secret" } });
  const { code, peakRss, aggregate, counters: c } = await settle(run, samples, deadline, 0);
  const s = aggregate?.summaries ?? {};
  const pick = (name) => (s[name] ? { p50: s[name].p50 ?? s[name].median, p99: s[name].p99 } : null);
  const peak = Math.max(0, ...samples.map((x) => x.connections));
  return judge({
    workload: "chat",
    cores,
    users: peak,
    aggregate,
    samples,
    peakRss,
    code,
    memoryMiB,
    load,
    wallSeconds: round((Date.now() - startedAt) / 1000, 0),
    extra: {
      undelivered: null,
      fields: {
        sustainedRate: rate,
        rooms,
        vusers: { created: c["vusers.created"] ?? 0, completed: c["vusers.completed"] ?? 0, failed: c["vusers.failed"] ?? 0 },
        messagesSent: c[METRICS.messagesSent] ?? 0,
        messagesReceived: c[METRICS.messagesReceived] ?? 0,
        broadcastLatencyMs: pick(METRICS.broadcastLatency),
        publishLatencyMs: pick(METRICS.publishLatency),
        workerThreadsPinned: pinned,
      },
    },
  });
}

/** The generator's exit within its deadline (and `graceMs`), its peak RSS, and Artillery's aggregate (null if it wrote none). */
async function settle(run, samples, deadline, graceMs) {
  const code = await exitWithin(run.child, Math.max(0, deadline - Date.now()) + graceMs);
  const peakRss = Math.max(0, ...samples.map((x) => x.rss));
  let aggregate = null;
  try {
    aggregate = run.collect();
  } catch {}
  return { code, peakRss, aggregate, counters: aggregate?.counters ?? {} };
}

/** arrivals: how long each user stays, and the sustained phase's length. */
const ARRIVALS = { stayS: 2, sustainS: 40 };

/**
 * arrivals: users connect, subscribe to BenchmarkChannel, stay ARRIVALS.stayS and disconnect, at
 * `rate` a second for ARRIVALS.sustainS after the warm-up (20/s for 10 s): the cost of a user's
 * coming and going, which churning flows (a chat user of a few seconds) pay over and over.
 */
export async function measureArrivalsTask(target, { rate, cores, memoryMiB = FARGATE_MEMORY_MIB[cores], load = { loadAverage: loadAverage(), othersCores: null } }) {
  const startedAt = Date.now();
  const deadline = Date.now() + (WARMUP.seconds + ARRIVALS.sustainS + ARRIVALS.stayS + 60) * 1000;
  const script = {
    config: {
      target: target.cableUrl,
      engines: { cable: {} },
      cable: { timeout: 30, localAddress: ["127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4"] },
      phases: [
        { name: "warmup", duration: WARMUP.seconds, arrivalRate: WARMUP.rate },
        { name: "sustained", duration: ARRIVALS.sustainS, arrivalRate: rate },
      ],
    },
    scenarios: [{ engine: "cable", flow: [{ connect: {} }, { subscribe: { channel: "BenchmarkChannel", as: "bench" } }, { think: ARRIVALS.stayS }, { disconnect: {} }] }],
  };
  const { run, samples, pinned } = await runArtillery(`task-arrivals-${rate}-${cores}c`, script, { target, cores, deadline });
  const { code, peakRss, aggregate, counters: c } = await settle(run, samples, deadline, 30_000);
  const expected = WARMUP.rate * WARMUP.seconds + rate * ARRIVALS.sustainS;
  const result = judge({
    workload: "arrivals",
    cores,
    users: Math.max(0, ...samples.map((x) => x.connections)),
    aggregate,
    samples,
    peakRss,
    code,
    memoryMiB,
    load,
    wallSeconds: round((Date.now() - startedAt) / 1000, 0),
    extra: {
      undelivered: (c["vusers.completed"] ?? 0) < expected ? `${c["vusers.completed"] ?? 0} of ${expected} users completed` : null,
      fields: { arrivalsPerSecond: rate, completed: c["vusers.completed"] ?? 0, workerThreadsPinned: pinned },
    },
  });
  return { ...result, rank: rate };
}

/** broadcast: the users on the stream, a fifth of them sending; the loop's length. */
export const BROADCAST_USERS = 200;
const BROADCAST_LOOP_S = 40;

/**
 * broadcast: BROADCAST_USERS users arrive at 20/s, subscribe to BenchmarkChannel and stay; a fifth
 * `perform broadcast` every `1 / sendsPerSender` s for BROADCAST_LOOP_S, each received by every
 * user (the local target answers the sender with broadcastResult too). Frames = what the users
 * received ÷ the loop's seconds; judged on the whole run.
 */
export async function measureBroadcastTask(target, { framesPerSecond, cores, memoryMiB = FARGATE_MEMORY_MIB[cores], load = { loadAverage: loadAverage(), othersCores: null } }) {
  const startedAt = Date.now();
  const senders = BROADCAST_USERS / 5;
  const sendsPerSecond = framesPerSecond / BROADCAST_USERS;
  const thinkMs = Math.max(1, Math.round((1000 * senders) / sendsPerSecond));
  const passes = Math.round((BROADCAST_LOOP_S * 1000) / thinkMs);
  const arriveS = BROADCAST_USERS / WARMUP.rate;
  const deadline = Date.now() + (arriveS + BROADCAST_LOOP_S + 60) * 1000;
  const flow = (sender) => [
    { connect: {} },
    { subscribe: { channel: "BenchmarkChannel", as: "bench" } },
    // Everyone on the stream before the first send: the senders wait out the arrivals.
    { think: arriveS + 2 },
    ...(sender
      ? [{ loop: [{ perform: { channel: "bench", action: "broadcast", data: { text: "hello" }, stamp: true } }, { think: `${thinkMs}ms` }], count: passes }]
      : [{ listen: { channel: "bench", for: BROADCAST_LOOP_S + 2 } }]),
  ];
  const script = {
    config: { target: target.cableUrl, engines: { cable: {} }, cable: { timeout: 30 }, phases: [{ name: "arrive", duration: arriveS, arrivalCount: BROADCAST_USERS }] },
    scenarios: [
      { name: "sender", weight: 1, engine: "cable", flow: flow(true) },
      { name: "receiver", weight: 4, engine: "cable", flow: flow(false) },
    ],
  };
  const { run, samples, pinned } = await runArtillery(`task-broadcast-${framesPerSecond}-${cores}c`, script, { target, cores, deadline });
  const { code, peakRss, aggregate, counters: c } = await settle(run, samples, deadline, 30_000);
  const received = c[METRICS.messagesReceived] ?? 0;
  const sent = c[METRICS.messagesSent] ?? 0;
  const delivered = received / BROADCAST_LOOP_S;
  const bl = aggregate?.summaries?.[METRICS.broadcastLatency];
  // A generator that falls behind sends less: under 90 % of the pace asked is not holding it.
  // Artillery picks each user's scenario by weight at random: count the senders it made.
  const expectedSent = (c["vusers.created_by_name.sender"] ?? senders) * passes;
  const result = judge({
    workload: "broadcast",
    cores,
    users: BROADCAST_USERS,
    aggregate,
    samples,
    peakRss,
    code,
    memoryMiB,
    load,
    wallSeconds: round((Date.now() - startedAt) / 1000, 0),
    extra: {
      undelivered: sent < 0.9 * expectedSent ? `sent ${sent} of ${expectedSent} broadcasts` : null,
      fields: { framesAsked: framesPerSecond, framesPerSecond: round(delivered, 0), thinkMs, sent, received, broadcastLatencyMs: bl ? { p50: bl.p50 ?? bl.median, p99: bl.p99 } : null, workerThreadsPinned: pinned },
    },
  });
  return { ...result, rank: result.framesPerSecond };
}

/**
 * The largest step that holds, by bisection over `steps` (ascending), the first run at
 * `steps[start]`: at most `maxRuns` runs, each `run(step)` returning a result with `holds`. A step
 * is assumed to hold when a larger one did (more users is never less load).
 */
export async function searchHeld(steps, start, maxRuns, run) {
  const runs = [];
  let lo = -1; // the largest index known to hold
  let hi = steps.length; // the smallest index known not to hold
  let i = Math.min(Math.max(start, 0), steps.length - 1);
  let best = null;
  while (runs.length < maxRuns && hi - lo > 1) {
    const r = await run(steps[i]);
    runs.push(r);
    if (r.holds) {
      lo = i;
      if (!best || (r.rank ?? r.users) > (best.rank ?? best.users)) best = r;
    } else hi = i;
    i = (lo + hi) >> 1;
    if (i <= lo) i = lo + 1;
  }
  return { best, runs, bracket: { held: lo >= 0 ? steps[lo] : null, failed: hi < steps.length ? steps[hi] : null } };
}

/** The machine, as the table's `machine` line says it. */
export function machineLine() {
  const cpus = os.cpus();
  const model = (cpus[0]?.model ?? "unknown cpu").replace(/\s+/g, " ").trim();
  return `${cpus.length} cores (${model}), ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version.slice(1)}`;
}

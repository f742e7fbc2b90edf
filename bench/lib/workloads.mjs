// The measuring procedures, the same for every subject:
// - listen: N clients subscribe and stay idle while the harness broadcasts; marginal memory per
//   idle VU and frames per CPU-second during the broadcast window only;
// - latency: a few clients do echo round trips at light load;
// - scale: ramp to many idle subscribed connections, hold, and record the most held at once.
import { execFileSync } from "node:child_process";
import { cpuByThread, cpuByThreadSince, cpuSeconds, exitWithin, memory, sleep, steadyRss, waitCpuSettled } from "./proc.mjs";
import { framesPerCpuSecond, marginalBytesPerVu, percentile } from "./stats.mjs";
import { STREAM } from "./subjects.mjs";
import { METRICS } from "artillery-engine-cable/metrics";

const SETTLE_MS = 1_000;
const WINDOWS = 3;
// Artillery aggregates the metrics pushed during a 10 s period (ssms) after the period ends: that
// deferred work belongs to the frames too, so the throughput figure waits for it.
const PERIOD_MS = 10_000;
const FLUSH_MS = 3_000;

function subscribedSince(base, n) {
  // Clients send nothing but their subscribe frame here (Action Cable clients do not answer pings),
  // so frames in = subscriptions asked; the target subscribes on receipt.
  return (c) => c.connectionsOpen - base.connectionsOpen >= n && c.framesIn - base.framesIn >= n;
}

/** What a wait for `n` subscribed users saw, for its error message. */
function sawSince(base, counters, n) {
  return `${counters.framesIn - base.framesIn} of ${n} subscribed, ${counters.connectionsOpen - base.connectionsOpen} more connections open`;
}

function exited(child) {
  return () => child.exitCode !== null || child.signalCode !== null;
}

/**
 * Timeline of a listen run: start-up, n0 clients, a pause for sampling, the rest at `ratePerSecond`,
 * then the broadcasts. Every client listens until `deadline`, when the subject ends by itself.
 */
export async function measureListen(target, subject, { n0, n, broadcasts, ratePerSecond, env, slowestFramesPerSecond = 25_000 }) {
  const pauseMs = 3_000;
  const rampMs = Math.ceil((n - n0) / ratePerSecond) * 1000;
  // A subject slower than 25k frames/s (a seventh of the bare client) misses the deadline, and its
  // delivery shows it; the peer runs allow a slower one (k6 beside a real server on the same 2 cores).
  const windowBudgetMs = 2_000 + Math.ceil((WINDOWS * n * broadcasts) / slowestFramesPerSecond) * 1000 + PERIOD_MS + FLUSH_MS;
  // Artillery starts in ~3 s on a quiet 2-core machine; a busy one (CI neighbours) takes 2–4× that.
  const startupMs = 12_000;
  const deadline = Date.now() + startupMs + 1_000 + pauseMs + rampMs + 2 * SETTLE_MS + 3_000 + windowBudgetMs;
  const base = await target.baseline();
  const run = subject.listen(target, { n0, n, pauseMs, ratePerSecond, deadline }, env);
  const pid = run.child.pid;
  const fail = async (why) => {
    run.child.kill("SIGKILL");
    await exitWithin(run.child, 5_000);
    // The next measurement's base must not count this run's connections.
    await target.waitFor((c) => c.connectionsOpen <= base.connectionsOpen, { deadline: Date.now() + 30_000, pollMs: 250 });
    throw new Error(`${subject.name} listen (n=${n}): ${why}${run.logPath ? `; see ${run.logPath}` : ""}`);
  };

  const small = await target.waitFor(subscribedSince(base, n0), { deadline, abandon: exited(run.child) });
  if (!small.ready) return fail(sawSince(base, small.counters, n0));
  await sleep(SETTLE_MS);
  const rssSmall = await steadyRss(pid);

  const all = await target.waitFor(subscribedSince(base, n), { deadline, abandon: exited(run.child) });
  if (!all.ready) return fail(sawSince(base, all.counters, n));
  await sleep(SETTLE_MS);
  const rssLarge = await steadyRss(pid);
  const idleCpuStart = cpuSeconds(pid);
  await sleep(1_000);
  const idleCpuPerSecond = cpuSeconds(pid) - idleCpuStart;

  // Several broadcast windows, each timed on its own; the median's frames per CPU-second is the
  // figure (one window of a few hundred ms is at the mercy of a GC or a 10 ms clock tick).
  const windows = [];
  const beforeWindows = await target.health();
  const threadsStart = cpuByThread(pid);
  const cpuBeforeWindows = cpuSeconds(pid);
  for (let w = 0; w < WINDOWS; w++) {
    const cpuStart = cpuSeconds(pid);
    const startedAt = performance.now();
    const hrStartUs = monotonicUs();
    for (let seq = 0; seq < broadcasts; seq++) await target.broadcast(STREAM, { seq, ts: Date.now() });
    const settled = await waitCpuSettled(pid, { deadline: deadline - 500 });
    const cpu = settled.cpu - cpuStart;
    windows.push({ hrStartUs, hrEndUs: monotonicUs(), cpuSeconds: round(cpu, 3), seconds: round((performance.now() - startedAt) / 1000, 3), settled: settled.settled, framesPerCpuSecond: round(framesPerCpuSecond(n * broadcasts, cpu), 0) });
  }
  const afterWindows = await target.health();
  const cpuAfterWindows = cpuSeconds(pid);
  // Wait past the next period boundary and Artillery's flush of it; the idle CPU of that wait (as
  // measured before the broadcasts) is not the frames'.
  const waitedFrom = performance.now();
  await sleep(Math.ceil(Date.now() / PERIOD_MS) * PERIOD_MS + FLUSH_MS - Date.now());
  const waited = (performance.now() - waitedFrom) / 1000;
  const cpuWithFlush = Math.max(cpuAfterWindows - cpuBeforeWindows, cpuSeconds(pid) - cpuBeforeWindows - idleCpuPerSecond * waited);
  const threads = cpuByThreadSince(threadsStart, cpuByThread(pid));
  const { peak } = memory(pid);

  const code = await exitWithin(run.child, Math.max(0, deadline - Date.now()) + 60_000);
  if (code === null) throw new Error(`${subject.name} listen did not end by itself; killed`);
  const expected = n * broadcasts * WINDOWS;
  const received = run.received();
  const rates = windows.map((w) => w.framesPerCpuSecond).sort((a, b) => a - b);
  const framesSent = n * broadcasts * WINDOWS;
  return {
    n0,
    n,
    broadcasts,
    windows,
    expectedFrames: expected,
    receivedFrames: received ?? null,
    // Frames the target wrote in the windows (deliveries plus its 3 s pings): the only count for a
    // subject that reports none.
    targetFramesOut: afterWindows.framesOut - beforeWindows.framesOut,
    delivery: received === undefined ? null : received / expected,
    idleCpuPerSecond: round(idleCpuPerSecond, 3),
    // The figure: every frame of the windows ÷ the CPU of the windows plus Artillery's deferred
    // aggregation of their metrics. The windows' own median is shown beside it.
    framesPerCpuSecond: round(framesPerCpuSecond(framesSent, cpuWithFlush), 0),
    cpuWithFlushSeconds: round(cpuWithFlush, 3),
    medianWindowFramesPerCpuSecond: rates[rates.length >> 1],
    // CPU from the first window to the flush, by thread: JS threads vs V8's GC and compiler helpers.
    windowCpuByThread: threads,
    rssSmallBytes: rssSmall,
    rssLargeBytes: rssLarge,
    rssPeakBytes: peak,
    bytesPerIdleVu: Math.round(marginalBytesPerVu(rssSmall, rssLarge, n0, n)),
    exitCode: code,
  };
}

/** Echo round trips at light load; rtt p50 from the subject's own measure. */
export async function measureLatency(target, subject, { n, iterations, thinkMs }) {
  const deadline = Date.now() + 15_000 + iterations * (thinkMs + 20);
  const run = subject.latency(target, { n, iterations, thinkMs, deadline });
  const code = await exitWithin(run.child, deadline - Date.now() + 30_000);
  if (code === null) throw new Error(`${subject.name} latency did not end by itself; killed`);
  if (run.rttMs) {
    const rtt = run.rttMs();
    return { n, iterations, samples: rtt.length, p50: round(percentile(rtt, 50), 3), p95: round(percentile(rtt, 95), 3), p99: round(percentile(rtt, 99), 3) };
  }
  const report = run.report();
  const rtt = report.summaries?.[METRICS.rtt];
  const lag = Object.entries(report.summaries ?? {}).find(([name]) => /lag/.test(name));
  return {
    n,
    iterations,
    samples: rtt?.count ?? 0,
    p50: rtt?.p50,
    p95: rtt?.p95,
    p99: rtt?.p99,
    eventLoopLag: lag ? { metric: lag[0], p50: lag[1].p50, p99: lag[1].p99, max: lag[1].max } : null,
    errors: Object.fromEntries(Object.entries(report.counters ?? {}).filter(([k]) => k.startsWith("errors."))),
  };
}

/** Source addresses of the established connections to `port`, counted (ss, from iproute2). */
function sourceAddresses(port) {
  try {
    const out = execFileSync("ss", ["-Htn", "state", "established", `( dport = :${port} )`], { encoding: "utf8", maxBuffer: 64 << 20 });
    const counts = {};
    for (const line of out.split("\n")) {
      const local = line.trim().split(/\s+/)[2];
      if (!local) continue;
      const address = local.slice(0, local.lastIndexOf(":"));
      counts[address] = (counts[address] ?? 0) + 1;
    }
    return counts;
  } catch {
    return null;
  }
}

/**
 * Ramp to `n` idle subscribed connections at `ratePerSecond`, hold `holdMs`, and let the subject
 * end by itself. The most connections held at once is read from the target every 250 ms.
 */
export async function measureScale(target, subject, { n, ratePerSecond, holdMs, localAddresses }) {
  const n0 = 10;
  const pauseMs = 3_000;
  const rampMs = Math.ceil(n / ratePerSecond) * 1000;
  const deadline = Date.now() + 8_000 + pauseMs + rampMs + holdMs;
  const base = await target.baseline();
  const run = subject.scale(target, { n0, n, pauseMs, ratePerSecond, localAddresses, deadline });
  const pid = run.child.pid;
  const small = await target.waitFor(subscribedSince(base, n0), { deadline, abandon: exited(run.child) });
  const rssSmall = small.ready ? await steadyRss(pid) : undefined;
  let held = 0;
  let subscribed = 0;
  let peakRss = 0;
  let addresses = null;
  let large;
  while (Date.now() < deadline - 1_000 && !exited(run.child)()) {
    const c = await target.health();
    held = Math.max(held, c.connectionsOpen - base.connectionsOpen);
    subscribed = Math.max(subscribed, c.framesIn - base.framesIn);
    try {
      peakRss = Math.max(peakRss, memory(pid).peak);
      // Memory per idle VU at this scale: the heap's free space, which absorbs the first few
      // thousand VUs' allocations at small N, is negligible here.
      if (!large && Date.now() >= deadline - holdMs / 2) large = { rss: await steadyRss(pid), vus: Math.min(n, c.framesIn - base.framesIn) };
    } catch {}
    if (!addresses && held >= n * 0.9) addresses = sourceAddresses(new URL(target.cableUrl).port);
    await sleep(250);
  }
  const code = await exitWithin(run.child, 90_000);
  let errors;
  try {
    errors = run.errors();
  } catch (err) {
    errors = { collect: err.message };
  }
  // Let the target see the closes before the next run counts from its own base.
  await target.waitFor((c) => c.connectionsOpen <= base.connectionsOpen, { deadline: Date.now() + 30_000, pollMs: 250 });
  return {
    attempted: n,
    ratePerSecond,
    holdMs,
    localAddresses: localAddresses ?? [],
    heldPeak: held,
    subscribedPeak: Math.min(subscribed, n),
    sourceAddresses: addresses,
    rssSmallBytes: rssSmall ?? null,
    rssLargeBytes: large?.rss ?? null,
    bytesPerIdleVu: rssSmall !== undefined && large && large.vus > n0 ? Math.round(marginalBytesPerVu(rssSmall, large.rss, n0, large.vus)) : null,
    rssPeakBytes: peakRss,
    errors,
    exitCode: code,
  };
}

/** CLOCK_MONOTONIC in µs: the clock of V8's CPU profiles in every process, to cut them to a window. */
function monotonicUs() {
  return Number(process.hrtime.bigint() / 1000n);
}

/**
 * The CPU cost of connecting and subscribing one VU: CPU from the moment n0 are subscribed to the
 * moment all n are, divided by the n − n0 that arrived in between. The VUs then idle to `deadline`.
 */
export async function measureConnect(target, subject, { n0, n, ratePerSecond, env, endByItself = false, tolerateLoss = false, settleMs }) {
  const rampMs = Math.ceil((n - n0) / ratePerSecond) * 1000;
  // Generous: the run is stopped as soon as it is measured, so a slow start-up costs nothing here.
  // A profiled run must end by itself instead (V8 writes its profiles at a normal exit only): its
  // VUs leave soon after the ramp.
  const deadline = Date.now() + (endByItself ? 12_000 : 20_000) + 1_000 + 3_000 + rampMs + (endByItself ? 2_000 : 15_000);
  const base = await target.baseline();
  const run = subject.listen(target, { n0, n, pauseMs: 3_000, ratePerSecond, deadline }, env);
  const pid = run.child.pid;
  const fail = async (why) => {
    run.child.kill("SIGKILL");
    await exitWithin(run.child, 5_000);
    // The next measurement's base must not count this run's connections.
    await target.waitFor((c) => c.connectionsOpen <= base.connectionsOpen, { deadline: Date.now() + 30_000, pollMs: 250 });
    throw new Error(`${subject.name} connect: ${why}${run.logPath ? `; see ${run.logPath}` : ""}`);
  };
  const small = await target.waitFor(subscribedSince(base, n0), { deadline, abandon: exited(run.child), pollMs: 20 });
  if (!small.ready) return fail(`the first ${n0}: ${sawSince(base, small.counters, n0)}`);
  const cpuStart = cpuSeconds(pid);
  const threadsStart = cpuByThread(pid);
  const hrStartUs = monotonicUs();
  // `tolerateLoss` (the peer, which loses a few subscriptions to a race of its own): once the
  // ramp is over, the users subscribed when the count stops growing are the figure's users.
  const all = await target.waitFor(subscribedSince(base, n), { deadline: tolerateLoss ? Date.now() + rampMs + 5_000 : deadline, abandon: exited(run.child), pollMs: 20 });
  if (!all.ready && !tolerateLoss) return fail(sawSince(base, all.counters, n));
  // `settleMs`: a fixed wait instead, where the CPU never settles (a real server's pings, each connection on its own timer).
  const settled = settleMs === undefined ? await waitCpuSettled(pid, { deadline }) : await sleep(settleMs).then(() => ({ cpu: cpuSeconds(pid), settled: true }));
  const subscribed = Math.min(n, (await target.health()).framesIn - base.framesIn);
  if (subscribed < n0 + (n - n0) * 0.8) return fail(`only ${subscribed} of ${n} subscribed`);
  const window = { hrStartUs, hrEndUs: monotonicUs() };
  const cpu = settled.cpu - cpuStart;
  const threads = cpuByThreadSince(threadsStart, cpuByThread(pid));
  // The whole process until now (start-up, VU creation, k6's VU initialisation before its test
  // starts, connect, subscribe): the peer comparison takes the marginal of this between two runs.
  const cpuTotal = settled.cpu;
  const rss = await steadyRss(pid);
  // Measured: what the VUs do until the deadline (listen) is not this workload's.
  if (!endByItself) run.child.kill("SIGKILL");
  const code = await exitWithin(run.child, endByItself ? Math.max(10_000, deadline - Date.now() + 20_000) : 10_000);
  // The next run counts from the target's open connections: wait until these are gone.
  await target.waitFor((c) => c.connectionsOpen <= base.connectionsOpen, { deadline: Date.now() + 20_000 });
  return { n0, n, subscribed, ratePerSecond, cpuSeconds: round(cpu, 3), cpuMsPerVu: round((cpu * 1000) / (subscribed - n0), 3), cpuTotalSeconds: round(cpuTotal, 3), rssBytes: rss, threads, window, exitCode: code };
}

/**
 * An idle subscribed user (issue 43): `n` users connect and subscribe at `ratePerSecond`, then hold
 * and receive only the server's pings. From `settleS` after the last one subscribed, the subject's
 * CPU over `holdS` ÷ (users × seconds): the marginal cost of a user-second of holding, what a soak of
 * lurkers pays every second. The first `settleS` (the ramp's tail, JIT, the first pings) is kept beside it.
 */
export async function measureIdle(target, subject, { n, ratePerSecond, settleS = 5, holdS = 30, env, endByItself = false }) {
  const n0 = 10;
  const rampMs = Math.ceil((n - n0) / ratePerSecond) * 1000;
  // A profiled run must end by itself (V8 writes its profiles at a normal exit only): its users
  // listen until about 2 s after the hold, instead of being killed when it is measured.
  const slackMs = endByItself ? 2_000 : 15_000;
  const deadline = Date.now() + 20_000 + 3_000 + rampMs + (settleS + holdS) * 1000 + slackMs;
  const base = await target.baseline();
  const run = subject.listen(target, { n0, n, pauseMs: 3_000, ratePerSecond, deadline }, env);
  const pid = run.child.pid;
  const fail = async (why) => {
    run.child.kill("SIGKILL");
    await exitWithin(run.child, 5_000);
    await target.waitFor((c) => c.connectionsOpen <= base.connectionsOpen, { deadline: Date.now() + 30_000, pollMs: 250 });
    throw new Error(`${subject.name} idle (n=${n}): ${why}${run.logPath ? `; see ${run.logPath}` : ""}`);
  };
  const all = await target.waitFor((c) => c.framesIn - base.framesIn >= n, { deadline, abandon: exited(run.child), pollMs: 50 });
  if (!all.ready) return fail(sawSince(base, all.counters, n));
  const cpuSubscribed = cpuSeconds(pid);
  await sleep(settleS * 1000);
  const cpuSettled = cpuSeconds(pid);
  const threadsStart = cpuByThread(pid);
  const t0 = performance.now();
  const hrStartUs = monotonicUs();
  await sleep(holdS * 1000);
  const cpuHeld = cpuSeconds(pid);
  const window = { hrStartUs, hrEndUs: monotonicUs() };
  const seconds = (performance.now() - t0) / 1000;
  const threads = cpuByThreadSince(threadsStart, cpuByThread(pid));
  const { rss } = memory(pid);
  if (!endByItself) run.child.kill("SIGKILL");
  await exitWithin(run.child, endByItself ? deadline - Date.now() + 30_000 : 10_000);
  await target.waitFor((c) => c.connectionsOpen <= base.connectionsOpen, { deadline: Date.now() + 30_000, pollMs: 250 });
  return {
    n,
    settleSeconds: settleS,
    holdSeconds: round(seconds, 2),
    cpuSettleSeconds: round(cpuSettled - cpuSubscribed, 3),
    cpuHoldSeconds: round(cpuHeld - cpuSettled, 3),
    cpuUsPerUserSecond: round(((cpuHeld - cpuSettled) * 1e6) / (n * seconds), 2),
    settleCpuUsPerUserSecond: round(((cpuSettled - cpuSubscribed) * 1e6) / (n * settleS), 2),
    holdCpuByThread: threads,
    rssBytes: rss,
    window,
  };
}

/**
 * Active chat (the capacity scenario by message rate): `users` follow `rooms` streams and publish
 * `rate` stamped messages a second together through the HTTP broadcaster. After all have
 * subscribed and `settleMs` passed, a window of `windowMs`: the subject's CPU ÷ the frames the
 * target wrote to it (deliveries and the target's pings, which every subject receives alike).
 */
export async function measureChat(target, subject, { users, rooms, rate, rampSeconds, settleMs, windowMs }) {
  const deadline = Date.now() + 15_000 + rampSeconds * 1000 + settleMs + windowMs + 10_000;
  const base = await target.baseline();
  const run = subject.chat(target, { users, rooms, rate, rampSeconds, deadline });
  const pid = run.child.pid;
  const all = await target.waitFor(subscribedSince(base, users), { deadline, abandon: exited(run.child), pollMs: 50 });
  if (!all.ready) {
    run.child.kill("SIGKILL");
    await exitWithin(run.child, 5_000);
    // The next measurement's base must not count this run's connections.
    await target.waitFor((c) => c.connectionsOpen <= base.connectionsOpen, { deadline: Date.now() + 30_000, pollMs: 250 });
    throw new Error(`${subject.name} chat: ${sawSince(base, all.counters, users)}${run.logPath ? `; see ${run.logPath}` : ""}`);
  }
  await sleep(settleMs);
  const before = await target.health();
  const cpuStart = cpuSeconds(pid);
  await sleep(windowMs);
  const cpu = cpuSeconds(pid) - cpuStart;
  const after = await target.health();
  const { rss } = memory(pid);
  run.child.kill("SIGKILL");
  await exitWithin(run.child, 10_000);
  await target.waitFor((c) => c.connectionsOpen <= base.connectionsOpen, { deadline: Date.now() + 30_000, pollMs: 250 });
  const frames = after.framesOut - before.framesOut;
  return { users, rooms, rate, windowSeconds: windowMs / 1000, cpuSeconds: round(cpu, 3), framesDelivered: frames, cpuUsPerFrame: round((cpu * 1e6) / frames, 2), rssBytes: rss };
}

function round(value, digits) {
  if (value === undefined || value === null) return value ?? null;
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

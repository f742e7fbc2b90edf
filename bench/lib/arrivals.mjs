// The arrival-timer workloads (issue 17), measured as users run `artillery run`:
// - arrivals: how close to schedule Artillery starts VUs with the cable engine loaded, at 100/s
//   and 1,000/s, and the CPU per second the generator spends meanwhile (VUs that do nothing);
// - replay: the RelayBox test of seed 004 (5/25/100/20 arrivals/s, 100 private rooms, ~4,000
//   concurrent) against the local target, and the generator's own event-loop lag while it runs.
// Each is run with the engine's arrival timer (the default) and with Artillery's own
// (`config.cable.preciseArrivals: true`), the "before".
import { existsSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { cpuSeconds, exitWithin, sleep } from "./proc.mjs";
import { arrivalLateness, percentile } from "./stats.mjs";
import { startArtillery } from "./subjects.mjs";
import { METRICS } from "artillery-engine-cable/metrics";

const here = path.dirname(fileURLToPath(import.meta.url));

const round = (v, digits = 3) => (v === undefined || v === null || Number.isNaN(v) ? null : Math.round(v * 10 ** digits) / 10 ** digits);

/** Samples a process's CPU (all threads) every `everyMs` until it exits: [{at (epoch ms), cpu (s)}]. */
function sampleCpu(child, everyMs = 100) {
  const samples = [];
  const timer = setInterval(() => {
    try {
      samples.push({ at: Date.now(), cpu: cpuSeconds(child.pid) });
    } catch {}
  }, everyMs);
  child.once("exit", () => clearInterval(timer));
  return samples;
}

/** CPU-seconds per second between two instants, from the samples nearest inside them. */
function cpuPerSecond(samples, from, to) {
  const inside = samples.filter((s) => s.at >= from && s.at <= to);
  if (inside.length < 2) return null;
  const a = inside[0];
  const b = inside.at(-1);
  return (b.cpu - a.cpu) / ((b.at - a.at) / 1000);
}

/**
 * One arrival phase of `rate`/s for `seconds` with the cable engine loaded: lateness of each
 * arrival against the uniform schedule, and the generator's CPU per second during the phase.
 */
export async function measureArrivals(target, { rate, seconds, precise, warmSeconds = 3 }) {
  const file = path.join(os.tmpdir(), `cable-bench-arrivals-${process.pid}-${rate}-${precise ? "precise" : "default"}.txt`);
  rmSync(file, { force: true });
  const deadline = Date.now() + 60_000 + seconds * 1000;
  const script = {
    config: {
      target: target.cableUrl,
      engines: { cable: {} },
      cable: { preciseArrivals: precise },
      processor: path.join(here, "arrival-stamp.cjs"),
      phases: [{ duration: seconds, arrivalRate: rate }],
    },
    scenarios: [{ engine: "cable", flow: [{ function: "stampArrival" }] }],
  };
  const run = startArtillery(`arrivals-${rate}`, script, { deadline, env: { BENCH_ARRIVALS_FILE: file } });
  const samples = sampleCpu(run.child);
  const code = await exitWithin(run.child, deadline - Date.now());
  if (code !== 0 || !existsSync(file)) throw new Error(`arrivals ${rate}/s: artillery exited ${code}; see ${run.logPath}`);
  const times = readFileSync(file, "utf8").trim().split("\n").map(Number);
  rmSync(file, { force: true });
  const late = arrivalLateness(times, 1000 / rate);
  const first = Math.min(...times);
  const last = Math.max(...times);
  const from = first + Math.min(warmSeconds * 1000, (last - first) / 2);
  const steady = cpuPerSecond(samples, from, last - 300);
  // The phase's CPU per second, 10 s at a time: how the cost falls as V8 warms (docs/benchmarks.md).
  const by10s = [];
  for (let at = first; at + 10_000 <= last; at += 10_000) by10s.push(round(cpuPerSecond(samples, at, at + 10_000)));
  return {
    rate,
    seconds,
    precise,
    arrivals: times.length,
    expected: rate * seconds,
    latenessMs: { p50: round(percentile(late, 50)), p99: round(percentile(late, 99)), max: round(Math.max(...late)) },
    // The phase once warm, from `warmSeconds` in (at most half of it) to its end: its first half
    // minute is Artillery's and V8's start-up (the JIT, the heap growing, the memory reducer's full
    // collections on V8's helper threads), the same for any timer; its end Artillery's wind-down.
    cpuWindowS: [round((from - first) / 1000, 1), round((last - 300 - first) / 1000, 1)],
    cpuPerSecond: round(steady),
    cpuPerSecondBy10s: by10s,
    cpuSecondsPer1000Arrivals: round(steady === null ? null : (steady / rate) * 1000),
  };
}

/** The seed's sustained arrivals per second (seeds/004). */
export const RELAYBOX_SUSTAINED_RATE = 100;

/** The seed's phases (seeds/004, scenarios/pubsub-rooms.yml); `scale` shortens them for a quick look. */
export const RELAYBOX_PHASES = [
  { name: "warmup", duration: 10, arrivalRate: 5 },
  { name: "rampup", duration: 10, arrivalRate: 25 },
  { name: "sustained", duration: 60, arrivalRate: RELAYBOX_SUSTAINED_RATE },
  { name: "warmdown", duration: 10, arrivalRate: 20 },
];

/** The RelayBox replay's script: scenarios/pubsub-rooms.yml's flow on private rooms, against the local target's Pusher endpoint. */
export function replayScript(target, { phases, rooms, messages, stay, precise }) {
  return {
    config: {
      target: target.httpUrl.replace(/^http/, "ws"),
      processor: path.join(here, "processor.cjs"),
      engines: { cable: {} },
      cable: { protocol: "pusher", timeout: 30, ...(precise === undefined ? {} : { preciseArrivals: precise }), pusher: { key: "local-key", appId: "local-app" } },
      variables: { rooms, messages, stay },
      phases,
    },
    scenarios: [
      {
        name: "client_pubsub",
        engine: "cable",
        flow: [
          { function: "pickPrivateRoom" },
          { connect: {} },
          { subscribe: { channel: "{{ room }}", as: "room" } },
          { loop: [{ publish: { channel: "{{ room }}", event: "message", data: { text: "hello" }, stamp: true } }, { think: 2 }], count: "{{ messages }}" },
          { listen: { channel: "room", for: "{{ stay }}" } },
          { disconnect: {} },
        ],
      },
    ],
  };
}

/**
 * The RelayBox replay: scenarios/pubsub-rooms.yml's flow on private rooms (each subscription
 * signed, as RelayBox's authenticated rooms are), against the local target's Pusher endpoint.
 */
export async function measureReplay(target, { precise, phases = RELAYBOX_PHASES, stay = 20, messages = 10, env = {}, cpus }) {
  const seconds = phases.reduce((s, p) => s + p.duration, 0);
  // The VUs' own timeline plus start-up, plus as much again for a saturated generator or target.
  const deadline = Date.now() + (2 * (seconds + messages * 2 + stay) + 60) * 1000;
  const script = replayScript(target, { phases, rooms: 100, messages, stay, precise });
  const run = startArtillery("replay", script, { deadline, env: { PUSHER_APP_SECRET: "local-secret", ...env }, cpus });
  const samples = sampleCpu(run.child, 500);
  const startedAt = Date.now();
  const code = await exitWithin(run.child, deadline - Date.now());
  await sleep(100);
  const aggregate = run.collect();
  const s = aggregate.summaries ?? {};
  const c = aggregate.counters ?? {};
  const pick = (name) => (s[name] ? { p50: s[name].p50 ?? s[name].median, p95: s[name].p95, p99: s[name].p99, max: s[name].max } : null);
  const cpu = samples.length > 1 ? samples.at(-1).cpu - samples[0].cpu : null;
  return {
    precise,
    sustainedRate: phases.find((p) => p.name === "sustained")?.arrivalRate ?? null,
    generatorCpus: cpus ?? null,
    exitCode: code,
    wallSeconds: round((Date.now() - startedAt) / 1000, 1),
    cpuSeconds: round(cpu, 1),
    vusers: { created: c["vusers.created"] ?? 0, completed: c["vusers.completed"] ?? 0, failed: c["vusers.failed"] ?? 0 },
    errors: Object.fromEntries(Object.entries(c).filter(([k]) => k.startsWith("errors."))),
    eventLoopLagMs: pick(METRICS.eventLoopLag),
    broadcastLatencyMs: pick(METRICS.broadcastLatency),
    publishLatencyMs: pick(METRICS.publishLatency),
    peakConnections: s[METRICS.connectionsOpenPeak]?.max ?? null,
    messagesSent: c[METRICS.messagesSent] ?? 0,
    messagesReceived: c[METRICS.messagesReceived] ?? 0,
  };
}

// The three load generators compared on the same workloads: the bare `ws` client (the ceiling),
// Artillery with this repository's cable engine, and Artillery with its built-in `ws` engine.
// Each starts as a process of its own; the harness measures it from /proc.
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { GC_NODE_OPTIONS, spawnLogged, spawnWithFileLimit } from "./proc.mjs";
import { METRICS } from "artillery-engine-cable/metrics";

const require = createRequire(import.meta.url);
const here = path.dirname(fileURLToPath(import.meta.url));
export const artilleryBin = path.join(path.dirname(require.resolve("artillery/package.json")), "bin", "run");
export const processor = path.join(here, "processor.cjs");

/** BenchmarkChannel streams "all": the stream the harness broadcasts to. */
export const IDENTIFIER = JSON.stringify({ channel: "BenchmarkChannel" });
export const STREAM = "all";

/** The identifier every listening user subscribes with on `target` (a real server without an app: a public `$pubsub` stream). */
const identifierOf = (target) => JSON.stringify(target.channel ?? { channel: "BenchmarkChannel" });

const workDir = mkdtempSync(path.join(os.tmpdir(), "cable-bench-"));
let runs = 0;

/** Artillery's phases for "n0 users, a pause for the harness to sample, then the rest". */
function listenPhases({ n0, n, pauseMs, ratePerSecond }) {
  const phases = [];
  if (n0 > 0) phases.push({ name: "small", arrivalCount: n0, duration: 1 }, { name: "sample", pause: Math.ceil(pauseMs / 1000) });
  const rest = n - n0;
  if (rest > 0) phases.push({ name: "rest", arrivalCount: rest, duration: Math.max(1, Math.ceil(rest / ratePerSecond)) });
  return phases;
}

function withGc(extra) {
  return [process.env.NODE_OPTIONS, GC_NODE_OPTIONS, extra].filter(Boolean).join(" ");
}

/**
 * `artillery run` on a script: an object (written to a file here) or the path of a scenario file
 * run as users run it, with `args` (e.g. --overrides, --variables) before it.
 */
export function startArtillery(name, script, { deadline, env = {}, args = [], cpus }) {
  const id = `${name}-${++runs}`;
  const reportPath = path.join(workDir, `${id}.report.json`);
  const logPath = path.join(workDir, `${id}.log`);
  let scriptPath = script;
  if (typeof script !== "string") {
    scriptPath = path.join(workDir, `${id}.json`);
    writeFileSync(scriptPath, JSON.stringify(script, null, 2));
  }
  const child = spawnLogged([process.execPath, artilleryBin, "run", "-o", reportPath, ...args, scriptPath], logPath, {
    cpus,
    env: { ...process.env, ARTILLERY_DISABLE_TELEMETRY: "true", BENCH_DEADLINE: String(deadline), ...env, NODE_OPTIONS: withGc(env.NODE_OPTIONS) },
  });
  return {
    child,
    logPath,
    /** The aggregate of Artillery's JSON report, after the process has exited. */
    collect() {
      try {
        return JSON.parse(readFileSync(reportPath, "utf8")).aggregate;
      } catch (err) {
        throw new Error(`${name}: no Artillery report at ${reportPath} (${err.message}); see ${logPath}`);
      }
    },
  };
}

function startBare(options, env = {}) {
  const child = spawnWithFileLimit([process.execPath, path.join(here, "..", "bare-client.mjs"), JSON.stringify(options)], {
    stdio: ["ignore", "pipe", "inherit"],
    env: { ...process.env, ...env, NODE_OPTIONS: withGc(env.NODE_OPTIONS) },
  });
  let out = "";
  child.stdout.on("data", (chunk) => (out += chunk));
  return {
    child,
    collect() {
      const line = out.trim().split("\n").at(-1);
      if (!line) throw new Error("bare client: no result line");
      return JSON.parse(line);
    },
  };
}

export const bare = {
  name: "bare-ws",
  label: "bare ws client",
  listen(target, p, env) {
    const run = startBare({ mode: "listen", url: target.cableUrl, identifier: identifierOf(target), ...p }, env);
    return { ...run, received: () => run.collect().received };
  },
  latency(target, p) {
    const run = startBare({ mode: "latency", url: target.cableUrl, identifier: IDENTIFIER, n: p.n, iterations: p.iterations, thinkMs: p.thinkMs, deadline: p.deadline });
    return { ...run, rttMs: () => run.collect().rttMs };
  },
  scale(target, p) {
    const run = startBare({ mode: "listen", url: target.cableUrl, identifier: identifierOf(target), ...p });
    return { ...run, errors: () => run.collect().errors };
  },
};

function cableConfig(target, p, extra = {}) {
  const cable = { timeout: 30, ...extra };
  if (p.localAddresses?.length) cable.localAddress = p.localAddresses;
  return { target: target.cableUrl, engines: { cable: {} }, cable, processor, phases: listenPhases(p) };
}

/** Connect, subscribe to the target's stream, listen until the deadline. */
function cableListenFlow(target) {
  const { channel, stream_name: stream } = target.channel ?? { channel: "BenchmarkChannel" };
  return [
    { connect: {} },
    { subscribe: channel === "$pubsub" ? { stream, as: "bench" } : { channel, as: "bench" } },
    { function: "untilDeadline" },
    { listen: { channel: "bench", for: "{{ listenFor }}" } },
  ];
}

export const cableEngine = {
  name: "cable-engine",
  label: "Artillery + cable engine",
  listen(target, p, env) {
    const run = startArtillery("cable-listen", { config: cableConfig(target, p), scenarios: [{ engine: "cable", flow: cableListenFlow(target) }] }, { deadline: p.deadline, env });
    return { ...run, received: () => run.collect().counters[METRICS.messagesReceived] ?? 0 };
  },
  latency(target, p) {
    const script = {
      config: { target: target.cableUrl, engines: { cable: {} }, cable: { timeout: 10 }, phases: [{ arrivalCount: p.n, duration: 1 }] },
      scenarios: [
        {
          engine: "cable",
          flow: [
            { connect: {} },
            { subscribe: { channel: "BenchmarkChannel", as: "bench" } },
            {
              loop: [{ perform: { channel: "bench", action: "echo", data: { seq: "{{ $loopCount }}" } } }, { receive: { channel: "bench", metric: "rtt" } }, { think: `${p.thinkMs}ms` }],
              count: p.iterations,
            },
          ],
        },
      ],
    };
    const run = startArtillery("cable-latency", script, { deadline: p.deadline });
    return { ...run, report: () => run.collect() };
  },
  /** scenarios/capacity-anycable.yml as users run it by message rate: `users` users, `rate` messages a second together. */
  chat(target, p) {
    const overrides = { config: { target: target.cableUrl, cable: { timeout: 10, anycable: { broadcastUrl: target.broadcastUrl } }, phases: [{ name: "ramp", arrivalCount: p.users, duration: p.rampSeconds }] } };
    const variables = { rooms: p.rooms, capacity_users: p.users, capacity_rate: p.rate, capacity_max_s: Math.ceil((p.deadline - Date.now()) / 1000) };
    const run = startArtillery("cable-chat", path.join(here, "..", "..", "scenarios", "capacity-anycable.yml"), { deadline: p.deadline, args: ["--overrides", JSON.stringify(overrides), "--variables", JSON.stringify(variables)] });
    return { ...run, received: () => run.collect().counters[METRICS.messagesReceived] ?? 0 };
  },
  scale(target, p) {
    const run = startArtillery("cable-scale", { config: cableConfig(target, p), scenarios: [{ engine: "cable", flow: cableListenFlow(target) }] }, { deadline: p.deadline });
    return { ...run, errors: () => errorCounters(run.collect()) };
  },
};

/** The cable engine with Artillery's own, spinning arrival timer (`preciseArrivals: true`): the "before". */
export const cableEnginePrecise = {
  name: "cable-engine-precise-arrivals",
  label: "Artillery + cable engine, preciseArrivals",
  listen(target, p, env) {
    const run = startArtillery("cable-listen-precise", { config: cableConfig(target, p, { preciseArrivals: true }), scenarios: [{ engine: "cable", flow: cableListenFlow(target) }] }, { deadline: p.deadline, env });
    return { ...run, received: () => run.collect().counters[METRICS.messagesReceived] ?? 0 };
  },
};

/**
 * Artillery's own ws engine on the same workload: connect, send the subscribe frame, then think.
 * It counts received frames only in a step that captures or matches, so its reports say nothing
 * of what it received (artilleryio/artillery #2517): deliveries are taken from the target.
 */
function wsScript(target, p) {
  const config = { target: target.cableUrl, ws: { subprotocols: ["actioncable-v1-json"] }, processor, phases: listenPhases(p) };
  const flow = [{ send: JSON.stringify({ command: "subscribe", identifier: IDENTIFIER }) }, { function: "untilDeadline" }, { think: "{{ listenForMs }}ms" }];
  return { config, scenarios: [{ engine: "ws", flow }] };
}

export const artilleryWs = {
  name: "artillery-ws",
  label: "Artillery + built-in ws engine",
  listen(target, p, env) {
    const run = startArtillery("ws-listen", wsScript(target, p), { deadline: p.deadline, env });
    return { ...run, received: () => undefined };
  },
  scale(target, p) {
    const run = startArtillery("ws-scale", wsScript(target, p), { deadline: p.deadline });
    return { ...run, errors: () => errorCounters(run.collect()) };
  },
};

function errorCounters(aggregate) {
  return Object.fromEntries(Object.entries(aggregate.counters ?? {}).filter(([k]) => k.startsWith("errors.")));
}

// k6 + xk6-cable: the peer our users would pick instead (issue 28), measured like every other
// subject from /proc, on the same workloads. The scripts are what a k6 user writes for them, after
// xk6-cable's own benchmark examples: connect, subscribe, `onMessage` counting every broadcast and
// recording its latency in a Trend (the engine records every delivery too), `client.loop` with a
// sleep until the deadline.
//
// The binary comes from `scripts/build-k6.sh` (k6 v0.51.0 + xk6-cable v0.8.0, cached in
// ~/.cache/cable/k6/k6, or K6_BIN). Where it cannot be built, `k6Subject()` says why and the bench
// skips the peer's sections with that line.
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { spawnLogged } from "./proc.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.join(here, "..", "..");
const workDir = mkdtempSync(path.join(os.tmpdir(), "cable-bench-k6-"));
let runs = 0;

/** The k6 binary, built if it is not cached; `{ why }` where it cannot be. */
export function findK6() {
  const bin = process.env.K6_BIN ?? path.join(process.env.CABLE_CACHE ?? path.join(os.homedir(), ".cache", "cable"), "k6", "k6");
  if (!existsSync(bin)) {
    try {
      execFileSync("bash", [path.join(root, "scripts", "build-k6.sh")], { stdio: ["ignore", "ignore", "pipe"], env: { ...process.env, K6_BIN: bin }, timeout: 10 * 60_000 });
    } catch (err) {
      const line = String(err.stderr ?? err.message).trim().split("\n").at(-1);
      return { why: `k6 + xk6-cable could not be built (${line}); the peer's figures are skipped` };
    }
  }
  return { bin, version: execFileSync(bin, ["version"], { encoding: "utf8" }).split("\n")[0].trim() };
}

/**
 * k6's scenarios for "n0 users, a pause for the harness to sample, then the rest at a rate": the
 * first n0 as one iteration each, the rest as arrivals spread evenly over whole seconds (rate
 * `rest` per `duration`, so that exactly `rest` arrive). k6 initialises every VU before the test
 * starts; its whole-process figures include that, the window figures do not.
 */
export function k6Scenarios({ n0, n, pauseMs, ratePerSecond, deadline }) {
  const untilDeadline = Math.ceil((deadline - Date.now()) / 1000) + 5;
  const scenarios = {};
  if (n0 > 0) scenarios.small = { executor: "per-vu-iterations", vus: n0, iterations: 1, maxDuration: `${untilDeadline}s`, gracefulStop: "5s" };
  const rest = n - n0;
  if (rest > 0) {
    const seconds = Math.max(1, Math.ceil(rest / ratePerSecond));
    scenarios.rest = {
      executor: "constant-arrival-rate",
      rate: rest,
      timeUnit: `${seconds}s`,
      duration: `${seconds}s`,
      preAllocatedVUs: rest,
      // A few spare VUs: an arrival due while the preallocated ones are still starting is otherwise dropped.
      maxVUs: rest + 20,
      startTime: `${n0 > 0 ? 1 + Math.ceil(pauseMs / 1000) : 0}s`,
      gracefulStop: `${untilDeadline}s`,
    };
  }
  return scenarios;
}

export const LISTEN_SCRIPT = `
import cable from "k6/x/cable";
import { sleep } from "k6";
import { Counter, Trend } from "k6/metrics";

const received = new Counter("cable_received");
const latency = new Trend("cable_broadcast_latency", true);
const deadline = Number(__ENV.BENCH_DEADLINE);

export const options = JSON.parse(__ENV.BENCH_OPTIONS);

export default function () {
  const client = cable.connect(__ENV.BENCH_URL, { receiveTimeoutMs: 30000 });
  if (!client) return;
  const channel = client.subscribe(__ENV.BENCH_CHANNEL, JSON.parse(__ENV.BENCH_PARAMS));
  if (!channel) return;
  channel.ignoreReads();
  channel.onMessage((message) => {
    received.add(1);
    if (message && message.ts) latency.add(Date.now() - message.ts);
  });
  client.loop(() => {
    sleep(1);
    return Date.now() >= deadline;
  });
  client.disconnect();
}
`;

// The capacity scenario (scenarios/capacity-anycable.yml with capacity_rate/capacity_users) as a
// k6 user writes it: follow one of the rooms' public streams, publish a stamped message through the
// HTTP broadcaster on the same schedule as processors/capacity.js, record every delivery.
export const CHAT_SCRIPT = `
import cable from "k6/x/cable";
import http from "k6/http";
import { sleep } from "k6";
import { Counter, Trend } from "k6/metrics";

const received = new Counter("cable_received");
const latency = new Trend("cable_broadcast_latency", true);
const deadline = Number(__ENV.BENCH_DEADLINE);
const rooms = Number(__ENV.BENCH_ROOMS);
const intervalMs = (1000 * Number(__ENV.BENCH_USERS)) / Number(__ENV.BENCH_RATE);

export const options = JSON.parse(__ENV.BENCH_OPTIONS);

export default function () {
  const room = "room-" + (1 + Math.floor(Math.random() * rooms));
  const client = cable.connect(__ENV.BENCH_URL, { receiveTimeoutMs: 30000 });
  if (!client) return;
  const channel = client.subscribe("$pubsub", { stream_name: room });
  if (!channel) return;
  channel.ignoreReads();
  channel.onMessage((message) => {
    received.add(1);
    if (message && message.ts) latency.add(Date.now() - message.ts);
  });
  let next = Date.now() + Math.random() * intervalMs;
  client.loop(() => {
    const wait = next - Date.now();
    if (wait > 0) sleep(Math.min(wait, 2000) / 1000);
    if (Date.now() >= deadline) return true;
    if (Date.now() >= next) {
      next += intervalMs;
      const data = JSON.stringify({ text: "hello", ts: Date.now() });
      http.post(__ENV.BENCH_BROADCAST_URL, JSON.stringify({ stream: room, data }), { headers: { "content-type": "application/json" } });
    }
    return false;
  });
  client.disconnect();
}
`;

function startK6(bin, name, source, env) {
  const id = `${name}-${++runs}`;
  const scriptPath = path.join(workDir, `${id}.js`);
  const summaryPath = path.join(workDir, `${id}.summary.json`);
  const logPath = path.join(workDir, `${id}.log`);
  writeFileSync(scriptPath, source);
  const child = spawnLogged([bin, "run", "--quiet", "--no-color", "--no-usage-report", "--no-thresholds", "--summary-export", summaryPath, scriptPath], logPath, {
    env: { ...process.env, K6_NO_USAGE_REPORT: "true", ...env },
  });
  return {
    child,
    logPath,
    /** The count of a Counter from k6's summary export, after the process has exited. */
    count(metric) {
      try {
        return JSON.parse(readFileSync(summaryPath, "utf8")).metrics?.[metric]?.count ?? 0;
      } catch (err) {
        throw new Error(`${name}: no k6 summary at ${summaryPath} (${err.message}); see ${logPath}`);
      }
    },
  };
}

/** The peer as a bench subject (the same `listen` contract as bench/lib/subjects.mjs), or `{ why }`. */
export function k6Subject() {
  const found = findK6();
  if (!found.bin) return found;
  return {
    name: "k6-xk6-cable",
    label: `k6 + xk6-cable (${found.version})`,
    version: found.version,
    listen(target, p) {
      const run = startK6(found.bin, "k6-listen", LISTEN_SCRIPT, {
        BENCH_URL: target.cableUrl,
        BENCH_CHANNEL: (target.channel ?? { channel: "BenchmarkChannel" }).channel,
        // The identifier's other fields (a `$pubsub` stream's name): xk6-cable's subscribe params.
        BENCH_PARAMS: JSON.stringify(Object.fromEntries(Object.entries(target.channel ?? {}).filter(([k]) => k !== "channel"))),
        BENCH_DEADLINE: String(p.deadline),
        BENCH_OPTIONS: JSON.stringify({ scenarios: k6Scenarios(p), summaryTrendStats: ["med", "p(95)", "p(99)"] }),
      });
      return { ...run, received: () => run.count("cable_received") };
    },
    chat(target, p) {
      const run = startK6(found.bin, "k6-chat", CHAT_SCRIPT, {
        BENCH_URL: target.cableUrl,
        BENCH_BROADCAST_URL: target.broadcastUrl ?? `${target.httpUrl}/_broadcast`,
        BENCH_ROOMS: String(p.rooms),
        BENCH_USERS: String(p.users),
        BENCH_RATE: String(p.rate),
        BENCH_DEADLINE: String(p.deadline),
        BENCH_OPTIONS: JSON.stringify({ scenarios: k6Scenarios({ n0: 0, n: p.users, pauseMs: 0, ratePerSecond: p.users / p.rampSeconds, deadline: p.deadline }), summaryTrendStats: ["med", "p(95)", "p(99)"] }),
      });
      return { ...run, received: () => run.count("cable_received") };
    },
  };
}

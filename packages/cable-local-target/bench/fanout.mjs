// Fan-out throughput of the local target: N subscribers, M broadcasts, on Action Cable
// (BenchmarkChannel, published with POST /_broadcast; plain and AnyCable extended protocol) and on Pusher (a public channel, published
// with the signed events API). The target runs in its own process (the built CLI) so that the
// clients here do not share its CPU.
//
//   npm run build -w cable-local-target
//   node packages/cable-local-target/bench/fanout.mjs            # SUBSCRIBERS=500 BROADCASTS=200
//
// Prints one JSON line per protocol: deliveries/s, the target's CPU share over the run (1.0 = one
// core busy), and publish→receive latency percentiles (ms).
// Loopback, 2 cores shared by target and clients: a lower bound of what the target can do.
import { spawn } from "node:child_process";
import { createHash, createHmac } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import WebSocket from "ws";

const here = path.dirname(fileURLToPath(import.meta.url));
const SUBSCRIBERS = Math.min(Number(process.env.SUBSCRIBERS ?? 500), 5_000);
const BROADCASTS = Math.min(Number(process.env.BROADCASTS ?? 200), 10_000);
const DEADLINE_MS = 120_000;

const child = spawn(process.execPath, [path.join(here, "../dist/cli.js"), "--allow-anonymous"], { stdio: ["ignore", "pipe", "inherit"] });
const urls = await new Promise((resolve, reject) => {
  let out = "";
  child.stdout.on("data", (chunk) => {
    out += chunk;
    if (out.includes("\n")) resolve(JSON.parse(out.split("\n")[0]));
  });
  child.once("exit", (code) => reject(new Error(`target exited with ${code}`)));
});

/** CPU seconds the target process has used (Linux /proc), to show whether it or the clients are the limit. */
function targetCpuSeconds() {
  const fields = readFileSync(`/proc/${child.pid}/stat`, "utf8").split(") ")[1].split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100; // utime + stime, in clock ticks of 1/100 s
}

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

async function run(name, openClient, publish) {
  const latencies = [];
  let received = 0;
  let allDone;
  const done = new Promise((resolve) => (allDone = resolve));
  const expected = SUBSCRIBERS * BROADCASTS;
  const onPayload = (payload) => {
    latencies.push(Date.now() - payload.ts);
    if (++received === expected) allDone();
  };
  const clients = [];
  for (let i = 0; i < SUBSCRIBERS; i++) clients.push(await openClient(onPayload));
  const started = Date.now();
  const cpuBefore = targetCpuSeconds();
  for (let seq = 0; seq < BROADCASTS; seq++) await publish({ seq, ts: Date.now() });
  const timer = setTimeout(allDone, DEADLINE_MS);
  await done;
  clearTimeout(timer);
  const elapsed = Date.now() - started;
  const targetCpu = targetCpuSeconds() - cpuBefore;
  for (const ws of clients) ws.terminate();
  latencies.sort((a, b) => a - b);
  console.log(
    JSON.stringify({
      protocol: name,
      subscribers: SUBSCRIBERS,
      broadcasts: BROADCASTS,
      delivered: received,
      expected,
      seconds: elapsed / 1000,
      deliveriesPerSecond: Math.round(received / (elapsed / 1000)),
      targetCpuShare: Number((targetCpu / (elapsed / 1000)).toFixed(2)),
      latencyMs: { p50: percentile(latencies, 50), p95: percentile(latencies, 95), p99: percentile(latencies, 99), max: latencies.at(-1) },
    }),
  );
}

const identifier = JSON.stringify({ channel: "BenchmarkChannel" });
const publishCable = async (payload) => {
  const response = await fetch(`${urls.httpUrl}/_broadcast`, { method: "POST", body: JSON.stringify({ stream: "all", data: JSON.stringify(payload) }) });
  if (response.status !== 201) throw new Error(`/_broadcast answered ${response.status}`);
};
// Plain Rails frames, then AnyCable's extended protocol (each broadcast also recorded in the stream history, frames carry offsets).
for (const [name, subprotocol] of [["actioncable", "actioncable-v1-json"], ["actioncable-ext", "actioncable-v1-ext-json"]]) {
  await run(
    name,
    (onPayload) =>
      new Promise((resolve, reject) => {
        const ws = new WebSocket(urls.cableUrl, [subprotocol]);
        ws.on("error", reject);
        ws.on("message", (data) => {
          const frame = JSON.parse(data.toString());
          if (frame.type === "welcome") ws.send(JSON.stringify({ command: "subscribe", identifier }));
          else if (frame.type === "confirm_subscription") resolve(ws);
          else if (frame.identifier && frame.message) onPayload(frame.message); // pings carry "message" too
        });
      }),
    publishCable,
  );
}

// The CLI's default app credentials (README): the bench publishes as that app would.
const app = { appId: urls.pusherAppId, key: urls.pusherKey, secret: "local-secret" };
await run(
  "pusher",
  (onPayload) =>
    new Promise((resolve, reject) => {
      const ws = new WebSocket(`${urls.pusherUrl}?protocol=7&client=bench&version=1`);
      ws.on("error", reject);
      ws.on("message", (data) => {
        const frame = JSON.parse(data.toString());
        if (frame.event === "pusher:connection_established") ws.send(JSON.stringify({ event: "pusher:subscribe", data: { channel: "bench" } }));
        else if (frame.event === "pusher_internal:subscription_succeeded") resolve(ws);
        else if (frame.event === "tick") onPayload(JSON.parse(frame.data));
      });
    }),
  async (payload) => {
    const body = JSON.stringify({ name: "tick", channel: "bench", data: JSON.stringify(payload) });
    const params = { auth_key: app.key, auth_timestamp: String(Math.floor(Date.now() / 1000)), auth_version: "1.0", body_md5: createHash("md5").update(body).digest("hex") };
    const pathname = `/apps/${app.appId}/events`;
    const toSign = `POST\n${pathname}\n${Object.keys(params).sort().map((k) => `${k}=${params[k]}`).join("&")}`;
    params.auth_signature = createHmac("sha256", app.secret).update(toSign).digest("hex");
    const response = await fetch(`${urls.httpUrl}${pathname}?${new URLSearchParams(params)}`, { method: "POST", body });
    if (response.status !== 200) throw new Error(`events API answered ${response.status}`);
  },
);

child.kill("SIGTERM");

// The listen path in one process, without sockets: the CPU the engine adds per received broadcast,
// from the raw frame to Artillery's aggregated metrics. Stable where `run.mjs --only listen` is
// not: that one shares two cores with ws, the kernel and Artillery's workers, and its ratio swings
// ±0.2 between identical runs on a busy machine.
//
//   node bench/listen-path.mjs [engine dist dir]   # default: packages/artillery-engine-cable/dist
//
// Each round feeds FRAMES stamped Action Cable broadcasts (the bench target's, byte for byte) to a
// subscribed, listening CableConnection whose events go to Artillery's own SSMS, wired as
// Artillery's runner wires them, then aggregates them (DDSketch, rates) as Artillery does at a
// period's end. The baseline is what the bare ws client does per frame: JSON.parse and a count.
// Prints µs of CPU per frame (median of ROUNDS), for both, and their ratio.
import { existsSync } from "node:fs";
import { EventEmitter } from "node:events";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const dist = path.resolve(process.argv[2] ?? path.join(here, "..", "packages", "artillery-engine-cable", "dist"));
const artilleryDir = path.dirname(createRequire(import.meta.url).resolve("artillery/package.json"));
const { SSMS } = await import(pathToFileURL(path.join(artilleryDir, "dist", "lib", "core", "ssms.js")).href);
const { CableConnection } = await import(pathToFileURL(path.join(dist, "connection.js")).href);
// Builds before the metric names and the thread's tracker were split kept both in metrics.js.
const { OpenConnections } = await import(pathToFileURL(path.join(dist, existsSync(path.join(dist, "open-connections.js")) ? "open-connections.js" : "metrics.js")).href);
const { systemClock } = await import(pathToFileURL(path.join(dist, "clock.js")).href);
const { DeliveryLedger } = await import(pathToFileURL(path.join(dist, "delivery.js")).href);
const { createActionCableProtocol } = await import(pathToFileURL(path.join(dist, "protocol", "actioncable.js")).href);

const FRAMES = 200_000;
const ROUNDS = 7;
const IDENTIFIER = JSON.stringify({ channel: "BenchmarkChannel" });

function frames(count) {
  const out = [];
  const ts = Date.now();
  for (let seq = 0; seq < count; seq++) out.push(Buffer.from(JSON.stringify({ identifier: IDENTIFIER, message: { seq, ts: ts + (seq % 50) } })));
  return out;
}

function cpuUs(fn) {
  const start = process.cpuUsage();
  fn();
  const used = process.cpuUsage(start);
  return used.user + used.system;
}

async function engineRound(batch) {
  const metrics = new SSMS({ pullOnly: true });
  const events = new EventEmitter();
  events.on("counter", (name, value) => metrics.counter(name, value));
  events.on("histogram", (name, value) => metrics.summary(name, value));
  events.on("rate", (name) => metrics.rate(name));
  let listener;
  const socket = { protocol: "", isOpen: true, isConnecting: false, send() {}, close() {}, terminate() {} };
  const runtime = { tracker: new OpenConnections(), clock: systemClock, openSocket: (_o, l) => ((listener = l), socket) };
  const connection = new CableConnection(createActionCableProtocol(), events, { stampField: "ts", inboxSize: 0 }, { positions: new Map(), ledger: new DeliveryLedger() }, runtime);
  const opened = connection.open({ url: "ws://127.0.0.1:1/cable", headers: {}, subprotocols: [], timeoutMs: 5_000 });
  listener.frame(Buffer.from('{"type":"welcome"}'), false);
  await opened;
  const subscribed = connection.subscribe(IDENTIFIER, "", 5_000);
  listener.frame(Buffer.from(JSON.stringify({ identifier: IDENTIFIER, type: "confirm_subscription" })), false);
  await subscribed;
  // Never awaited: a closed connection ends its listen at its timer; the script exits before.
  connection.listen(60_000, IDENTIFIER).catch(() => undefined);
  const us = cpuUs(() => {
    for (const frame of batch) listener.frame(frame, false);
    metrics.aggregate(true);
  });
  const latency = Object.values(metrics._aggregatedHistograms).reduce((n, h) => n + (h["cable.broadcast_latency"]?.count ?? 0), 0);
  if (latency !== batch.length) throw new Error(`${latency} latency samples for ${batch.length} frames`);
  connection.close();
  metrics.stop();
  return us;
}

function bareRound(batch) {
  let received = 0;
  let last = 0;
  const us = cpuUs(() => {
    for (const frame of batch) {
      const msg = JSON.parse(frame.toString());
      received++;
      last = msg.message.ts;
    }
  });
  if (received !== batch.length || !last) throw new Error("bare round lost frames");
  return us;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const batch = frames(FRAMES);
const engine = [];
const bare = [];
for (let r = 0; r < ROUNDS; r++) {
  engine.push((await engineRound(batch)) / FRAMES);
  bare.push(bareRound(batch) / FRAMES);
}
const e = median(engine);
const b = median(bare);
console.log(`engine: ${path.relative(process.cwd(), dist) || dist}`);
console.log(`engine listen path: ${e.toFixed(3)} µs CPU per frame (median of ${ROUNDS} × ${FRAMES.toLocaleString("en")}, incl. Artillery's aggregation)`);
console.log(`bare client's JSON.parse per frame: ${b.toFixed(3)} µs; engine ÷ bare ${(e / b).toFixed(2)}`);
process.exit(0);

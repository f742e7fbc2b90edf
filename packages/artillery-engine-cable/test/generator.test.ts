// The load generator's own behaviour: source addresses, and its event-loop lag made visible.
import { mkdtempSync, writeFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { runArtillery } from "cable-test-servers";
import { WebSocketServer } from "ws";
import { afterAll, beforeAll, expect, test } from "vitest";

let server: http.Server;
let url: string;
const sources: string[] = [];

beforeAll(async () => {
  server = http.createServer();
  const wss = new WebSocketServer({ server });
  wss.on("connection", (ws, req) => {
    sources.push(req.socket.remoteAddress ?? "");
    ws.send('{"type":"welcome"}');
    const ping = setInterval(() => ws.send(JSON.stringify({ type: "ping", message: Math.floor(Date.now() / 1000) })), 200);
    ws.on("close", () => clearInterval(ping));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}/cable`;
});
afterAll(() => new Promise((resolve) => server.close(resolve)));

test("localAddress spreads the sockets over the listed source addresses in turn", async () => {
  sources.length = 0;
  const run = await runArtillery({
    script: {
      config: {
        target: url,
        engines: { cable: {} },
        cable: { localAddress: ["127.0.0.2", "127.0.0.3", "127.0.0.4"] },
        phases: [{ duration: 1, arrivalCount: 9 }],
      },
      scenarios: [{ engine: "cable", flow: [{ connect: {} }, { think: 1 }] }],
    },
  });
  expect(run.code, run.output).toBe(0);
  expect(run.report!.aggregate.counters["vusers.completed"]).toBe(9);
  expect(sources.sort()).toEqual(["127.0.0.2", "127.0.0.2", "127.0.0.2", "127.0.0.3", "127.0.0.3", "127.0.0.3", "127.0.0.4", "127.0.0.4", "127.0.0.4"]);
});

test("across Artillery's worker threads every VU runs once and the metrics merge exactly", async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "workers-"));
  writeFileSync(
    path.join(dir, "processor.js"),
    `const { threadId } = require("node:worker_threads");
     module.exports = { mark(context, events, done) { events.emit("counter", "test.thread_" + threadId, 1); done(); } };`,
  );
  const run = await runArtillery({
    outputDir: dir,
    env: { NODE_OPTIONS: `--require ${path.join(__dirname, "support/three-cpus.cjs")}` },
    script: {
      config: { target: url, processor: "./processor.js", engines: { cable: {} }, phases: [{ duration: 3, arrivalRate: 10 }] },
      scenarios: [{ engine: "cable", flow: [{ function: "mark" }, { connect: {} }, { think: 1 }] }],
    },
  });
  expect(run.code, run.output).toBe(0);
  const counters = run.report!.aggregate.counters;
  const threads = Object.keys(counters).filter((k) => k.startsWith("test.thread_"));
  expect(threads).toHaveLength(3);
  expect(threads.reduce((sum, k) => sum + counters[k], 0)).toBe(30);
  expect(counters["vusers.completed"]).toBe(30);
  expect(counters["cable.connections"]).toBe(30);
  expect(run.report!.aggregate.summaries["cable.handshake_latency"].count).toBe(30);
});

test("a blocked event loop shows in cable.event_loop_lag, with a warning", async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "lag-"));
  writeFileSync(
    path.join(dir, "processor.js"),
    `module.exports = { block(context, events, done) { const end = Date.now() + 400; while (Date.now() < end); done(); } };`,
  );
  const run = await runArtillery({
    outputDir: dir,
    script: {
      config: { target: url, processor: "./processor.js", engines: { cable: {} }, cable: { lagWarning: 200 }, phases: [{ duration: 1, arrivalCount: 2 }] },
      scenarios: [{ engine: "cable", flow: [{ connect: {} }, { think: 1 }, { function: "block" }, { think: 2 }] }],
    },
  });
  expect(run.code, run.output).toBe(0);
  const lag = run.report!.aggregate.summaries["cable.event_loop_lag"];
  expect(lag.count).toBeGreaterThan(0);
  expect(lag.max).toBeGreaterThanOrEqual(300);
  expect(run.output).toMatch(/the event loop was \d+ ms late: this load generator is saturated/);
});

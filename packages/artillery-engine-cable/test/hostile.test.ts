// A hostile server: garbage, silence, mid-stream closes, refused upgrades. The run must end on
// time with every VU ended once and each failure named.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { counter, freePort, runArtillery } from "cable-test-servers";
import { WebSocketServer, type WebSocket } from "ws";
import { afterAll, beforeAll, expect, test } from "vitest";

let server: http.Server;
let base: string;
const sockets = new Set<WebSocket>();

const confirm = (ws: WebSocket, frame: string) => {
  const { identifier } = JSON.parse(frame);
  ws.send(JSON.stringify({ identifier, type: "confirm_subscription" }));
};

// Each path is one misbehaviour, applied after the upgrade.
const behaviours: Record<string, (ws: WebSocket) => void> = {
  silent: () => {},
  garbage: (ws) => {
    ws.send('{"type":"welcome"}');
    ws.on("message", () => {
      ws.send("}{ not json");
      ws.send(Buffer.from([0xde, 0xad]), { binary: true });
      ws.send('{"no":"type"}');
      ws.send("[]");
    });
  },
  "close-mid-stream": (ws) => {
    ws.send('{"type":"welcome"}');
    ws.on("message", (frame) => {
      confirm(ws, frame.toString());
      setTimeout(() => ws.close(1011, "boom"), 100);
    });
  },
  "drop-mid-stream": (ws) => {
    ws.send('{"type":"welcome"}');
    ws.on("message", (frame) => {
      confirm(ws, frame.toString());
      setTimeout(() => ws.terminate(), 100);
    });
  },
  restart: (ws) => {
    ws.send('{"type":"welcome"}');
    ws.on("message", () => ws.send('{"type":"disconnect","reason":"server_restart","reconnect":true}'));
  },
  "close-during-think": (ws) => {
    ws.send('{"type":"welcome"}');
    setTimeout(() => ws.close(1001), 100);
  },
};

beforeAll(async () => {
  server = http.createServer((_req, res) => res.writeHead(404).end());
  const wss = new WebSocketServer({ noServer: true });
  server.on("upgrade", (req, socket, head) => {
    const name = req.url!.slice(1);
    if (name === "http-500") {
      socket.end("HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n");
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      sockets.add(ws);
      ws.on("close", () => sockets.delete(ws));
      behaviours[name](ws);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `ws://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  for (const ws of sockets) ws.terminate();
  await new Promise((resolve) => server.close(resolve));
});


test("every misbehaviour ends its VU once, with a named error, and the run ends on time", async () => {
  const refused = `ws://127.0.0.1:${await freePort()}`;
  const subscribeAndReceive = [{ subscribe: { channel: "C", as: "c" } }, { receive: { channel: "c" } }];
  const scenario = (name: string, url: string, flow: unknown[] = subscribeAndReceive) => ({
    name,
    engine: "cable",
    flow: [{ connect: { url } }, ...flow],
  });
  const run = await runArtillery({
    timeoutMs: 45_000,
    script: {
      config: { target: base, engines: { cable: {} }, cable: { timeout: 2 }, phases: [{ duration: 2, arrivalCount: 40 }] },
      scenarios: [
        scenario("silent", `${base}/silent`),
        scenario("garbage", `${base}/garbage`),
        scenario("close-mid-stream", `${base}/close-mid-stream`),
        scenario("drop-mid-stream", `${base}/drop-mid-stream`),
        scenario("restart", `${base}/restart`),
        scenario("close-during-think", `${base}/close-during-think`, [{ think: 1 }]),
        scenario("http-500", `${base}/http-500`),
        scenario("refused", refused),
      ],
    },
  });
  // Every user fails on purpose: over config.cable.maxFailedUsers (default 0), the run exits 1 and says why.
  expect(run.code, run.output).toBe(1);
  expect(run.output).toMatch(/cable: 1 virtual user failed, more than config\.cable\.maxFailedUsers \(0\): artillery run will exit 1\./);
  const r = run.report!;
  const by = (name: string) => counter(r, `vusers.created_by_name.${name}`);
  expect(counter(r, "vusers.created")).toBe(40);
  // Every VU ended, and none succeeded against this server.
  expect(counter(r, "vusers.failed")).toBe(40);
  expect(counter(r, "vusers.completed")).toBe(0);
  expect(counter(r, "errors.cable.handshake_timeout")).toBe(by("silent"));
  expect(counter(r, "errors.cable.subscription_timeout")).toBe(by("garbage"));
  expect(counter(r, "errors.cable.malformed_frame")).toBe(4 * by("garbage"));
  expect(counter(r, "errors.cable.connection_closed")).toBe(by("close-mid-stream") + by("drop-mid-stream") + by("close-during-think"));
  expect(counter(r, "errors.cable.server_disconnect")).toBe(by("restart"));
  expect(counter(r, "cable.server_disconnect.server_restart")).toBe(by("restart"));
  expect(counter(r, "errors.cable.http_500")).toBe(by("http-500"));
  expect(counter(r, "errors.ECONNREFUSED")).toBe(by("refused"));
  // Phases of 2 s plus the 2 s timeout, plus Artillery's start-up: far below the kill timer.
  expect(run.durationMs).toBeLessThan(30_000);
  expect(run.output).not.toMatch(/unhandled|UnhandledPromiseRejection|uncaught/i);
});

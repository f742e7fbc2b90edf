// A Pusher server that invents an error code per frame cannot mint a metric per frame: only the
// codes Pusher documents get their own key (src/error-names.ts pusherCodeError), every other code
// counts as cable.pusher_error and is kept in the server's words. 50,000 distinct codes from 2
// users once turned a 2 s phase into 2 minutes and 905 MB. Through the real CLI, against a
// loopback server.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { counter, runArtillery } from "cable-test-servers";
import { WebSocketServer, type WebSocket } from "ws";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { pusherCodeError } from "../src/error-names.js";
import { decodePusher } from "../src/protocol/pusher.js";

/** Distinct unlisted codes each connection receives. */
const CODES = 25_000;
/** Codes Pusher documents, sent once each: 4301 is counted; 4000–4299 announce a close, which the close itself counts. */
const DOCUMENTED = [4004, 4100, 4301];

let server: http.Server;
let url: string;
const sockets = new Set<WebSocket>();
let connections = 0;

beforeAll(async () => {
  server = http.createServer((_req, res) => res.writeHead(404).end());
  const wss = new WebSocketServer({ server });
  wss.on("connection", (ws) => {
    sockets.add(ws);
    ws.on("close", () => sockets.delete(ws));
    const first = 10_000 + CODES * connections++;
    ws.send(JSON.stringify({ event: "pusher:connection_established", data: JSON.stringify({ socket_id: `1.${connections}`, activity_timeout: 120 }) }));
    ws.on("message", (raw) => {
      const { event, data } = JSON.parse(raw.toString()) as { event: string; data: { channel?: string } };
      if (event !== "pusher:subscribe") return;
      ws.send(JSON.stringify({ event: "pusher_internal:subscription_succeeded", channel: data.channel, data: "{}" }));
      for (const code of DOCUMENTED) ws.send(JSON.stringify({ event: "pusher:error", data: { code, message: `documented ${code}` } }));
      for (let i = 0; i < CODES; i++) ws.send(JSON.stringify({ event: "pusher:error", data: { code: first + i, message: "made up" } }));
      // A close code outside Pusher's ranges too, after the frames.
      ws.close(4999, "made-up close");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  for (const ws of sockets) ws.terminate();
  await new Promise((resolve) => server.close(resolve));
});

describe("Pusher error codes", () => {
  test("documented codes get their own key; any other code, a string or none is pusher_error with the code in its words", () => {
    for (const code of [4000, 4009, 4099, 4100, 4199, 4200, 4299, 4301]) expect(pusherCodeError(code)).toBe(`pusher_${code}`);
    for (const code of [3999, 4300, 4302, 4399, 4999, 5000, 1e9, -4100, 4100.5, "4100", null, undefined]) expect(pusherCodeError(code)).toBe("pusher_error");
    expect(decodePusher('{"event":"pusher:error","data":{"code":123456,"message":"made up"}}')).toEqual({ kind: "error", reason: "pusher_error", channel: undefined, message: "code 123456: made up" });
    expect(decodePusher('{"event":"pusher:error","data":{"code":"E42"}}')).toEqual({ kind: "error", reason: "pusher_error", channel: undefined, message: "code E42" });
    expect(decodePusher('{"event":"pusher:error","data":{"message":"no code"}}')).toEqual({ kind: "error", reason: "pusher_error", channel: undefined, message: "no code" });
    expect(decodePusher('{"event":"pusher:error","data":{"code":4100,"message":"Over capacity"}}')).toEqual({ kind: "error", reason: "pusher_4100", channel: undefined, message: "Over capacity" });
  });

  test(`${2 * CODES} distinct codes from 2 users: a bounded set of keys, the run on time, the codes in the server's words`, async () => {
    const run = await runArtillery({
      timeoutMs: 60_000,
      script: {
        config: {
          target: url,
          engines: { cable: {} },
          cable: { protocol: "pusher", pusher: { key: "app-key" }, timeout: 5 },
          phases: [{ duration: 1, arrivalCount: 2 }],
        },
        scenarios: [{ name: "user", engine: "cable", flow: [{ connect: {} }, { subscribe: { channel: "news", as: "news" } }, { listen: { channel: "news", for: 10 } }] }],
      },
    });
    // Each user fails on purpose (the server's close 4999): over config.cable.maxFailedUsers (default 0), exit 1.
    expect(run.code, run.output).toBe(1);
    expect(run.output).toMatch(/cable: 1 virtual user failed, more than config\.cable\.maxFailedUsers \(0\): artillery run will exit 1\./);
    const r = run.report!;
    const keys = Object.keys(r.aggregate.counters).filter((k) => k.startsWith("errors.cable.pusher"));
    expect(keys.sort()).toEqual(["errors.cable.pusher_4301", "errors.cable.pusher_error"]);
    expect(counter(r, "errors.cable.pusher_4301")).toBe(2);
    // Every unlisted frame, and each user's close with 4999 (its failure).
    expect(counter(r, "errors.cable.pusher_error")).toBe(2 * CODES + 2);
    expect(counter(r, "vusers.failed")).toBe(2);
    // The counters of every period stay as few.
    const names = new Set(r.intermediate.flatMap((p) => Object.keys(p.counters)));
    expect(names.size).toBeLessThan(40);
    expect(run.durationMs).toBeLessThan(30_000);
    // The server's words: the first few codes, a few lines at most.
    const said = run.output.split("\n").filter((line) => line.includes("cable.pusher_error (error_frame): the server said"));
    expect(said.length).toBeGreaterThan(0);
    expect(said.length).toBeLessThanOrEqual(3);
    expect(said[0]).toMatch(/the server said "code \d{5}: made up"/);
    expect(run.output).toContain('cable.pusher_error (close): the server said "close 4999: made-up close"');
  });
});

import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { signStreamName, startTarget, type LocalTarget } from "../src/index.js";
import { cableClient, connect, identifier, notPing, type RawClient } from "./helpers.js";

// Local-target features the Rails test server does not have (AnyCable's $pubsub and /_broadcast);
// the behaviour both share is in conformance.test.ts.

let target: LocalTarget;
const clients: RawClient[] = [];
beforeAll(async () => {
  target = await startTarget({ cable: { broadcastKey: "bkey" } });
});
afterAll(async () => {
  for (const c of clients) c.close();
  await target.close();
});

const ALICE = "uid=Alice/1";

async function subscribe(client: RawClient, id: string): Promise<any> {
  client.send({ command: "subscribe", identifier: id });
  return client.next(notPing);
}

function postBroadcast(body: unknown, key: string | null = "bkey"): Promise<Response> {
  return fetch(`${target.httpUrl}/_broadcast`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

describe("AnyCable $pubsub and POST /_broadcast", () => {
  test("a public stream receives HTTP broadcasts, JSON data embedded as the message", async () => {
    const client = await cableClient(target.cableUrl, ALICE, clients);
    const id = identifier("$pubsub", { stream_name: "news" });
    expect(await subscribe(client, id)).toEqual({ identifier: id, type: "confirm_subscription" });
    const response = await postBroadcast({ stream: "news", data: JSON.stringify({ text: "hello" }) });
    expect(response.status).toBe(201);
    expect(await client.next(notPing)).toEqual({ identifier: id, message: { text: "hello" } });
  });

  test("a batch of publications reaches each stream; non-JSON data arrives as a string", async () => {
    const client = await cableClient(target.cableUrl, ALICE, clients);
    const a = identifier("$pubsub", { stream_name: "batch-a" });
    const b = identifier("$pubsub", { stream_name: "batch-b" });
    await subscribe(client, a);
    await subscribe(client, b);
    const response = await postBroadcast([
      { stream: "batch-a", data: "plain" },
      { stream: "batch-b", data: '{"n":2}' },
    ]);
    expect(response.status).toBe(201);
    expect(await client.next(notPing)).toEqual({ identifier: a, message: "plain" });
    expect(await client.next(notPing)).toEqual({ identifier: b, message: { n: 2 } });
  });

  test("the broadcast key is required when configured, and bad bodies are refused with the field named", async () => {
    expect((await postBroadcast({ stream: "s", data: "x" }, null)).status).toBe(401);
    expect((await postBroadcast({ stream: "s", data: "x" }, "wrong")).status).toBe(401);
    const bad = await postBroadcast({ stream: "s" });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: string }).error).toMatch(/body\.data/);
  });

  test("HTTP broadcasts reach Rails-style channel streams too (chat_<id>)", async () => {
    const client = await cableClient(target.cableUrl, ALICE, clients);
    const id = identifier("ChatChannel", { id: 9 });
    await subscribe(client, id);
    await postBroadcast({ stream: "chat_9", data: '{"action":"newMessage","message":"from http"}' });
    expect(await client.next(notPing)).toEqual({ identifier: id, message: { action: "newMessage", message: "from http" } });
  });

  test("signed stream names are verified with the streams secret", async () => {
    const client = await cableClient(target.cableUrl, ALICE, clients);
    const good = identifier("$pubsub", { signed_stream_name: signStreamName("secret-room", target.streamsSecret) });
    expect(await subscribe(client, good)).toEqual({ identifier: good, type: "confirm_subscription" });
    expect(target.broadcast("secret-room", '{"ok":true}')).toBe(1);
    expect(await client.next(notPing)).toEqual({ identifier: good, message: { ok: true } });
    const forged = identifier("$pubsub", { signed_stream_name: signStreamName("secret-room", "not-the-secret") });
    expect(await subscribe(client, forged)).toEqual({ identifier: forged, type: "reject_subscription" });
  });

  test("with public streams off, only signed names are accepted", async () => {
    const strict = await startTarget({ cable: { publicStreams: false, streamsSecret: "s" } });
    try {
      const client = await cableClient(strict.cableUrl, ALICE, clients);
      const plain = identifier("$pubsub", { stream_name: "x" });
      expect(await subscribe(client, plain)).toEqual({ identifier: plain, type: "reject_subscription" });
      const signed = identifier("$pubsub", { signed_stream_name: signStreamName("x", "s") });
      expect(await subscribe(client, signed)).toEqual({ identifier: signed, type: "confirm_subscription" });
    } finally {
      await strict.close();
    }
  });
});

describe("connection", () => {
  test("anonymous connections are accepted when requireUid is off", async () => {
    const open = await startTarget({ cable: { requireUid: false } });
    try {
      const client = await connect(open.cableUrl, { protocols: ["actioncable-v1-json"] });
      clients.push(client);
      expect(await client.next()).toEqual({ type: "welcome" });
    } finally {
      await open.close();
    }
  });

  test("pings follow the configured interval and carry unix seconds", async () => {
    const fast = await startTarget({ cable: { pingIntervalMs: 50 } });
    try {
      const client = await cableClient(fast.cableUrl, ALICE, clients);
      const ping = await client.next((f) => f.type === "ping", 1_000);
      expect(Math.abs(ping.message - Date.now() / 1000)).toBeLessThan(5);
    } finally {
      await fast.close();
    }
  });

  test("counters count connections and frames, and /health reports them", async () => {
    const own = await startTarget();
    try {
      const client = await cableClient(own.cableUrl, ALICE, clients);
      await subscribe(client, identifier("BenchmarkChannel"));
      const counters = own.counters();
      expect(counters).toMatchObject({ connectionsOpened: 1, connectionsOpen: 1, cableConnections: 1, framesIn: 1, framesOut: 2 });
      const health = await (await fetch(`${own.httpUrl}/health`)).json();
      expect(health).toMatchObject({ status: "ok", connectionsOpen: 1 });
      expect((await fetch(`${own.httpUrl}/nowhere`)).status).toBe(404);
    } finally {
      await own.close();
    }
  });

  test("an unknown WebSocket path is refused with 404", async () => {
    await expect(connect(`${target.url}/elsewhere`)).rejects.toThrow(/404/);
  });

  test("close() ends open sockets and pending timers promptly", async () => {
    const own = await startTarget({ faults: { confirmDelayMs: 60_000, closeAfterMs: 60_000 } });
    const client = await cableClient(own.cableUrl, ALICE, clients);
    client.send({ command: "subscribe", identifier: identifier("BenchmarkChannel") });
    const started = Date.now();
    await own.close();
    const closed = await client.closed;
    expect(closed.code).toBe(1006);
    expect(Date.now() - started).toBeLessThan(1_000);
  });
});

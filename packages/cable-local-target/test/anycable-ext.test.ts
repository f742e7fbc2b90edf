import { afterAll, afterEach, describe, expect, test } from "vitest";
import { signStreamName, startTarget, type LocalTarget, type TargetOptions } from "../src/index.js";
import { connect, delay, identifier, notPing, type RawClient } from "./helpers.js";

// AnyCable's extended protocol (actioncable-v1-ext-json) on the local target, with raw ws clients:
// every frame checked here is the shape anycable-go sends (see src/anycable/ext-frames.ts).

const EXT = "actioncable-v1-ext-json";
const PLAIN = "actioncable-v1-json";

const targets: LocalTarget[] = [];
const clients: RawClient[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  for (const t of targets.splice(0)) await t.close();
});
afterAll(async () => {
  for (const t of targets) await t.close();
});

async function target(options: TargetOptions = {}): Promise<LocalTarget> {
  const t = await startTarget({ ...options, cable: { requireUid: false, ...options.cable } });
  targets.push(t);
  return t;
}

async function open(t: LocalTarget, protocol = EXT, options: { query?: string; headers?: Record<string, string> } = {}): Promise<{ client: RawClient; welcome: any }> {
  const client = await connect(`${t.cableUrl}${options.query ?? ""}`, { protocols: [protocol], headers: options.headers });
  clients.push(client);
  return { client, welcome: await client.next(notPing) };
}

async function subscribed(client: RawClient, id: string, extra: Record<string, unknown> = {}): Promise<void> {
  client.send({ command: "subscribe", identifier: id, ...extra });
  expect(await client.next(notPing)).toEqual({ identifier: id, type: "confirm_subscription" });
}

const pubsub = (stream: string) => identifier("$pubsub", { stream_name: stream });

describe("subprotocol negotiation", () => {
  test("an actioncable-v1-json client gets exactly Rails' frames: no sid, no offsets, extended commands dropped", async () => {
    const t = await target();
    const { client, welcome } = await open(t, PLAIN);
    expect(client.ws.protocol).toBe(PLAIN);
    expect(client.received[0]).toBe('{"type":"welcome"}');
    expect(welcome).toEqual({ type: "welcome" });
    const id = pubsub("plain");
    await subscribed(client, id, { history: { since: 1 } });
    t.broadcast("plain", '{"n":1}');
    expect(await client.nextRaw()).toBe(`{"identifier":${JSON.stringify(id)},"message":{"n":1}}`);
    client.send({ command: "history", identifier: id, history: { since: 1 } });
    client.send({ command: "whisper", identifier: id, data: { typing: true } });
    client.send({ command: "presence", identifier: id, data: {} });
    client.send({ command: "pong" });
    expect(await client.collect(300, notPing)).toEqual([]);
  });

  test("an actioncable-v1-ext-json client gets a fresh sid per connection", async () => {
    const t = await target();
    const a = await open(t);
    const b = await open(t);
    expect(a.client.ws.protocol).toBe(EXT);
    expect(a.welcome).toEqual({ type: "welcome", sid: expect.any(String) });
    expect(a.client.received[0]).toBe(`{"type":"welcome","sid":${JSON.stringify(a.welcome.sid)}}`);
    expect(b.welcome.sid).not.toBe(a.welcome.sid);
  });

  test("pings reach extended clients and their pongs are accepted silently", async () => {
    const t = await target({ cable: { pingIntervalMs: 50 } });
    const { client } = await open(t);
    expect(await client.next((f) => f.type === "ping", 1_000)).toEqual({ type: "ping", message: expect.any(Number) });
    client.send({ command: "pong" });
    expect(await client.collect(200, notPing)).toEqual([]);
    await subscribed(client, pubsub("after-pong"));
  });

  test("the unauthorized refusal still applies to extended clients without a session to restore", async () => {
    const t = await target({ cable: { requireUid: true } });
    const client = await connect(t.cableUrl, { protocols: [EXT] });
    clients.push(client);
    expect(await client.next()).toEqual({ type: "disconnect", reason: "unauthorized", reconnect: false });
  });
});

describe("reliable streams", () => {
  test("broadcasts carry stream_id, epoch and per-stream offsets from 1; plain subscribers of the same stream get plain frames", async () => {
    const t = await target();
    const { client: ext } = await open(t);
    const { client: plain } = await open(t, PLAIN);
    const id = pubsub("news");
    await subscribed(ext, id);
    await subscribed(plain, id);
    const response = await fetch(`${t.httpUrl}/_broadcast`, {
      method: "POST",
      body: JSON.stringify([
        { stream: "news", data: '{"n":1}' },
        { stream: "other", data: '"elsewhere"' },
        { stream: "news", data: "text" },
      ]),
    });
    expect(response.status).toBe(201);
    expect(await ext.nextRaw()).toBe(`{"identifier":${JSON.stringify(id)},"message":{"n":1},"stream_id":"news","epoch":${JSON.stringify(t.epoch())},"offset":1}`);
    expect(await ext.next(notPing)).toEqual({ identifier: id, message: "text", stream_id: "news", epoch: t.epoch(), offset: 2 });
    expect(await plain.next(notPing)).toEqual({ identifier: id, message: { n: 1 } });
    expect(await plain.next(notPing)).toEqual({ identifier: id, message: "text" });
    // Channel broadcasts (ChatChannel speak → chat_<id>) are positioned the same way.
    const chat = identifier("ChatChannel", { id: 3 });
    await subscribed(ext, chat);
    ext.send({ command: "message", identifier: chat, data: JSON.stringify({ action: "speak", message: "hi" }) });
    expect(await ext.next(notPing)).toMatchObject({ identifier: chat, stream_id: "chat_3", offset: 1, message: { message: "hi" } });
  });

  test("history since a timestamp replays the kept messages, then confirm_history", async () => {
    const t = await target();
    t.broadcast("log", '{"n":1}');
    t.broadcast("log", '{"n":2}');
    const { client } = await open(t);
    const id = pubsub("log");
    await subscribed(client, id);
    client.send({ command: "history", identifier: id, history: { since: Math.floor(Date.now() / 1000) - 10 } });
    expect(await client.next(notPing)).toEqual({ identifier: id, message: { n: 1 }, stream_id: "log", epoch: t.epoch(), offset: 1 });
    expect(await client.next(notPing)).toEqual({ identifier: id, message: { n: 2 }, stream_id: "log", epoch: t.epoch(), offset: 2 });
    expect(await client.next(notPing)).toEqual({ type: "confirm_history", identifier: id });
  });

  test("history sent with subscribe is served right after the confirmation", async () => {
    const t = await target();
    t.broadcast("early", '"a"');
    const { client } = await open(t);
    const id = pubsub("early");
    client.send({ command: "subscribe", identifier: id, history: { since: Math.floor(Date.now() / 1000) - 5, streams: {} } });
    expect(await client.next(notPing)).toEqual({ identifier: id, type: "confirm_subscription" });
    expect(await client.next(notPing)).toMatchObject({ message: "a", offset: 1 });
    expect(await client.next(notPing)).toEqual({ type: "confirm_history", identifier: id });
  });

  test("after a gap, history from the last offset fills it exactly: continuous offsets, no duplicates", async () => {
    const t = await target();
    const id = pubsub("gap");
    const first = await open(t);
    await subscribed(first.client, id);
    t.broadcast("gap", '{"n":1}');
    t.broadcast("gap", '{"n":2}');
    const seen = [await first.client.next(notPing), await first.client.next(notPing)].map((f) => f.offset);
    first.client.close();
    await delay(50);
    for (let n = 3; n <= 5; n++) t.broadcast("gap", JSON.stringify({ n }));
    const { client } = await open(t);
    await subscribed(client, id);
    client.send({ command: "history", identifier: id, history: { streams: { gap: { epoch: t.epoch(), offset: seen[1] } } } });
    for (let n = 3; n <= 5; n++) seen.push((await client.next(notPing)).offset);
    expect(await client.next(notPing)).toEqual({ type: "confirm_history", identifier: id });
    t.broadcast("gap", '{"n":6}');
    seen.push((await client.next(notPing)).offset);
    expect(seen).toEqual([1, 2, 3, 4, 5, 6]);
  });

  test("reject_history for another epoch, or for an offset older than the kept history", async () => {
    const t = await target({ cable: { historyLimit: 3 } });
    for (let n = 1; n <= 5; n++) t.broadcast("short", JSON.stringify({ n }));
    const { client } = await open(t);
    const id = pubsub("short");
    await subscribed(client, id);
    client.send({ command: "history", identifier: id, history: { streams: { short: { epoch: "not-the-epoch", offset: 4 } } } });
    expect(await client.next(notPing)).toEqual({ type: "reject_history", identifier: id });
    // Kept: offsets 3..5. As in AnyCable, the client's own last offset must still be kept.
    client.send({ command: "history", identifier: id, history: { streams: { short: { epoch: t.epoch(), offset: 1 } } } });
    expect(await client.next(notPing)).toEqual({ type: "reject_history", identifier: id });
    client.send({ command: "history", identifier: id, history: { streams: { short: { epoch: t.epoch(), offset: 3 } } } });
    expect((await client.next(notPing)).offset).toBe(4);
    expect((await client.next(notPing)).offset).toBe(5);
    expect(await client.next(notPing)).toEqual({ type: "confirm_history", identifier: id });
    expect(t.counters()).toMatchObject({ historyRejected: 2, historyConfirmed: 1 });
  });

  test("history for an unknown subscription, or without since/streams, gets no answer", async () => {
    const t = await target();
    const { client } = await open(t);
    client.send({ command: "history", identifier: pubsub("never-subscribed"), history: { since: 1 } });
    const id = pubsub("x");
    await subscribed(client, id);
    client.send({ command: "history", identifier: id, history: {} });
    expect(await client.collect(300, notPing)).toEqual([]);
  });
});

describe("session restore", () => {
  for (const how of ["query", "header"] as const) {
    test(`after restart(), the old sid (${how}) restores the subscriptions and history fills the gap`, async () => {
      const t = await target({ cable: { requireUid: true } });
      const client = await connect(t.cableUrl, { protocols: [EXT], cookie: "uid=Alice/7" });
      clients.push(client);
      const { sid } = await client.next(notPing);
      const id = pubsub("restore");
      const chat = identifier("ChatChannel", { id: 1 });
      await subscribed(client, id);
      await subscribed(client, chat);
      t.broadcast("restore", '{"n":1}');
      const last = await client.next(notPing);

      expect(t.restart()).toBe(1);
      expect(await client.next(notPing)).toEqual({ type: "disconnect", reason: "server_restart", reconnect: true });
      expect(await client.closed).toEqual({ code: 1001, reason: "Server restart" });
      t.broadcast("restore", '{"n":2}'); // missed while away

      // No cookie this time: a restored session keeps its identity without authenticating again.
      const { client: again, welcome } = await open(t, EXT, how === "query" ? { query: `?sid=${encodeURIComponent(sid)}` } : { headers: { "X-ANYCABLE-RESTORE-SID": sid } });
      expect(welcome).toEqual({ type: "welcome", sid: expect.any(String), restored: true, restored_ids: [id, chat] });
      expect(welcome.sid).not.toBe(sid);
      again.send({ command: "history", identifier: id, history: { streams: { restore: { epoch: last.epoch, offset: last.offset } } } });
      expect(await again.next(notPing)).toEqual({ identifier: id, message: { n: 2 }, stream_id: "restore", epoch: last.epoch, offset: 2 });
      expect(await again.next(notPing)).toEqual({ type: "confirm_history", identifier: id });
      // Restored subscriptions receive broadcasts without a new subscribe.
      t.broadcast("restore", '{"n":3}');
      expect(await again.next(notPing)).toMatchObject({ identifier: id, offset: 3 });
      again.send({ command: "message", identifier: chat, data: JSON.stringify({ action: "speak", message: "back" }) });
      expect(await again.next(notPing)).toMatchObject({ identifier: chat, message: { author_id: "7", message: "back" } });
      expect(t.counters().sessionsRestored).toBe(1);
    });
  }

  test("an unknown sid gets a normal welcome, and nothing is delivered until the client subscribes", async () => {
    const t = await target();
    const { client, welcome } = await open(t, EXT, { query: "?sid=nobody" });
    expect(welcome).toEqual({ type: "welcome", sid: expect.any(String) });
    t.broadcast("quiet", '"x"');
    expect(await client.collect(200, notPing)).toEqual([]);
  });

  test("a session older than sessionsTtlMs is not restored; a plain client's sid parameter is ignored", async () => {
    const t = await target({ cable: { sessionsTtlMs: 100 } });
    const { client, welcome } = await open(t);
    await subscribed(client, pubsub("ttl"));
    client.close();
    await delay(250);
    expect((await open(t, EXT, { query: `?sid=${welcome.sid}` })).welcome).toEqual({ type: "welcome", sid: expect.any(String) });
    expect((await open(t, PLAIN, { query: `?sid=${welcome.sid}` })).welcome).toEqual({ type: "welcome" });
  });

  test("restart({ forgetState }) acts like restarting AnyCable's memory broker: new epoch, no restore, old positions rejected", async () => {
    const t = await target();
    const { client, welcome } = await open(t);
    const id = pubsub("volatile");
    await subscribed(client, id);
    t.broadcast("volatile", '"before"');
    const before = await client.next(notPing);
    expect(t.restart({ forgetState: true })).toBe(1);
    await client.closed;
    expect(t.epoch()).not.toBe(before.epoch);
    const { client: again, welcome: second } = await open(t, EXT, { query: `?sid=${welcome.sid}` });
    expect(second).toEqual({ type: "welcome", sid: expect.any(String) });
    await subscribed(again, id);
    again.send({ command: "history", identifier: id, history: { streams: { volatile: { epoch: before.epoch, offset: before.offset } } } });
    expect(await again.next(notPing)).toEqual({ type: "reject_history", identifier: id });
    t.broadcast("volatile", '"after"');
    expect(await again.next(notPing)).toMatchObject({ offset: 1, epoch: t.epoch() });
  });

  test("POST /_restart exists only with control, and drops the connections", async () => {
    const plain = await target();
    expect((await fetch(`${plain.httpUrl}/_restart`, { method: "POST" })).status).toBe(404);
    const t = await target({ control: true });
    const { client } = await open(t);
    const response = await fetch(`${t.httpUrl}/_restart`, { method: "POST" });
    expect(await response.json()).toEqual({ disconnected: 1 });
    expect(await client.next(notPing)).toEqual({ type: "disconnect", reason: "server_restart", reconnect: true });
  });

  test("POST /_partition exists only with control, checks its fields, and silences the sockets without closing them", async () => {
    const plain = await target();
    expect((await fetch(`${plain.httpUrl}/_partition?ms=1000`, { method: "POST" })).status).toBe(404);
    const t = await target({ control: true });
    expect((await fetch(`${t.httpUrl}/_partition?ms=0`, { method: "POST" })).status).toBe(400);
    expect((await fetch(`${t.httpUrl}/_partition?ms=1000&survivors=later`, { method: "POST" })).status).toBe(400);
    const { client } = await open(t);
    const response = await fetch(`${t.httpUrl}/_partition?ms=60000&survivors=forget`, { method: "POST" });
    expect(await response.json()).toEqual({ silenced: 1 });
    // The HTTP side still answers during the partition; the socket hears nothing, not even pings.
    expect((await fetch(`${t.httpUrl}/health`)).status).toBe(200);
    await expect(Promise.race([client.next(), new Promise((_, reject) => setTimeout(() => reject(new Error("silent")), 4_000))])).rejects.toThrow("silent");
    expect(t.counters().cableConnections).toBe(1);
  });
});

describe("whisper", () => {
  test("relays data to the other subscribers of a public stream, not to the sender, not into history", async () => {
    const t = await target();
    const id = pubsub("room");
    const a = (await open(t)).client;
    const b = (await open(t)).client;
    const c = (await open(t, PLAIN)).client;
    for (const client of [a, b, c]) await subscribed(client, id);
    a.send({ command: "whisper", identifier: id, data: { event: "typing", name: "a" } });
    const expected = `{"identifier":${JSON.stringify(id)},"message":{"event":"typing","name":"a"}}`;
    expect(await b.nextRaw()).toBe(expected);
    expect(await c.nextRaw()).toBe(expected);
    expect(await a.collect(200, notPing)).toEqual([]);
    t.broadcast("room", '"first broadcast"');
    expect(await b.next(notPing)).toMatchObject({ offset: 1 });
    expect(t.counters().whispers).toBe(1);
  });

  test("signed streams whisper only with streamsWhisper; channels without a whisper stream ignore it", async () => {
    for (const streamsWhisper of [false, true]) {
      const t = await target({ cable: { streamsWhisper } });
      const id = identifier("$pubsub", { signed_stream_name: signStreamName("secret", t.streamsSecret) });
      const a = (await open(t)).client;
      const b = (await open(t)).client;
      await subscribed(a, id);
      await subscribed(b, id);
      a.send({ command: "whisper", identifier: id, data: { x: 1 } });
      expect(await b.collect(200, notPing)).toEqual(streamsWhisper ? [{ identifier: id, message: { x: 1 } }] : []);
    }
    const t = await target();
    const chat = identifier("ChatChannel", { id: 5 });
    const a = (await open(t)).client;
    const b = (await open(t)).client;
    await subscribed(a, chat);
    await subscribed(b, chat);
    a.send({ command: "whisper", identifier: chat, data: { x: 1 } });
    expect(await b.collect(200, notPing)).toEqual([]);
  });
});

describe("presence", () => {
  test("join and leave are announced to every subscriber, the initiator included; info lists the set", async () => {
    const t = await target();
    const id = pubsub("lobby");
    const a = (await open(t)).client;
    const b = (await open(t)).client;
    await subscribed(a, id);
    await subscribed(b, id);
    a.send({ command: "join", identifier: id, presence: { id: "u1", info: { name: "Ann" } } });
    const joined = { type: "presence", identifier: id, message: { type: "join", id: "u1", info: { name: "Ann" } } };
    expect(await a.next(notPing)).toEqual(joined);
    expect(await b.next(notPing)).toEqual(joined);
    b.send({ command: "join", identifier: id, presence: { id: 2, info: "Bob" } });
    expect(await a.next(notPing)).toEqual({ type: "presence", identifier: id, message: { type: "join", id: "2", info: "Bob" } });
    await b.next(notPing);
    b.send({ command: "presence", identifier: id, data: {} });
    expect(await b.next(notPing)).toEqual({
      type: "presence",
      identifier: id,
      message: { type: "info", total: 2, records: [{ id: "u1", info: { name: "Ann" } }, { id: "2", info: "Bob" }] },
    });
    a.send({ command: "leave", identifier: id });
    const left = { type: "presence", identifier: id, message: { type: "leave", id: "u1" } };
    expect(await b.next(notPing)).toEqual(left);
    expect(await a.next(notPing)).toEqual(left);
    b.send({ command: "unsubscribe", identifier: id });
    expect(await a.next(notPing)).toEqual({ type: "presence", identifier: id, message: { type: "leave", id: "2" } });
  });

  test("a second session with the same presence id adds no join; a closed session leaves after presenceTtlMs", async () => {
    const t = await target({ cable: { presenceTtlMs: 100 } });
    const id = pubsub("ttl-room");
    const watcher = (await open(t)).client;
    const a = (await open(t)).client;
    await subscribed(watcher, id);
    await subscribed(a, id);
    watcher.send({ command: "join", identifier: id, presence: { id: "same" } });
    await watcher.next(notPing);
    await a.next(notPing);
    a.send({ command: "join", identifier: id, presence: { id: "same" } });
    a.send({ command: "join", identifier: id, presence: { id: "solo" } });
    expect(await watcher.collect(200, notPing)).toEqual([]);
    watcher.send({ command: "leave", identifier: id });
    const b = (await open(t)).client;
    await subscribed(b, id);
    b.send({ command: "join", identifier: id, presence: { id: "gone-soon" } });
    await watcher.next(notPing);
    b.close();
    // Swept once a second: the leave comes between the TTL and the next sweep.
    expect(await watcher.next(notPing, 2_500)).toEqual({ type: "presence", identifier: id, message: { type: "leave", id: "gone-soon" } });
  });

  test("presence info on a subscription without presence answers with an error; join there is ignored", async () => {
    const t = await target();
    const chat = identifier("ChatChannel", { id: 9 });
    const { client } = await open(t);
    await subscribed(client, chat);
    client.send({ command: "join", identifier: chat, presence: { id: "x" } });
    client.send({ command: "presence", identifier: chat, data: {} });
    expect(await client.next(notPing)).toEqual({ type: "presence", identifier: chat, message: { type: "error" } });
  });
});

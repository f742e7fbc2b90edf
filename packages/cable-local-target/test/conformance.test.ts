import { startAnyCable, startRails, startReverb, startSockudo, startSoketi } from "cable-test-servers";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { startTarget } from "../src/index.js";
import {
  connect,
  identifier,
  isPing,
  notPing,
  pusherClient,
  pusherData,
  subscribeFrame,
  triggerSigned,
  type PusherApp,
  type RawClient,
} from "./helpers.js";

/*
 * One set of protocol tests, run against the local target and against the real servers, so that the
 * target cannot drift from them: Action Cable against Rails 6.1 (cable-test-servers' config.ru, the
 * same channels), Pusher against Sockudo 5.2, Soketi 1.6.1 and Reverb 1.10.2. Where a real server legitimately differs, the
 * difference is a named expectation of that server below, not a weaker assertion.
 */

interface CableServer {
  cableUrl: string;
  stop(): Promise<void>;
}

const cableServers: Array<{ name: string; start(): Promise<CableServer> }> = [
  {
    name: "local target",
    start: async () => {
      const t = await startTarget();
      return { cableUrl: t.cableUrl, stop: () => t.close() };
    },
  },
  {
    name: "Rails Action Cable",
    start: async () => {
      const rails = await startRails();
      return { cableUrl: rails.url, stop: () => rails.stop() };
    },
  },
];

describe.each(cableServers)("Action Cable conformance: $name", ({ start }) => {
  let server: CableServer;
  const clients: RawClient[] = [];
  beforeAll(async () => {
    server = await start();
  });
  afterAll(async () => {
    for (const c of clients) c.close();
    await server?.stop();
  });

  async function open(cookie: string | null = "uid=Alice/42"): Promise<RawClient> {
    const client = await connect(server.cableUrl, { protocols: ["actioncable-v1-json", "actioncable-unsupported"], cookie: cookie ?? undefined });
    clients.push(client);
    return client;
  }

  async function welcomed(cookie?: string): Promise<RawClient> {
    const client = await open(cookie);
    expect(await client.next(notPing)).toEqual({ type: "welcome" });
    return client;
  }

  async function subscribe(client: RawClient, id: string): Promise<any> {
    client.send({ command: "subscribe", identifier: id });
    return client.next(notPing);
  }

  const perform = (client: RawClient, id: string, data: Record<string, unknown>) =>
    client.send({ command: "message", identifier: id, data: JSON.stringify(data) });

  test("negotiates actioncable-v1-json and welcomes", async () => {
    const client = await welcomed();
    expect(client.ws.protocol).toBe("actioncable-v1-json");
  });

  test("without the uid cookie: disconnect unauthorized, no reconnect, then close", async () => {
    const client = await open(null);
    expect(await client.next(notPing)).toEqual({ type: "disconnect", reason: "unauthorized", reconnect: false });
    const { code } = await client.closed;
    expect(code).toBe(1000);
    expect(client.received.map((r) => JSON.parse(r)).filter(notPing)).toHaveLength(1);
  });

  test("confirms with the identifier string echoed byte for byte", async () => {
    const client = await welcomed();
    const id = '{"id":7,  "channel":"ChatChannel"}';
    const frame = await subscribe(client, id);
    expect(frame).toEqual({ identifier: id, type: "confirm_subscription" });
  });

  test("RejectChannel is rejected, and the same identifier can be tried again", async () => {
    const client = await welcomed();
    const id = identifier("RejectChannel");
    expect(await subscribe(client, id)).toEqual({ identifier: id, type: "reject_subscription" });
    expect(await subscribe(client, id)).toEqual({ identifier: id, type: "reject_subscription" });
  });

  test("a second subscribe with the same identifier and an unknown channel get no answer", async () => {
    const client = await welcomed();
    const id = identifier("ChatChannel", { id: 8 });
    expect((await subscribe(client, id)).type).toBe("confirm_subscription");
    client.send({ command: "subscribe", identifier: id });
    client.send({ command: "subscribe", identifier: identifier("NoSuchChannel") });
    expect(await client.collect(700, notPing)).toEqual([]);
    // The connection is still usable.
    perform(client, id, { action: "speak", message: "still here" });
    expect((await client.next(notPing)).message.message).toBe("still here");
  });

  test("ChatChannel speak reaches the room with author_id and the extra fields, not other rooms", async () => {
    const alice = await welcomed("uid=Alice/42");
    const bob = await welcomed("uid=Bob/7");
    const elsewhere = await welcomed("uid=Carol/9");
    const room = identifier("ChatChannel", { id: 1 });
    const other = identifier("ChatChannel", { id: 2 });
    await subscribe(alice, room);
    await subscribe(bob, room);
    await subscribe(elsewhere, other);
    perform(alice, room, { action: "speak", message: "hi", ts: 1234, seq: 1 });
    const expected = { identifier: room, message: { action: "newMessage", author_id: "42", message: "hi", ts: 1234, seq: 1 } };
    expect(await alice.next(notPing)).toEqual(expected);
    expect(await bob.next(notPing)).toEqual(expected);
    expect(await elsewhere.collect(500, notPing)).toEqual([]);
  });

  test("BenchmarkChannel echo goes back to the sender only", async () => {
    const a = await welcomed();
    const b = await welcomed();
    const id = identifier("BenchmarkChannel");
    await subscribe(a, id);
    await subscribe(b, id);
    perform(a, id, { action: "echo", payload: { n: 1 } });
    expect(await a.next(notPing)).toEqual({ identifier: id, message: { action: "echo", payload: { n: 1 } } });
    expect(await b.collect(400, notPing)).toEqual([]);
  });

  test("BenchmarkChannel broadcast reaches everyone, and the sender also gets broadcastResult", async () => {
    const a = await welcomed();
    const b = await welcomed();
    const id = identifier("BenchmarkChannel");
    await subscribe(a, id);
    await subscribe(b, id);
    perform(a, id, { action: "broadcast", seq: 5 });
    const broadcast = { identifier: id, message: { action: "broadcast", seq: 5 } };
    expect(await b.next(notPing)).toEqual(broadcast);
    const toSender = [await a.next(notPing), await a.next(notPing)];
    expect(toSender).toContainEqual(broadcast);
    expect(toSender).toContainEqual({ identifier: id, message: { action: "broadcastResult", seq: 5 } });
  });

  test("unsubscribe is silent and stops the stream", async () => {
    const listener = await welcomed();
    const speaker = await welcomed();
    const room = identifier("ChatChannel", { id: 3 });
    await subscribe(listener, room);
    await subscribe(speaker, room);
    listener.send({ command: "unsubscribe", identifier: room });
    await new Promise((r) => setTimeout(r, 200));
    perform(speaker, room, { action: "speak", message: "gone?" });
    expect((await speaker.next(notPing)).message.message).toBe("gone?");
    expect(await listener.collect(500, notPing)).toEqual([]);
  });

  test("ChatChannel leave: disconnect remote without reconnect, then close", async () => {
    const client = await welcomed();
    const room = identifier("ChatChannel", { id: 4 });
    await subscribe(client, room);
    perform(client, room, { action: "leave" });
    expect(await client.next(notPing)).toEqual({ type: "disconnect", reason: "remote", reconnect: false });
    expect((await client.closed).code).toBe(1000);
  });

  test("garbage, unknown actions and messages to unknown subscriptions are dropped silently", async () => {
    const client = await welcomed();
    const room = identifier("ChatChannel", { id: 5 });
    await subscribe(client, room);
    client.send("not json");
    perform(client, room, { action: "no_such_action" });
    perform(client, identifier("ChatChannel", { id: 6 }), { action: "speak", message: "x" });
    expect(await client.collect(600, notPing)).toEqual([]);
    expect(client.ws.readyState).toBe(client.ws.OPEN);
  });

  test("pings every 3 s with the unix time in seconds", async () => {
    const client = await welcomed();
    const first = await client.next(isPing, 4_000);
    const second = await client.next(isPing, 4_000);
    expect(Number.isInteger(first.message)).toBe(true);
    expect(Math.abs(first.message - Date.now() / 1000)).toBeLessThan(5);
    expect(second.message - first.message).toBeGreaterThanOrEqual(2);
    expect(second.message - first.message).toBeLessThanOrEqual(4);
  }, 15_000);
});

interface PusherServerUnderTest {
  url: string;
  httpUrl: string;
  app: PusherApp;
  stop(): Promise<void>;
}

const pusherServers: Array<{
  name: string;
  start(): Promise<PusherServerUnderTest>;
  /** How the server answers a refused private subscription. */
  expectRefusal(frame: any, channel: string): void;
  /** The pusher:error code a refused client event gets. */
  clientEventErrorCode: number | null;
  /** How a connection to an unknown app key ends: the frames sent before (data decoded), and the close code. */
  unknownKey: { frames: unknown[]; closeCode: number };
  /**
   * Named differences from Pusher's own servers, each seen on the wire: subscription_succeeded of a
   * public channel without `data` (Soketi); client events on a public channel delivered to the
   * others, with no error to the sender (Soketi, Reverb); a refused HTTP publish answered 200 with
   * `{"error": …, "code": 401}` in the body (Soketi; the engine counts it as cable.publish_failed).
   */
  quirks?: {
    publicSucceededWithoutData?: boolean;
    publicClientEventsDelivered?: boolean;
    /** anycable-go: a client event on a public channel is dropped without an error. */
    publicClientEventsDropped?: boolean;
    refusedPublishStatus?: number;
    /** anycable-go: a joining member gets its own member_added first. */
    joinerHearsItself?: boolean;
    /** anycable-go: a second subscribe to a channel the socket has is not answered. */
    repeatSubscribeUnanswered?: boolean;
    /** anycable-go: an unknown key is refused at the upgrade with this HTTP status. */
    unknownKeyHttpStatus?: number;
  };
}> = [
  {
    name: "local target",
    start: async () => {
      const t = await startTarget();
      return { url: t.url, httpUrl: t.httpUrl, app: t.pusher, stop: () => t.close() };
    },
    // Pusher's own servers: pusher:subscription_error on the channel.
    expectRefusal(frame, channel) {
      expect(frame).toMatchObject({ event: "pusher:subscription_error", channel });
      expect(pusherData(frame)).toMatchObject({ type: "AuthError", status: 401 });
    },
    clientEventErrorCode: null,
    // Pusher's documented answer: pusher:error 4001 ("Application does not exist"), close 4001.
    unknownKey: { frames: [{ event: "pusher:error", data: { code: 4001 } }], closeCode: 4001 },
  },
  {
    name: "local target, Sockudo error style",
    start: async () => {
      const t = await startTarget({ pusher: { errorStyle: "sockudo" } });
      return { url: t.url, httpUrl: t.httpUrl, app: t.pusher, stop: () => t.close() };
    },
    expectRefusal: expectSockudoRefusal,
    clientEventErrorCode: 4301,
    unknownKey: { frames: [{ event: "pusher:error", data: { code: 4001 } }], closeCode: 4001 },
  },
  {
    name: "Sockudo",
    start: async () => underTest(await startSockudo()),
    expectRefusal: expectSockudoRefusal,
    clientEventErrorCode: 4301,
    // Sockudo drops the connection without a frame or a close handshake.
    unknownKey: { frames: [], closeCode: 1006 },
  },
  {
    name: "Soketi",
    start: async () => underTest(await startSoketi()),
    expectRefusal(frame, channel) {
      expect(frame).toMatchObject({ event: "pusher:subscription_error", channel });
      expect(pusherData(frame)).toMatchObject({ type: "AuthError", status: 401 });
    },
    clientEventErrorCode: null,
    unknownKey: { frames: [{ event: "pusher:error", data: { code: 4001 } }], closeCode: 4001 },
    quirks: { publicSucceededWithoutData: true, publicClientEventsDelivered: true, refusedPublishStatus: 200 },
  },
  {
    name: "Reverb",
    start: async () => underTest(await startReverb()),
    expectRefusal: expectSockudoRefusal,
    clientEventErrorCode: null,
    // pusher:error's data as a JSON string, then the socket dropped without a close handshake.
    unknownKey: { frames: [{ event: "pusher:error", data: { code: 4001 } }], closeCode: 1006 },
    quirks: { publicClientEventsDelivered: true },
  },
  {
    name: "anycable-go (Pusher mode)",
    start: async () => {
      const app = { appId: "cable-test", key: "cable-test-key", secret: "cable-test-secret" };
      const anycable = await startAnyCable({ pusher: app, broker: "memory" });
      return { url: anycable.pusherUrl, httpUrl: `http://127.0.0.1:${anycable.port}`, app, stop: () => anycable.stop() };
    },
    expectRefusal: expectSockudoRefusal,
    clientEventErrorCode: null,
    unknownKey: { frames: [], closeCode: 1006 },
    quirks: { joinerHearsItself: true, publicClientEventsDropped: true, repeatSubscribeUnanswered: true, unknownKeyHttpStatus: 404 },
  },
];

/** A harness server (its socket host, the HTTP API on the same port) as the tests use it. */
function underTest(server: { url: string; port: number; appId: string; key: string; secret: string; stop(): Promise<void> }): PusherServerUnderTest {
  return { url: server.url, httpUrl: `http://127.0.0.1:${server.port}`, app: { appId: server.appId, key: server.key, secret: server.secret }, stop: () => server.stop() };
}

function expectSockudoRefusal(frame: any): void {
  expect(frame.event).toBe("pusher:error");
  expect(pusherData(frame)).toMatchObject({ code: 4009 });
}

describe.each(pusherServers)("Pusher conformance: $name", ({ start, expectRefusal, clientEventErrorCode, unknownKey, quirks = {} }) => {
  let server: PusherServerUnderTest;
  const clients: RawClient[] = [];
  beforeAll(async () => {
    server = await start();
  });
  afterAll(async () => {
    for (const c of clients) c.close();
    await server?.stop();
  });

  async function open() {
    const connected = await pusherClient(server.url, server.app.key);
    clients.push(connected.client);
    return connected;
  }

  async function joined(channel: string, channelData?: string) {
    const connected = await open();
    connected.client.send(subscribeFrame(server.app, connected.socketId, channel, channelData));
    const frame = await connected.client.next();
    expect(frame).toMatchObject({ event: "pusher_internal:subscription_succeeded", channel });
    return { ...connected, succeeded: frame };
  }

  test("connection_established carries socket_id and activity_timeout as a JSON string", async () => {
    const client = await connect(`${server.url}/app/${server.app.key}?protocol=7&client=js&version=8.4.0`);
    clients.push(client);
    const frame = await client.next();
    expect(frame.event).toBe("pusher:connection_established");
    expect(typeof frame.data).toBe("string");
    const data = JSON.parse(frame.data);
    expect(data.socket_id).toMatch(/^\d+\.\d+$/);
    expect(typeof data.activity_timeout).toBe("number");
  });

  test("pusher:ping is answered with pusher:pong", async () => {
    const { client } = await open();
    client.send({ event: "pusher:ping", data: {} });
    expect((await client.next()).event).toBe("pusher:pong");
  });

  test("a public channel subscribes without auth; subscription_succeeded data is empty", async () => {
    const { succeeded } = await joined("conformance-public");
    if (quirks.publicSucceededWithoutData) expect(succeeded).not.toHaveProperty("data");
    else expect(pusherData(succeeded)).toEqual({});
  });

  test("a private channel subscribes with a valid signature", async () => {
    await joined("private-conformance");
  });

  test("a private channel with a bad signature is refused", async () => {
    const { client, socketId } = await open();
    const frame = subscribeFrame(server.app, socketId, "private-refused");
    frame.data.auth = `${server.app.key}:${"0".repeat(64)}`;
    client.send(frame);
    expectRefusal(await client.next(), "private-refused");
  });

  test("presence: members listed on join, member_added and member_removed to the others", async () => {
    const channel = "presence-conformance";
    const first = await joined(channel, JSON.stringify({ user_id: "1", user_info: { name: "One" } }));
    if (quirks.joinerHearsItself) expect(await first.client.next()).toMatchObject({ event: "pusher_internal:member_added", channel, data: expect.anything() });
    expect(pusherData(first.succeeded)).toEqual({ presence: { ids: ["1"], hash: { "1": { name: "One" } }, count: 1 } });
    const second = await joined(channel, JSON.stringify({ user_id: "2", user_info: { name: "Two" } }));
    const roster = pusherData(second.succeeded).presence;
    expect(roster.count).toBe(2);
    expect([...roster.ids].sort()).toEqual(["1", "2"]);
    expect(roster.hash).toEqual({ "1": { name: "One" }, "2": { name: "Two" } });
    const added = await first.client.next();
    expect(added).toMatchObject({ event: "pusher_internal:member_added", channel });
    expect(pusherData(added)).toEqual({ user_id: "2", user_info: { name: "Two" } });
    second.client.send({ event: "pusher:unsubscribe", data: { channel } });
    const removed = await first.client.next();
    expect(removed).toMatchObject({ event: "pusher_internal:member_removed", channel });
    expect(pusherData(removed)).toEqual({ user_id: "2" });
  });

  test("client events reach the other subscribers of a private channel, not the sender", async () => {
    const channel = "private-client-events";
    const sender = await joined(channel);
    const receiver = await joined(channel);
    sender.client.send({ event: "client-typing", channel, data: { ts: 123 } });
    const frame = await receiver.client.next();
    expect(frame).toMatchObject({ event: "client-typing", channel });
    expect(pusherData(frame)).toEqual({ ts: 123 });
    expect(await sender.client.collect(400)).toEqual([]);
  });

  test("client events on a public channel are not delivered; the sender gets pusher:error", async () => {
    const channel = "public-client-events";
    const sender = await joined(channel);
    const receiver = await joined(channel);
    sender.client.send({ event: "client-typing", channel, data: { ts: 1 } });
    if (quirks.publicClientEventsDropped) {
      expect(await receiver.client.collect(500)).toEqual([]);
      expect(await sender.client.collect(200)).toEqual([]);
      return;
    }
    if (quirks.publicClientEventsDelivered) {
      const delivered = await receiver.client.collect(500);
      expect(delivered).toMatchObject([{ event: "client-typing", channel }]);
      expect(await sender.client.collect(200)).toEqual([]);
      return;
    }
    expect(await receiver.client.collect(500)).toEqual([]);
    const error = await sender.client.next();
    expect(error).toMatchObject({ event: "pusher:error", data: { code: clientEventErrorCode } });
  });

  test("a repeated subscribe is answered with subscription_succeeded again", async () => {
    const { client, socketId } = await joined("repeat-subscribe");
    client.send(subscribeFrame(server.app, socketId, "repeat-subscribe"));
    if (quirks.repeatSubscribeUnanswered) return void expect(await client.collect(500)).toEqual([]);
    expect(await client.next()).toMatchObject({ event: "pusher_internal:subscription_succeeded", channel: "repeat-subscribe" });
  });

  test("an unknown app key is refused", async () => {
    if (quirks.unknownKeyHttpStatus) {
      await expect(connect(`${server.url}/app/no-such-key?protocol=7&client=js&version=8.4.0`)).rejects.toThrow(`Unexpected server response: ${quirks.unknownKeyHttpStatus}`);
      return;
    }
    const client = await connect(`${server.url}/app/no-such-key?protocol=7&client=js&version=8.4.0`);
    clients.push(client);
    const { code } = await client.closed;
    expect(code).toBe(unknownKey.closeCode);
    expect(client.received.map((raw) => JSON.parse(raw)).map((frame) => ({ ...frame, data: pusherData(frame) }))).toMatchObject(unknownKey.frames);
  });

  test("the signed HTTP events API delivers to subscribers; socket_id excludes one", async () => {
    const channel = "api-conformance";
    const a = await joined(channel);
    const b = await joined(channel);
    const response = await triggerSigned(server.httpUrl, server.app, { name: "tick", channel, data: '{"seq":1}', socket_id: a.socketId });
    expect(response.status).toBe(200);
    const frame = await b.client.next();
    expect(frame).toMatchObject({ event: "tick", channel });
    expect(pusherData(frame)).toEqual({ seq: 1 });
    expect(await a.client.collect(400)).toEqual([]);
  });

  test("the HTTP events API refuses a bad signature with 401", async () => {
    const response = await triggerSigned(server.httpUrl, server.app, { name: "tick", channel: "x", data: "1" }, { secret: "not-the-secret" });
    expect(response.status).toBe(quirks.refusedPublishStatus ?? 401);
    if (quirks.refusedPublishStatus) expect(await response.json()).toMatchObject({ error: expect.any(String), code: 401 });
  });
});

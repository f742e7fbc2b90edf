import { startAnyCable } from "cable-test-servers";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { signStreamName, startTarget } from "../src/index.js";
import { connect, delay, identifier, notPing, type RawClient } from "./helpers.js";

/*
 * The same AnyCable exchanges against the local target and against a real anycable-go 1.6.16
 * (`--public --streams_secret --streams_whisper --broker=memory`, HTTP broadcasts): every frame each
 * client receives is recorded, normalised only where values are random (sid, epoch), and the two
 * transcripts must be equal. A frame the real server never sends (the target once invented a
 * `{"type":"whisper"}` frame) fails here.
 */

const SECRET = "conformance-streams-secret";

interface Server {
  name: string;
  cableUrl: string;
  broadcastUrl: string;
  stop(): Promise<void>;
}

const servers: Array<{ name: string; start(): Promise<Server> }> = [
  {
    name: "local target",
    start: async () => {
      const t = await startTarget({ cable: { requireUid: false, streamsSecret: SECRET, streamsWhisper: true, streamsPresence: true } });
      return { name: "local target", cableUrl: t.cableUrl, broadcastUrl: `${t.httpUrl}/_broadcast`, stop: () => t.close() };
    },
  },
  {
    name: "anycable-go",
    start: async () => {
      const a = await startAnyCable({ streamsSecret: SECRET, broker: "memory" });
      return { name: "anycable-go", cableUrl: a.url, broadcastUrl: a.broadcastUrl, stop: () => a.stop() };
    },
  },
];

/** What a client heard, ping frames left out, random values replaced by their name. */
function transcript(client: RawClient): unknown[] {
  return client.received
    .map((raw) => JSON.parse(raw))
    .filter(notPing)
    .map((frame) => {
      const f = { ...frame };
      if (typeof f.sid === "string") f.sid = "<sid>";
      if (typeof f.epoch === "string") f.epoch = "<epoch>";
      return f;
    });
}

/** Frames on loopback arrive well within this; both servers get the same pauses. */
const settle = () => delay(200);

async function broadcast(server: Server, stream: string, data: unknown): Promise<void> {
  const res = await fetch(server.broadcastUrl, { method: "POST", body: JSON.stringify({ stream, data: JSON.stringify(data) }) });
  expect(res.status).toBeLessThan(300);
  await res.arrayBuffer();
}

/** Runs one exchange on a server and returns every client's transcript by name. */
type Exchange = (
  server: Server,
  open: (query?: string, protocol?: string) => Promise<RawClient>,
  stream: { name: string; room: string },
) => Promise<Record<string, RawClient>>;

const exchanges: Record<string, Exchange> = {
  "extended welcome, $pubsub subscribe, HTTP broadcast with stream positions": async (server, open, { name: stream, room }) => {
    const a = await open();
    a.send({ command: "subscribe", identifier: room });
    await settle();
    await broadcast(server, stream, { n: 1 });
    await settle();
    return { a };
  },
  "a whisper reaches the others as a plain message frame (no type), never its sender": async (_server, open, { name: stream, room }) => {
    const [a, b] = [await open(), await open()];
    for (const c of [a, b]) c.send({ command: "subscribe", identifier: room });
    await settle();
    a.send({ command: "whisper", identifier: room, data: { typing: true, from: "a" } });
    await settle();
    return { a, b };
  },
  "presence: join goes to every subscriber, the joiner included; info; leave": async (_server, open, { name: stream, room }) => {
    const [a, b] = [await open(), await open()];
    for (const c of [a, b]) c.send({ command: "subscribe", identifier: room });
    await settle();
    a.send({ command: "join", identifier: room, presence: { id: "u1", info: { name: "A" } } });
    await settle();
    b.send({ command: "presence", identifier: room });
    await settle();
    a.send({ command: "leave", identifier: room });
    await settle();
    return { a, b };
  },
  "history since a time replays then confirms; an unknown epoch is rejected": async (server, open, { name: stream, room }) => {
    const a = await open();
    a.send({ command: "subscribe", identifier: room });
    await settle();
    await broadcast(server, stream, { n: 1 });
    await broadcast(server, stream, { n: 2 });
    await settle();
    const b = await open();
    b.send({ command: "subscribe", identifier: room });
    await settle();
    b.send({ command: "history", identifier: room, history: { since: Math.floor(Date.now() / 1000) - 60 } });
    await settle();
    b.send({ command: "history", identifier: room, history: { streams: { [stream]: { epoch: "not-the-epoch", offset: 1 } } } });
    await settle();
    return { a, b };
  },
  "session restore: a reconnect with ?sid= is welcomed restored, with its channels": async (server, open, { name: stream, room }) => {
    const a = await open();
    a.send({ command: "subscribe", identifier: room });
    await settle();
    const sid = JSON.parse(a.received[0]).sid as string;
    a.close();
    await settle();
    await broadcast(server, stream, { n: 1 });
    const again = await open(`sid=${encodeURIComponent(sid)}`);
    await settle();
    return { again };
  },
  "signed streams: a good signature is confirmed, a forged one rejected": async (_server, open, { name: stream, room }) => {
    const a = await open();
    a.send({ command: "subscribe", identifier: identifier("$pubsub", { signed_stream_name: signStreamName(stream, SECRET) }) });
    a.send({ command: "subscribe", identifier: identifier("$pubsub", { signed_stream_name: signStreamName(stream, "forged") }) });
    await settle();
    return { a };
  },
  "the plain protocol on a reliable stream": async (server, open, { name: stream, room }) => {
    const a = await open(undefined, "actioncable-v1-json");
    a.send({ command: "subscribe", identifier: room });
    await settle();
    await broadcast(server, stream, { n: 1 });
    await settle();
    return { a };
  },
};

describe("AnyCable conformance: the local target against anycable-go", () => {
  const running: Server[] = [];
  beforeAll(async () => {
    running.push(...(await Promise.all(servers.map((s) => s.start()))));
  });
  afterAll(async () => {
    await Promise.all(running.map((s) => s.stop()));
  });

  test.each(Object.keys(exchanges).map((name, i) => [name, i] as const))("%s", async (name, i) => {
    const stream = `room-${i}`;
    const heard: Record<string, Record<string, unknown[]>> = {};
    for (const server of running) {
      const clients: RawClient[] = [];
      const open = async (query?: string, protocol = "actioncable-v1-ext-json") => {
        const client = await connect(query ? `${server.cableUrl}?${query}` : server.cableUrl, { protocols: [protocol] });
        clients.push(client);
        return client;
      };
      try {
        // Each exchange has a stream of its own: the servers keep history between exchanges.
        const byName = await exchanges[name](server, open, { name: stream, room: identifier("$pubsub", { stream_name: stream }) });
        heard[server.name] = Object.fromEntries(Object.entries(byName).map(([who, client]) => [who, transcript(client)]));
      } finally {
        for (const c of clients) c.close();
      }
    }
    if (name === "the plain protocol on a reliable stream") {
      // A named difference: anycable-go gives plain actioncable-v1-json clients a sid and stream
      // positions too; the local target speaks the plain protocol as Rails does, without them.
      // Clients of the plain protocol ignore both, so the rest must be equal.
      const plain = heard["anycable-go"].a as Record<string, unknown>[];
      expect(plain[0]).toEqual({ type: "welcome", sid: "<sid>" });
      expect(plain[2]).toMatchObject({ stream_id: stream, epoch: "<epoch>", offset: 1 });
      heard["anycable-go"].a = plain.map(({ sid: _sid, stream_id: _s, epoch: _e, offset: _o, ...rest }) => rest);
    }
    expect(heard["local target"]).toEqual(heard["anycable-go"]);
    // An exchange that heard nothing would prove nothing.
    expect(Object.values(heard["anycable-go"]).flat().length).toBeGreaterThan(0);
  });
});

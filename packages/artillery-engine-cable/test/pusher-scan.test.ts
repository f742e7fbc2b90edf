import { describe, expect, test } from "vitest";
import { decodePusher } from "../src/protocol/pusher.js";
import { scanPusherInto } from "../src/protocol/pusher-scan.js";
import { rawBroadcast, scanActionCableInto, stampKey } from "../src/protocol/scan.js";

const ts = stampKey("ts");

/** What the listen path reads of a frame, in the decoder's terms; undefined: it goes to the decoder. */
function scanned(frame: string) {
  const data = Buffer.from(frame);
  const out = scanPusherInto(data, ts, rawBroadcast());
  if (!out) return undefined;
  return {
    channel: JSON.parse(`"${data.toString("utf8", out.idStart, out.idEnd)}"`) as string,
    stamp: out.stamp,
    seq: out.seq,
    sender: out.senderStart >= 0 ? data.toString("utf8", out.senderStart, out.senderEnd) : undefined,
  };
}

/** The same, read by the full decoder. */
function decoded(frame: string) {
  const ev = decodePusher(frame);
  if (ev.kind !== "message") return undefined;
  const p = (ev.payload ?? {}) as Record<string, unknown>;
  return {
    channel: ev.channel,
    stamp: typeof p.ts === "number" ? p.ts : undefined,
    seq: typeof p.seq === "number" ? p.seq : undefined,
    sender: typeof p.sender === "string" ? p.sender : undefined,
  };
}

const event = (fields: Record<string, unknown>) => JSON.stringify(fields);

describe("the Pusher listen path reads channel events from their raw bytes", () => {
  const frames = [
    // The local target and Soketi: event, channel, data as a JSON string.
    event({ event: "message", channel: "private-room-7", data: JSON.stringify({ text: "hello", ts: 1764000000123, seq: 4, sender: "vu-1f" }) }),
    // Another key order, data as an object (some servers), a presence channel.
    event({ data: { ts: 1764000000999, text: 'a "quoted" }{ ts', nested: { ts: 1, seq: 9 } }, channel: "presence-lobby", event: "client-typing" }),
    // Unstamped, a number payload field order of its own, spaces.
    '{ "event" : "update" , "channel" : "public" , "data" : "{\\"n\\": 3, \\"ts\\": 12.5}" }',
    // A user_id beside the data (client events on presence channels).
    event({ event: "client-x", channel: "presence-a", data: JSON.stringify({ seq: 1, sender: "s" }), user_id: "u1" }),
  ];

  test.each(frames)("%s: the same channel, stamp, seq and sender as the decoder reads", (frame) => {
    expect(scanned(frame)).toBeDefined();
    expect(scanned(frame)).toEqual(decoded(frame));
  });

  test("protocol frames, pings among them (the decoder writes their pong), go to the decoder", () => {
    for (const frame of [
      event({ event: "pusher:ping", data: {} }),
      event({ event: "pusher:connection_established", data: JSON.stringify({ socket_id: "1.2", activity_timeout: 30 }) }),
      event({ event: "pusher_internal:subscription_succeeded", channel: "private-a", data: "{}" }),
      event({ event: "pusher:error", data: { code: 4009, message: "no" } }),
    ]) {
      expect(scanned(frame), frame).toBeUndefined();
    }
  });

  test("what it cannot read exactly goes to the decoder: escapes in the payload, a non-object payload, a broken frame", () => {
    for (const frame of [
      event({ event: "m", channel: "c", data: JSON.stringify({ text: 'say "hi"', ts: 1 }) }),
      event({ event: "m", channel: "c", data: "plain text" }),
      event({ event: "m", channel: "c", data: 42 }),
      event({ event: "m", data: JSON.stringify({ ts: 1 }) }),
      '{"event":"m","channel":"c","data":"{\\"ts\\":1}"',
      '{"event":"m","channel":"c","data":"{\\"ts\\":1}",}',
      '{"event":"m","channel":"c","data":"{\\"ts\\":1}"} ',
      '{"event":"m","channel":"c","data":{"ts":1}}}',
    ]) {
      expect(scanned(frame), frame).toBeUndefined();
    }
  });

  test("an escaped sender is left to the decoder, so that the ledger keys it as parsed", () => {
    const data = Buffer.from(event({ event: "m", channel: "c", data: { seq: 2, sender: "a\\b" } }));
    const out = scanPusherInto(data, ts, rawBroadcast())!;
    expect(out).toMatchObject({ ledger: true, seq: 2, senderStart: -1 });
  });
});

describe("the Action Cable listen path reads the ledger's seq and sender too", () => {
  test("a stamped send's seq and sender, as plain bytes", () => {
    const frame = Buffer.from(JSON.stringify({ identifier: JSON.stringify({ channel: "Chat" }), message: { ts: 5, seq: 3, sender: "vu-9", deep: { seq: 8 } } }));
    const out = scanActionCableInto(frame, ts, rawBroadcast());
    expect(out).not.toBe("ping");
    const o = out as Exclude<typeof out, "ping" | undefined>;
    expect([o.stamp, o.seq, o.ledger, frame.toString("utf8", o.senderStart, o.senderEnd)]).toEqual([5, 3, true, "vu-9"]);
  });
});

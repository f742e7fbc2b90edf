import { describe, expect, test } from "vitest";
import { createHmac } from "node:crypto";
import {
  buildIdentifier,
  createActionCableProtocol,
  decodeActionCable,
  encodeHistory,
  encodePerform,
  encodePresence,
  encodeSubscribe,
  encodeWhisper,
  MalformedFrame,
  PONG,
  pubsubIdentifier,
  subscriptionIdentifier,
} from "../src/protocol/actioncable.js";
import { signStreamName } from "../src/protocol/anycable-signatures.js";

describe("Action Cable framing", () => {
  test("an identifier is a JSON string with the channel first, as @rails/actioncable builds it", () => {
    expect(buildIdentifier("ChatChannel", { id: 42 })).toBe('{"channel":"ChatChannel","id":42}');
    expect(buildIdentifier("ChatChannel")).toBe('{"channel":"ChatChannel"}');
  });

  test("subscribe carries the identifier as a string, not an object", () => {
    const frame = JSON.parse(encodeSubscribe(buildIdentifier("ChatChannel", { id: "demo" })));
    expect(frame).toEqual({ command: "subscribe", identifier: '{"channel":"ChatChannel","id":"demo"}' });
  });

  test("perform puts the action inside the data string, after the data's own fields", () => {
    const raw = encodePerform('{"channel":"ChatChannel"}', "speak", { message: "hi", ts: 1 });
    expect(raw).toBe('{"command":"message","identifier":"{\\"channel\\":\\"ChatChannel\\"}","data":"{\\"message\\":\\"hi\\",\\"ts\\":1,\\"action\\":\\"speak\\"}"}');
  });

  test("the server's frames are classified", () => {
    expect(decodeActionCable('{"type":"welcome"}')).toEqual({ kind: "welcome", sid: undefined });
    expect(decodeActionCable('{"type":"welcome","sid":"abc"}')).toEqual({ kind: "welcome", sid: "abc" });
    expect(decodeActionCable('{"type":"ping","message":1700000000}')).toEqual({ kind: "ping" });
    expect(decodeActionCable('{"identifier":"{\\"channel\\":\\"C\\"}","type":"confirm_subscription"}')).toEqual({ kind: "confirm", channel: '{"channel":"C"}' });
    expect(decodeActionCable('{"identifier":"X","type":"reject_subscription"}')).toEqual({ kind: "reject", channel: "X", reason: "rejected", cause: "app_rejected" });
    expect(decodeActionCable('{"type":"disconnect","reason":"unauthorized","reconnect":false}')).toEqual({ kind: "disconnect", reason: "unauthorized", reconnect: false });
    expect(decodeActionCable('{"identifier":"X","message":{"a":1}}')).toEqual({ kind: "message", channel: "X", payload: { a: 1 } });
  });

  test("AnyCable's extended frames: sid, restore, stream positions, history answers, presence", () => {
    expect(decodeActionCable('{"type":"welcome","sid":"s1","restored":true,"restored_ids":["A","B"]}')).toEqual({
      kind: "welcome",
      sid: "s1",
      restored: true,
      restoredIds: ["A", "B"],
    });
    expect(decodeActionCable('{"identifier":"X","message":{"a":1},"stream_id":"chat","epoch":"e1","offset":7}')).toEqual({
      kind: "message",
      channel: "X",
      payload: { a: 1 },
      position: { stream: "chat", epoch: "e1", offset: 7 },
    });
    expect(decodeActionCable('{"type":"confirm_history","identifier":"X"}')).toEqual({ kind: "history", channel: "X", ok: true });
    expect(decodeActionCable('{"type":"reject_history","identifier":"X"}')).toEqual({ kind: "history", channel: "X", ok: false });
    expect(decodeActionCable('{"type":"presence","identifier":"X","message":{"type":"join","id":"7","info":{"name":"Kay"}}}')).toEqual({
      kind: "message",
      channel: "X",
      event: "presence:join",
      payload: { type: "join", id: "7", info: { name: "Kay" } },
    });
  });

  test("AnyCable's client frames: pong, history, whisper, presence, $pubsub identifiers", () => {
    expect(JSON.parse(PONG)).toEqual({ command: "pong" });
    expect(JSON.parse(encodeHistory("X", { since: 100 }))).toEqual({ command: "history", identifier: "X", history: { since: 100 } });
    expect(JSON.parse(encodeHistory("X", { streams: { chat: { epoch: "e1", offset: 7 } } }))).toEqual({
      command: "history",
      identifier: "X",
      history: { streams: { chat: { epoch: "e1", offset: 7 } } },
    });
    expect(JSON.parse(encodeWhisper("X", { typing: true }))).toEqual({ command: "whisper", identifier: "X", data: { typing: true } });
    expect(JSON.parse(encodePresence("join", "X", { id: "7", info: { n: 1 } }))).toEqual({ command: "join", identifier: "X", presence: { id: "7", info: { n: 1 } } });
    expect(pubsubIdentifier({ name: "chat/1" })).toBe('{"channel":"$pubsub","stream_name":"chat/1"}');
  });

  test("signed streams: $pubsub, and Turbo Streams' channel with signed_stream_name", () => {
    const signed = signStreamName("chat/1", "secret");
    // base64(JSON("chat/1")) + "--" + hex HMAC-SHA256 of the base64 part (anycable-go docs/signed_streams.md).
    expect(signed.split("--")[0]).toBe(Buffer.from('"chat/1"').toString("base64"));
    expect(signed.split("--")[1]).toBe(createHmac("sha256", "secret").update(signed.split("--")[0]).digest("hex"));
    expect(subscriptionIdentifier({ signedStream: "chat/1" }, "secret")).toBe(JSON.stringify({ channel: "$pubsub", signed_stream_name: signed }));
    expect(subscriptionIdentifier({ channel: "Turbo::StreamsChannel", signedStream: "chat/1" }, "secret")).toBe(
      JSON.stringify({ channel: "Turbo::StreamsChannel", signed_stream_name: signed }),
    );
    expect(subscriptionIdentifier({ stream: "news" }, undefined)).toBe('{"channel":"$pubsub","stream_name":"news"}');
  });

  test("the extended protocol is offered alone, since anycable-go prefers plain when offered both", () => {
    expect(createActionCableProtocol({ extended: "preferred" }).subprotocols).toEqual(["actioncable-v1-ext-json"]);
    expect(createActionCableProtocol({ extended: "required" }).subprotocols).toEqual(["actioncable-v1-ext-json"]);
    expect(createActionCableProtocol({ extended: "off" }).subprotocols).toEqual(["actioncable-v1-json"]);
  });

  test("a message with a null or scalar payload is still a message", () => {
    expect(decodeActionCable('{"identifier":"X","message":null}')).toEqual({ kind: "message", channel: "X", payload: null });
    expect(decodeActionCable('{"identifier":"X","message":"text"}')).toEqual({ kind: "message", channel: "X", payload: "text" });
  });

  test("an unknown type from a newer server is tolerated", () => {
    expect(decodeActionCable('{"type":"some_future_type","identifier":"X"}')).toEqual({ kind: "other" });
  });

  test.each([["not json"], ["[1,2]"], ["null"], ['{"foo":1}'], ['{"type":"confirm_subscription"}']])("%s is malformed", (text) => {
    expect(() => decodeActionCable(text)).toThrow(MalformedFrame);
  });

  test("the protocol offers actioncable-v1-json and pings every 3 s", () => {
    const actionCable = createActionCableProtocol();
    expect(actionCable.subprotocols).toEqual(["actioncable-v1-json"]);
    expect(actionCable.pingIntervalMs).toBe(3000);
    expect(actionCable.subscribe({ channel: "C", params: { id: 1 } }, undefined)).toEqual({
      key: '{"channel":"C","id":1}',
      frame: '{"command":"subscribe","identifier":"{\\"channel\\":\\"C\\",\\"id\\":1}"}',
    });
  });
});

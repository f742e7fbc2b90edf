import { describe, expect, test } from "vitest";
import { actionCable, buildIdentifier, decodeActionCable, encodePerform, encodeSubscribe, MalformedFrame } from "../src/protocol/actioncable.js";

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
    expect(decodeActionCable('{"identifier":"X","type":"reject_subscription"}')).toEqual({ kind: "reject", channel: "X", reason: "rejected" });
    expect(decodeActionCable('{"type":"disconnect","reason":"unauthorized","reconnect":false}')).toEqual({ kind: "disconnect", reason: "unauthorized", reconnect: false });
    expect(decodeActionCable('{"identifier":"X","message":{"a":1}}')).toEqual({ kind: "message", channel: "X", payload: { a: 1 } });
  });

  test("a message with a null or scalar payload is still a message", () => {
    expect(decodeActionCable('{"identifier":"X","message":null}')).toEqual({ kind: "message", channel: "X", payload: null });
    expect(decodeActionCable('{"identifier":"X","message":"text"}')).toEqual({ kind: "message", channel: "X", payload: "text" });
  });

  test("an unknown type from a newer server is tolerated", () => {
    expect(decodeActionCable('{"type":"confirm_history","identifier":"X"}')).toEqual({ kind: "other" });
  });

  test.each([["not json"], ["[1,2]"], ["null"], ['{"foo":1}'], ['{"type":"confirm_subscription"}']])("%s is malformed", (text) => {
    expect(() => decodeActionCable(text)).toThrow(MalformedFrame);
  });

  test("the protocol offers actioncable-v1-json and pings every 3 s", () => {
    expect(actionCable.subprotocols).toEqual(["actioncable-v1-json"]);
    expect(actionCable.pingIntervalMs).toBe(3000);
    expect(actionCable.subscribe({ channel: "C", params: { id: 1 } }, undefined)).toEqual({
      key: '{"channel":"C","id":1}',
      frame: '{"command":"subscribe","identifier":"{\\"channel\\":\\"C\\",\\"id\\":1}"}',
    });
  });
});

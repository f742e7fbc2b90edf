import { describe, expect, test } from "vitest";
import * as cable from "../src/actioncable/frames.js";
import { userIdFromUid } from "../src/actioncable/channels.js";
import { chooseSubprotocol } from "../src/actioncable/server.js";
import * as pusher from "../src/pusher/frames.js";

describe("Action Cable frames", () => {
  test("server frames have Rails' shapes and key order", () => {
    expect(cable.WELCOME).toBe('{"type":"welcome"}');
    expect(cable.ping(1700000000)).toBe('{"type":"ping","message":1700000000}');
    expect(cable.disconnect("unauthorized", false)).toBe('{"type":"disconnect","reason":"unauthorized","reconnect":false}');
    const id = '{"channel":"ChatChannel","id":42}';
    expect(cable.confirmSubscription(id)).toBe('{"identifier":"{\\"channel\\":\\"ChatChannel\\",\\"id\\":42}","type":"confirm_subscription"}');
    expect(JSON.parse(cable.rejectSubscription(id))).toEqual({ identifier: id, type: "reject_subscription" });
  });

  test("a channel message echoes the identifier string byte for byte and splices the payload JSON", () => {
    // Unusual spacing and key order must survive: clients match subscriptions on the exact string.
    const id = '{ "id": 1, "channel":"ChatChannel" }';
    const frame = cable.channelMessage(id, '{"a":1}');
    expect(JSON.parse(frame)).toEqual({ identifier: id, message: { a: 1 } });
    expect(frame).toBe(`{"identifier":${JSON.stringify(id)},"message":{"a":1}}`);
  });

  test("broadcast data is embedded as JSON when it is JSON, else as a string", () => {
    expect(cable.broadcastPayloadJson('{"text":"hi"}')).toBe('{"text":"hi"}');
    expect(cable.broadcastPayloadJson("plain text")).toBe('"plain text"');
    expect(cable.broadcastPayloadJson("42")).toBe("42");
  });

  test("client commands parse, and what Rails would drop comes back as an error", () => {
    expect(cable.parseClientCommand('{"command":"subscribe","identifier":"{}"}')).toEqual({ command: "subscribe", identifier: "{}" });
    expect(cable.parseClientCommand('{"command":"message","identifier":"x","data":"{\\"action\\":\\"speak\\"}"}')).toEqual({
      command: "message",
      identifier: "x",
      data: '{"action":"speak"}',
    });
    expect(cable.parseClientCommand("nope")).toEqual({ error: "not JSON" });
    expect(cable.parseClientCommand('{"command":"message","identifier":"x","data":{"action":"speak"}}')).toEqual({ error: "data is not a string" });
    expect(cable.parseClientCommand('{"command":"subscribe","identifier":{"channel":"X"}}')).toEqual({ error: "identifier is not a string" });
    expect(cable.parseClientCommand('{"command":"history","identifier":"x"}')).toEqual({ error: 'unrecognized command "history"' });
  });

  test("identifiers decode to channel and params", () => {
    expect(cable.parseIdentifier('{"channel":"ChatChannel","id":42}')).toEqual({ channel: "ChatChannel", params: { id: 42 } });
    expect(cable.parseIdentifier('{"id":42}')).toBeUndefined();
    expect(cable.parseIdentifier("[1]")).toBeUndefined();
    expect(cable.parseIdentifier("{")).toBeUndefined();
  });

  test("current_user is the part of the uid cookie after the last slash, as Ruby's split('/').last", () => {
    expect(userIdFromUid("Alice/123")).toBe("123");
    expect(userIdFromUid("abc")).toBe("abc");
    expect(userIdFromUid("a/b/7")).toBe("7");
    expect(userIdFromUid("Bob/")).toBe("Bob");
  });

  test("the subprotocol is picked in Rails' order of preference", () => {
    expect(chooseSubprotocol(new Set(["actioncable-unsupported", "actioncable-v1-json"]))).toBe("actioncable-v1-json");
    expect(chooseSubprotocol(new Set(["actioncable-unsupported"]))).toBe("actioncable-unsupported");
    expect(chooseSubprotocol(new Set(["mqtt"]))).toBe(false);
  });
});

describe("Pusher frames", () => {
  test("connection_established carries its data as a JSON string", () => {
    const frame = JSON.parse(pusher.connectionEstablished("123.456", 120));
    expect(frame.event).toBe("pusher:connection_established");
    expect(typeof frame.data).toBe("string");
    expect(JSON.parse(frame.data)).toEqual({ socket_id: "123.456", activity_timeout: 120 });
  });

  test("presence subscription_succeeded has ids, hash and count", () => {
    const frame = JSON.parse(pusher.subscriptionSucceeded("presence-x", { ids: ["1"], hash: { "1": { name: "A" } }, count: 1 }));
    expect(frame).toMatchObject({ event: "pusher_internal:subscription_succeeded", channel: "presence-x" });
    expect(JSON.parse(frame.data)).toEqual({ presence: { ids: ["1"], hash: { "1": { name: "A" } }, count: 1 } });
    expect(JSON.parse(pusher.subscriptionSucceeded("x")).data).toBe("{}");
  });

  test("errors carry data as an object, in Pusher's and Sockudo's styles", () => {
    expect(JSON.parse(pusher.subscriptionError("pusher", "private-x", "bad"))).toEqual({
      event: "pusher:subscription_error",
      channel: "private-x",
      data: { type: "AuthError", error: "bad", status: 401 },
    });
    expect(JSON.parse(pusher.subscriptionError("sockudo", "private-x", "bad"))).toEqual({ event: "pusher:error", data: { message: "bad", code: 4009 } });
    expect(JSON.parse(pusher.clientEventError("pusher", "no"))).toEqual({ event: "pusher:error", data: { message: "no", code: null } });
    expect(JSON.parse(pusher.clientEventError("sockudo", "no"))).toEqual({ event: "pusher:error", data: { message: "no", code: 4301 } });
    expect(JSON.parse(pusher.PONG)).toEqual({ event: "pusher:pong", data: {} });
  });

  test("event frames pass data through as given and add user_id for presence client events", () => {
    expect(JSON.parse(pusher.event("e", "c", '{"a":1}'))).toEqual({ event: "e", channel: "c", data: '{"a":1}' });
    expect(JSON.parse(pusher.event("client-e", "presence-c", { a: 1 }, "7"))).toEqual({ event: "client-e", channel: "presence-c", data: { a: 1 }, user_id: "7" });
  });

  test("client frames parse with data as an object or a JSON string", () => {
    const asObject = pusher.parseClientFrame('{"event":"pusher:subscribe","data":{"channel":"a"}}');
    const asString = pusher.parseClientFrame('{"event":"pusher:subscribe","data":"{\\"channel\\":\\"a\\"}"}');
    for (const parsed of [asObject, asString]) {
      expect("error" in parsed).toBe(false);
      if (!("error" in parsed)) expect(pusher.dataObject(parsed.data)).toEqual({ channel: "a" });
    }
    expect(pusher.parseClientFrame('{"data":{}}')).toEqual({ error: "event is not a string" });
    expect(pusher.dataObject("not json")).toBeUndefined();
  });

  test("channel kinds come from the name prefix", () => {
    expect(pusher.channelKind("presence-room")).toBe("presence");
    expect(pusher.channelKind("private-room")).toBe("private");
    expect(pusher.channelKind("room")).toBe("public");
    expect(pusher.channelKind("private-encrypted-room")).toBe("private");
  });
});

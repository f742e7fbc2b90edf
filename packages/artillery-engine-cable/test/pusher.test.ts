import { describe, expect, test } from "vitest";
import { createPusherProtocol, decodePusher } from "../src/protocol/pusher.js";
import { channelAuth, md5Hex, signedQuery } from "../src/protocol/pusher-signatures.js";
import { pusherRejectCause } from "../src/protocol/rejections.js";
import { apiBase } from "../src/steps/pusher.js";

// The worked examples of Pusher's docs: "Authentication and authorization signatures"
// (https://pusher.com/docs/channels/library_auth_reference/auth-signatures/) and the HTTP API
// reference's "Worked authentication example"
// (https://pusher.com/docs/channels/library_auth_reference/rest-api/#worked-authentication-example).
const key = "278d425bdf160c739803";
const secret = "7ad3773142a6692b25b8";

describe("Pusher signatures, against the docs' worked examples", () => {
  test("a private channel", () => {
    expect(channelAuth(key, secret, "1234.1234", "private-foobar")).toBe(
      "278d425bdf160c739803:58df8b0c36d6982b82c3ecf6b4662e34fe8c25bba48f5369f135bf843651c3a4",
    );
  });

  test("a presence channel signs the channel_data string too", () => {
    expect(channelAuth(key, secret, "1234.1234", "presence-foobar", '{"user_id":10,"user_info":{"name":"Mr. Pusher"}}')).toBe(
      "278d425bdf160c739803:afaed3695da2ffd16931f457e338e6c9f2921fa133ce7dac49f529792be6304c",
    );
  });

  test("an HTTP API request", () => {
    const body = '{"name":"foo","channels":["project-3"],"data":"{\\"some\\":\\"data\\"}"}';
    expect(md5Hex(body)).toBe("ec365a775a4cd0599faeb73354201b6f");
    expect(signedQuery({ key, secret, method: "POST", path: "/apps/3/events", body, timestamp: 1353088179 })).toBe(
      "auth_key=278d425bdf160c739803&auth_timestamp=1353088179&auth_version=1.0&body_md5=ec365a775a4cd0599faeb73354201b6f" +
        "&auth_signature=da454824c97ba181a32ccc17a72625ba02771f50b50e1e7430e47a1f3f457e6c",
    );
  });
});

describe("Pusher framing", () => {
  test("connection_established, with data as a string or an object", () => {
    const asString = '{"event":"pusher:connection_established","data":"{\\"socket_id\\":\\"123.456\\",\\"activity_timeout\\":30}"}';
    const asObject = '{"event":"pusher:connection_established","data":{"socket_id":"123.456","activity_timeout":30}}';
    for (const frame of [asString, asObject]) expect(decodePusher(frame)).toEqual({ kind: "welcome", socketId: "123.456", activityTimeout: 30 });
  });

  test("pings are answered with a pong, pongs are liveness", () => {
    expect(decodePusher('{"event":"pusher:ping","data":{}}')).toEqual({ kind: "ping", reply: '{"event":"pusher:pong","data":{}}' });
    expect(decodePusher('{"event":"pusher:pong","data":"{}"}')).toEqual({ kind: "ping" });
  });

  test("subscription_succeeded confirms; subscription_error and pusher:error 4009 reject", () => {
    expect(decodePusher('{"event":"pusher_internal:subscription_succeeded","channel":"private-a","data":"{}"}')).toEqual({ kind: "confirm", channel: "private-a" });
    expect(decodePusher('{"event":"pusher:subscription_error","channel":"private-a","data":{"type":"AuthError","status":401}}')).toEqual({
      kind: "reject",
      channel: "private-a",
      reason: "AuthError",
      cause: "unauthorized",
    });
    expect(decodePusher('{"event":"pusher:error","data":{"code":4009,"message":"Invalid signature"}}')).toEqual({
      kind: "reject",
      channel: "*",
      reason: "4009 Invalid signature",
      cause: "unauthorized",
    });
    // Soketi 1.6.1, a presence channel at its member limit (as it sends it).
    expect(
      decodePusher(
        '{"event":"pusher:subscription_error","channel":"presence-r","data":{"type":"LimitReached","error":"The maximum members per presence channel limit was reached","status":4100}}',
      ),
    ).toEqual({ kind: "reject", channel: "presence-r", reason: "The maximum members per presence channel limit was reached", cause: "limit_reached" });
  });

  test("a refusal's cause is one of a fixed set, whatever the server writes", () => {
    expect(pusherRejectCause(undefined)).toBe("other");
    expect(pusherRejectCause({ type: "LimitReached", status: 4100 })).toBe("limit_reached");
    expect(pusherRejectCause({ error: "Over quota" })).toBe("limit_reached");
    expect(pusherRejectCause({ type: "AuthError", status: 403 })).toBe("unauthorized");
    expect(pusherRejectCause({ error: "Invalid signature" })).toBe("unauthorized");
    expect(pusherRejectCause({ type: "Weird", status: 500, error: "<script>" })).toBe("other");
    expect(pusherRejectCause({ type: 7, status: "x" })).toBe("other");
  });

  test("other pusher:error codes are named errors", () => {
    expect(decodePusher('{"event":"pusher:error","data":{"code":4301,"message":"rate limit"}}')).toEqual({
      kind: "error",
      reason: "pusher_4301",
      channel: undefined,
      message: "rate limit",
    });
  });

  test("channel events carry their data parsed, whether string or object", () => {
    expect(decodePusher('{"event":"client-msg","channel":"private-a","data":"{\\"ts\\":5}"}')).toEqual({
      kind: "message",
      channel: "private-a",
      event: "client-msg",
      payload: { ts: 5 },
    });
    expect(decodePusher('{"event":"news","channel":"c","data":{"x":1}}')).toEqual({ kind: "message", channel: "c", event: "news", payload: { x: 1 } });
    expect(decodePusher('{"event":"news","channel":"c","data":"plain text"}')).toEqual({ kind: "message", channel: "c", event: "news", payload: "plain text" });
    expect(decodePusher('{"event":"pusher_internal:member_added","channel":"presence-r","data":"{\\"user_id\\":\\"7\\"}"}')).toMatchObject({
      kind: "message",
      event: "pusher_internal:member_added",
      payload: { user_id: "7" },
    });
  });

  test("frames without an event are malformed", () => {
    expect(() => decodePusher('{"channel":"c"}')).toThrow();
    expect(() => decodePusher("nope")).toThrow();
  });
});

describe("Pusher protocol", () => {
  const protocol = createPusherProtocol({ key: "app-key", secret: "s3cret" }, 1000);

  test("the URL is /app/{key} with protocol 7, client and version", () => {
    expect(protocol.url("ws://127.0.0.1:6001")).toBe("ws://127.0.0.1:6001/app/app-key?protocol=7&client=artillery-engine-cable&version=0.1.0");
    expect(protocol.url("wss://ws.example.com/app/other")).toBe("wss://ws.example.com/app/other?protocol=7&client=artillery-engine-cable&version=0.1.0");
  });

  test("public channels need no auth; private ones are signed with the socket_id", async () => {
    const welcome = { kind: "welcome" as const, socketId: "1.2" };
    expect(await protocol.subscribe({ channel: "news" }, welcome)).toEqual({ key: "news", frame: '{"event":"pusher:subscribe","data":{"channel":"news"}}' });
    const priv = JSON.parse((await protocol.subscribe({ channel: "private-a" }, welcome)).frame);
    expect(priv.data.auth).toBe(channelAuth("app-key", "s3cret", "1.2", "private-a"));
  });

  test("presence channels send and sign the member's channel_data", async () => {
    const { frame } = await protocol.subscribe({ channel: "presence-r", user: { id: 7, info: { name: "Kay" } } }, { kind: "welcome", socketId: "1.2" });
    const data = JSON.parse(frame).data;
    expect(data.channel_data).toBe('{"user_id":7,"user_info":{"name":"Kay"}}');
    expect(data.auth).toBe(channelAuth("app-key", "s3cret", "1.2", "presence-r", data.channel_data));
  });

  test("a member without info still sends user_info (Reverb fails on a channel_data without it)", async () => {
    const { frame } = await protocol.subscribe({ channel: "presence-r", user: { id: "u1" } }, { kind: "welcome", socketId: "1.2" });
    expect(JSON.parse(frame).data.channel_data).toBe('{"user_id":"u1","user_info":{}}');
  });

  test("the HTTP API's base comes from the target unless configured", () => {
    expect(apiBase(undefined, "ws://127.0.0.1:6001/app/k")).toBe("http://127.0.0.1:6001");
    expect(apiBase(undefined, "wss://ws.example.com")).toBe("https://ws.example.com");
    expect(apiBase("https://api.example.com/pusher/", "ws://x")).toBe("https://api.example.com/pusher");
  });
});

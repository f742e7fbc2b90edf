// NODE_DEBUG=cable traces frames and state changes: checked in a child process, since Node reads
// NODE_DEBUG once per process.
import { spawnSync } from "node:child_process";
import path from "node:path";
import { describe, expect, test } from "vitest";
import { maskSecrets, traceLine } from "../src/trace.js";

const dist = path.resolve(__dirname, "../dist");

test("NODE_DEBUG=cable prints the frames in and out and every state change", () => {
  const script = `
    const { CableConnection } = require(${JSON.stringify(path.join(dist, "connection.js"))});
    const { OpenConnections } = require(${JSON.stringify(path.join(dist, "open-connections.js"))});
    const { createActionCableProtocol } = require(${JSON.stringify(path.join(dist, "protocol/actioncable.js"))});
    const { DeliveryLedger } = require(${JSON.stringify(path.join(dist, "delivery.js"))});
    const { systemClock } = require(${JSON.stringify(path.join(dist, "clock.js"))});
    let listener;
    const socket = { protocol: "", isOpen: true, isConnecting: false, send() {}, close() { this.isOpen = false; listener.close(1000, ""); }, terminate() {} };
    const runtime = { tracker: new OpenConnections(), clock: systemClock, openSocket: (_o, l) => ((listener = l), socket) };
    const c = new CableConnection(createActionCableProtocol(), { emit() {} }, { stampField: "ts", inboxSize: 0 }, { positions: new Map(), ledger: new DeliveryLedger() }, runtime);
    const opening = c.open({ url: "ws://127.0.0.1:1/cable?sid=secret", headers: {}, subprotocols: [], timeoutMs: 1000 });
    listener.frame(Buffer.from('{"type":"welcome"}'), false);
    opening.then(() => { c.send('{"command":"subscribe","identifier":"x"}'); c.close(); });
  `;
  const run = (env: NodeJS.ProcessEnv) => spawnSync(process.execPath, ["-e", script], { env: { ...process.env, ...env }, encoding: "utf8", timeout: 10_000 }).stderr;
  const traced = run({ NODE_DEBUG: "cable" });
  expect(traced).toMatch(/CABLE \d+: open ws:\/\/127\.0\.0\.1:1\/cable\?sid=…/);
  expect(traced).not.toContain("secret");
  expect(traced).toMatch(/CABLE \d+: state idle -> connecting/);
  expect(traced).toMatch(/CABLE \d+: in \{"type":"welcome"\}/);
  expect(traced).toMatch(/CABLE \d+: state connecting -> welcomed/);
  expect(traced).toMatch(/CABLE \d+: out \{"command":"subscribe","identifier":"x"\}/);
  expect(traced).toMatch(/CABLE \d+: state welcomed -> closing/);
  expect(traced).toMatch(/CABLE \d+: state closing -> closed/);
  expect(run({ NODE_DEBUG: "" })).not.toContain("CABLE");
});

// A hostile server's frames and refusals, and the secrets a subscription carries: the trace shows
// neither the server's terminal escapes nor a signature (src/trace.ts).
test("NODE_DEBUG=cable cleans what the server sends and masks auth signatures and signed stream names", () => {
  const script = `
    const { CableConnection } = require(${JSON.stringify(path.join(dist, "connection.js"))});
    const { OpenConnections } = require(${JSON.stringify(path.join(dist, "open-connections.js"))});
    const { createPusherProtocol } = require(${JSON.stringify(path.join(dist, "protocol/pusher.js"))});
    const { createActionCableProtocol } = require(${JSON.stringify(path.join(dist, "protocol/actioncable.js"))});
    const { channelAuth } = require(${JSON.stringify(path.join(dist, "protocol/pusher-signatures.js"))});
    const { signStreamName } = require(${JSON.stringify(path.join(dist, "protocol/anycable-signatures.js"))});
    const { DeliveryLedger } = require(${JSON.stringify(path.join(dist, "delivery.js"))});
    const { systemClock } = require(${JSON.stringify(path.join(dist, "clock.js"))});
    const connect = (protocol) => {
      let listener;
      const socket = { protocol: "", isOpen: true, isConnecting: false, send() {}, close() { this.isOpen = false; listener.close(1000, ""); }, terminate() {} };
      const runtime = { tracker: new OpenConnections(), clock: systemClock, openSocket: (_o, l) => ((listener = l), socket) };
      const c = new CableConnection(protocol, { emit() {} }, { stampField: "ts", inboxSize: 0 }, { positions: new Map(), ledger: new DeliveryLedger() }, runtime);
      const opening = c.open({ url: "ws://127.0.0.1:1/x", headers: {}, subprotocols: [], timeoutMs: 1000 });
      return { c, opening, frame: (text) => listener.frame(Buffer.from(text), false) };
    };
    const hostile = "no\\u001b[2J\\u001b[H\\u001b[31m red \\u001b]8;;https://evil.example/x\\u0007click\\u001b]8;;\\u0007\\nCABLE 999: state subscribed -> closed\\u009b1m";
    (async () => {
      const pusher = createPusherProtocol({ key: "app-key", secret: "app-secret" }, 1000);
      const p = connect(pusher);
      p.frame(JSON.stringify({ event: "pusher:connection_established", data: JSON.stringify({ socket_id: "1.2", activity_timeout: 30 }) }));
      const welcome = await p.opening;
      const { key, frame } = await pusher.subscribe({ channel: "private-room" }, welcome);
      const rejected = p.c.subscribe(key, frame, 1000).catch(() => {});
      p.frame(JSON.stringify({ event: "pusher:subscription_error", channel: "private-room", data: { type: "Weird", error: hostile } }));
      await rejected;
      p.frame(hostile);

      const cable = createActionCableProtocol({ extended: "off", streamsSecret: "streams-secret" });
      const a = connect(cable);
      a.frame('{"type":"welcome"}');
      await a.opening;
      const sub = await cable.subscribe({ signedStream: "chat:1" }, undefined);
      const confirmed = a.c.subscribe(sub.key, sub.frame, 1000);
      a.frame(JSON.stringify({ identifier: sub.key, type: "confirm_subscription" }));
      await confirmed;
      process.stdout.write(JSON.stringify({ auth: channelAuth("app-key", "app-secret", "1.2", "private-room").split(":")[1], signed: signStreamName("chat:1", "streams-secret") }));
    })();
  `;
  const run = spawnSync(process.execPath, ["-e", script], { env: { ...process.env, NODE_DEBUG: "cable" }, encoding: "utf8", timeout: 10_000 });
  expect(run.stdout, run.stderr).not.toBe("");
  const secrets = JSON.parse(run.stdout) as { auth: string; signed: string };
  const traced = run.stderr;
  // Every line is one of ours: no escape, control character or forged line survives.
  expect(traced).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
  for (const line of traced.trimEnd().split("\n")) expect(line).toMatch(/^CABLE \d+: /);
  // Whole escape sequences go, an OSC-8 link's target with them; in a JSON frame they are inert `\u001b` text.
  expect(traced).toMatch(/CABLE \d+: subscription private-room rejected: other \(no red click CABLE 999: state subscribed -> closed ?\)\n/);
  expect(traced).toMatch(/CABLE \d+: in no red click CABLE 999: state subscribed -> closed\n/);
  expect(traced).toContain(String.raw`"error":"no\u001b[2J\u001b[H`);
  // The signature and the signed stream name are masked, in and out; the rest of the frame shows.
  expect(traced).not.toContain(secrets.auth);
  expect(traced).not.toContain(secrets.signed.split("--")[1]);
  expect(traced).not.toContain(secrets.signed.split("--")[0]);
  expect(traced).toMatch(/CABLE \d+: out \{"event":"pusher:subscribe","data":\{"channel":"private-room","auth":"…"\}\}/);
  expect(traced).toMatch(/CABLE \d+: out \{"command":"subscribe","identifier":"\{\\"channel\\":\\"\$pubsub\\",\\"signed_stream_name\\":\\"…\\"\}"\}/);
  expect(traced).toMatch(/CABLE \d+: in \{"identifier":"\{\\"channel\\":\\"\$pubsub\\",\\"signed_stream_name\\":\\"…\\"\}","type":"confirm_subscription"\}/);
});

describe("a trace line", () => {
  test("masks auth and signed stream names at any depth of JSON strings, and a value cut short to the end", () => {
    expect(maskSecrets('{"auth":"key:abc","channel":"c"}')).toBe('{"auth":"…","channel":"c"}');
    expect(maskSecrets('{"auth" : "a\\"b"}')).toBe('{"auth" : "…"}');
    expect(maskSecrets(JSON.stringify({ identifier: JSON.stringify({ signed_stream_name: "abc--def", n: 1 }) }))).toBe('{"identifier":"{\\"signed_stream_name\\":\\"…\\",\\"n\\":1}"}');
    expect(maskSecrets(JSON.stringify({ x: JSON.stringify({ y: JSON.stringify({ auth: "deep" }) }) }))).not.toContain("deep");
    expect(maskSecrets('{"auth":"never closed, secret')).toBe('{"auth":"…');
    expect(maskSecrets("authored by \"auth\" alone")).toBe("authored by \"auth\" alone");
  });

  test("is bounded", () => {
    expect(traceLine("x".repeat(10_000))).toBe(`${"x".repeat(4_000)}… (6000 more characters)`);
  });
});

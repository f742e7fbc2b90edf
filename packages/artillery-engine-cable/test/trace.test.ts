// NODE_DEBUG=cable traces frames and state changes: checked in a child process, since Node reads
// NODE_DEBUG once per process.
import { spawnSync } from "node:child_process";
import path from "node:path";
import { expect, test } from "vitest";

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

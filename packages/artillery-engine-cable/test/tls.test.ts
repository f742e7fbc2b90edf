// wss:// and https:// through the real `artillery run` against real anycable-go behind a TLS
// terminator whose certificate a throwaway internal CA signed, as a staging server's would be:
// untrusted, every user fails once with a named TLS error; `--insecure`, `config.tls.ca` and
// NODE_EXTRA_CA_CERTS each make all pass; a certificate for another name and a wss:// to a plain
// port are named too. The HTTP side-calls go over https:// to the same kind of terminator:
// AnyCable's /_broadcast, and a Pusher auth endpoint (anycable-go's Pusher mode).
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:https";
import os from "node:os";
import path from "node:path";
import { counter, makeTestCa, runArtillery, samples, startAnyCable, startTlsTerminator, type AnyCableServer, type TestCa, type TlsTerminator } from "cable-test-servers";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { channelAuth } from "../src/protocol/pusher-signatures.js";
import { readTls, tlsReason } from "../src/tls.js";

const PUSHER = { appId: "app-1", key: "app-key", secret: "app-secret" };
const USERS = 10;

let ca: TestCa;
let anycable: AnyCableServer;
let socketTls: TlsTerminator;
let broadcastTls: TlsTerminator;
let wrongName: TlsTerminator;
let auth: Server;
let authUrl: string;

beforeAll(async () => {
  ca = makeTestCa();
  anycable = await startAnyCable({ pusher: PUSHER });
  const leaf = ca.issue(["localhost", "127.0.0.1"]);
  socketTls = await startTlsTerminator({ targetPort: anycable.port, ...leaf });
  broadcastTls = await startTlsTerminator({ targetPort: Number(new URL(anycable.broadcastUrl).port), ...leaf });
  wrongName = await startTlsTerminator({ targetPort: anycable.port, ...ca.issue(["cable.staging.example"]) });
  // The app's own auth endpoint, as a Laravel or Rails app serves it, over https with the same CA.
  auth = createServer(leaf, (req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      const form = new URLSearchParams(body);
      res.setHeader("Content-Type", "application/json");
      res.end(JSON.stringify({ auth: channelAuth(PUSHER.key, PUSHER.secret, form.get("socket_id")!, form.get("channel_name")!) }));
    });
  });
  await new Promise<void>((resolve) => auth.listen(0, "127.0.0.1", resolve));
  authUrl = `https://127.0.0.1:${(auth.address() as { port: number }).port}/broadcasting/auth`;
});
afterAll(async () => {
  await Promise.all([socketTls, broadcastTls, wrongName].map((t) => t?.close()));
  await new Promise((resolve) => auth?.close(resolve));
  await anycable?.stop();
  ca?.remove();
});

/** Each user connects over wss://, follows a stream, publishes to it over https:// and hears it back. */
function actionCable(target: string, tls?: Record<string, unknown>) {
  return {
    config: {
      target,
      engines: { cable: {} },
      ...(tls ? { tls } : {}),
      cable: { timeout: 5, anycable: { broadcastUrl: broadcastTls.secure(anycable.broadcastUrl) } },
      phases: [{ duration: 1, arrivalCount: USERS }],
    },
    scenarios: [
      {
        name: "user",
        engine: "cable",
        flow: [
          { connect: {} },
          { subscribe: { stream: "tls-{{ $uuid }}", as: "s" } },
          { publish: { stream: "tls-{{ $uuid }}", data: { hello: "{{ $uuid }}" }, stamp: true } },
          { receive: { channel: "s", match: { hello: "{{ $uuid }}" } } },
        ],
      },
    ],
  };
}

const errorsOf = (report: NonNullable<Awaited<ReturnType<typeof runArtillery>>["report"]>) =>
  Object.fromEntries(Object.entries(report.aggregate.counters).filter(([k]) => k.startsWith("errors.")));

describe("wss:// behind a certificate from an internal CA", () => {
  test("untrusted: every user fails once with errors.cable.tls_untrusted, and the Node code stays out of the counters", async () => {
    const run = await runArtillery({ script: actionCable(socketTls.secure(anycable.url)), timeoutMs: 60_000 });
    const r = run.report!;
    expect(errorsOf(r), run.output).toEqual({ "errors.cable.tls_untrusted": USERS });
    expect(counter(r, "vusers.failed")).toBe(USERS);
    expect(counter(r, "vusers.completed")).toBe(0);
  });

  test("--insecure (Artillery's own flag): all pass, the socket and the https:// broadcast alike", async () => {
    const run = await runArtillery({ script: actionCable(socketTls.secure(anycable.url)), args: ["--insecure"], timeoutMs: 60_000 });
    expect(run.code, run.output).toBe(0);
    expect(counter(run.report!, "vusers.completed"), run.output).toBe(USERS);
    expect(samples(run.report!, "cable.publish_latency")).toBe(USERS);
    expect(samples(run.report!, "cable.broadcast_latency")).toBe(USERS);
    expect(errorsOf(run.report!)).toEqual({});
  });

  test("config.tls.ca (a file beside the scenario): all pass", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "cable-tls-"));
    try {
      writeFileSync(path.join(dir, "internal-ca.pem"), ca.caPem);
      const scenario = path.join(dir, "scenario.yml");
      writeFileSync(scenario, JSON.stringify(actionCable(socketTls.secure(anycable.url), { ca: "./internal-ca.pem" })));
      const run = await runArtillery({ script: scenario, timeoutMs: 60_000 });
      expect(run.code, run.output).toBe(0);
      expect(counter(run.report!, "vusers.completed"), run.output).toBe(USERS);
      expect(errorsOf(run.report!)).toEqual({});
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("NODE_EXTRA_CA_CERTS: all pass", async () => {
    const run = await runArtillery({ script: actionCable(socketTls.secure(anycable.url)), env: { NODE_EXTRA_CA_CERTS: ca.caFile }, timeoutMs: 60_000 });
    expect(run.code, run.output).toBe(0);
    expect(counter(run.report!, "vusers.completed"), run.output).toBe(USERS);
  });

  test("a certificate for another name is errors.cable.tls_hostname; wss:// to a plain port is errors.cable.tls_handshake", async () => {
    const hostname = await runArtillery({ script: actionCable(wrongName.secure(anycable.url), { ca: ca.caPem }), timeoutMs: 60_000 });
    expect(errorsOf(hostname.report!), hostname.output).toEqual({ "errors.cable.tls_hostname": USERS });
    const plain = await runArtillery({ script: actionCable(anycable.url.replace("ws:", "wss:")), timeoutMs: 60_000 });
    expect(errorsOf(plain.report!), plain.output).toEqual({ "errors.cable.tls_handshake": USERS });
  });

  test("a Pusher auth endpoint over https://: with config.tls.ca all pass; untrusted, the private subscribe fails with cable.tls_untrusted; --insecure, all pass", async () => {
    const script = (target: string, tls?: Record<string, unknown>) => ({
      config: {
        target,
        engines: { cable: {} },
        ...(tls ? { tls } : {}),
        cable: { timeout: 5, protocol: "pusher", pusher: { key: PUSHER.key, appId: PUSHER.appId, authEndpoint: authUrl } },
        phases: [{ duration: 1, arrivalCount: USERS }],
      },
      scenarios: [{ name: "user", engine: "cable", flow: [{ connect: {} }, { subscribe: { channel: "private-room-{{ $uuid }}", as: "room" } }] }],
    });
    const trusted = await runArtillery({ script: script(socketTls.secure(anycable.pusherUrl), { ca: ca.caPem }), timeoutMs: 60_000 });
    expect(trusted.code, trusted.output).toBe(0);
    expect(counter(trusted.report!, "cable.subscriptions"), trusted.output).toBe(USERS);
    // The socket over plain ws://, so that only the auth side-call meets the untrusted certificate.
    const untrusted = await runArtillery({ script: script(anycable.pusherUrl), timeoutMs: 60_000 });
    expect(errorsOf(untrusted.report!), untrusted.output).toEqual({ "errors.cable.tls_untrusted": USERS });
    const insecure = await runArtillery({ script: script(anycable.pusherUrl), args: ["--insecure"], timeoutMs: 60_000 });
    expect(insecure.code, insecure.output).toBe(0);
    expect(counter(insecure.report!, "cable.subscriptions"), insecure.output).toBe(USERS);
  });
});

describe("config.tls, read before the load", () => {
  test("takes PEM text or files relative to the scenario, and names every mistake by its field", () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "cable-tls-read-"));
    try {
      writeFileSync(path.join(dir, "ca.pem"), "-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n");
      writeFileSync(path.join(dir, "notes.txt"), "not a certificate");
      const scriptPath = path.join(dir, "scenario.yml");
      expect(readTls({ rejectUnauthorized: false }, scriptPath)).toEqual({ tls: { rejectUnauthorized: false }, problems: [] });
      expect(readTls({ ca: "./ca.pem" }, scriptPath).tls?.ca?.[0]).toContain("BEGIN CERTIFICATE");
      expect(readTls(undefined, scriptPath)).toEqual({ problems: [] });
      expect(readTls({ ca: "./missing.pem" }, scriptPath).problems).toEqual(["config.tls.ca: cannot read ./missing.pem (ENOENT)"]);
      expect(readTls({ ca: ["./ca.pem", "./notes.txt"] }, scriptPath).problems).toEqual(["config.tls.ca[1]: ./notes.txt holds no PEM block"]);
      expect(readTls({ rejectUnauthorised: false }, scriptPath).problems).toEqual([expect.stringMatching(/^config.tls: unknown field "rejectUnauthorised"/)]);
      expect(readTls({ rejectUnauthorized: "no" }, scriptPath).problems).toEqual(["config.tls.rejectUnauthorized: must be true or false"]);
      expect(readTls({ cert: "./ca.pem" }, scriptPath).problems).toEqual(["config.tls: a client certificate needs both cert and key"]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("names Node's certificate codes by what to do about them", () => {
    expect(["UNABLE_TO_VERIFY_LEAF_SIGNATURE", "SELF_SIGNED_CERT_IN_CHAIN", "DEPTH_ZERO_SELF_SIGNED_CERT", "UNABLE_TO_GET_ISSUER_CERT_LOCALLY"].map(tlsReason)).toEqual(Array(4).fill("tls_untrusted"));
    expect(["CERT_HAS_EXPIRED", "CERT_NOT_YET_VALID"].map(tlsReason)).toEqual(["tls_expired", "tls_expired"]);
    expect(tlsReason("ERR_TLS_CERT_ALTNAME_INVALID")).toBe("tls_hostname");
    expect(["EPROTO", "ERR_SSL_WRONG_VERSION_NUMBER"].map(tlsReason)).toEqual(["tls_handshake", "tls_handshake"]);
    expect(tlsReason("ECONNREFUSED")).toBeUndefined();
  });
});

// The engine's Pusher protocol against real Sockudo, Soketi, Reverb and anycable-go's Pusher mode,
// and against the local target, through the real `artillery run`: public, private and presence
// channels, client events, HTTP publish, auth failures and an unknown app key.
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import http from "node:http";
import os from "node:os";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { channelAuth } from "../src/protocol/pusher-signatures.js";
import { counter, runArtillery, samples, startAnyCable, startReverb, startSockudo, startSoketi } from "cable-test-servers";
import { startTarget } from "cable-local-target";
import { afterAll, beforeAll, describe, expect, test } from "vitest";

const repo = path.resolve(__dirname, "../../..");

interface PusherServer {
  url: string;
  appId: string;
  key: string;
  secret: string;
  stop(): Promise<void>;
}

const servers: Record<string, () => Promise<PusherServer>> = {
  sockudo: startSockudo,
  soketi: () => startSoketi(),
  reverb: startReverb,
  "anycable-go (Pusher mode)": async () => {
    const app = { appId: "cable-test", key: "cable-test-key", secret: "cable-test-secret" };
    const anycable = await startAnyCable({ pusher: app, broker: "memory" });
    return { url: anycable.pusherUrl, ...app, stop: () => anycable.stop() };
  },
  "local target": async () => {
    const target = await startTarget({ port: 0 });
    return { url: target.url, ...target.pusher, stop: () => target.close() };
  },
};

/**
 * Where a real server answers differently, seen on the wire: how it refuses an unknown app key (the
 * error the VUs fail with), and whether a joining presence member hears its own member_added
 * (anycable-go does; Pusher sends it to the others only).
 */
const differences: Record<string, { unknownKeyError: string; joinerHearsItself?: boolean }> = {
  sockudo: { unknownKeyError: "errors.cable.connection_closed" },
  soketi: { unknownKeyError: "errors.cable.pusher_4001" },
  reverb: { unknownKeyError: "errors.cable.pusher_4001" },
  "anycable-go (Pusher mode)": { unknownKeyError: "errors.cable.http_404", joinerHearsItself: true },
  "local target": { unknownKeyError: "errors.cable.pusher_4001" },
};

describe.each(Object.keys(servers))("Pusher protocol against %s", (name) => {
  let server: PusherServer;
  beforeAll(async () => {
    server = await servers[name]();
  });
  afterAll(() => server?.stop());

  const app = () => ({ config: { cable: { pusher: { key: server.key, appId: server.appId } } } });
  const run = (script: string | Record<string, unknown>, extra: { args?: string[]; secret?: string } = {}) =>
    runArtillery({
      script,
      args: ["--target", server.url, ...(extra.args ?? [])],
      env: { PUSHER_APP_SECRET: extra.secret ?? server.secret },
    });

  test("pusher-broadcast: client events on a private channel reach the listeners, stamped", async () => {
    const { code, output, report } = await run(path.join(repo, "scenarios/pusher-broadcast.yml"), {
      args: ["-v", JSON.stringify({ lifetime: 3, sends: 12 }), "--overrides", JSON.stringify({ ...app(), config: { ...app().config, phases: [{ duration: 2, arrivalCount: 40 }] } })],
    });
    expect(code, output).toBe(0);
    const r = report!;
    // Weights pick senders at random (1 in 5): with 40 users, none is picked once in ~7,000 runs.
    expect(counter(r, "vusers.created_by_name.sender")).toBeGreaterThan(0);
    expect(counter(r, "vusers.created")).toBe(40);
    expect(counter(r, "vusers.completed")).toBe(40);
    expect(counter(r, "cable.connections")).toBe(40);
    expect(samples(r, "cable.handshake_latency")).toBe(40);
    expect(samples(r, "cable.subscription_latency")).toBe(40);
    expect(counter(r, "cable.messages_sent")).toBeGreaterThan(0);
    // Every received frame is a stamped client-broadcast, and never one of the sender's own.
    expect(samples(r, "cable.broadcast_latency")).toBe(counter(r, "cable.messages_received"));
    expect(counter(r, "cable.messages_received")).toBeLessThanOrEqual(counter(r, "cable.messages_sent") * (40 - 1));
    expect(output).toMatch(/ok: cable.broadcast_latency.p99 < 1000/);
  });

  test("pubsub-rooms: every publish goes through the signed HTTP API and comes back to its room", async () => {
    const { code, output, report } = await run(path.join(repo, "scenarios/pubsub-rooms.yml"), {
      args: ["-v", JSON.stringify({ messages: 3, stay: 1, rooms: 3 }), "--overrides", JSON.stringify({ ...app(), config: { ...app().config, phases: [{ duration: 2, arrivalCount: 6 }] } })],
    });
    expect(code, output).toBe(0);
    const r = report!;
    expect(counter(r, "vusers.completed")).toBe(6);
    expect(counter(r, "cable.messages_sent")).toBe(18);
    expect(samples(r, "cable.publish_latency")).toBe(18);
    // Each user hears at least its own 3 messages in its room.
    expect(counter(r, "cable.messages_received")).toBeGreaterThanOrEqual(18);
    expect(samples(r, "cable.broadcast_latency")).toBe(counter(r, "cable.messages_received"));
  });

  test("presence: each member hears the next one join; the last one waits in vain", async () => {
    const { code, output, report } = await run({
      config: {
        target: server.url,
        engines: { cable: {} },
        // The last member fails on purpose (nobody joins after it): not what this test judges the run by.
        cable: { protocol: "pusher", timeout: 4, pusher: { key: server.key, appId: server.appId }, maxFailedUsers: false },
        phases: [{ duration: 3, arrivalCount: 4 }],
      },
      scenarios: [
        {
          name: "member",
          engine: "cable",
          flow: [
            { connect: {} },
            { subscribe: { channel: "presence-lobby-{{ $testId }}", as: "lobby", user: { id: "{{ $uuid }}", info: { name: "Kay" } } } },
            { receive: { channel: "lobby", event: "pusher_internal:member_added", capture: { json: "$.user_id", as: "joined" } } },
          ],
        },
      ],
    });
    expect(code, output).toBe(0);
    const r = report!;
    expect(counter(r, "cable.subscriptions")).toBe(4);
    expect(counter(r, "vusers.completed")).toBe(differences[name].joinerHearsItself ? 4 : 3);
    expect(counter(r, "errors.cable.receive_timeout")).toBe(differences[name].joinerHearsItself ? 0 : 1);
  });

  test("an app's auth endpoint signs private and presence subscriptions, as pusher-js asks it; a refusal is auth_failed", async () => {
    // A stand-in for Laravel's /broadcasting/auth: a form POST of socket_id and channel_name, and a
    // session cookie that decides who may subscribe.
    const seen: string[] = [];
    const auth = http.createServer((req, res) => {
      let body = "";
      req.on("data", (c) => (body += c));
      req.on("end", () => {
        const form = new URLSearchParams(body);
        const [socketId, channel] = [form.get("socket_id")!, form.get("channel_name")!];
        seen.push(`${req.headers.cookie} ${channel}`);
        if (req.headers.cookie !== "session=ok") return void res.writeHead(403).end();
        const channelData = channel.startsWith("presence-") ? JSON.stringify({ user_id: socketId, user_info: {} }) : undefined;
        res.writeHead(200, { "Content-Type": "application/json" }).end(
          JSON.stringify({ auth: channelAuth(server.key, server.secret, socketId, channel, channelData), channel_data: channelData }),
        );
      });
    });
    await new Promise<void>((resolve) => auth.listen(0, "127.0.0.1", resolve));
    const authUrl = `http://127.0.0.1:${(auth.address() as AddressInfo).port}/broadcasting/auth`;
    const flow = [{ connect: {} }, { subscribe: { channel: "private-orders" } }, { subscribe: { channel: "presence-lobby", user: { id: 1 } } }];
    const withCookie = (cookie: string) => ({
      config: {
        target: server.url,
        engines: { cable: {} },
        cable: { protocol: "pusher", timeout: 3, pusher: { key: server.key, authEndpoint: { url: authUrl, headers: { Cookie: cookie } } } },
        phases: [{ duration: 1, arrivalCount: 3 }],
      },
      scenarios: [{ engine: "cable", flow }],
    });
    try {
      const ok = await run(withCookie("session=ok"), { secret: "" });
      expect(ok.code, ok.output).toBe(0);
      expect(counter(ok.report!, "cable.subscriptions")).toBe(6);
      const refused = await run(withCookie("session=expired"), { secret: "" });
      expect(counter(refused.report!, "errors.cable.auth_failed")).toBe(3);
      expect(seen.filter((s) => s.startsWith("session=ok"))).toHaveLength(6);
    } finally {
      await new Promise((resolve) => auth.close(resolve));
    }
  });

  test("an unknown app key: every connect fails with the server's code, named, and no stack", async () => {
    const { code, output, report } = await run({
      config: {
        target: server.url,
        engines: { cable: {} },
        cable: { protocol: "pusher", timeout: 3, pusher: { key: "no-such-key", appId: server.appId } },
        phases: [{ duration: 1, arrivalCount: 4 }],
      },
      scenarios: [{ engine: "cable", flow: [{ connect: {} }, { subscribe: { channel: "news" } }] }],
    });
    // Every user fails on purpose: over config.cable.maxFailedUsers (default 0), the run exits 1 and says why.
    expect(code, output).toBe(1);
    expect(output).toMatch(/cable: 1 virtual user failed, more than config\.cable\.maxFailedUsers \(0\): artillery run will exit 1\./);
    const r = report!;
    expect(counter(r, "vusers.failed")).toBe(4);
    // Pusher's answer is 4001 ("Application does not exist"): Soketi and Reverb say so (Reverb then
    // drops the socket without a close frame); Sockudo drops it without a word; anycable-go answers
    // the upgrade with 404.
    const errors = Object.fromEntries(Object.entries(r.aggregate.counters).filter(([k]) => k.startsWith("errors.")));
    expect(errors).toEqual({ [differences[name].unknownKeyError]: 4 });
    expect(output).not.toMatch(/\bat .*\.js:\d+/);
  });

  test("a wrong secret: private subscriptions are rejected and publishes fail, as named errors", async () => {
    const { code, output, report } = await run(
      {
        config: {
          target: server.url,
          engines: { cable: {} },
          cable: { protocol: "pusher", timeout: 3, pusher: { key: server.key, appId: server.appId } },
          phases: [{ duration: 2, arrivalCount: 12 }],
        },
        scenarios: [
          { name: "private", engine: "cable", flow: [{ connect: {} }, { subscribe: { channel: "private-secret" } }] },
          { name: "publisher", engine: "cable", flow: [{ publish: { channel: "news", event: "e", data: { a: 1 } } }] },
        ],
      },
      { secret: "not-the-secret" },
    );
    // Every user fails on purpose: over config.cable.maxFailedUsers (default 0), the run exits 1 and says why.
    expect(code, output).toBe(1);
    expect(output).toMatch(/cable: 1 virtual user failed, more than config\.cable\.maxFailedUsers \(0\): artillery run will exit 1\./);
    const r = report!;
    expect(counter(r, "vusers.failed")).toBe(12);
    expect(counter(r, "errors.cable.subscription_rejected")).toBe(counter(r, "vusers.created_by_name.private"));
    expect(counter(r, "cable.subscription_rejected.unauthorized")).toBe(counter(r, "vusers.created_by_name.private"));
    expect(counter(r, "errors.cable.publish_failed")).toBe(counter(r, "vusers.created_by_name.publisher"));
    expect(samples(r, "cable.publish_latency")).toBe(counter(r, "vusers.created_by_name.publisher"));
    expect(output).not.toContain("not-the-secret");
  });
});

// Soketi's presence member limit (100 unless SOKETI_PRESENCE_MAX_MEMBERS says otherwise), set to 3
// here: the refusals are counted by cause, and report.md says which setting raises the limit.
test("Soketi at its presence member limit: the refusals are limit_reached, and report.md names the setting", async () => {
  const soketi = await startSoketi({ presenceMaxMembers: 3 });
  const results = mkdtempSync(path.join(os.tmpdir(), "soketi-limit-"));
  mkdirSync(path.join(results, "local"));
  try {
    const run = await runArtillery({
      script: {
        config: {
          target: soketi.url,
          engines: { cable: {} },
          plugins: { "cable-report": {} },
          cable: { protocol: "pusher", timeout: 5, pusher: { key: soketi.key, appId: soketi.appId } },
          phases: [{ duration: 1, arrivalCount: 6 }],
        },
        scenarios: [{ name: "member", engine: "cable", flow: [{ connect: {} }, { subscribe: { channel: "presence-lobby", user: { id: "{{ $uuid }}" } } }, { think: 3 }] }],
      },
      env: { PUSHER_APP_SECRET: soketi.secret },
      outputDir: path.join(results, "local"),
    });
    // The members over the limit fail on purpose: the report plugin judges them over config.cable.maxFailedUsers (default 0).
    expect(run.code, run.output).toBe(1);
    expect(run.output).toContain("cable-report: 3 of 6 virtual users failed, more than config.cable.maxFailedUsers (0): artillery run exits 1.");
    const r = run.report!;
    expect(counter(r, "errors.cable.subscription_rejected")).toBe(3);
    expect(counter(r, "cable.subscription_rejected.limit_reached")).toBe(3);
    expect(counter(r, "vusers.completed")).toBe(3);
    const report = spawnSync(process.execPath, [path.join(repo, "packages", "cable-report", "bin", "cable-report.js"), results], { encoding: "utf8" });
    expect(report.status, report.stderr).toBe(0);
    expect(report.stdout).toContain("- `cable.subscription_rejected` (3): the server refused subscriptions");
    expect(report.stdout).toContain("  - `limit_reached` (3): a server limit: presence members per channel (Soketi allows 100 unless `SOKETI_PRESENCE_MAX_MEMBERS` raises it");
    // Soketi's own words, through the engine's log, the plugin's sidecar and the merger.
    expect(report.stdout).toContain("The server said: `The maximum members per presence channel limit was reached`");
    expect(run.output).toContain('cable: cable.subscription_rejected (limit_reached): the server said "The maximum members per presence channel limit was reached"');
  } finally {
    await soketi.stop();
    rmSync(results, { recursive: true, force: true });
  }
});

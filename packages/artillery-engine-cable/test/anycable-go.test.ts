// Every AnyCable feature through the real `artillery run` CLI against a real anycable-go 1.6.16
// (started by cable-test-servers: public streams, signed streams with whispers, a memory broker for
// history, restore and presence, the HTTP broadcast endpoint, and Pusher mode on the same server).
// The local target (anycable.test.ts) is the fast default; this file is the proof on the real thing.
import { counter, runArtillery, samples, startAnyCable, type AnyCableServer } from "cable-test-servers";
import { afterAll, beforeAll, describe, expect, test } from "vitest";

const SECRET = "anycable-go-streams-secret";
const PUSHER = { appId: "app-1", key: "app-key", secret: "app-secret" };

let anycable: AnyCableServer;
beforeAll(async () => {
  anycable = await startAnyCable({ streamsSecret: SECRET, broker: "memory", pusher: PUSHER });
});
afterAll(() => anycable?.stop());

function script(users: number, flow: unknown[], cable: Record<string, unknown> = {}, target = anycable.url) {
  return {
    config: {
      target,
      engines: { cable: {} },
      cable: { timeout: 5, anycable: { extended: "required", broadcastUrl: anycable.broadcastUrl }, ...cable },
      phases: [{ duration: 1, arrivalCount: users }],
    },
    scenarios: [{ name: "user", engine: "cable", flow }],
  };
}

const env = { ANYCABLE_STREAMS_SECRET: SECRET };

describe("AnyCable on anycable-go, through the CLI", () => {
  test("$pubsub public and signed streams, /_broadcast single and batched, whispers by payload, presence", async () => {
    const flow = [
      { connect: {} },
      { subscribe: { stream: "news-{{ $testId }}", as: "news" } },
      { subscribe: { signedStream: "room-{{ $testId }}", as: "room" } },
      { publish: { stream: "news-{{ $testId }}", data: { text: "one", to: "{{ $uuid }}" }, stamp: true } },
      { receive: { channel: "news", match: { text: "one", to: "{{ $uuid }}" } } },
      { publish: { streams: ["news-{{ $testId }}", "room-{{ $testId }}"], data: { text: "two", to: "{{ $uuid }}" }, stamp: true } },
      { receive: { channel: "news", match: { text: "two", to: "{{ $uuid }}" } } },
      { receive: { channel: "room", match: { text: "two", to: "{{ $uuid }}" } } },
      // Both users are in before anyone whispers or joins.
      { think: 1 },
      // As the docs say: a whisper is received by a field of its data (the real server sends no type).
      { whisper: { channel: "room", data: { typing: true }, stamp: true } },
      { receive: { channel: "room", match: { typing: true } } },
      { join: { channel: "news", id: "{{ $uuid }}", info: { name: "Kay" } } },
      { receive: { channel: "news", event: "presence:join", match: { id: "{{ $uuid }}" } } },
      { think: 1 },
      { leave: { channel: "news" } },
    ];
    const run = await runArtillery({ script: script(2, flow), env });
    expect(run.code, run.output).toBe(0);
    const r = run.report!;
    expect(counter(r, "vusers.completed"), run.output).toBe(2);
    expect(counter(r, "cable.subscriptions")).toBe(4);
    expect(samples(r, "cable.publish_latency")).toBe(4);
    // 2 + 2×2 broadcasts each heard by both users, and one whisper each from the other.
    expect(samples(r, "cable.broadcast_latency")).toBeGreaterThanOrEqual(2 * 2 + 2);
    expect(counter(r, "cable.messages_missing")).toBe(0);
    expect(Object.keys(r.aggregate.counters).filter((k) => k.startsWith("errors."))).toEqual([]);
  });

  test("signed streams with a wrong secret are rejected by the server", async () => {
    const flow = [{ connect: {} }, { subscribe: { signedStream: "room", as: "room" } }];
    const run = await runArtillery({ script: script(2, flow), env: { ANYCABLE_STREAMS_SECRET: "not-it" } });
    expect(counter(run.report!, "errors.cable.subscription_rejected"), run.output).toBe(2);
    expect(counter(run.report!, "cable.subscription_rejected.app_rejected"), run.output).toBe(2);
    expect(run.output).not.toContain("not-it");
  });

  test("history on subscribe, then a reconnect restores the session and history fills the gap", async () => {
    const stream = `history-${Date.now()}`;
    // Stamped, sequenced messages every 50 ms for the whole run (bounded): some fall in the gap.
    let seq = 0;
    const publish = () =>
      fetch(anycable.broadcastUrl, { method: "POST", body: JSON.stringify({ stream, data: JSON.stringify({ ts: Date.now(), seq: ++seq, sender: "test" }) }) }).then(
        (res) => res.arrayBuffer(),
        () => undefined,
      );
    await publish();
    await publish();
    const publisher = setInterval(() => void (seq < 600 && publish()), 50);
    try {
      const flow = [
        { connect: {} },
        { subscribe: { stream, as: "s", history: { since: 300 } } },
        { listen: { channel: "s", for: 1 } },
        { reconnect: { history: true } },
        { listen: { channel: "s", for: 1 } },
      ];
      const run = await runArtillery({ script: script(3, flow), env });
      expect(run.code, run.output).toBe(0);
      const r = run.report!;
      expect(counter(r, "vusers.completed"), run.output).toBe(3);
      expect(counter(r, "cable.subscriptions_restored")).toBe(3);
      expect(counter(r, "cable.subscriptions_resubscribed")).toBe(0);
      expect(samples(r, "cable.restore_latency")).toBe(3);
      expect(counter(r, "cable.reconnect_attempts")).toBe(3);
      expect(samples(r, "cable.history_latency")).toBe(6);
      expect(counter(r, "cable.history_replayed")).toBeGreaterThanOrEqual(3 * 2);
      expect(counter(r, "cable.messages_missing")).toBe(0);
    } finally {
      clearInterval(publisher);
    }
  });

  test("receive {event: whisper}, which no server sends, is refused before the load, naming the step", async () => {
    const flow = [{ connect: {} }, { subscribe: { stream: "s", as: "s" } }, { receive: { channel: "s", event: "whisper" } }];
    const run = await runArtillery({ script: script(2, flow), env, timeoutMs: 30_000 });
    expect(run.code).not.toBe(0);
    expect(run.output).toContain('step 3 (receive): field "event": no server sends a "whisper" frame');
    expect(run.report?.aggregate.counters["vusers.created"] ?? 0).toBe(0);
  });

  test("Pusher mode: public, private and presence channels, client events, and publish through the HTTP API", async () => {
    const flow = [
      { connect: {} },
      { subscribe: { channel: "news-{{ $testId }}", as: "news" } },
      { subscribe: { channel: "private-room-{{ $testId }}", as: "room" } },
      { subscribe: { channel: "presence-lobby-{{ $testId }}", as: "lobby", user: { id: "{{ $uuid }}", info: { name: "Kay" } } } },
      { think: 1 },
      { publish: { channel: "news-{{ $testId }}", event: "headline", data: { from: "{{ $uuid }}" }, stamp: true } },
      { receive: { channel: "news", event: "headline", match: { from: "{{ $uuid }}" } } },
      { trigger: { channel: "room", event: "client-typing", data: { from: "{{ $uuid }}" }, stamp: true } },
      { receive: { channel: "room", event: "client-typing" } },
    ];
    const pusher = { protocol: "pusher", anycable: {}, pusher: { key: PUSHER.key, appId: PUSHER.appId } };
    const run = await runArtillery({
      script: script(2, flow, pusher, anycable.pusherUrl),
      env: { PUSHER_APP_SECRET: PUSHER.secret },
    });
    expect(run.code, run.output).toBe(0);
    const r = run.report!;
    expect(counter(r, "vusers.completed"), run.output).toBe(2);
    expect(counter(r, "cable.subscriptions")).toBe(6);
    expect(samples(r, "cable.publish_latency")).toBe(2);
    expect(Object.keys(r.aggregate.counters).filter((k) => k.startsWith("errors."))).toEqual([]);
  });
});

// AnyCable's features against the local target (which follows AnyCable's docs), each with the plain
// protocol's fallback against a real Rails server, which speaks only actioncable-v1-json.
import { mkdtempSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import yaml from "js-yaml";
import { counter, runArtillery, samples, startRails, type RailsServer } from "cable-test-servers";
import { startTarget, type LocalTarget } from "cable-local-target";
import { afterAll, beforeAll, describe, expect, test } from "vitest";

const repo = path.resolve(__dirname, "../../..");
const cookie = { cookies: { uid: "Kay/{{ $uuid }}" } };

let target: LocalTarget;
let rails: RailsServer;
beforeAll(async () => {
  [target, rails] = await Promise.all([startTarget({ port: 0 }), startRails()]);
});
afterAll(async () => {
  await Promise.all([target?.close(), rails?.stop()]);
});

function script(url: string, users: number, flow: unknown[], anycable: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) {
  return {
    config: { target: url, engines: { cable: {} }, cable: { timeout: 3, anycable }, phases: [{ duration: 1, arrivalCount: users }], ...extra },
    scenarios: [{ name: "user", engine: "cable", flow }],
  };
}

describe("AnyCable $pubsub streams and HTTP broadcasts", () => {
  test("a public stream receives stamped broadcasts published through /_broadcast, single and batched", async () => {
    const flow = [
      { connect: cookie },
      { subscribe: { stream: "news-{{ $uuid }}", as: "news" } },
      { subscribe: { stream: "sports-{{ $uuid }}", as: "sports" } },
      { publish: { stream: "news-{{ $uuid }}", data: { text: "one" }, stamp: true } },
      { receive: { channel: "news", match: { text: "one" } } },
      { publish: { streams: ["news-{{ $uuid }}", "sports-{{ $uuid }}"], data: { text: "two" }, stamp: true } },
      { receive: { channel: "news", match: { text: "two" } } },
      { receive: { channel: "sports", match: { text: "two" } } },
    ];
    const run = await runArtillery({ script: script(target.cableUrl, 4, flow) });
    expect(run.code, run.output).toBe(0);
    const r = run.report!;
    expect(counter(r, "vusers.completed")).toBe(4);
    expect(counter(r, "cable.messages_sent")).toBe(12);
    expect(samples(r, "cable.publish_latency")).toBe(8);
    expect(samples(r, "cable.broadcast_latency")).toBe(12);
    expect(counter(r, "cable.messages_missing")).toBe(0);
  });

  test("signed streams: the engine signs with the streams secret; a wrong secret is rejected", async () => {
    const flow = [{ connect: cookie }, { subscribe: { signedStream: "private-room", as: "room" } }];
    const ok = await runArtillery({ script: script(target.cableUrl, 2, flow), env: { ANYCABLE_STREAMS_SECRET: target.streamsSecret } });
    expect(ok.code, ok.output).toBe(0);
    expect(counter(ok.report!, "cable.subscriptions")).toBe(2);
    const wrong = await runArtillery({ script: script(target.cableUrl, 2, flow), env: { ANYCABLE_STREAMS_SECRET: "not-it" } });
    expect(counter(wrong.report!, "errors.cable.subscription_rejected")).toBe(2);
    expect(wrong.output).not.toContain("not-it");
  });

  test("a broadcast endpoint that refuses is cable.publish_failed", async () => {
    const locked = await startTarget({ port: 0, cable: { broadcastKey: "right-key" } });
    try {
      const flow = [{ publish: { stream: "news", data: { a: 1 } } }];
      const run = await runArtillery({ script: script(locked.cableUrl, 2, flow), env: { ANYCABLE_BROADCAST_KEY: "wrong-key" } });
      expect(counter(run.report!, "errors.cable.publish_failed")).toBe(2);
      const good = await runArtillery({ script: script(locked.cableUrl, 2, flow), env: { ANYCABLE_BROADCAST_KEY: "right-key" } });
      expect(counter(good.report!, "vusers.completed"), good.output).toBe(2);
    } finally {
      await locked.close();
    }
  });
});

describe("the extended protocol, and its fallback", () => {
  const speakFlow = [
    { connect: cookie },
    { subscribe: { channel: "ChatChannel", params: { id: "ext-{{ $uuid }}" }, as: "chat" } },
    { perform: { channel: "chat", action: "speak", data: { message: "hi" } } },
    { receive: { channel: "chat", match: { message: "hi" }, metric: true } },
  ];

  test("required: AnyCable accepts it and keeps the sid; Rails does not, and each VU fails with ext_unsupported", async () => {
    const anycable = await runArtillery({ script: script(target.cableUrl, 2, [...speakFlow, { log: "sid={{ sid }}" }], { extended: "required" }) });
    expect(anycable.code, anycable.output).toBe(0);
    expect(counter(anycable.report!, "vusers.completed")).toBe(2);
    expect(anycable.output).toMatch(/sid=\S+/);
    expect(anycable.output).not.toMatch(/sid=undefined/);
    const plain = await runArtillery({ script: script(rails.url, 2, speakFlow, { extended: "required" }) });
    expect(counter(plain.report!, "errors.cable.ext_unsupported")).toBe(2);
  });

  test("preferred: AnyCable speaks it; Rails falls back to the plain protocol and the chat still works", async () => {
    // `{{ sid }}` is set only by an extended welcome: it tells which protocol each run spoke.
    const flow = [...speakFlow, { log: "protocol={{ sid }}" }];
    for (const [url, spoke] of [
      [target.cableUrl, /protocol=(?!undefined)\S+/],
      [rails.url, /protocol=undefined/],
    ] as const) {
      const run = await runArtillery({ script: script(url, 2, flow, { extended: "preferred" }) });
      expect(run.code, run.output).toBe(0);
      expect(counter(run.report!, "vusers.completed"), url).toBe(2);
      expect(samples(run.report!, "cable.rtt")).toBe(2);
      expect(run.output).toMatch(spoke);
    }
  });

  test("history on subscribe replays what the stream had; plain mode refuses the step before the run", async () => {
    target.broadcast("archive", JSON.stringify({ n: 1 }));
    target.broadcast("archive", JSON.stringify({ n: 2 }));
    const flow = [{ connect: cookie }, { subscribe: { stream: "archive", as: "archive", history: { since: 60 } } }, { receive: { channel: "archive", match: { n: 2 } } }];
    const run = await runArtillery({ script: script(target.cableUrl, 2, flow, { extended: "required" }) });
    expect(run.code, run.output).toBe(0);
    expect(counter(run.report!, "vusers.completed")).toBe(2);
    expect(counter(run.report!, "cable.history_replayed")).toBe(4);
    expect(samples(run.report!, "cable.history_latency")).toBe(2);
    const plain = await runArtillery({ script: script(target.cableUrl, 2, flow) });
    expect(plain.code).not.toBe(0);
    expect(plain.output).toContain('"history" needs AnyCable\'s extended protocol');
  });

  test("history on a preferred connection that fell back to plain is skipped, not waited for", async () => {
    const flow = [{ connect: cookie }, { subscribe: { channel: "ChatChannel", params: { id: "h" }, as: "chat", history: { since: 60 } } }];
    const run = await runArtillery({ script: script(rails.url, 2, flow, { extended: "preferred" }) });
    expect(run.code, run.output).toBe(0);
    expect(counter(run.report!, "vusers.completed")).toBe(2);
    expect(samples(run.report!, "cable.history_latency")).toBe(0);
    expect(run.durationMs).toBeLessThan(20_000);
  });

  test("whispers reach the others on the stream, and presence joins are received", async () => {
    const flow = [
      { connect: cookie },
      { subscribe: { stream: "lobby-{{ $testId }}", as: "lobby" } },
      { think: 1 },
      { whisper: { channel: "lobby", data: { typing: true }, stamp: true } },
      // A whisper is received by its payload: on the wire it is a plain message (no event name).
      { receive: { channel: "lobby", match: { typing: true } } },
      { join: { channel: "lobby", id: "{{ $uuid }}", info: { name: "Kay" } } },
      { receive: { channel: "lobby", event: "presence:join" } },
      { think: 1 },
      { leave: { channel: "lobby" } },
    ];
    const run = await runArtillery({ script: script(target.cableUrl, 2, flow, { extended: "required" }) });
    expect(run.code, run.output).toBe(0);
    expect(counter(run.report!, "vusers.completed")).toBe(2);
    expect(samples(run.report!, "cable.broadcast_latency")).toBeGreaterThanOrEqual(2);
  });
});

describe("reconnect storms", () => {
  /**
   * The storm scenario's listeners, 12 of them, and a restart once they are all in. The test publishes
   * the stamped, sequenced messages itself, every 100 ms while the run lasts (the scenario's senders are picked
   * by weight, at random), so listeners that reconnect with up to 1 s of jitter miss some.
   */
  async function storm(withHistory: boolean) {
    const t = await startTarget({ port: 0 });
    const dir = mkdtempSync(path.join(os.tmpdir(), "storm-"));
    const scenario = yaml.load(readFileSync(path.join(repo, "scenarios/reconnect-storm.yml"), "utf8")) as any;
    scenario.scenarios = scenario.scenarios.filter((s: any) => s.name === "listener");
    scenario.scenarios[0].flow.find((step: any) => step.reconnect).reconnect.history = withHistory;
    scenario.config.target = t.cableUrl;
    scenario.config.phases = [{ duration: 1, arrivalCount: 12 }];
    scenario.config.variables = { ...scenario.config.variables, wait: 30, jitter: 1, stream: "storm" };
    // Published until the run ends (bounded: 60 s), so that the restart always falls within it.
    let seq = 0;
    const publisher = setInterval(() => {
      seq += 1;
      t.broadcast("storm", JSON.stringify({ text: "hello", ts: Date.now(), seq, sender: "test" }));
      if (seq === 600) clearInterval(publisher);
    }, 100);
    try {
      const running = runArtillery({ script: scenario, outputDir: dir, timeoutMs: 90_000 });
      // Restart once the listeners are all in: connections counted and steady for 1 s (bounded).
      let [seen, steadySince] = [0, Date.now()];
      for (let i = 0; i < 300; i++) {
        await new Promise((r) => setTimeout(r, 100));
        const now = t.counters().cableConnections;
        if (now !== seen) [seen, steadySince] = [now, Date.now()];
        else if (seen > 0 && Date.now() - steadySince > 1000) break;
      }
      expect(t.restart()).toBe(12);
      return await running;
    } finally {
      clearInterval(publisher);
      await t.close();
    }
  }

  test("everyone comes back restored, history fills the gap, and nothing is missing", async () => {
    const run = await storm(true);
    expect(run.code, run.output).toBe(0);
    const r = run.report!;
    expect(counter(r, "vusers.completed")).toBe(12);
    expect(counter(r, "cable.subscriptions_restored")).toBe(12);
    expect(samples(r, "cable.restore_latency")).toBe(12);
    expect(samples(r, "cable.history_latency")).toBe(12);
    expect(counter(r, "cable.history_replayed")).toBeGreaterThan(0);
    expect(counter(r, "cable.messages_missing")).toBe(0);
    expect(counter(r, "cable.messages_duplicated")).toBe(0);
  });

  test("without history, the same storm loses messages, and the ledger counts them", async () => {
    const run = await storm(false);
    expect(run.code, run.output).toBe(0);
    const r = run.report!;
    expect(counter(r, "cable.subscriptions_restored")).toBe(12);
    expect(counter(r, "cable.messages_missing")).toBeGreaterThan(0);
    expect(counter(r, "cable.messages_duplicated")).toBe(0);
  });
});

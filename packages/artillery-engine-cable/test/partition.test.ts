// A silent partition, noticed the way real clients notice it: listeners on real servers through a
// TCP proxy that goes silent (no FIN, no reset) once they are in, then heals. The sockets that lived
// through it either stay silent for good ("forget") or are reset ("reset"). Either way every
// listener must notice the silence by the protocol's stale rule, drop the dead socket, retry through
// the silence and be back once the network is; `cable.restore_latency` must read the outage as users
// lived it (from the last frame heard, about the silence plus the back-off), and
// `cable.drop_detection_latency` the stale rule's wait. The 100-listener, 20-second form of the
// issue is a manual run (docs/verdicts.md, "Silent partitions"); this is its CI size. The local
// target's own partition knob runs in the same table, so that the double is held to the real ones.
import { startTarget } from "cable-local-target";
import { establishedConnections, runArtillery, samples, counter, startAnyCable, startRails, startSockudo, startTcpProxy, type ArtilleryRun } from "cable-test-servers";
import { describe, expect, test } from "vitest";

const LISTENERS = 30;
const SILENCE_MS = 12_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

type Survivors = "reset" | "forget";

/** A server under test: a real one (partitioned by the proxy in front of it) or the local target (by its own knob). */
interface Server {
  port: number;
  stop(): Promise<void>;
  key?: string;
  appId?: string;
  partition?(ms: number, survivors: Survivors): number;
}

interface Target {
  url: (port: number) => string;
  cable?: Record<string, unknown>;
  subscribe: Record<string, unknown>;
}

function script(url: string, target: Target) {
  return {
    config: {
      target: url,
      engines: { cable: {} },
      // Attempts into the silence hang until the handshake timeout, then back off (at most 2 s).
      cable: { timeout: 3, reconnect: { initialDelay: 0.5, maxDelay: 2 }, ...target.cable },
      phases: [{ duration: 2, arrivalCount: LISTENERS }],
    },
    scenarios: [
      {
        name: "listener",
        engine: "cable",
        flow: [
          { connect: { cookies: { uid: "Listener/{{ $uuid }}" } } },
          { subscribe: { ...target.subscribe, as: "room" } },
          { reconnect: { after: "drop", wait: 60, timeout: 60, jitter: 0.5 } },
          { listen: { channel: "room", for: 2 } },
        ],
      },
    ],
  };
}

/** Runs the listeners, silences their network once they are all in, and heals it SILENCE_MS later. */
async function partitioned(server: Server, target: Target, survivors: Survivors): Promise<ArtilleryRun> {
  const proxy = server.partition ? undefined : await startTcpProxy(server.port);
  const port = proxy?.port ?? server.port;
  try {
    const running = runArtillery({ script: script(target.url(port), target), timeoutMs: 120_000 });
    for (const deadline = Date.now() + 30_000; establishedConnections(port) < LISTENERS && Date.now() < deadline; ) await sleep(100);
    await sleep(1_000);
    if (proxy) proxy.silence();
    else server.partition!(SILENCE_MS, survivors);
    await sleep(SILENCE_MS);
    proxy?.heal(survivors);
    return await running;
  } finally {
    await proxy?.stop();
  }
}

function expectBackAfterTheOutage(run: ArtilleryRun, staleAfterMs: number) {
  expect(run.code, run.output).toBe(0);
  const r = run.report!;
  const p50 = (name: string) => r.aggregate.summaries[name]?.p50 ?? NaN;
  const figures = `restore p50 ${p50("cable.restore_latency")}, detection p50 ${p50("cable.drop_detection_latency")}`;
  expect(counter(r, "vusers.completed"), run.output).toBe(LISTENERS);
  expect(counter(r, "cable.stale_connection")).toBe(LISTENERS);
  expect(samples(r, "cable.restore_latency")).toBe(LISTENERS);
  // Noticed by the stale rule: its wait, give or take the once-a-second check (and the sketch's 1%).
  expect(p50("cable.drop_detection_latency"), figures).toBeGreaterThanOrEqual(staleAfterMs * 0.98);
  expect(p50("cable.drop_detection_latency"), figures).toBeLessThanOrEqual(staleAfterMs + 1_500);
  // The outage as lived: from the last frame heard (at most a ping interval before the silence)
  // to back, so at least the silence, at most the silence plus one more attempt's hang and back-off.
  expect(p50("cable.restore_latency"), figures).toBeGreaterThanOrEqual(SILENCE_MS - 1_000);
  expect(p50("cable.restore_latency"), figures).toBeLessThanOrEqual(SILENCE_MS + 3_000 + 2_000 + 2_000);
  expect(Object.keys(r.aggregate.counters).filter((k) => k.startsWith("errors."))).toEqual([]);
}

interface Case {
  start: () => Promise<Server>;
  path: string;
  survivors: Survivors;
  staleAfterMs: number;
  subscribe: Record<string, unknown>;
  cable?: (server: Server) => Record<string, unknown>;
}

const localTarget = async (): Promise<Server> => {
  const target = await startTarget({ port: 0, control: true });
  return { port: target.port, stop: () => target.close(), partition: (ms, survivors) => target.partition(ms, survivors) };
};

const cases: Record<string, Case> = {
  "anycable-go, survivors silent for good: all back, noticed after two missed pings (6 s)": { start: () => startAnyCable(), path: "/cable", survivors: "forget", staleAfterMs: 6_000, subscribe: { stream: "partition" } },
  "anycable-go, survivors reset when it heals: the restore latency is the outage, not the reset's instant": { start: () => startAnyCable(), path: "/cable", survivors: "reset", staleAfterMs: 6_000, subscribe: { stream: "partition" } },
  "Rails under puma (Action Cable's 3 s beat): all back": { start: () => startRails(), path: "/cable", survivors: "forget", staleAfterMs: 6_000, subscribe: { channel: "ChatChannel", params: { id: "partition" } } },
  "Sockudo (Pusher), staleAfter: 5 for a server whose activity_timeout is 120 s: all back": {
    start: () => startSockudo(),
    path: "",
    survivors: "forget",
    staleAfterMs: 5_000,
    subscribe: { channel: "partition" },
    cable: (server) => ({ protocol: "pusher", pusher: { key: server.key, appId: server.appId }, staleAfter: 5 }),
  },
  "the local target's own partition knob (the double, beside the real ones): all back, the same way": { start: localTarget, path: "/cable", survivors: "forget", staleAfterMs: 6_000, subscribe: { channel: "ChatChannel", params: { id: "partition" } } },
};

describe("a silent partition", () => {
  // The five run side by side: listeners are light, and the silence is most of each run.
  test.concurrent.each(Object.entries(cases))("%s", async (_name, c) => {
    const server = await c.start();
    try {
      const run = await partitioned(server, { url: (port) => `ws://127.0.0.1:${port}${c.path}`, cable: c.cable?.(server), subscribe: c.subscribe }, c.survivors);
      expectBackAfterTheOutage(run, c.staleAfterMs);
    } finally {
      await server.stop();
    }
  }, 120_000);
});

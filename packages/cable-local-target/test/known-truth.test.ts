import { afterEach, describe, expect, test } from "vitest";
import { Faults } from "../src/faults.js";
import { Leak } from "../src/leak.js";
import { startTarget, type LocalTarget, type TargetOptions } from "../src/index.js";
import { connect, delay, identifier, notPing, pusherClient, pusherData, subscribeFrame, type RawClient } from "./helpers.js";

// The "known truth" knobs, for judging time-based verdicts: a spike whose recovery time is known
// (overCapacityLingerMs), a known leak (leakMbPerMinute, leakDelayMsPerMinute), the target's own
// Prometheus endpoint (GET /metrics) and a restart that drops both protocols (POST /_restart).

const MIB = 1024 * 1024;

let target: LocalTarget | undefined;
const clients: RawClient[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  await target?.close();
  target = undefined;
});

/** The target, with the wall-clock bounds of its start (the leak knobs count from it). */
async function start(options: TargetOptions): Promise<{ t: LocalTarget; before: number; after: number }> {
  const before = Date.now();
  target = await startTarget(options);
  return { t: target, before, after: Date.now() };
}

async function cableSubscribed(t: LocalTarget): Promise<RawClient> {
  const client = await connect(t.cableUrl, { protocols: ["actioncable-v1-json"], cookie: "uid=Tess/5" });
  clients.push(client);
  expect(await client.next()).toEqual({ type: "welcome" });
  client.send({ command: "subscribe", identifier: identifier("BenchmarkChannel") });
  expect(await client.next(notPing)).toMatchObject({ type: "confirm_subscription" });
  return client;
}

async function pusherSubscribed(t: LocalTarget, channel: string): Promise<RawClient> {
  const { client, socketId } = await pusherClient(t.url, t.pusher.key);
  clients.push(client);
  client.send(subscribeFrame(t.pusher, socketId, channel));
  expect(await client.next()).toMatchObject({ event: "pusher_internal:subscription_succeeded" });
  return client;
}

/** Milliseconds from `send()` until `next()` resolves. */
async function lateness(send: () => void, next: () => Promise<unknown>): Promise<number> {
  const started = Date.now();
  send();
  await next();
  return Date.now() - started;
}

/** Polls `condition` every 10 ms, at most `timeoutMs`. */
async function until(condition: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await delay(10);
  }
}

/** Prometheus text format → name (with its labels) → value; throws on a line that is not the format. */
function parseMetrics(text: string): { values: Map<string, number>; types: Map<string, string> } {
  const values = new Map<string, number>();
  const types = new Map<string, string>();
  expect(text.endsWith("\n")).toBe(true);
  for (const line of text.slice(0, -1).split("\n")) {
    const type = /^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped)$/.exec(line);
    if (type) {
      types.set(type[1], type[2]);
      continue;
    }
    if (/^# HELP [a-zA-Z_:][a-zA-Z0-9_:]* .+$/.test(line)) continue;
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*(?:\{[^}]*\})?) (\S+)$/.exec(line);
    if (!sample) throw new Error(`not a Prometheus text line: ${JSON.stringify(line)}`);
    const value = Number(sample[2]);
    expect(Number.isFinite(value), line).toBe(true);
    values.set(sample[1], value);
  }
  return { values, types };
}

async function scrape(t: LocalTarget): Promise<Map<string, number>> {
  const response = await fetch(`${t.httpUrl}/metrics`);
  expect(response.status).toBe(200);
  return parseMetrics(await response.text()).values;
}

describe("overCapacityLingerMs", () => {
  test("the delay and the linger, with an injected clock", () => {
    const faults = new Faults({ capacityConnections: 2, overCapacityDelayMs: 300, overCapacityLingerMs: 1500 }, 0);
    const channel = faults.config;
    expect(faults.deliveryDelayMs(channel, 2, 100)).toBe(0);
    faults.noteOpenConnections(3, 1_000);
    expect(faults.deliveryDelayMs(channel, 3, 1_500)).toBe(300);
    // Back to the capacity at 2 000: late until 3 500, on time from then on.
    faults.noteOpenConnections(2, 2_000);
    expect(faults.deliveryDelayMs(channel, 2, 2_000)).toBe(300);
    expect(faults.deliveryDelayMs(channel, 2, 3_499)).toBe(300);
    expect(faults.deliveryDelayMs(channel, 2, 3_500)).toBe(0);
    // A new overload during a linger: late throughout, and the linger starts again when it ends.
    faults.noteOpenConnections(3, 4_000);
    faults.noteOpenConnections(1, 5_000);
    faults.noteOpenConnections(3, 5_500);
    faults.noteOpenConnections(2, 6_000);
    expect(faults.deliveryDelayMs(channel, 2, 7_499)).toBe(300);
    expect(faults.deliveryDelayMs(channel, 2, 7_500)).toBe(0);
    // Without the knob (default 0): on time as soon as the connections are back.
    const plain = new Faults({ capacityConnections: 2, overCapacityDelayMs: 300 }, 0);
    plain.noteOpenConnections(3, 1_000);
    plain.noteOpenConnections(2, 2_000);
    expect(plain.deliveryDelayMs(plain.config, 2, 2_000)).toBe(0);
  });

  test("deliveries stay late for the linger after the overload ends, then are on time (Action Cable and Pusher)", async () => {
    const { t } = await start({ faults: { capacityConnections: 2, overCapacityDelayMs: 300, overCapacityLingerMs: 1500 } });
    const cable = await cableSubscribed(t);
    const pusher = await pusherSubscribed(t, "spiky");
    const viaCable = () => lateness(() => t.broadcast("all", '{"i":1}'), () => cable.next(notPing));
    const viaPusher = () => lateness(() => t.trigger("spiky", "tick", "1"), () => pusher.next());
    expect(await viaCable()).toBeLessThan(200);
    // A third connection: over the capacity.
    const extra = (await pusherClient(t.url, t.pusher.key)).client;
    clients.push(extra);
    expect(await viaCable()).toBeGreaterThanOrEqual(290);
    // The overload ends when the target sees the third connection close.
    const closing = Date.now();
    extra.close();
    await until(() => t.counters().connectionsOpen === 2);
    const ended = Date.now();
    // Inside the linger, on both protocols.
    expect(await viaCable()).toBeGreaterThanOrEqual(290);
    expect(await viaPusher()).toBeGreaterThanOrEqual(290);
    // The linger ends 1 500 ms after the overload did, somewhere in [closing + 1 500, ended + 1 500]:
    // still late just before, on time again just after.
    await delay(Math.max(0, closing + 1_350 - Date.now()));
    expect(await viaPusher()).toBeGreaterThanOrEqual(290);
    await delay(Math.max(0, ended + 1_550 - Date.now()));
    expect(await viaCable()).toBeLessThan(200);
    expect(await viaPusher()).toBeLessThan(200);
  });
});

describe("leakMbPerMinute, leakMaxMb", () => {
  test("retains rate × minutes since the start, up to the bound; lowering the knob releases (injected clock)", () => {
    const faults = new Faults({ leakMbPerMinute: 6 }, 0);
    const leak = new Leak(faults);
    leak.tick(0);
    expect(leak.heldBytes).toBe(0);
    leak.tick(30_000);
    expect(leak.heldBytes).toBe(3 * MIB);
    leak.tick(60_000);
    expect(leak.heldBytes).toBe(6 * MIB);
    faults.set({ leakMbPerMinute: 6, leakMaxMb: 8 });
    leak.tick(600_000);
    expect(leak.heldBytes).toBe(8 * MIB);
    // The default bound: 512 MiB (checked without allocating it).
    faults.set({ leakMbPerMinute: 6 });
    expect(leak.targetBytes(600 * 60_000)).toBe(512 * MIB);
    faults.set({});
    leak.tick(600_000);
    expect(leak.heldBytes).toBe(0);
  });

  test("the target's resident memory really grows (GET /metrics)", async () => {
    // 1 800 MiB a minute = 30 MiB a second, bounded at 60 MiB: reached at the second tick.
    const { t, before, after } = await start({ faults: { leakMbPerMinute: 1_800, leakMaxMb: 60 } });
    const first = await scrape(t);
    const rssBefore = first.get("process_resident_memory_bytes")!;
    expect(first.get("cable_local_target_leaked_bytes")).toBe(0);
    await until(() => t.counters().leakedBytes > 0, 3_000);
    // The first step is the rate × the time since the start.
    const at = Date.now();
    const held = t.counters().leakedBytes;
    expect(held).toBeLessThanOrEqual(30 * MIB * ((at - before) / 1000) + 1);
    expect(held).toBeGreaterThanOrEqual(30 * MIB * ((at - after - 1_000) / 1000));
    await until(() => t.counters().leakedBytes >= 60 * MIB, 4_000);
    const second = await scrape(t);
    expect(second.get("cable_local_target_leaked_bytes")).toBe(60 * MIB);
    const grown = second.get("process_resident_memory_bytes")! - rssBefore;
    expect(grown, `RSS grew by ${(grown / MIB).toFixed(1)} MiB`).toBeGreaterThanOrEqual(30 * MIB);
    // The bound holds at the next tick.
    await delay(1_100);
    expect(t.counters().leakedBytes).toBe(60 * MIB);
  });
});

describe("leakDelayMsPerMinute", () => {
  test("adds minutes since the start × n ms (injected clock)", () => {
    const faults = new Faults({ leakDelayMsPerMinute: 100, broadcastDelayMs: 5 }, 1_000);
    expect(faults.deliveryDelayMs(faults.config, 0, 1_000)).toBe(5);
    expect(faults.deliveryDelayMs(faults.config, 0, 1_000 + 30 * 60_000)).toBe(3_005);
    expect(faults.deliveryDelayMs(faults.config, 0, 1_000 + 90_000)).toBe(155);
  });

  test("deliveries get later as the target runs (Action Cable and Pusher)", async () => {
    // 30 000 ms a minute: half a millisecond late for every millisecond of uptime.
    const { t, before, after } = await start({ faults: { leakDelayMsPerMinute: 30_000 } });
    const cable = await cableSubscribed(t);
    const pusher = await pusherSubscribed(t, "leaky");
    const expected = (sentAt: number) => ({ min: (sentAt - after) / 2 - 5, max: (sentAt - before) / 2 + 200 });
    let sentAt = Date.now();
    const early = await lateness(() => t.broadcast("all", '{"i":1}'), () => cable.next(notPing));
    expect(early).toBeGreaterThanOrEqual(expected(sentAt).min);
    expect(early).toBeLessThanOrEqual(expected(sentAt).max);
    await delay(Math.max(0, after + 1_800 - Date.now()));
    sentAt = Date.now();
    const late = await lateness(() => t.trigger("leaky", "tick", "1"), () => pusher.next());
    expect(late).toBeGreaterThanOrEqual(expected(sentAt).min);
    expect(late).toBeLessThanOrEqual(expected(sentAt).max);
    expect(late - early).toBeGreaterThanOrEqual(400);
  });
});

describe("GET /metrics", () => {
  test("Prometheus text with the process's real CPU and memory and the open connections of both protocols", async () => {
    const { t } = await start({});
    await cableSubscribed(t);
    await pusherSubscribed(t, "watched");
    const response = await fetch(`${t.httpUrl}/metrics`);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4(;|$)/);
    const { values, types } = parseMetrics(await response.text());
    expect(types.get("process_cpu_seconds_total")).toBe("counter");
    expect(types.get("process_resident_memory_bytes")).toBe("gauge");
    expect(types.get("cable_local_target_connections")).toBe("gauge");
    for (const name of values.keys()) expect(types.has(name.replace(/\{.*$/, "")), name).toBe(true);
    expect(values.get("cable_local_target_connections")).toBe(2);
    // The target runs in this process: its figures are this process's.
    const rss = values.get("process_resident_memory_bytes")!;
    expect(rss).toBeGreaterThan(0.5 * process.memoryUsage().rss);
    expect(rss).toBeLessThan(2 * process.memoryUsage().rss);
    const cpu = values.get("process_cpu_seconds_total")!;
    expect(cpu).toBeGreaterThan(0);
    // Burn ~200 ms of CPU: the counter goes up by about that much.
    const burnUntil = Date.now() + 200;
    let spin = 0;
    while (Date.now() < burnUntil) spin += Math.sqrt(spin + 1);
    expect(spin).toBeGreaterThan(0);
    const later = await scrape(t);
    expect(later.get("process_cpu_seconds_total")! - cpu).toBeGreaterThanOrEqual(0.1);
    clients.splice(0).forEach((c) => c.close());
    await until(() => t.counters().cableConnections + t.counters().pusherConnections === 0);
    expect((await scrape(t)).get("cable_local_target_connections")).toBe(0);
  });
});

describe("POST /_restart", () => {
  test("drops Pusher connections too: pusher:error 4200, then close 4200; Action Cable as before", async () => {
    const { t } = await start({ control: true });
    const cable = await cableSubscribed(t);
    const pusher = await pusherSubscribed(t, "restarted");
    const response = await fetch(`${t.httpUrl}/_restart`, { method: "POST" });
    expect(await response.json()).toEqual({ disconnected: 2 });
    const error = await pusher.next();
    expect(error.event).toBe("pusher:error");
    expect(pusherData(error)).toEqual({ message: "Server restart", code: 4200 });
    expect(await pusher.closed).toEqual({ code: 4200, reason: "Server restart" });
    expect(await cable.next(notPing)).toEqual({ type: "disconnect", reason: "server_restart", reconnect: true });
    expect(await cable.closed).toEqual({ code: 1001, reason: "Server restart" });
    // target.restart() is the same restart.
    const again = await pusherSubscribed(t, "restarted");
    expect(t.restart()).toBe(1);
    expect((await again.closed).code).toBe(4200);
    expect(t.counters().restarts).toBe(2);
  });
});

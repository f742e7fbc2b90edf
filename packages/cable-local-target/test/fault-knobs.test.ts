import { afterEach, describe, expect, test } from "vitest";
import { RateWindow } from "../src/faults.js";
import { startTarget, type LocalTarget, type TargetOptions } from "../src/index.js";
import { cableClient, connect, identifier, isPing, notPing, pusherClient, pusherData, subscribeFrame, type RawClient } from "./helpers.js";

// Each knob, observed on the wire for the protocols it applies to.

let target: LocalTarget | undefined;
const clients: RawClient[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  await target?.close();
  target = undefined;
});

async function start(options: TargetOptions): Promise<LocalTarget> {
  target = await startTarget(options);
  return target;
}

const TESS = "uid=Tess/5";

async function cableSubscribed(t: LocalTarget, id = identifier("BenchmarkChannel")): Promise<RawClient> {
  const client = await cableClient(t.cableUrl, TESS, clients);
  client.send({ command: "subscribe", identifier: id });
  expect(await client.next(notPing)).toMatchObject({ type: "confirm_subscription" });
  return client;
}

async function pusherSubscribed(t: LocalTarget, channel: string) {
  const { client, socketId } = await pusherClient(t.url, t.pusher.key);
  clients.push(client);
  client.send(subscribeFrame(t.pusher, socketId, channel));
  return { client, socketId };
}

describe("confirmDelayMs", () => {
  test("Action Cable: the confirmation comes late, and per-channel overrides apply to that channel only", async () => {
    const t = await start({ faults: { channels: { ChatChannel: { confirmDelayMs: 300 } } } });
    const client = await cableClient(t.cableUrl, TESS, clients);
    let started = Date.now();
    client.send({ command: "subscribe", identifier: identifier("ChatChannel", { id: 1 }) });
    expect(await client.next(notPing)).toMatchObject({ type: "confirm_subscription" });
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    started = Date.now();
    client.send({ command: "subscribe", identifier: identifier("BenchmarkChannel") });
    expect(await client.next(notPing)).toMatchObject({ type: "confirm_subscription" });
    expect(Date.now() - started).toBeLessThan(250);
  });

  test("Pusher: subscription_succeeded comes late", async () => {
    const t = await start({ faults: { confirmDelayMs: 300 } });
    const started = Date.now();
    const { client } = await pusherSubscribed(t, "slow");
    expect(await client.next()).toMatchObject({ event: "pusher_internal:subscription_succeeded" });
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
  });
});

describe("rejectSubscriptions", () => {
  test("Action Cable: reject_subscription even for a channel that would confirm", async () => {
    const t = await start({ faults: { rejectSubscriptions: true } });
    const client = await cableClient(t.cableUrl, TESS, clients);
    const id = identifier("BenchmarkChannel");
    client.send({ command: "subscribe", identifier: id });
    expect(await client.next(notPing)).toEqual({ identifier: id, type: "reject_subscription" });
  });

  test("Pusher: a public channel answers with the subscription error", async () => {
    const t = await start({ faults: { channels: { "news": { rejectSubscriptions: true } } } });
    const { client } = await pusherSubscribed(t, "news");
    expect(await client.next()).toMatchObject({ event: "pusher:subscription_error", channel: "news" });
    client.send({ event: "pusher:subscribe", data: { channel: "sports" } });
    expect(await client.next()).toMatchObject({ event: "pusher_internal:subscription_succeeded", channel: "sports" });
  });
});

describe("dropBroadcastRatio", () => {
  test("1 drops every delivery; changing faults at runtime restores delivery", async () => {
    const t = await start({ faults: { dropBroadcastRatio: 1 } });
    const client = await cableSubscribed(t);
    for (let i = 0; i < 20; i++) t.broadcast("all", JSON.stringify({ i }));
    expect(await client.collect(200, notPing)).toEqual([]);
    expect(t.counters().deliveriesDropped).toBe(20);
    t.setFaults({});
    t.broadcast("all", '{"i":"after"}');
    expect((await client.next(notPing)).message).toEqual({ i: "after" });
  });

  test("0.5 drops about half, decided per subscriber (Pusher)", async () => {
    const t = await start({ faults: { dropBroadcastRatio: 0.5, seed: 42 } });
    const a = await pusherSubscribed(t, "lossy");
    const b = await pusherSubscribed(t, "lossy");
    await a.client.next();
    await b.client.next();
    for (let i = 0; i < 400; i++) t.trigger("lossy", "tick", String(i));
    const [gotA, gotB] = [await a.client.collect(300), await b.client.collect(0)];
    for (const got of [gotA, gotB]) {
      expect(got.length).toBeGreaterThan(140);
      expect(got.length).toBeLessThan(260);
    }
    expect(gotA.map((f) => f.data)).not.toEqual(gotB.map((f) => f.data));
    expect(t.counters().deliveriesDropped).toBe(800 - gotA.length - gotB.length);
  });
});

describe("malformedRatio", () => {
  test("1 sends every broadcast as a frame that is not JSON; other frames stay intact", async () => {
    const t = await start({ faults: { malformedRatio: 1 } });
    const client = await cableSubscribed(t);
    t.broadcast("all", JSON.stringify({ text: "x".repeat(50) }));
    const raw = await client.nextRaw();
    expect(() => JSON.parse(raw)).toThrow();
    expect(raw.startsWith('{"identifier":')).toBe(true);
    expect(t.counters().deliveriesMalformed).toBe(1);
  });
});

describe("closeAfterMs, closeCode, disconnectReason", () => {
  test("Action Cable: disconnect frame with the reason, then the close code", async () => {
    const t = await start({ faults: { closeAfterMs: 150, closeCode: 4001, disconnectReason: "server_restart", disconnectReconnect: true } });
    const client = await cableClient(t.cableUrl, TESS, clients);
    expect(await client.next(notPing)).toEqual({ type: "disconnect", reason: "server_restart", reconnect: true });
    expect((await client.closed).code).toBe(4001);
  });

  test("Action Cable without a reason: a bare close, code 1000 by default", async () => {
    const t = await start({ faults: { closeAfterMs: 100 } });
    const client = await cableClient(t.cableUrl, TESS, clients);
    expect((await client.closed).code).toBe(1000);
    expect(client.received).toEqual(['{"type":"welcome"}']);
  });

  test("closeEveryNth: only every Nth connection is closed", async () => {
    const t = await start({ faults: { closeAfterMs: 50, closeEveryNth: 3 } });
    const opened = [];
    for (let i = 0; i < 6; i++) opened.push(await cableClient(t.cableUrl, TESS, clients));
    const outcomes = await Promise.all(
      opened.map((c) => Promise.race([c.closed.then(() => "closed"), new Promise((r) => setTimeout(() => r("open"), 400))])),
    );
    expect(outcomes).toEqual(["open", "open", "closed", "open", "open", "closed"]);
  });

  test("Pusher: pusher:error with the code, then the close code (4200 by default)", async () => {
    const t = await start({ faults: { closeAfterMs: 100 } });
    const { client } = await pusherClient(t.url, t.pusher.key);
    clients.push(client);
    expect(pusherData(await client.next())).toMatchObject({ code: 4200 });
    expect((await client.closed).code).toBe(4200);
  });
});

describe("stopPinging", () => {
  test("Action Cable: no heartbeat while set; pings resume when cleared at runtime", async () => {
    const t = await start({ cable: { pingIntervalMs: 40 }, faults: { stopPinging: true } });
    const client = await cableClient(t.cableUrl, TESS, clients);
    expect(await client.collect(300, isPing)).toEqual([]);
    t.setFaults({ stopPinging: false });
    expect(await client.next(isPing, 1_000)).toMatchObject({ type: "ping" });
  });

  test("Pusher: pusher:ping is not answered", async () => {
    const t = await start({ faults: { stopPinging: true } });
    const { client } = await pusherClient(t.url, t.pusher.key);
    clients.push(client);
    client.send({ event: "pusher:ping", data: {} });
    expect(await client.collect(300)).toEqual([]);
  });
});

describe("acceptDelayMs", () => {
  test("the upgrade is answered late, on both endpoints", async () => {
    const t = await start({ faults: { acceptDelayMs: 300 } });
    for (const open of [() => cableClient(t.cableUrl, TESS, clients), () => pusherClient(t.url, t.pusher.key).then((p) => (clients.push(p.client), p.client))]) {
      const started = Date.now();
      await open();
      expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    }
  });

  test("close() does not wait for a held upgrade", async () => {
    const t = await start({ faults: { acceptDelayMs: 60_000 } });
    const pending = connect(t.cableUrl, { protocols: ["actioncable-v1-json"], cookie: "uid=a/1" });
    await new Promise((r) => setTimeout(r, 100));
    const started = Date.now();
    await t.close();
    await expect(pending).rejects.toThrow();
    expect(Date.now() - started).toBeLessThan(1_000);
  });
});

test("setFaults refuses an invalid configuration and keeps the previous one", async () => {
  const t = await start({ faults: { confirmDelayMs: 5 } });
  expect(() => t.setFaults({ malformedRatio: -1 })).toThrow(/faults\.malformedRatio/);
  expect(t.faults()).toEqual({ confirmDelayMs: 5 });
});

describe("rateCapacity", () => {
  test("the rate window: broadcasts a second over the last 5 s, sliding", () => {
    const w = new RateWindow();
    const t0 = 1_000_000_000_000;
    // 30 a second for 5 s, evenly spaced.
    for (let i = 0; i < 150; i++) w.note(t0 + Math.round((i * 1000) / 30));
    expect(w.rate(t0 + 4_990)).toBe(30);
    // Half a second later the first 15 have left the window; after a long quiet it is empty.
    expect(w.rate(t0 + 5_490)).toBe(27);
    expect(w.rate(t0 + 60_000)).toBe(0);
    w.note(t0 + 60_500);
    expect(w.rate(t0 + 60_900)).toBe(0.2);
  });

  test("on time up to the rate, late above it, and on time again once the rate falls (Action Cable and Pusher)", async () => {
    const t = await start({ faults: { rateCapacity: 20, overCapacityDelayMs: 400 } });
    const cable = await cableSubscribed(t);
    const pusher = await pusherSubscribed(t, "rated");
    await pusher.client.next();
    const lateness = async (send: () => void, next: () => Promise<unknown>) => {
      const started = Date.now();
      send();
      await next();
      return Date.now() - started;
    };
    // 90 broadcasts in a burst: 18 a second over the window, under the capacity.
    for (let i = 0; i < 89; i++) t.broadcast("all", JSON.stringify({ i }));
    await cable.collect(100, notPing);
    expect(await lateness(() => t.broadcast("all", '{"i":"90th"}'), () => cable.next(notPing))).toBeLessThan(300);
    // 11 more: 101 in the window, over 20 a second, so every delivery is held back, on both protocols.
    for (let i = 0; i < 10; i++) t.broadcast("all", JSON.stringify({ i }));
    await cable.collect(600, notPing);
    expect(await lateness(() => t.broadcast("all", '{"i":"over"}'), () => cable.next(notPing))).toBeGreaterThanOrEqual(390);
    expect(await lateness(() => t.trigger("rated", "tick", "over"), () => pusher.client.next())).toBeGreaterThanOrEqual(390);
    expect(t.counters().broadcasts).toBe(102);
    t.setFaults({ rateCapacity: 1000 });
    expect(await lateness(() => t.trigger("rated", "tick", "fine"), () => pusher.client.next())).toBeLessThan(300);
  });
});

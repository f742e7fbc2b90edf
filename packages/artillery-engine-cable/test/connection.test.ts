// The connection's state machine, keepalives, timeouts and listen path, driven by a fake socket and
// a fake clock: no network, no real waiting.
import { describe, expect, test } from "vitest";
import type { Clock, TimerHandle } from "../src/clock.js";
import { CableConnection, type ConnectionRuntime } from "../src/connection.js";
import { DeliveryLedger } from "../src/delivery.js";
import { CableError } from "../src/errors.js";
import type { StreamMemory } from "../src/frame-counter.js";
import { OpenConnections } from "../src/open-connections.js";
import { createActionCableProtocol } from "../src/protocol/actioncable.js";
import { createPusherProtocol } from "../src/protocol/pusher.js";
import { scanActionCable, stampKey } from "../src/protocol/scan.js";
import type { Protocol } from "../src/protocol/types.js";
import type { CableSocket, SocketListener } from "../src/socket.js";

class FakeClock implements Clock {
  time = 1_000_000;
  private timers: { at: number; fn: () => void; id: number }[] = [];
  private nextId = 0;
  now = () => this.time;
  setTimeout = (fn: () => void, ms: number): TimerHandle => {
    const timer = { at: this.time + ms, fn, id: this.nextId++ };
    this.timers.push(timer);
    return timer as unknown as TimerHandle;
  };
  clearTimeout = (handle: TimerHandle) => {
    this.timers = this.timers.filter((t) => t !== (handle as unknown));
  };
  /** Moves time on, firing what falls due, in order. */
  advance(ms: number): void {
    const until = this.time + ms;
    for (;;) {
      const due = this.timers.filter((t) => t.at <= until).sort((a, b) => a.at - b.at || a.id - b.id)[0];
      if (!due) break;
      this.timers = this.timers.filter((t) => t !== due);
      this.time = due.at;
      due.fn();
    }
    this.time = until;
  }
}

class FakeSocket implements CableSocket {
  protocol = "";
  isOpen = true;
  isConnecting = false;
  readonly sent: string[] = [];
  constructor(readonly listener: SocketListener) {}
  send(text: string) {
    this.sent.push(text);
  }
  close() {
    this.isOpen = false;
    this.listener.close(1000, "");
  }
  terminate() {
    this.close();
  }
  deliver(frame: unknown) {
    this.listener.frame(Buffer.from(typeof frame === "string" ? frame : JSON.stringify(frame)), false);
  }
  drop(code = 1006) {
    this.isOpen = false;
    this.listener.close(code, "");
  }
}

function setup(protocol: Protocol = createActionCableProtocol(), inboxSize = 16, settings: { pingIntervalMs?: number; staleAfterMs?: number } = {}) {
  const clock = new FakeClock();
  let socket: FakeSocket | undefined;
  const emitted: [string, ...unknown[]][] = [];
  const events = { emit: (...args: [string, ...unknown[]]) => (emitted.push(args), true) };
  const tracker = new OpenConnections();
  const runtime: ConnectionRuntime = { tracker, clock, openSocket: (_options, listener) => (socket = new FakeSocket(listener)) };
  const memory: StreamMemory = { positions: new Map(), ledger: new DeliveryLedger() };
  const connection = new CableConnection(protocol, events, { stampField: "ts", inboxSize, ...settings }, memory, runtime);
  const open = (options = {}) => connection.open({ url: "ws://127.0.0.1:1/cable", headers: {}, subprotocols: [], timeoutMs: 5_000, ...options });
  const count = (kind: string, name: string) => emitted.filter(([k, n]) => k === kind && n === name).length;
  return { clock, connection, open, socket: () => socket!, emitted, count, tracker };
}

const ID = JSON.stringify({ channel: "ChatChannel", id: 1 });

async function welcomedAndSubscribed(s: ReturnType<typeof setup>) {
  const opening = s.open();
  s.socket().deliver({ type: "welcome" });
  await opening;
  const subscribing = s.connection.subscribe(ID, JSON.stringify({ command: "subscribe", identifier: ID }), 5_000);
  s.socket().deliver({ identifier: ID, type: "confirm_subscription" });
  await subscribing;
}

describe("the connection's states", () => {
  test("idle → connecting → welcomed → subscribed → closing → closed, and no way back", async () => {
    const s = setup();
    expect(s.connection.state).toBe("idle");
    const opening = s.open();
    expect(s.connection.state).toBe("connecting");
    s.clock.advance(120);
    s.socket().deliver({ type: "welcome" });
    await opening;
    expect(s.connection.state).toBe("welcomed");
    expect(s.emitted).toContainEqual(["histogram", "cable.handshake_latency", 120]);
    const subscribing = s.connection.subscribe(ID, "{}", 5_000);
    s.socket().deliver({ identifier: ID, type: "confirm_subscription" });
    await subscribing;
    expect(s.connection.state).toBe("subscribed");
    s.connection.close();
    expect(s.connection.state).toBe("closed");
    await expect(s.open()).rejects.toThrow(CableError);
  });

  test("a reconnect's socket starts in reconnecting", async () => {
    const s = setup();
    const opening = s.connection.open({ url: "ws://x", headers: {}, subprotocols: [], timeoutMs: 1_000 }, true);
    expect(s.connection.state).toBe("reconnecting");
    s.socket().deliver({ type: "welcome" });
    await opening;
    expect(s.connection.state).toBe("welcomed");
  });

  test("no welcome within the timeout is cable.handshake_timeout, in fake time", async () => {
    const s = setup();
    const opening = s.open({ timeoutMs: 10_000 });
    s.clock.advance(10_000);
    await expect(opening).rejects.toMatchObject({ code: "cable.handshake_timeout" });
  });

  test("a drop fails the waiting step at once and marks the time for the restore latency", async () => {
    const s = setup();
    await welcomedAndSubscribed(s);
    const receiving = s.connection.receive(ID, () => true, 60_000);
    s.clock.advance(500);
    s.socket().drop();
    await expect(receiving).rejects.toMatchObject({ code: "cable.connection_closed" });
    expect(s.connection.state).toBe("failed");
    expect(s.connection.endedAt).toBe(s.clock.time);
  });

  test("waitForDrop resolves on the drop, or fails with cable.drop_timeout", async () => {
    const s = setup();
    await welcomedAndSubscribed(s);
    const waiting = s.connection.waitForDrop(30_000);
    s.clock.advance(29_000);
    s.socket().drop();
    await expect(waiting).resolves.toBeUndefined();
    const t = setup();
    await welcomedAndSubscribed(t);
    const never = t.connection.waitForDrop(30_000);
    t.clock.advance(30_000);
    await expect(never).rejects.toMatchObject({ code: "cable.drop_timeout" });
  });
});

describe("disconnect reasons by name", () => {
  test.each([
    ["token_expired", "cable.token_expired"],
    ["unauthorized", "cable.unauthorized"],
    ["too_slow", "cable.too_slow"],
    ["no_pong", "cable.no_pong"],
    ["server_restart", "cable.server_disconnect"],
    ["remote", "cable.server_disconnect"],
    ["something_new", "cable.server_disconnect"],
  ])("%s is %s", async (reason, code) => {
    const s = setup();
    await welcomedAndSubscribed(s);
    const receiving = s.connection.receive(ID, () => true, 5_000);
    s.socket().deliver({ type: "disconnect", reason, reconnect: false });
    await expect(receiving).rejects.toMatchObject({ code });
    // The cause of a server_disconnect is counted from a fixed set; named reasons are their own error.
    const causes = s.emitted.filter(([k, n]) => k === "counter" && String(n).startsWith("cable.server_disconnect.")).map(([, n]) => n);
    expect(causes).toEqual(code === "cable.server_disconnect" ? [`cable.server_disconnect.${reason === "something_new" ? "other" : reason}`] : []);
  });
});

describe("keepalives and staleness, on the injected clock", () => {
  const ticker = (s: ReturnType<typeof setup>) => {
    const events = { emit: (...args: [string, ...unknown[]]) => (s.emitted.push(args), true) };
    return (ms: number) => {
      s.clock.advance(ms);
      s.connection.tick(s.clock.time, events);
    };
  };
  const detection = (s: ReturnType<typeof setup>) => s.emitted.filter((e) => e[0] === "histogram" && e[1] === "cable.drop_detection_latency").map((e) => e[2]);

  test("a Pusher close announced by an error frame and then dropped (Reverb's unknown key) fails with the announced code", async () => {
    const s = setup(createPusherProtocol({ key: "k" }, 1_000));
    const opening = s.open();
    s.socket().deliver({ event: "pusher:error", data: JSON.stringify({ code: 4001, message: "Application does not exist" }) });
    s.socket().drop(1006);
    await expect(opening).rejects.toMatchObject({ code: "cable.pusher_4001" });
    expect(s.emitted.filter(([k]) => k === "error")).toEqual([]);
  });

  test("Pusher (pusher-js): a quiet activity_timeout sends pusher:ping; no frame for activity_timeout + 30 s drops it as stale, once", async () => {
    const s = setup(createPusherProtocol({ key: "k" }, 1_000));
    const opening = s.open();
    s.socket().deliver({ event: "pusher:connection_established", data: JSON.stringify({ socket_id: "1.2", activity_timeout: 30 }) });
    await opening;
    const tickAt = ticker(s);
    tickAt(29_000);
    expect(s.socket().sent).toEqual([]);
    tickAt(2_000);
    expect(s.socket().sent).toEqual(['{"event":"pusher:ping","data":{}}']);
    tickAt(10_000);
    expect(s.socket().sent).toHaveLength(1); // one ping per quiet spell
    s.socket().deliver({ event: "pusher:pong", data: {} });
    const pongAt = s.clock.time;
    tickAt(31_000);
    expect(s.socket().sent).toHaveLength(2);
    tickAt(28_000);
    expect(s.count("counter", "cable.stale_connection")).toBe(0);
    expect(s.socket().isOpen).toBe(true);
    tickAt(2_000);
    expect(s.count("counter", "cable.stale_connection")).toBe(1);
    expect(s.socket().isOpen).toBe(false);
    expect(s.connection.failure).toMatchObject({ code: "cable.stale" });
    expect(s.connection.endedAt).toBe(pongAt);
    expect(detection(s)).toEqual([61_000]);
    tickAt(200_000);
    expect(s.count("counter", "cable.stale_connection")).toBe(1);
  });

  test("Pusher: a server's long activity_timeout is honoured (no drop at the default's)", async () => {
    const s = setup(createPusherProtocol({ key: "k" }, 1_000));
    const opening = s.open();
    s.socket().deliver({ event: "pusher:connection_established", data: JSON.stringify({ socket_id: "1.2", activity_timeout: 300 }) });
    await opening;
    const tickAt = ticker(s);
    for (let i = 0; i < 32; i++) tickAt(10_000);
    expect(s.count("counter", "cable.stale_connection")).toBe(0);
    for (let i = 0; i < 4; i++) tickAt(10_000);
    expect(s.count("counter", "cable.stale_connection")).toBe(1);
  });

  test("Action Cable (ConnectionMonitor): pings keep it fresh; two missed pings (6 s) drop it as stale, the outage counted from the last ping", async () => {
    const s = setup();
    await welcomedAndSubscribed(s);
    const tickAt = ticker(s);
    for (let i = 0; i < 10; i++) {
      s.clock.advance(3_000);
      s.socket().deliver({ type: "ping", message: 1 });
      tickAt(0);
    }
    expect(s.count("counter", "cable.stale_connection")).toBe(0);
    expect(s.socket().sent.filter((f) => f.includes("pong"))).toEqual([]);
    const lastPing = s.clock.time;
    const receiving = s.connection.receive(ID, () => true, 60_000);
    for (let i = 0; i < 6; i++) tickAt(1_000);
    expect(s.count("counter", "cable.stale_connection")).toBe(0);
    tickAt(1_000);
    expect(s.count("counter", "cable.stale_connection")).toBe(1);
    await expect(receiving).rejects.toMatchObject({ code: "cable.stale" });
    expect(s.connection.endedAt).toBe(lastPing);
    expect(detection(s)).toEqual([7_000]);
  });

  test("a server that pings every 10 s (AnyCable's --ping_interval=10, pingInterval: 10) is stale after 20 s; staleAfter overrides the rule", async () => {
    const slow = setup(createActionCableProtocol(), 16, { pingIntervalMs: 10_000 });
    await welcomedAndSubscribed(slow);
    const tickSlow = ticker(slow);
    tickSlow(0);
    for (let i = 0; i < 20; i++) tickSlow(1_000);
    expect(slow.count("counter", "cable.stale_connection")).toBe(0);
    tickSlow(2_000);
    expect(slow.count("counter", "cable.stale_connection")).toBe(1);
    const strict = setup(createActionCableProtocol(), 16, { staleAfterMs: 2_000 });
    await welcomedAndSubscribed(strict);
    const tickStrict = ticker(strict);
    tickStrict(0);
    tickStrict(1_500);
    expect(strict.count("counter", "cable.stale_connection")).toBe(0);
    tickStrict(1_000);
    expect(strict.count("counter", "cable.stale_connection")).toBe(1);
  });

  test("any frame keeps it fresh, not only pings; a close by the server is noticed at once (detection 0)", async () => {
    const s = setup();
    await welcomedAndSubscribed(s);
    const tickAt = ticker(s);
    for (let i = 0; i < 20; i++) {
      s.socket().deliver({ identifier: ID, message: { n: i } });
      tickAt(1_000);
    }
    expect(s.count("counter", "cable.stale_connection")).toBe(0);
    s.socket().drop();
    expect(detection(s)).toEqual([0]);
    expect(s.connection.failure).toMatchObject({ code: "cable.connection_closed" });
  });

  test("a frame between two ticks starts the silence when it came, not at the next tick (detection exact, never a second late)", async () => {
    const s = setup(createActionCableProtocol(), 16, { pingIntervalMs: 200 });
    await welcomedAndSubscribed(s);
    const tickAt = ticker(s);
    tickAt(0);
    s.clock.advance(10);
    s.socket().deliver({ identifier: ID, message: { n: 1 } });
    const heardAt = s.clock.time;
    tickAt(990);
    expect(s.count("counter", "cable.stale_connection")).toBe(1);
    expect(s.connection.endedAt).toBe(heardAt);
    expect(detection(s)).toEqual([990]);
  });
});

describe("the listen path", () => {
  const broadcast = (message: unknown) => JSON.stringify({ identifier: ID, message });

  test("a broadcast nobody waits for is counted and its stamp measured, without a message object", async () => {
    const s = setup(createActionCableProtocol(), 0);
    await welcomedAndSubscribed(s);
    s.socket().deliver(broadcast({ n: 1, ts: s.clock.time - 7 }));
    s.socket().deliver(broadcast({ n: 2, nested: { ts: 1 } }));
    expect(s.count("rate", "cable.receive_rate")).toBe(2);
    expect(s.emitted.filter(([k, n]) => k === "histogram" && n === "cable.broadcast_latency")).toEqual([["histogram", "cable.broadcast_latency", 7]]);
    expect(s.count("error", "cable.malformed_frame")).toBe(0);
  });

  test("a step waiting on the channel gets the parsed message; a cut frame is still malformed", async () => {
    const s = setup();
    await welcomedAndSubscribed(s);
    const receiving = s.connection.receive(ID, (m) => (m.payload as { n?: number }).n === 2, 5_000);
    s.socket().deliver(broadcast({ n: 1 }));
    s.socket().deliver(broadcast({ n: 2 }));
    await expect(receiving).resolves.toMatchObject({ payload: { n: 2 } });
    s.socket().deliver(broadcast({ n: 3 }).slice(0, 30));
    expect(s.count("error", "cable.malformed_frame")).toBe(1);
  });

  test("scan reads pings, broadcasts and top-level stamps, and leaves everything else to the decoder", () => {
    const ts = stampKey("ts");
    const scan = (text: string) => scanActionCable(Buffer.from(text), ts);
    expect(scan('{"type":"ping","message":1700000000}')).toBe("ping");
    expect(scan(broadcast({ ts: 12.5, text: 'a "quoted" }{ ts' }))).toEqual({ identifier: JSON.stringify(ID).slice(1, -1), stamp: 12.5, ledger: false, positioned: false });
    expect(scan(broadcast({ data: { ts: 1 } }))).toMatchObject({ stamp: undefined });
    expect(scan(broadcast({ seq: 1, sender: "x" }))).toMatchObject({ ledger: true });
    expect(scan(broadcast("plain text"))).toMatchObject({ stamp: undefined });
    expect(scan(`{"identifier":"a","message":{"n":1},"stream_id":"s","epoch":"e","offset":3}`)).toMatchObject({ positioned: true });
    expect(scan(`{"identifier":"a","type":"confirm_subscription"}`)).toBeUndefined();
    expect(scan(`{"type":"welcome"}`)).toBeUndefined();
    expect(scan(`{"identifier":"a","message":{"n":1}`)).toBeUndefined();
    expect(scan(`{"identifier":"a","message":{"n":1}}}`)).toBeUndefined();
    expect(scan(`{"identifier":"a","message":"unterminated}`)).toBeUndefined();
  });
});

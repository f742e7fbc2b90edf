import { systemClock, type Clock, type TimerHandle } from "./clock.js";
import type { DeliveryLedger } from "./delivery.js";
import { CableError } from "./errors.js";
import { METRICS, type Events } from "./metrics.js";
import type { OpenConnections, Tracked } from "./open-connections.js";
import { ACTIONCABLE_V1_EXT_JSON, disconnectCause } from "./protocol/actioncable.js";
import { equalsAt, rawBroadcast, stampKey } from "./protocol/scan.js";
import type { Inbound, Protocol, StreamPosition, Welcome } from "./protocol/types.js";
import { sampleServerWords } from "./server-words.js";
import { openWebSocket, type CableSocket, type OpenOptions, type OpenSocket } from "./socket.js";
import { trace, tracing } from "./trace.js";

export type { OpenOptions } from "./socket.js";
export type InboundMessage = Extract<Inbound, { kind: "message" }>;

export interface ConnectionSettings {
  /** The payload field that carries a send time in epoch ms (`stamp: true`). */
  stampField: string;
  /** Unread messages kept per channel for later `receive` steps; older ones are dropped. 0: none. */
  inboxSize: number;
  /** Overrides the protocol's ping interval. */
  pingIntervalMs?: number;
  /** `config.cable.staleAfter`, ms: overrides the protocol's stale rule. */
  staleAfterMs?: number;
}

/** What a connection runs on: injected, so that unit tests drive it with a fake socket and clock. */
export interface ConnectionRuntime {
  /** The thread's open connections: keepalive sweeps, peaks, batched counters. */
  tracker: OpenConnections;
  clock: Clock;
  openSocket: OpenSocket;
}

export function defaultRuntime(tracker: OpenConnections): ConnectionRuntime {
  return { tracker, clock: systemClock, openSocket: openWebSocket };
}

/**
 * What a VU knows of its streams across connections: the last position seen in each (for history
 * after a reconnect) and the delivery ledger (for messages lost across it).
 */
export interface StreamMemory {
  /** By channel key, then stream id. */
  positions: Map<string, Map<string, StreamPosition>>;
  ledger: DeliveryLedger;
}

/**
 * A connection's life. `reconnecting` is `connecting` for a `reconnect` step's new socket; a
 * connection never goes back: a reconnect makes a new one.
 *
 *   idle → connecting | reconnecting → welcomed → subscribed
 *   any open state → failed (the server or the network ended it) | closing (the VU ends it) → closed
 */
export type ConnectionState = "idle" | "connecting" | "reconnecting" | "welcomed" | "subscribed" | "failed" | "closing" | "closed";

const TRANSITIONS: Record<ConnectionState, readonly ConnectionState[]> = {
  idle: ["connecting", "reconnecting", "closing"],
  connecting: ["welcomed", "failed", "closing"],
  reconnecting: ["welcomed", "failed", "closing"],
  welcomed: ["subscribed", "failed", "closing"],
  subscribed: ["failed", "closing"],
  failed: ["closing"],
  closing: ["closed"],
  closed: [],
};

interface Waiter {
  /** Messages (not only control frames) may settle it: the listen path must decode them. */
  readonly wantsMessages: boolean;
  /** Returns true when the frame settles the wait (it has then resolved or rejected it). */
  offer(ev: Inbound): boolean;
  fail(err: Error): void;
}

const ALL_CHANNELS = "\0all";
/** Positions remembered by dropCopies: a bound on memory for a long replay. */
const MAX_SEEN_SINCE_RESTORE = 16_384;

/**
 * One socket of one virtual user, and its inbox. A VU runs its steps one at a time, so a connection
 * has at most one step waiting on it; every frame is offered to that waiter first.
 */
export class CableConnection implements Tracked {
  state: ConnectionState = "idle";
  /** When the server last pinged or ponged, in clock time. */
  private lastPingAt = 0;
  /**
   * When the server was last heard from, exactly: a silent network's outage is measured from here,
   * so a time rounded to the once-a-second tick would shorten it and could drop a connection up to a
   * second late. One clock read per frame is well under 1 % of a frame's cost (docs/benchmarks.md);
   * what the frame then measures (its latency, a ping's time) uses this same read.
   */
  private lastHeardAt = 0;
  private keepaliveSentAt = 0;
  /** Dropped as stale once: the tick does not drop it again. */
  private staleDropped = false;
  /** A Pusher close the server announced with an error frame (`pusher_4001`…), should the close itself not carry it. */
  private announcedClose: string | undefined;
  private pingIntervalMs: number;
  /** Why the connection ended, when the VU did not end it: the next step on it fails with this. */
  failure: CableError | Error | undefined;
  /** When it ended so (clock time): a reconnect measures its restore latency from here. */
  endedAt: number | undefined;
  /** Fields of the welcome frame (socket_id, sid, activity timeout, restored ids). */
  welcome: Welcome | undefined;
  /** The server accepted AnyCable's extended protocol. */
  extended = false;

  private socket: CableSocket | undefined;
  private waiter: Waiter | undefined;
  private readonly inbox = new Map<string, InboundMessage[]>();
  private registered = false;
  /** The channel a `listen` step consumes, if one runs. */
  private listening: string | undefined;
  /** The channel whose history is being replayed, and how many messages it has replayed so far. */
  private replaying: string | undefined;
  private replayed = 0;
  /** Stream positions received since a restore, until shortly after its history is in (dropCopies). */
  private seenSinceRestore: Set<string> | undefined;
  /** Subscribed identifiers as the server writes them (JSON-escaped) → channel key, for `scan`. */
  private readonly rawKeys = new Map<string, string>();
  /**
   * The identifier bytes `scan` matched last, and their channel key: a connection's broadcasts
   * mostly come on one channel, whose identifier is then compared in place instead of being made
   * into a string and looked up.
   */
  private lastRawKey: Buffer | undefined;
  private lastKey = "";
  private readonly stampBytes: Buffer;
  /** Filled by `scan` for every broadcast: no object per frame. */
  private readonly scanOut = rawBroadcast();

  constructor(
    readonly protocol: Protocol,
    private readonly events: Events,
    private readonly settings: ConnectionSettings,
    private readonly memory: StreamMemory,
    private readonly runtime: ConnectionRuntime,
  ) {
    this.pingIntervalMs = settings.pingIntervalMs ?? protocol.pingIntervalMs;
    this.stampBytes = stampKey(settings.stampField);
  }

  private get clock(): Clock {
    return this.runtime.clock;
  }

  /** Moves to `to` if the state machine allows it; says whether it did. */
  private moveTo(to: ConnectionState): boolean {
    if (!TRANSITIONS[this.state].includes(to)) {
      if (tracing()) trace("state %s -> %s refused", this.state, to);
      return false;
    }
    if (tracing()) trace("state %s -> %s", this.state, to);
    this.state = to;
    return true;
  }

  /** Opens the socket and waits for the server's welcome; records `cable.handshake_latency`. */
  async open(options: OpenOptions, reconnecting = false): Promise<Welcome> {
    if (!this.moveTo(reconnecting ? "reconnecting" : "connecting")) throw new CableError("connection_closed", "the connection was closed before it opened");
    const startedAt = this.clock.now();
    if (tracing()) trace("open %s %j", options.url.replace(/([?&]sid=)[^&]+/, "$1…"), options.subprotocols);
    this.socket = this.runtime.openSocket(options, {
      frame: (data, isBinary) => this.onFrame(data, isBinary),
      close: (code, reason) => this.onClose(code, reason),
      error: (err) => this.onSocketError(err),
    });
    const welcome = await this.wait(options.timeoutMs, "handshake_timeout", true, (ev) => (ev.kind === "welcome" ? ev : undefined));
    this.extended = this.socket.protocol === ACTIONCABLE_V1_EXT_JSON;
    if (welcome.activityTimeout) this.pingIntervalMs = welcome.activityTimeout * 1000;
    this.lastPingAt = this.lastHeardAt = this.clock.now();
    this.moveTo("welcomed");
    this.registered = true;
    this.runtime.tracker.add(this, this.events);
    this.events.emit("histogram", METRICS.handshakeLatency, this.clock.now() - startedAt);
    this.events.emit("counter", METRICS.connections, 1);
    return welcome;
  }

  send(frame: string): void {
    this.assertOpen();
    if (tracing()) trace("out %s", frame);
    this.socket!.send(frame);
  }

  /** Sends a subscribe frame and waits for the server's confirmation of that channel key. */
  async subscribe(key: string, frame: string, timeoutMs: number): Promise<void> {
    if (this.settings.inboxSize > 0) this.inbox.set(key, []);
    this.send(frame);
    const answer = await this.wait(timeoutMs, "subscription_timeout", false, (ev) =>
      // A rejection without a channel ("*": Pusher's pusher:error 4009) answers the pending subscribe.
      (ev.kind === "confirm" && ev.channel === key) || (ev.kind === "reject" && (ev.channel === key || ev.channel === "*")) ? ev : undefined,
    );
    if (answer.kind === "reject") {
      this.inbox.delete(key);
      // The cause is counted (a fixed set); the server's own words go to the trace and the error's message only.
      this.events.emit("counter", `${METRICS.subscriptionRejected}.${answer.cause}`, 1);
      if (tracing()) trace("subscription %s rejected: %s (%s)", key, answer.cause, answer.reason);
      // Action Cable's reject carries no words ("rejected" is the decoder's).
      if (answer.cause !== "app_rejected") sampleServerWords(`cable.subscription_rejected`, answer.cause, answer.reason);
      throw new CableError("subscription_rejected", `the server rejected the subscription ${key}: ${answer.cause} (${answer.reason})`);
    }
    this.rawKeys.set(JSON.stringify(key).slice(1, -1), key);
    if (this.state === "welcomed") this.moveTo("subscribed");
  }

  unsubscribe(key: string, frame: string): void {
    this.send(frame);
    this.inbox.delete(key);
    this.rawKeys.delete(JSON.stringify(key).slice(1, -1));
    if (this.lastKey === key) this.lastRawKey = undefined;
  }

  /**
   * The next message on the channel that passes `accept`, from the unread ones first. Unread
   * messages before it that fail `accept` are skipped for good, as a client reading a stream would.
   */
  async receive(key: string, accept: (msg: InboundMessage) => boolean, timeoutMs: number): Promise<InboundMessage> {
    const unread = this.inbox.get(key);
    if (unread) {
      while (unread.length > 0) {
        const msg = unread.shift()!;
        if (accept(msg)) return msg;
      }
    }
    this.assertOpen();
    return this.wait(timeoutMs, "receive_timeout", true, (ev) => (ev.kind === "message" && ev.channel === key && accept(ev) ? ev : undefined));
  }

  /**
   * Sends a history request and waits for confirm_history or reject_history; the messages replayed
   * in between go to the channel's inbox as any other.
   */
  async history(key: string, frame: string, timeoutMs: number): Promise<{ ok: boolean; replayed: number }> {
    this.replaying = key;
    this.replayed = 0;
    try {
      this.send(frame);
      const answer = await this.wait(timeoutMs, "history_timeout", true, (ev) => (ev.kind === "history" && ev.channel === key ? ev : undefined));
      return { ok: answer.ok, replayed: this.replayed };
    } finally {
      this.replaying = undefined;
    }
  }

  /**
   * `true` (before `open`): remember the stream position of every message, and drop a second copy;
   * `false`: stop, a second later (a live copy can trail the replay by a moment).
   */
  dropCopies(on: boolean): void {
    if (on) {
      this.seenSinceRestore = new Set();
      return;
    }
    const timer = this.clock.setTimeout(() => (this.seenSinceRestore = undefined), 1_000) as { unref?: () => void };
    timer.unref?.();
  }

  /** Waits for the server to end the connection (a restart); rejects if it has not within the time. */
  waitForDrop(timeoutMs: number): Promise<void> {
    if (this.failure || !this.socket?.isOpen) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const timer = this.clock.setTimeout(() => {
        this.waiter = undefined;
        reject(new CableError("drop_timeout", `the server did not drop the connection within ${timeoutMs} ms`));
      }, timeoutMs);
      this.waiter = {
        wantsMessages: false,
        offer: () => false,
        fail: () => {
          this.clock.clearTimeout(timer);
          this.waiter = undefined;
          resolve();
        },
      };
    });
  }

  /**
   * Stays connected for `ms`, counting what arrives; fails early if the connection ends. What it
   * hears on the channel (all channels without one) is consumed: not kept for a later `receive`.
   */
  async listen(ms: number, key?: string): Promise<void> {
    this.assertOpen();
    for (const [channel, unread] of this.inbox) if (key === undefined || channel === key) unread.length = 0;
    this.listening = key ?? ALL_CHANNELS;
    try {
      await this.wait(ms, undefined, false, () => undefined);
    } finally {
      this.listening = undefined;
    }
  }

  /** Ends the connection from the client side; it is not a failure. */
  close(): void {
    if (this.state === "closing" || this.state === "closed") return;
    this.moveTo("closing");
    const socket = this.socket;
    if (socket?.isOpen) socket.close(1000);
    else if (socket?.isConnecting) socket.terminate();
    if (!socket || (!socket.isOpen && !socket.isConnecting)) this.moveTo("closed");
    this.unregister();
  }

  tick(now: number, events: Events): void {
    const quiet = now - this.lastPingAt;
    const keepalive = this.protocol.keepalive;
    if (keepalive && quiet > this.pingIntervalMs && this.keepaliveSentAt <= this.lastPingAt && this.socket?.isOpen) {
      this.keepaliveSentAt = now;
      if (tracing()) trace("out %s (keepalive)", keepalive);
      this.socket.send(keepalive);
    }
    const heardAt = Math.max(this.lastHeardAt, this.lastPingAt);
    const staleAfter = this.settings.staleAfterMs ?? this.protocol.staleAfterMs(this.pingIntervalMs);
    if (!this.staleDropped && now - heardAt > staleAfter && this.socket?.isOpen) this.dropStale(now, heardAt, staleAfter);
  }

  /**
   * A silent network (a dropped route, a dead NAT entry) gives no close and no reset: the socket
   * looks open and nothing comes. Real clients notice by the missing pings and reopen; so does this:
   * the socket is terminated and the connection ends as dropped (`cable.stale`), from when the
   * server was last heard: a `reconnect` measures its restore latency from there, the outage as users
   * lived it, and `cable.drop_detection_latency` says how long noticing took.
   */
  private dropStale(now: number, heardAt: number, staleAfter: number): void {
    this.staleDropped = true;
    this.events.emit("counter", METRICS.staleConnection, 1);
    this.events.emit("histogram", METRICS.dropDetectionLatency, now - heardAt);
    this.unregister();
    this.endedAt = heardAt;
    this.fail(new CableError("stale", `nothing from the server for ${Math.round((now - heardAt) / 1000)} s (stale after ${staleAfter / 1000} s): the connection was dropped`));
    this.socket?.terminate();
  }

  private assertOpen(): void {
    if (this.failure) throw this.failure;
    if (!this.socket?.isOpen) throw new CableError("connection_closed", "the connection is not open");
  }

  /**
   * Waits for a frame that `pick` accepts. On timeout it rejects with `cable.<timeoutReason>`, or
   * resolves (undefined) when no reason is given; a connection failure rejects at once.
   */
  private wait<T>(timeoutMs: number, timeoutReason: string | undefined, wantsMessages: boolean, pick: (ev: Inbound) => T | undefined): Promise<T> {
    if (this.failure) return Promise.reject(this.failure);
    return new Promise<T>((resolve, reject) => {
      const settle = () => {
        this.clock.clearTimeout(timer);
        this.waiter = undefined;
      };
      const timer: TimerHandle = this.clock.setTimeout(() => {
        settle();
        if (timeoutReason) reject(new CableError(timeoutReason, `no answer within ${timeoutMs} ms`));
        else resolve(undefined as T);
      }, timeoutMs);
      this.waiter = {
        wantsMessages,
        offer: (ev) => {
          const value = pick(ev);
          if (value === undefined) return false;
          settle();
          resolve(value);
          return true;
        },
        fail: (err) => {
          settle();
          reject(err);
        },
      };
    });
  }

  private onFrame(data: Buffer, isBinary: boolean): void {
    this.lastHeardAt = this.clock.now();
    if (tracing()) trace("in %s", isBinary ? `<binary ${data.length} bytes>` : data.toString());
    // The listen path: a broadcast nobody waits for is counted from the raw frame, never parsed.
    if (!isBinary && this.protocol.scan && this.scanned(data)) return;
    let ev: Inbound;
    try {
      if (isBinary) throw new CableError("malformed_frame", "binary frame");
      ev = this.protocol.decode(data.toString());
    } catch {
      this.events.emit("error", "cable.malformed_frame");
      return;
    }
    switch (ev.kind) {
      case "ping":
        this.onPing(ev.reply);
        return;
      case "welcome":
        this.welcome = ev;
        break;
      case "message":
        this.onMessage(ev);
        return;
      case "disconnect": {
        this.noticedAtOnce();
        const err: CableError = this.protocol.disconnectError?.(ev.reason) ?? new CableError("server_disconnect", `the server disconnected the client (${ev.reason})`);
        // Why, beside errors.cable.server_disconnect: a restart, the app's own remote disconnect, a refused request.
        if (err.code === "cable.server_disconnect") {
          const cause = disconnectCause(ev.reason);
          this.events.emit("counter", `${METRICS.serverDisconnect}.${cause}`, 1);
          if (cause === "other") sampleServerWords("cable.server_disconnect", cause, ev.reason);
        }
        this.fail(err, true);
        return;
      }
      case "error":
        // Pusher announces a 4000–4299 close with an error frame of the same code: the close
        // itself is the failure, so the announcement is not counted twice.
        if (!/^pusher_4[0-2]\d\d$/.test(ev.reason)) {
          this.events.emit("error", `cable.${ev.reason}`);
          // The key is one of a bounded set; what the server said (an unlisted code among it) is a sample.
          if (ev.message) sampleServerWords(`cable.${ev.reason}`, "error_frame", ev.message);
        } else this.announcedClose = ev.reason;
        break;
    }
    this.waiter?.offer(ev);
  }

  /** Handles a ping or a broadcast from its raw bytes, when no step needs it parsed; false: decode it. */
  private scanned(data: Buffer): boolean {
    const scan = this.protocol.scan!(data, this.stampBytes, this.scanOut);
    if (scan === undefined) return false;
    if (scan === "ping") {
      this.onPing(undefined);
      return true;
    }
    if ((scan.positioned && this.extended) || this.seenSinceRestore || this.replaying !== undefined || this.waiter?.wantsMessages) return false;
    // A sender with escapes in it is read by the decoder, so that the ledger keys it as parsed.
    if (scan.ledger && scan.senderStart < 0 && scan.seq !== undefined) return false;
    const key = this.keyAt(data, scan.idStart, scan.idEnd);
    if (key === undefined || this.inbox.has(key)) return false;
    this.runtime.tracker.received(this.events, scan.stamp === undefined ? undefined : this.lastHeardAt - scan.stamp);
    if (scan.seq !== undefined && scan.senderStart >= 0) this.memory.ledger.record(key, data.toString("utf8", scan.senderStart, scan.senderEnd), scan.seq);
    return true;
  }

  /** The subscribed channel key whose identifier is written at data[start, end), if any. */
  private keyAt(data: Buffer, start: number, end: number): string | undefined {
    if (this.lastRawKey && equalsAt(data, start, end, this.lastRawKey)) return this.lastKey;
    const raw = data.toString("utf8", start, end);
    const key = this.rawKeys.get(raw);
    if (key !== undefined) {
      this.lastRawKey = Buffer.from(raw);
      this.lastKey = key;
    }
    return key;
  }

  private onPing(reply: string | undefined): void {
    this.lastPingAt = this.lastHeardAt;
    const pong = this.protocol.pong(this.extended, reply);
    if (pong && this.socket?.isOpen) this.socket.send(pong);
  }

  private onMessage(msg: InboundMessage): void {
    const position = msg.position;
    if (position && this.seenSinceRestore) {
      // After a restore, a message can come both live and in the history replay (in either order,
      // when the server broadcasts while it reads the history): keep the first copy.
      const id = `${position.stream}\n${position.epoch}\n${position.offset}`;
      if (this.seenSinceRestore.has(id)) return;
      if (this.seenSinceRestore.size < MAX_SEEN_SINCE_RESTORE) this.seenSinceRestore.add(id);
    }
    const payload = msg.payload;
    const stamped = payload !== null && typeof payload === "object" ? (payload as Record<string, unknown>) : undefined;
    const sentAt = stamped?.[this.settings.stampField];
    this.runtime.tracker.received(this.events, typeof sentAt === "number" ? this.lastHeardAt - sentAt : undefined);
    if (stamped && typeof stamped.seq === "number" && typeof stamped.sender === "string") this.memory.ledger.record(msg.channel, stamped.sender, stamped.seq);
    if (position) {
      let streams = this.memory.positions.get(msg.channel);
      if (!streams) this.memory.positions.set(msg.channel, (streams = new Map()));
      // A replay delivers older offsets after newer live ones: the position only moves forward.
      const last = streams.get(position.stream);
      if (!last || last.epoch !== position.epoch || position.offset > last.offset) streams.set(position.stream, position);
    }
    if (this.replaying === msg.channel) this.replayed++;
    if (this.waiter?.offer(msg)) return;
    if (this.listening === ALL_CHANNELS || this.listening === msg.channel) return;
    const unread = this.inbox.get(msg.channel);
    if (!unread) return;
    if (unread.length >= this.settings.inboxSize) unread.shift();
    unread.push(msg);
  }

  private onSocketError(err: Error): void {
    if (this.state === "closing" || this.state === "closed") return;
    // ws refuses an upgrade whose answer picks none of the subprotocols offered.
    if (/subprotocol/i.test(err.message)) {
      err = this.protocol.subprotocols.includes(ACTIONCABLE_V1_EXT_JSON)
        ? new CableError("ext_unsupported", `the server did not accept ${this.protocol.subprotocols.join(", ")}: ${err.message}`)
        : new CableError("subprotocol_rejected", err.message);
    } else if (/handshake has timed out/i.test(err.message)) {
      // ws's own handshake timer ends the upgrade with a sentence, not a code.
      err = new CableError("handshake_timeout", err.message);
    } else if (!(err instanceof CableError) && typeof (err as { code?: unknown }).code !== "string") {
      err = new CableError("socket_error", err.message);
    }
    // Before the socket opens this is the handshake's failure (ECONNREFUSED, HTTP 4xx); after, a
    // close event follows with the code.
    this.fail(err);
  }

  /** Records why the connection ended (the first reason wins, unless `replace`) and fails the waiting step. */
  private fail(err: CableError | Error, replace = false): void {
    if (replace || !this.failure) this.failure = err;
    this.endedAt ??= this.clock.now();
    if (this.state !== "failed") this.moveTo("failed");
    if (tracing()) trace("failed: %s", (this.failure as { code?: string }).code ?? this.failure.message);
    this.waiter?.fail(this.failure);
  }

  private onClose(code: number, reason: string): void {
    this.unregister();
    if (this.state === "closing" || this.state === "closed") {
      this.moveTo("closed");
      return;
    }
    if (!this.failure) this.noticedAtOnce();
    const named = code >= 4000 && code < 5000 ? this.protocol.closeReason?.(code) : undefined;
    // A code the protocol does not name by number (Pusher's outside its documented ranges) is kept
    // in the server's words, never in a metric's name.
    if (named && !named.endsWith(String(code))) sampleServerWords(`cable.${named}`, "close", `close ${code}${reason ? `: ${reason}` : ""}`);
    this.fail(
      named
        ? new CableError(named, `the server closed the connection with ${code} ${reason}`)
        : // Reverb announces 4001 (no such app) with an error frame, then drops the socket without a
          // close frame (1006): the announced code is the reason, not the drop.
          this.announcedClose
          ? new CableError(this.announcedClose, `the server announced ${this.announcedClose} and dropped the connection (${code})`)
          : new CableError("connection_closed", `the server closed the connection (${code}${reason ? ` ${reason}` : ""})`),
    );
  }

  /** A drop the server announced (a disconnect frame, a close, a reset) is noticed as it happens; a stale drop counts its own wait. */
  private noticedAtOnce(): void {
    if (this.state === "welcomed" || this.state === "subscribed") this.events.emit("histogram", METRICS.dropDetectionLatency, 0);
  }

  private unregister(): void {
    if (this.registered) {
      this.registered = false;
      this.runtime.tracker.delete(this);
    }
  }
}

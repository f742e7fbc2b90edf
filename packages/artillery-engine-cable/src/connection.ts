import WebSocket from "ws";
import { nowMs } from "./clock.js";
import { CableError } from "./errors.js";
import { METRICS, OpenConnections, type Events, type Tracked } from "./metrics.js";
import type { DeliveryLedger } from "./delivery.js";
import { ACTIONCABLE_V1_EXT_JSON, PONG } from "./protocol/actioncable.js";
import type { Inbound, Protocol, StreamPosition, Welcome } from "./protocol/types.js";

export type InboundMessage = Extract<Inbound, { kind: "message" }>;

export interface ConnectionSettings {
  /** The payload field that carries a send time in epoch ms (`stamp: true`). */
  stampField: string;
  /** Unread messages kept per channel for later `receive` steps; older ones are dropped. 0: none. */
  inboxSize: number;
  /** Overrides the protocol's ping interval. */
  pingIntervalMs?: number;
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

export interface OpenOptions {
  url: string;
  headers: Record<string, string>;
  subprotocols: string[];
  timeoutMs: number;
  localAddress?: string;
}

interface Waiter {
  /** Returns true when the frame settles the wait (it has then resolved or rejected it). */
  offer(ev: Inbound): boolean;
  fail(err: Error): void;
}

const ALL_CHANNELS = "\0all";
/** Positions remembered by dropCopies: a bound on memory for a long replay. */
const MAX_SEEN_SINCE_RESTORE = 16_384;

// One registry per thread: Artillery's worker threads each load the engine once.
export const registry = new OpenConnections();

/**
 * One socket of one virtual user, and its inbox. A VU runs its steps one at a time, so a connection
 * has at most one step waiting on it; every frame is offered to that waiter first.
 */
export class CableConnection implements Tracked {
  /** When the server last pinged or ponged, in nowMs(). */
  private lastPingAt = 0;
  private keepaliveSentAt = 0;
  private staleCounted = false;
  private pingIntervalMs: number;
  /** Why the connection ended, when the VU did not end it: the next step on it fails with this. */
  failure: CableError | Error | undefined;
  /** When it ended so (nowMs()): a reconnect measures its restore latency from here. */
  endedAt: number | undefined;
  /** Fields of the welcome frame (socket_id, sid, activity timeout, restored ids). */
  welcome: Welcome | undefined;
  /** The server accepted AnyCable's extended protocol. */
  extended = false;

  private ws: WebSocket | undefined;
  private waiter: Waiter | undefined;
  private readonly inbox = new Map<string, InboundMessage[]>();
  private closedByUs = false;
  private registered = false;
  /** The channel a `listen` step consumes, if one runs. */
  private listening: string | undefined;
  /** The channel whose history is being replayed, and how many messages it has replayed so far. */
  private replaying: string | undefined;
  private replayed = 0;
  /** Stream positions received since a restore, until shortly after its history is in (dropCopies). */
  private seenSinceRestore: Set<string> | undefined;

  constructor(
    readonly protocol: Protocol,
    private readonly events: Events,
    private readonly settings: ConnectionSettings,
    private readonly memory: StreamMemory,
  ) {
    this.pingIntervalMs = settings.pingIntervalMs ?? protocol.pingIntervalMs;
  }

  /** Opens the socket and waits for the server's welcome; records `cable.handshake_latency`. */
  async open(options: OpenOptions): Promise<Welcome> {
    const startedAt = nowMs();
    const ws = new WebSocket(options.url, options.subprotocols, {
      headers: options.headers,
      handshakeTimeout: options.timeoutMs,
      perMessageDeflate: false,
      // Every text frame is parsed as JSON, which fails on broken UTF-8 as a malformed frame anyway.
      skipUTF8Validation: true,
      localAddress: options.localAddress,
      // A hostile server must not make the generator buffer an unbounded frame.
      maxPayload: 16 * 1024 * 1024,
    });
    this.ws = ws;
    ws.on("message", (data, isBinary) => this.onFrame(data as Buffer, isBinary));
    ws.on("close", (code, reason) => this.onClose(code, reason.toString()));
    ws.on("error", (err) => this.onSocketError(err));
    ws.on("unexpected-response", (_req, res) => {
      this.onSocketError(new CableError(`http_${res.statusCode}`, `the server answered the upgrade with HTTP ${res.statusCode}`));
      res.resume();
      ws.terminate();
    });

    const welcome = await this.wait(options.timeoutMs, "handshake_timeout", (ev) => (ev.kind === "welcome" ? ev : undefined));
    this.extended = ws.protocol === ACTIONCABLE_V1_EXT_JSON;
    if (welcome.activityTimeout) this.pingIntervalMs = welcome.activityTimeout * 1000;
    this.lastPingAt = nowMs();
    this.registered = true;
    registry.add(this, this.events);
    this.events.emit("histogram", METRICS.handshakeLatency, nowMs() - startedAt);
    this.events.emit("counter", METRICS.connections, 1);
    return welcome;
  }

  send(frame: string): void {
    this.assertOpen();
    this.ws!.send(frame);
  }

  /** Sends a subscribe frame and waits for the server's confirmation of that channel key. */
  async subscribe(key: string, frame: string, timeoutMs: number): Promise<void> {
    if (this.settings.inboxSize > 0) this.inbox.set(key, []);
    this.send(frame);
    const answer = await this.wait(timeoutMs, "subscription_timeout", (ev) =>
      // A rejection without a channel ("*": Pusher's pusher:error 4009) answers the pending subscribe.
      (ev.kind === "confirm" && ev.channel === key) || (ev.kind === "reject" && (ev.channel === key || ev.channel === "*")) ? ev : undefined,
    );
    if (answer.kind === "reject") {
      this.inbox.delete(key);
      throw new CableError("subscription_rejected", `the server rejected the subscription ${key} (${answer.reason})`);
    }
  }

  unsubscribe(key: string, frame: string): void {
    this.send(frame);
    this.inbox.delete(key);
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
    return this.wait(timeoutMs, "receive_timeout", (ev) =>
      ev.kind === "message" && ev.channel === key && accept(ev) ? ev : undefined,
    );
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
      const answer = await this.wait(timeoutMs, "history_timeout", (ev) => (ev.kind === "history" && ev.channel === key ? ev : undefined));
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
    setTimeout(() => (this.seenSinceRestore = undefined), 1_000).unref();
  }

  /** Waits for the server to end the connection (a restart); rejects if it has not within the time. */
  waitForDrop(timeoutMs: number): Promise<void> {
    if (this.failure || !this.ws || this.ws.readyState !== WebSocket.OPEN) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiter = undefined;
        reject(new CableError("drop_timeout", `the server did not drop the connection within ${timeoutMs} ms`));
      }, timeoutMs);
      this.waiter = {
        offer: () => false,
        fail: () => {
          clearTimeout(timer);
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
      await this.wait(ms, undefined, () => undefined);
    } finally {
      this.listening = undefined;
    }
  }

  /** Ends the connection from the client side; it is not a failure. */
  close(): void {
    this.closedByUs = true;
    const ws = this.ws;
    if (!ws) return;
    if (ws.readyState === WebSocket.OPEN) ws.close(1000);
    else if (ws.readyState === WebSocket.CONNECTING) ws.terminate();
    this.unregister();
  }

  tick(now: number, events: Events): void {
    const quiet = now - this.lastPingAt;
    const keepalive = this.protocol.keepalive;
    if (keepalive && quiet > this.pingIntervalMs && this.keepaliveSentAt <= this.lastPingAt && this.ws?.readyState === WebSocket.OPEN) {
      this.keepaliveSentAt = now;
      this.ws.send(keepalive);
    }
    if (!this.staleCounted && quiet > 3 * this.pingIntervalMs) {
      this.staleCounted = true;
      events.emit("counter", METRICS.staleConnection, 1);
    }
  }

  private assertOpen(): void {
    if (this.failure) throw this.failure;
    if (!this.ws || this.ws.readyState !== WebSocket.OPEN) throw new CableError("connection_closed", "the connection is not open");
  }

  /**
   * Waits for a frame that `pick` accepts. On timeout it rejects with `cable.<timeoutReason>`, or
   * resolves (undefined) when no reason is given; a connection failure rejects at once.
   */
  private wait<T>(timeoutMs: number, timeoutReason: string | undefined, pick: (ev: Inbound) => T | undefined): Promise<T> {
    if (this.failure) return Promise.reject(this.failure);
    return new Promise<T>((resolve, reject) => {
      const settle = () => {
        clearTimeout(timer);
        this.waiter = undefined;
      };
      const timer = setTimeout(() => {
        settle();
        if (timeoutReason) reject(new CableError(timeoutReason, `no answer within ${timeoutMs} ms`));
        else resolve(undefined as T);
      }, timeoutMs);
      this.waiter = {
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
    let ev: Inbound;
    try {
      if (isBinary) throw new Error("binary frame");
      ev = this.protocol.decode(data.toString());
    } catch {
      this.events.emit("error", "cable.malformed_frame");
      return;
    }
    switch (ev.kind) {
      case "ping":
        this.lastPingAt = nowMs();
        if (this.ws?.readyState === WebSocket.OPEN) {
          if (ev.reply) this.ws.send(ev.reply);
          else if (this.extended) this.ws.send(PONG);
        }
        return;
      case "welcome":
        this.welcome = ev;
        break;
      case "message":
        this.onMessage(ev);
        return;
      case "disconnect":
        this.fail(
          ev.reason === "unauthorized"
            ? new CableError("unauthorized", "the server refused the connection (unauthorized)")
            : new CableError("server_disconnect", `the server disconnected the client (${ev.reason})`),
          true,
        );
        return;
      case "error":
        // Pusher announces a 4000–4299 close with an error frame of the same code: the close
        // itself is the failure, so the announcement is not counted twice.
        if (!/^pusher_4[0-2]\d\d$/.test(ev.reason)) this.events.emit("error", `cable.${ev.reason}`);
        break;
    }
    this.waiter?.offer(ev);
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
    registry.countReceived();
    this.events.emit("rate", METRICS.receiveRate);
    const payload = msg.payload;
    if (payload !== null && typeof payload === "object") {
      const stamped = payload as Record<string, unknown>;
      const sentAt = stamped[this.settings.stampField];
      if (typeof sentAt === "number") this.events.emit("histogram", METRICS.broadcastLatency, nowMs() - sentAt);
      if (typeof stamped.seq === "number" && typeof stamped.sender === "string") this.memory.ledger.record(msg.channel, stamped.sender, stamped.seq);
    }
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
    if (this.closedByUs) return;
    // ws refuses an upgrade whose answer picks none of the subprotocols offered.
    if (/subprotocol/i.test(err.message)) {
      err = this.protocol.subprotocols.includes(ACTIONCABLE_V1_EXT_JSON)
        ? new CableError("ext_unsupported", `the server did not accept ${this.protocol.subprotocols.join(", ")}: ${err.message}`)
        : new CableError("subprotocol_rejected", err.message);
    }
    // ws's own handshake timer ends the upgrade with a sentence, not a code.
    if (/handshake has timed out/i.test(err.message)) err = new CableError("handshake_timeout", err.message);
    // Before the socket opens this is the handshake's failure (ECONNREFUSED, HTTP 4xx); after, a
    // close event follows with the code.
    this.fail(err);
  }

  /** Records why the connection ended (the first reason wins, unless `replace`) and fails the waiting step. */
  private fail(err: CableError | Error, replace = false): void {
    if (replace || !this.failure) this.failure = err;
    this.endedAt ??= nowMs();
    this.waiter?.fail(this.failure);
  }

  private onClose(code: number, reason: string): void {
    this.unregister();
    if (this.closedByUs) return;
    this.fail(
      code >= 4000 && code < 5000 && this.protocol.closeReason
        ? new CableError(this.protocol.closeReason(code), `the server closed the connection with ${code} ${reason}`)
        : new CableError("connection_closed", `the server closed the connection (${code}${reason ? ` ${reason}` : ""})`),
    );
  }

  private unregister(): void {
    if (this.registered) {
      this.registered = false;
      registry.delete(this);
    }
  }
}

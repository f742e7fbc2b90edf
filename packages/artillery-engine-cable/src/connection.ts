import { ChannelInbox, type InboundMessage } from "./channel-inbox.js";
import { systemClock, type Clock } from "./clock.js";
import { closeFailure, disconnectFailure, socketFailure } from "./disconnects.js";
import { cableCode, isPusherCloseCode, type ErrorName } from "./error-names.js";
import { CableError } from "./errors.js";
import { FrameCounter, type StreamMemory } from "./frame-counter.js";
import { METRICS, type Events } from "./metrics.js";
import type { OpenConnections, Tracked } from "./open-connections.js";
import { ACTIONCABLE_V1_EXT_JSON } from "./protocol/actioncable.js";
import type { Inbound, Protocol, Welcome } from "./protocol/types.js";
import { countServerSoftware } from "./server-software.js";
import { sampleServerWords } from "./server-words.js";
import { openWebSocket, type CableSocket, type OpenOptions, type OpenSocket } from "./socket.js";
import { trace, traceableUrl, tracing } from "./trace.js";
import { WaitingStep } from "./waiting-step.js";

export type { OpenOptions } from "./socket.js";

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

/** One socket of one virtual user: its life, from the handshake to its end, and its keepalive. */
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
  private announcedClose: ErrorName | undefined;
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
  private readonly step: WaitingStep;
  private registered = false;
  private readonly channels: ChannelInbox;
  private readonly counter: FrameCounter;

  constructor(
    readonly protocol: Protocol,
    private readonly events: Events,
    private readonly settings: ConnectionSettings,
    memory: StreamMemory,
    private readonly runtime: ConnectionRuntime,
  ) {
    this.pingIntervalMs = settings.pingIntervalMs ?? protocol.pingIntervalMs;
    this.step = new WaitingStep(runtime.clock);
    this.channels = new ChannelInbox(settings.inboxSize, runtime.clock);
    this.counter = new FrameCounter(protocol, settings.stampField, this.channels, memory, runtime.tracker, events);
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
    if (tracing()) trace("open %s %j", traceableUrl(options.url), options.subprotocols);
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
    countServerSoftware(this.events, this.socket.server);
    return welcome;
  }

  send(frame: string): void {
    this.assertOpen();
    if (tracing()) trace("out %s", frame);
    this.socket!.send(frame);
  }

  /** Sends a subscribe frame and waits for the server's confirmation of that channel key. */
  async subscribe(key: string, frame: string, timeoutMs: number): Promise<void> {
    this.channels.subscribe(key);
    this.send(frame);
    const answer = await this.wait(timeoutMs, "subscription_timeout", false, (ev) =>
      // A rejection without a channel ("*": Pusher's pusher:error 4009) answers the pending subscribe.
      (ev.kind === "confirm" && ev.channel === key) || (ev.kind === "reject" && (ev.channel === key || ev.channel === "*")) ? ev : undefined,
    );
    if (answer.kind === "reject") {
      this.channels.unsubscribe(key);
      // The cause is counted (a fixed set); the server's own words go to the trace and the error's message only.
      this.events.emit("counter", `${METRICS.subscriptionRejected}.${answer.cause}`, 1);
      if (tracing()) trace("subscription %s rejected: %s (%s)", key, answer.cause, answer.reason);
      // Action Cable's reject carries no words ("rejected" is the decoder's).
      if (answer.cause !== "app_rejected") sampleServerWords(`cable.subscription_rejected`, answer.cause, answer.reason);
      throw new CableError("subscription_rejected", `the server rejected the subscription ${key}: ${answer.cause} (${answer.reason})`);
    }
    this.counter.subscribe(key);
    if (this.state === "welcomed") this.moveTo("subscribed");
  }

  unsubscribe(key: string, frame: string): void {
    this.send(frame);
    this.channels.unsubscribe(key);
    this.counter.unsubscribe(key);
  }

  /**
   * The next message on the channel that passes `accept`, from the unread ones first. Unread
   * messages before it that fail `accept` are skipped for good, as a client reading a stream would.
   */
  async receive(key: string, accept: (msg: InboundMessage) => boolean, timeoutMs: number): Promise<InboundMessage> {
    const unread = this.channels.takeUnread(key, accept);
    if (unread) return unread;
    this.assertOpen();
    return this.wait(timeoutMs, "receive_timeout", true, (ev) => (ev.kind === "message" && ev.channel === key && accept(ev) ? ev : undefined));
  }

  /**
   * Sends a history request and waits for confirm_history or reject_history; the messages replayed
   * in between go to the channel's inbox as any other.
   */
  async history(key: string, frame: string, timeoutMs: number): Promise<{ ok: boolean; replayed: number }> {
    this.channels.startReplay(key);
    try {
      this.send(frame);
      const answer = await this.wait(timeoutMs, "history_timeout", true, (ev) => (ev.kind === "history" && ev.channel === key ? ev : undefined));
      return { ok: answer.ok, replayed: this.channels.replayed };
    } finally {
      this.channels.endReplay();
    }
  }

  /** After a restore: see ChannelInbox.dropCopies. */
  dropCopies(on: boolean): void {
    this.channels.dropCopies(on);
  }

  /** Waits for the server to end the connection (a restart); rejects if it has not within the time. */
  waitForDrop(timeoutMs: number): Promise<void> {
    if (this.failure || !this.socket?.isOpen) return Promise.resolve();
    return this.step.drop(timeoutMs);
  }

  /**
   * Stays connected for `ms`, counting what arrives; fails early if the connection ends. What it
   * hears on the channel (all channels without one) is consumed: not kept for a later `receive`.
   */
  async listen(ms: number, key?: string): Promise<void> {
    this.assertOpen();
    this.channels.startListening(key);
    try {
      await this.wait(ms, undefined, false, () => undefined);
    } finally {
      this.channels.stopListening();
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

  /** A frame that `pick` accepts, unless the connection has failed: see WaitingStep.frame. */
  private wait<T>(timeoutMs: number, timeoutReason: ErrorName | undefined, wantsMessages: boolean, pick: (ev: Inbound) => T | undefined): Promise<T> {
    if (this.failure) return Promise.reject(this.failure);
    return this.step.frame(timeoutMs, timeoutReason, wantsMessages, pick);
  }

  private onFrame(data: Buffer, isBinary: boolean): void {
    this.lastHeardAt = this.clock.now();
    if (tracing()) trace("in %s", isBinary ? `<binary ${data.length} bytes>` : data.toString());
    // The listen path: a broadcast nobody needs parsed is counted from the raw frame.
    if (!isBinary && this.protocol.scan) {
      const raw = this.counter.countRaw(data, this.lastHeardAt, this.extended, this.step.wantsMessages);
      if (raw === "counted") return;
      if (raw === "ping") return this.onPing(undefined);
    }
    let ev: Inbound;
    try {
      if (isBinary) throw new CableError("malformed_frame", "binary frame");
      ev = this.protocol.decode(data.toString());
    } catch {
      this.events.emit("error", cableCode("malformed_frame"));
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
      case "disconnect":
        this.noticedAtOnce();
        this.fail(disconnectFailure(this.protocol, ev.reason, this.events), true);
        return;
      case "error":
        // Pusher announces a 4000–4299 close with an error frame of the same code: the close
        // itself is the failure, so the announcement is not counted twice.
        if (!isPusherCloseCode(ev.reason)) {
          this.events.emit("error", cableCode(ev.reason));
          // The key is one of a bounded set; what the server said (an unlisted code among it) is a sample.
          if (ev.message) sampleServerWords(cableCode(ev.reason), "error_frame", ev.message);
        } else this.announcedClose = ev.reason;
        break;
    }
    this.step.offer(ev);
  }

  private onPing(reply: string | undefined): void {
    this.lastPingAt = this.lastHeardAt;
    const pong = this.protocol.pong(this.extended, reply);
    if (pong && this.socket?.isOpen) this.socket.send(pong);
  }

  private onMessage(msg: InboundMessage): void {
    if (!this.channels.admit(msg)) return;
    this.counter.countMessage(msg, this.lastHeardAt);
    if (this.step.offer(msg)) return;
    this.channels.keep(msg);
  }

  private onSocketError(err: Error): void {
    if (this.state === "closing" || this.state === "closed") return;
    // Before the socket opens this is the handshake's failure (ECONNREFUSED, HTTP 4xx); after, a
    // close event follows with the code.
    this.fail(socketFailure(this.protocol, err));
  }

  /** Records why the connection ended (the first reason wins, unless `replace`) and fails the waiting step. */
  private fail(err: CableError | Error, replace = false): void {
    if (replace || !this.failure) this.failure = err;
    this.endedAt ??= this.clock.now();
    if (this.state !== "failed") this.moveTo("failed");
    if (tracing()) trace("failed: %s", (this.failure as { code?: string }).code ?? this.failure.message);
    this.step.fail(this.failure);
  }

  private onClose(code: number, reason: string): void {
    this.unregister();
    if (this.state === "closing" || this.state === "closed") {
      this.moveTo("closed");
      return;
    }
    if (!this.failure) this.noticedAtOnce();
    this.fail(closeFailure(this.protocol, code, reason, this.announcedClose));
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

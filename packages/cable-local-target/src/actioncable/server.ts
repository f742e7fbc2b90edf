import { randomUUID } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { WebSocket } from "ws";
import * as ext from "../anycable/ext-frames.js";
import { HistoryStore, type HistoryOptions, type HistoryRequest } from "../anycable/history.js";
import { PresenceSets, type PresenceEvent } from "../anycable/presence.js";
import { SessionCache } from "../anycable/sessions.js";
import { send, type Counters } from "../counters.js";
import type { Faults, ChannelFaults } from "../faults.js";
import { Hub } from "../hub.js";
import { TimerSet } from "../timers.js";
import { CableConnection, cookie, PreparedBroadcast, previousSid, type SessionSnapshot, type Subscription } from "./connection.js";
import { actionCableChannels, userIdFromUid, type ChannelContext, type ChannelDefinition, type PubSubOptions } from "./channels.js";
import * as frames from "./frames.js";

/**
 * Subprotocols in the server's order of preference: Rails' (ActionCable::INTERNAL[:protocols])
 * with AnyCable's extended protocol after `actioncable-v1-json`, as anycable-go lists them
 * (common.go `ActionCableProtocols`). A client offering both plain and extended gets plain, as
 * from AnyCable; @anycable/core offers only the one it was configured with.
 */
export const SUBPROTOCOLS = ["actioncable-v1-json", ext.EXTENDED_PROTOCOL, "actioncable-unsupported"] as const;

export function chooseSubprotocol(offered: Set<string>): string | false {
  return SUBPROTOCOLS.find((p) => offered.has(p)) ?? false;
}

export interface ActionCableOptions extends PubSubOptions {
  /** Like the Rails test server: refuse connections without a `uid` cookie (`disconnect` unauthorized). */
  requireUid: boolean;
  pingIntervalMs: number;
  /** AnyCable `--history_limit` / `--history_ttl`. */
  history: HistoryOptions;
  /** AnyCable `--sessions_ttl` (0 disables session restore). */
  sessionsTtlMs: number;
  /** AnyCable `--presence_ttl`. */
  presenceTtlMs: number;
}

/** AnyCable's broker sweeps expired history, sessions and presence every second (memory.go `expireLoop`). */
const SWEEP_INTERVAL_MS = 1_000;

export class ActionCableServer {
  private readonly connections = new Set<CableConnection>();
  /** Open extended-protocol connections by sid: a live session can be restored too (AnyCable caches sessions while they are open). */
  private readonly liveSessions = new Map<string, CableConnection>();
  private readonly hub = new Hub<CableConnection>();
  private readonly channels: Map<string, ChannelDefinition>;
  private readonly timers = new TimerSet();
  private readonly streamHistory: HistoryStore;
  private readonly sessions: SessionCache<SessionSnapshot>;
  private readonly presence: PresenceSets;

  constructor(
    private readonly options: ActionCableOptions,
    private readonly faults: Faults,
    private readonly counters: Counters,
  ) {
    this.channels = actionCableChannels(options);
    this.streamHistory = new HistoryStore(options.history);
    this.sessions = new SessionCache(options.sessionsTtlMs);
    this.presence = new PresenceSets(options.presenceTtlMs);
    // Rails beats every connection from one timer (server/connections.rb `setup_heartbeat_timer`).
    this.timers.interval(() => this.beat(), options.pingIntervalMs);
    this.timers.interval(() => this.sweep(), SWEEP_INTERVAL_MS);
  }

  get openConnections(): number {
    return this.connections.size;
  }

  /** The epoch of the reliable streams (changes only with `restart({ forgetState: true })`). */
  get epoch(): string {
    return this.streamHistory.epoch;
  }

  accept(ws: WebSocket, request: IncomingMessage): void {
    this.counters.connectionsOpened++;
    this.faults.noteOpenConnections(this.counters.connectionsOpened - this.counters.connectionsClosed);
    const extended = ws.protocol === ext.EXTENDED_PROTOCOL;
    // node.go `Authenticate`: a resumable session is restored before (and instead of) authentication.
    const restored = extended ? this.findSession(previousSid(request)) : undefined;
    const uid = cookie(request.headers.cookie, "uid");
    const connection = new CableConnection(ws, restored?.userId ?? (uid ? userIdFromUid(uid) : ""), extended ? randomUUID() : undefined);
    ws.once("close", () => this.forget(connection));
    if (!restored && !uid && this.options.requireUid) {
      // reject_unauthorized_connection → close(reason: unauthorized, reconnect: false): frame, then close 1000.
      send(ws, frames.disconnect("unauthorized", false), this.counters);
      ws.close(1000);
      return;
    }
    this.connections.add(connection);
    if (connection.sid) this.liveSessions.set(connection.sid, connection);
    ws.on("message", (data) => this.receive(connection, data.toString()));
    if (restored) this.restore(connection, restored);
    else send(ws, connection.sid ? ext.welcome(connection.sid) : frames.WELCOME, this.counters);
    this.scheduleFaultClose(connection);
  }

  /** `ActionCable.server.broadcast(stream, message)`: recorded in the stream's history, then one frame per subscription identifier. */
  broadcast(stream: string, messageJson: string): number {
    this.counters.broadcasts++;
    this.faults.noteBroadcast();
    const position = this.streamHistory.append(stream, messageJson, Date.now());
    return this.hub.publish(
      stream,
      (identifier) =>
        new PreparedBroadcast(this.groupFaults(identifier), (extended) =>
          extended ? ext.positionedMessage(identifier, messageJson, position) : frames.channelMessage(identifier, messageJson),
        ),
      (connection, prepared) => this.deliver(connection, prepared),
    );
  }

  /**
   * A server restart as AnyCable performs it on shutdown (node.go `disconnectAll`): every
   * connection gets `{"type":"disconnect","reason":"server_restart","reconnect":true}` and close
   * 1001. History, sessions and presence survive (as with a persistent broker), unless
   * `forgetState`, which also does what restarting AnyCable's memory broker does: new epoch, no
   * history, no sessions to restore, no presence. Returns the number of connections dropped.
   */
  restart(options: { forgetState?: boolean } = {}): number {
    this.counters.restarts++;
    const dropped = [...this.connections];
    const frame = Buffer.from(frames.disconnect("server_restart", true));
    for (const connection of dropped) {
      if (options.forgetState) connection.cacheOnClose = false;
      send(connection.ws, frame, this.counters);
      connection.ws.close(1001, "Server restart");
    }
    if (options.forgetState) {
      this.streamHistory.reset();
      this.sessions.clear();
      this.presence.clear();
    }
    return dropped.length;
  }

  close(): void {
    this.timers.clearAll();
    for (const connection of this.connections) {
      connection.timers.clearAll();
      connection.ws.terminate();
    }
  }

  private groupFaults(identifier: string): ChannelFaults {
    return this.faults.config.channels ? this.faults.forChannel(frames.parseIdentifier(identifier)?.channel ?? "") : this.faults.config;
  }

  private deliver(connection: CableConnection, prepared: PreparedBroadcast): void {
    const delayMs = this.faults.deliveryDelayMs(prepared.faults, this.counters.connectionsOpened - this.counters.connectionsClosed);
    // The connection's timers die with it, so a delivery held back never reaches a closed socket.
    if (delayMs) connection.timers.timeout(() => this.deliverNow(connection, prepared), delayMs);
    else this.deliverNow(connection, prepared);
  }

  private deliverNow(connection: CableConnection, prepared: PreparedBroadcast): void {
    const fate = this.faults.deliveryFate(prepared.faults, this.counters);
    if (fate === "dropped") return;
    send(connection.ws, fate === "malformed" ? prepared.malformed(connection.extended) : prepared.frame(connection.extended), this.counters);
  }

  private beat(): void {
    if (this.faults.config.stopPinging || this.connections.size === 0) return;
    const frame = Buffer.from(frames.ping(Math.floor(Date.now() / 1000)));
    for (const connection of this.connections) send(connection.ws, frame, this.counters);
  }

  private sweep(): void {
    const now = Date.now();
    this.streamHistory.expire(now);
    this.sessions.expire(now);
    for (const { stream, event } of this.presence.expire(now)) this.announcePresence(stream, event);
  }

  private scheduleFaultClose(connection: CableConnection): void {
    const { closeAfterMs, closeCode, disconnectReason, disconnectReconnect } = this.faults.config;
    if (closeAfterMs === undefined || !this.faults.closesThisConnection()) return;
    connection.timers.timeout(() => {
      if (disconnectReason) send(connection.ws, frames.disconnect(disconnectReason, disconnectReconnect ?? false), this.counters);
      connection.ws.close(closeCode ?? 1000);
    }, closeAfterMs);
  }

  private findSession(sid: string | undefined): SessionSnapshot | undefined {
    if (!sid) return undefined;
    return this.liveSessions.get(sid)?.snapshot() ?? this.sessions.find(sid, Date.now());
  }

  /** node.go `TryRestoreSession`: the old subscriptions follow their streams again, then the restored welcome. */
  private restore(connection: CableConnection, snapshot: SessionSnapshot): void {
    this.counters.sessionsRestored++;
    for (const [identifier, state] of snapshot.subscriptions) {
      connection.subscriptions.set(identifier, { ...state, streams: [...state.streams] });
      for (const stream of state.streams) this.hub.subscribe(stream, identifier, connection);
    }
    const identifiers = snapshot.subscriptions.map(([identifier]) => identifier);
    send(connection.ws, ext.restoredWelcome(connection.sid as string, identifiers), this.counters);
  }

  private forget(connection: CableConnection): void {
    this.counters.connectionsClosed++;
    this.faults.noteOpenConnections(this.counters.connectionsOpened - this.counters.connectionsClosed);
    connection.timers.clearAll();
    if (this.connections.delete(connection) && connection.sid) {
      this.liveSessions.delete(connection.sid);
      if (connection.cacheOnClose) {
        const now = Date.now();
        this.sessions.retire(connection.sid, connection.snapshot(), now);
        this.presence.disconnected(connection.sid, now);
      }
    }
    for (const [identifier, subscription] of connection.subscriptions) this.detach(connection, identifier, subscription);
  }

  private receive(connection: CableConnection, raw: string): void {
    this.counters.framesIn++;
    const command = frames.parseClientCommand(raw, connection.extended);
    // Rails logs and drops what it cannot execute (subscriptions.rb `execute_command`); so does AnyCable (node.go `HandleCommand`).
    if ("error" in command) return;
    switch (command.command) {
      case "subscribe":
        return this.subscribe(connection, command.identifier, command.history);
      case "unsubscribe": {
        const subscription = connection.subscriptions.get(command.identifier);
        if (!subscription) return;
        // docs/presence.md: unsubscribing leaves the presence set.
        if (subscription.presenceStream && connection.sid) {
          const left = this.presence.leave(subscription.presenceStream, connection.sid);
          if (left) this.announcePresence(subscription.presenceStream, left);
        }
        return this.detach(connection, command.identifier, subscription);
      }
      case "message":
        return this.perform(connection, command.identifier, command.data);
      case "pong":
        // The extended protocol's answer to a ping; AnyCable only uses it for `--pong_timeout`.
        return;
      case "history":
        return this.replayHistory(connection, command.identifier, command.history);
      case "whisper":
        return this.whisper(connection, command.identifier, command.dataJson);
      case "join":
      case "leave":
      case "presence":
        return this.presenceCommand(connection, command);
    }
  }

  private subscribe(connection: CableConnection, identifier: string, history?: HistoryRequest): void {
    // subscriptions.rb `add`: a second subscribe with the same identifier string is ignored,
    // and an unknown channel class is only logged (no reject_subscription).
    if (connection.subscriptions.has(identifier)) return;
    const parsed = frames.parseIdentifier(identifier);
    const definition = parsed && this.channels.get(parsed.channel);
    if (!parsed || !definition) return;
    const faults = this.faults.forChannel(parsed.channel);
    const decision = faults.rejectSubscriptions ? "reject" : definition.subscribed(parsed.params);
    if (decision === "reject") {
      send(connection.ws, frames.rejectSubscription(identifier), this.counters);
      return;
    }
    const subscription: Subscription = {
      channel: parsed.channel,
      params: parsed.params,
      streams: decision.streams,
      whisperStream: decision.whisper ? decision.streams[0] : undefined,
      presenceStream: decision.presence ? decision.streams[0] : undefined,
    };
    connection.subscriptions.set(identifier, subscription);
    const confirm = () => {
      subscription.pendingConfirm = undefined;
      for (const stream of subscription.streams) this.hub.subscribe(stream, identifier, connection);
      send(connection.ws, frames.confirmSubscription(identifier), this.counters);
      // node.go `Subscribe`: history sent with the subscribe command is served right after the confirmation.
      if (history) this.replayHistory(connection, identifier, history);
    };
    if (faults.confirmDelayMs) subscription.pendingConfirm = connection.timers.timeout(confirm, faults.confirmDelayMs);
    else confirm();
  }

  /** Stops delivering a subscription's streams (the socket closed, or the client unsubscribed). */
  private detach(connection: CableConnection, identifier: string, subscription: Subscription): void {
    if (subscription.pendingConfirm) connection.timers.clear(subscription.pendingConfirm);
    else for (const stream of subscription.streams) this.hub.unsubscribe(stream, identifier, connection);
    connection.subscriptions.delete(identifier);
  }

  /** node.go `History`: the missed messages with their positions, then `confirm_history`; or only `reject_history`. */
  private replayHistory(connection: CableConnection, identifier: string, request: HistoryRequest): void {
    const subscription = connection.subscriptions.get(identifier);
    if (!subscription || subscription.pendingConfirm) return;
    const backlog = this.streamHistory.retrieve(request, subscription.streams, Date.now());
    if (!backlog) {
      this.counters.historyRejected++;
      send(connection.ws, ext.rejectHistory(identifier), this.counters);
      return;
    }
    const epoch = this.streamHistory.epoch;
    for (const { stream, entry } of backlog) {
      send(connection.ws, ext.positionedMessage(identifier, entry.messageJson, { stream, epoch, offset: entry.offset }), this.counters);
    }
    this.counters.historyConfirmed++;
    send(connection.ws, ext.confirmHistory(identifier), this.counters);
  }

  /** node.go `Whisper`: a transient broadcast to the whisper stream, not kept in history, skipping the sender. */
  private whisper(connection: CableConnection, identifier: string, dataJson: string): void {
    const subscription = connection.subscriptions.get(identifier);
    const stream = subscription?.whisperStream;
    if (!stream || subscription.pendingConfirm) return;
    this.counters.whispers++;
    this.hub.publish(
      stream,
      (group) => new PreparedBroadcast(this.groupFaults(group), () => ext.whisperMessage(group, dataJson)),
      (receiver, prepared) => this.deliver(receiver, prepared),
      connection,
    );
  }

  private presenceCommand(connection: CableConnection, command: Extract<frames.ClientCommand, { command: "join" | "leave" | "presence" }>): void {
    const subscription = connection.subscriptions.get(command.identifier);
    if (!subscription || subscription.pendingConfirm || !connection.sid) return;
    const stream = subscription.presenceStream;
    if (command.command === "presence") {
      // The answer @anycable/core waits for; `error` when the subscription has no presence set.
      const message = stream ? this.presence.info(stream) : ({ type: "error" } as const);
      send(connection.ws, ext.presenceMessage(command.identifier, message), this.counters);
      return;
    }
    if (!stream) return;
    const event =
      command.command === "join" ? this.presence.join(stream, connection.sid, command.presenceId, command.info) : this.presence.leave(stream, connection.sid);
    if (event && event !== "mismatch") this.announcePresence(stream, event);
  }

  /** Presence events go to every subscriber of the stream, the initiator included (docs/presence.md). */
  private announcePresence(stream: string, event: PresenceEvent): void {
    this.hub.publish(
      stream,
      (group) => new PreparedBroadcast(this.faults.config, () => ext.presenceMessage(group, event)),
      (receiver, prepared) => send(receiver.ws, prepared.frame(receiver.extended), this.counters),
    );
  }

  private perform(connection: CableConnection, identifier: string, dataJson: string): void {
    const subscription = connection.subscriptions.get(identifier);
    if (!subscription || subscription.pendingConfirm) return;
    let data: unknown;
    try {
      data = JSON.parse(dataJson);
    } catch {
      return;
    }
    if (typeof data !== "object" || data === null || Array.isArray(data)) return;
    const fields = data as Record<string, unknown>;
    const action = this.channels.get(subscription.channel)?.actions[String(fields.action)];
    if (!action) return;
    const context: ChannelContext = {
      userId: connection.userId,
      params: subscription.params,
      transmit: (messageJson) => send(connection.ws, frames.channelMessage(identifier, messageJson), this.counters),
      broadcast: (stream, messageJson) => this.broadcast(stream, messageJson),
      close: (reason, reconnect) => {
        send(connection.ws, frames.disconnect(reason, reconnect), this.counters);
        connection.ws.close(1000);
      },
    };
    action(context, fields);
  }
}

import type { IncomingMessage } from "node:http";
import type { WebSocket } from "ws";
import { send, malformed, type Counters } from "../counters.js";
import type { Faults, ChannelFaults } from "../faults.js";
import { Hub } from "../hub.js";
import { TimerSet } from "../timers.js";
import { actionCableChannels, userIdFromUid, type ChannelContext, type ChannelDefinition, type PubSubOptions } from "./channels.js";
import * as frames from "./frames.js";

/**
 * Subprotocols in the server's order of preference, as Rails offers them
 * (ActionCable::INTERNAL[:protocols]). AnyCable's extended protocol (`actioncable-v1-ext-json`:
 * sid in welcome, history, pong, restore) would be added here with its own connection behaviour.
 */
export const SUBPROTOCOLS = ["actioncable-v1-json", "actioncable-unsupported"] as const;

export function chooseSubprotocol(offered: Set<string>): string | false {
  return SUBPROTOCOLS.find((p) => offered.has(p)) ?? false;
}

export interface ActionCableOptions extends PubSubOptions {
  /** Like the Rails test server: refuse connections without a `uid` cookie (`disconnect` unauthorized). */
  requireUid: boolean;
  pingIntervalMs: number;
}

interface Subscription {
  channel: string;
  params: Record<string, unknown>;
  streams: string[];
  /** Set while a delayed confirmation is pending. */
  pendingConfirm?: NodeJS.Timeout;
}

/** Cookie header → value of one cookie, unescaped the way Rack does. */
function cookie(header: string | undefined, name: string): string | undefined {
  for (const part of header?.split(";") ?? []) {
    const eq = part.indexOf("=");
    if (eq < 0 || part.slice(0, eq).trim() !== name) continue;
    const raw = part.slice(eq + 1).trim().replace(/\+/g, " ");
    try {
      return decodeURIComponent(raw);
    } catch {
      return raw;
    }
  }
  return undefined;
}

class CableConnection {
  readonly subscriptions = new Map<string, Subscription>();
  readonly timers = new TimerSet();

  constructor(
    readonly ws: WebSocket,
    readonly userId: string,
  ) {}
}

interface PreparedBroadcast {
  frame: Buffer;
  faults: ChannelFaults;
  malformed?: Buffer;
}

export class ActionCableServer {
  private readonly connections = new Set<CableConnection>();
  private readonly hub = new Hub<CableConnection>();
  private readonly channels: Map<string, ChannelDefinition>;
  private readonly timers = new TimerSet();

  constructor(
    private readonly options: ActionCableOptions,
    private readonly faults: Faults,
    private readonly counters: Counters,
  ) {
    this.channels = actionCableChannels(options);
    // Rails beats every connection from one timer (server/connections.rb `setup_heartbeat_timer`).
    this.timers.interval(() => this.beat(), options.pingIntervalMs);
  }

  get openConnections(): number {
    return this.connections.size;
  }

  accept(ws: WebSocket, request: IncomingMessage): void {
    this.counters.connectionsOpened++;
    const uid = cookie(request.headers.cookie, "uid");
    const connection = new CableConnection(ws, uid ? userIdFromUid(uid) : "");
    ws.once("close", () => this.forget(connection));
    if (!uid && this.options.requireUid) {
      // reject_unauthorized_connection → close(reason: unauthorized, reconnect: false): frame, then close 1000.
      send(ws, frames.disconnect("unauthorized", false), this.counters);
      ws.close(1000);
      return;
    }
    this.connections.add(connection);
    ws.on("message", (data) => this.receive(connection, data.toString()));
    send(ws, frames.WELCOME, this.counters);
    this.scheduleFaultClose(connection);
  }

  /** `ActionCable.server.broadcast(stream, message)`: one frame per subscription identifier. */
  broadcast(stream: string, messageJson: string): number {
    this.counters.broadcasts++;
    const channelOverrides = this.faults.config.channels;
    return this.hub.publish(
      stream,
      (identifier): PreparedBroadcast => ({
        frame: Buffer.from(frames.channelMessage(identifier, messageJson)),
        faults: channelOverrides ? this.faults.forChannel(frames.parseIdentifier(identifier)?.channel ?? "") : this.faults.config,
      }),
      (connection, prepared) => this.deliver(connection, prepared),
    );
  }

  close(): void {
    this.timers.clearAll();
    for (const connection of this.connections) {
      connection.timers.clearAll();
      connection.ws.terminate();
    }
  }

  private deliver(connection: CableConnection, prepared: PreparedBroadcast): void {
    if (this.faults.chance(prepared.faults.dropBroadcastRatio)) {
      this.counters.deliveriesDropped++;
      return;
    }
    if (this.faults.chance(prepared.faults.malformedRatio)) {
      this.counters.deliveriesMalformed++;
      send(connection.ws, (prepared.malformed ??= malformed(prepared.frame)), this.counters);
      return;
    }
    send(connection.ws, prepared.frame, this.counters);
  }

  private beat(): void {
    if (this.faults.config.stopPinging || this.connections.size === 0) return;
    const frame = Buffer.from(frames.ping(Math.floor(Date.now() / 1000)));
    for (const connection of this.connections) send(connection.ws, frame, this.counters);
  }

  private scheduleFaultClose(connection: CableConnection): void {
    const { closeAfterMs, closeCode, disconnectReason, disconnectReconnect } = this.faults.config;
    if (closeAfterMs === undefined || !this.faults.closesThisConnection()) return;
    connection.timers.timeout(() => {
      if (disconnectReason) send(connection.ws, frames.disconnect(disconnectReason, disconnectReconnect ?? false), this.counters);
      connection.ws.close(closeCode ?? 1000);
    }, closeAfterMs);
  }

  private forget(connection: CableConnection): void {
    this.counters.connectionsClosed++;
    connection.timers.clearAll();
    for (const [identifier, subscription] of connection.subscriptions) this.unsubscribe(connection, identifier, subscription);
    this.connections.delete(connection);
  }

  private receive(connection: CableConnection, raw: string): void {
    this.counters.framesIn++;
    const command = frames.parseClientCommand(raw);
    // Rails logs and drops what it cannot execute (subscriptions.rb `execute_command`); so does this target.
    if ("error" in command) return;
    switch (command.command) {
      case "subscribe":
        return this.subscribe(connection, command.identifier);
      case "unsubscribe": {
        const subscription = connection.subscriptions.get(command.identifier);
        if (subscription) this.unsubscribe(connection, command.identifier, subscription);
        return;
      }
      case "message":
        return this.perform(connection, command.identifier, command.data);
    }
  }

  private subscribe(connection: CableConnection, identifier: string): void {
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
    const subscription: Subscription = { channel: parsed.channel, params: parsed.params, streams: decision.streams };
    connection.subscriptions.set(identifier, subscription);
    const confirm = () => {
      subscription.pendingConfirm = undefined;
      for (const stream of subscription.streams) this.hub.subscribe(stream, identifier, connection);
      send(connection.ws, frames.confirmSubscription(identifier), this.counters);
    };
    if (faults.confirmDelayMs) subscription.pendingConfirm = connection.timers.timeout(confirm, faults.confirmDelayMs);
    else confirm();
  }

  private unsubscribe(connection: CableConnection, identifier: string, subscription: Subscription): void {
    if (subscription.pendingConfirm) connection.timers.clear(subscription.pendingConfirm);
    else for (const stream of subscription.streams) this.hub.unsubscribe(stream, identifier, connection);
    connection.subscriptions.delete(identifier);
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

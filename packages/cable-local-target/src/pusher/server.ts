import { randomInt } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { WebSocket } from "ws";
import { send, malformed, type Counters } from "../counters.js";
import type { Faults, ChannelFaults } from "../faults.js";
import { Hub } from "../hub.js";
import { TimerSet } from "../timers.js";
import * as frames from "./frames.js";
import { verifyChannelAuth } from "./signatures.js";

export interface PusherOptions {
  appId: string;
  key: string;
  secret: string;
  /** Seconds, announced in connection_established (Pusher's own servers say 120). */
  activityTimeoutS: number;
  /** Whether the app allows client events (Pusher: an app setting, off by default there). */
  clientEvents: boolean;
  errorStyle: frames.ErrorStyle;
}

interface Member {
  info: unknown;
  sockets: Set<PusherConnection>;
}

interface Subscription {
  /** Presence channels: the member this socket joined as. */
  userId?: string;
  pendingConfirm?: NodeJS.Timeout;
}

class PusherConnection {
  readonly channels = new Map<string, Subscription>();
  readonly timers = new TimerSet();

  constructor(
    readonly ws: WebSocket,
    readonly socketId: string,
  ) {}
}

interface PreparedEvent {
  frame: Buffer;
  faults: ChannelFaults;
  except?: PusherConnection;
  malformed?: Buffer;
}

/** The one group of a Pusher channel in the hub: every subscriber receives the same bytes. */
const ALL = "";

export class PusherServer {
  private readonly connections = new Set<PusherConnection>();
  private readonly bySocketId = new Map<string, PusherConnection>();
  private readonly hub = new Hub<PusherConnection>();
  /** channel → user_id → member */
  private readonly presence = new Map<string, Map<string, Member>>();
  private socketSequence = 0;

  constructor(
    readonly options: PusherOptions,
    private readonly faults: Faults,
    private readonly counters: Counters,
  ) {}

  get openConnections(): number {
    return this.connections.size;
  }

  /** `key` is the app key from the URL path `/app/<key>`. */
  accept(ws: WebSocket, request: IncomingMessage, key: string): void {
    this.counters.connectionsOpened++;
    this.faults.noteOpenConnections(this.counters.connectionsOpened - this.counters.connectionsClosed);
    const connection = new PusherConnection(ws, `${randomInt(1, 2 ** 31)}.${++this.socketSequence}`);
    ws.once("close", () => this.forget(connection));
    if (key !== this.options.key) {
      // Pusher protocol: 4001 "Application does not exist" (4000–4099: do not reconnect).
      send(ws, frames.error(`App key ${key} not in this cluster. Did you forget to specify the cluster?`, 4001), this.counters);
      ws.close(4001);
      return;
    }
    const protocol = new URL(request.url ?? "/", "http://localhost").searchParams.get("protocol");
    if (protocol !== null && !["5", "6", "7"].includes(protocol)) {
      send(ws, frames.error(`Unsupported protocol version ${protocol}`, 4007), this.counters);
      ws.close(4007);
      return;
    }
    this.connections.add(connection);
    this.bySocketId.set(connection.socketId, connection);
    ws.on("message", (data) => this.receive(connection, data.toString()));
    send(ws, frames.connectionEstablished(connection.socketId, this.options.activityTimeoutS), this.counters);
    this.scheduleFaultClose(connection);
  }

  /**
   * Publishes an event on a channel, as the HTTP events API and client events do. `exceptSocketId`
   * is the API's `socket_id` (excluding recipients); `userId` is added to presence client events.
   */
  trigger(channel: string, event: string, data: unknown, exceptSocketId?: string, userId?: string): number {
    this.counters.broadcasts++;
    this.faults.noteBroadcast();
    return this.publish(channel, frames.event(event, channel, data, userId), exceptSocketId ? this.bySocketId.get(exceptSocketId) : undefined);
  }

  /**
   * A server restart, as `POST /_restart` performs it: every connection gets `pusher:error` with code
   * 4200 ("reconnect immediately" in the Pusher protocol), then close 4200 `Server restart`.
   * Returns the number of connections dropped.
   */
  restart(): number {
    const dropped = [...this.connections];
    const frame = Buffer.from(frames.error("Server restart", 4200));
    for (const connection of dropped) {
      send(connection.ws, frame, this.counters);
      connection.ws.close(4200, "Server restart");
    }
    return dropped.length;
  }

  close(): void {
    for (const connection of this.connections) {
      connection.timers.clearAll();
      connection.ws.terminate();
    }
  }

  private publish(channel: string, frame: string, except?: PusherConnection): number {
    return this.hub.publish(
      channel,
      (): PreparedEvent => ({ frame: Buffer.from(frame), faults: this.faults.forChannel(channel), except }),
      (connection, prepared) => {
        if (connection !== prepared.except) this.deliver(connection, prepared);
      },
    );
  }

  private deliver(connection: PusherConnection, prepared: PreparedEvent): void {
    const delayMs = this.faults.deliveryDelayMs(prepared.faults, this.counters.connectionsOpened - this.counters.connectionsClosed);
    // The connection's timers die with it, so a delivery held back never reaches a closed socket.
    if (delayMs) connection.timers.timeout(() => this.deliverNow(connection, prepared), delayMs);
    else this.deliverNow(connection, prepared);
  }

  private deliverNow(connection: PusherConnection, prepared: PreparedEvent): void {
    const fate = this.faults.deliveryFate(prepared.faults, this.counters);
    if (fate === "dropped") return;
    send(connection.ws, fate === "malformed" ? (prepared.malformed ??= malformed(prepared.frame)) : prepared.frame, this.counters);
  }

  private scheduleFaultClose(connection: PusherConnection): void {
    const { closeAfterMs, closeCode } = this.faults.config;
    if (closeAfterMs === undefined || !this.faults.closesThisConnection()) return;
    connection.timers.timeout(() => {
      const code = closeCode ?? 4200;
      // Pusher announces the reason of a 4xxx close with a pusher:error carrying the same code.
      if (code >= 4000) send(connection.ws, frames.error("Closed by the local target's closeAfterMs fault", code), this.counters);
      connection.ws.close(code);
    }, closeAfterMs);
  }

  private forget(connection: PusherConnection): void {
    this.counters.connectionsClosed++;
    this.faults.noteOpenConnections(this.counters.connectionsOpened - this.counters.connectionsClosed);
    connection.timers.clearAll();
    for (const [channel, subscription] of connection.channels) this.unsubscribe(connection, channel, subscription);
    this.connections.delete(connection);
    this.bySocketId.delete(connection.socketId);
  }

  private receive(connection: PusherConnection, raw: string): void {
    this.counters.framesIn++;
    const message = frames.parseClientFrame(raw);
    if ("error" in message) {
      send(connection.ws, frames.error(`Invalid message: ${message.error}`, null), this.counters);
      return;
    }
    switch (message.event) {
      case "pusher:ping":
        if (!this.faults.config.stopPinging) send(connection.ws, frames.PONG, this.counters);
        return;
      case "pusher:pong":
        return;
      case "pusher:subscribe":
        return this.subscribe(connection, frames.dataObject(message.data) ?? {});
      case "pusher:unsubscribe": {
        const channel = frames.dataObject(message.data)?.channel;
        const subscription = typeof channel === "string" ? connection.channels.get(channel) : undefined;
        if (subscription) this.unsubscribe(connection, channel as string, subscription);
        return;
      }
    }
    if (message.event.startsWith("client-")) this.clientEvent(connection, message);
  }

  private refuse(connection: PusherConnection, channel: string, reason: string): void {
    send(connection.ws, frames.subscriptionError(this.options.errorStyle, channel, reason), this.counters);
  }

  private subscribe(connection: PusherConnection, data: Record<string, unknown>): void {
    const { channel, auth, channel_data: channelData } = data;
    if (typeof channel !== "string" || channel.length === 0) {
      send(connection.ws, frames.error("pusher:subscribe needs a channel", null), this.counters);
      return;
    }
    const existing = connection.channels.get(channel);
    if (existing) {
      // Sockudo answers a repeated subscribe with subscription_succeeded again; so does this target.
      if (!existing.pendingConfirm) send(connection.ws, frames.subscriptionSucceeded(channel, existing.userId === undefined ? undefined : this.snapshot(channel)), this.counters);
      return;
    }
    const kind = frames.channelKind(channel);
    const { key, secret } = this.options;
    const faults = this.faults.forChannel(channel);
    if (faults.rejectSubscriptions) return this.refuse(connection, channel, "Subscription refused by the local target's rejectSubscriptions fault");
    let member: { id: string; info: unknown } | undefined;
    if (kind === "private" && !verifyChannelAuth(auth, key, secret, connection.socketId, channel)) {
      return this.refuse(connection, channel, `Invalid signature: expected HMAC SHA256 hex digest of ${connection.socketId}:${channel}`);
    }
    if (kind === "presence") {
      if (typeof channelData !== "string" || !verifyChannelAuth(auth, key, secret, connection.socketId, channel, channelData)) {
        return this.refuse(connection, channel, `Invalid signature: expected HMAC SHA256 hex digest of ${connection.socketId}:${channel}:<channel_data>`);
      }
      member = presenceMember(channelData);
      if (!member) return this.refuse(connection, channel, "channel_data must be a JSON object with a user_id");
    }
    const subscription: Subscription = { userId: member?.id };
    connection.channels.set(channel, subscription);
    const confirm = () => {
      subscription.pendingConfirm = undefined;
      this.hub.subscribe(channel, ALL, connection);
      if (!member) {
        send(connection.ws, frames.subscriptionSucceeded(channel), this.counters);
        return;
      }
      const isNewMember = this.join(channel, member.id, member.info, connection);
      send(connection.ws, frames.subscriptionSucceeded(channel, this.snapshot(channel)), this.counters);
      if (isNewMember) this.publish(channel, frames.memberAdded(channel, member.id, member.info), connection);
    };
    if (faults.confirmDelayMs) subscription.pendingConfirm = connection.timers.timeout(confirm, faults.confirmDelayMs);
    else confirm();
  }

  private unsubscribe(connection: PusherConnection, channel: string, subscription: Subscription): void {
    connection.channels.delete(channel);
    if (subscription.pendingConfirm) {
      connection.timers.clear(subscription.pendingConfirm);
      return;
    }
    this.hub.unsubscribe(channel, ALL, connection);
    if (subscription.userId !== undefined && this.leave(channel, subscription.userId, connection)) {
      this.publish(channel, frames.memberRemoved(channel, subscription.userId));
    }
  }

  /** Adds a socket to a presence member; true when the user was not there before. */
  private join(channel: string, userId: string, info: unknown, connection: PusherConnection): boolean {
    let members = this.presence.get(channel);
    if (!members) this.presence.set(channel, (members = new Map()));
    const existing = members.get(userId);
    if (existing) {
      existing.sockets.add(connection);
      return false;
    }
    members.set(userId, { info, sockets: new Set([connection]) });
    return true;
  }

  /** Removes a socket from a presence member; true when that was the user's last socket. */
  private leave(channel: string, userId: string, connection: PusherConnection): boolean {
    const members = this.presence.get(channel);
    const member = members?.get(userId);
    if (!members || !member) return false;
    member.sockets.delete(connection);
    if (member.sockets.size > 0) return false;
    members.delete(userId);
    if (members.size === 0) this.presence.delete(channel);
    return true;
  }

  private snapshot(channel: string): frames.PresenceSnapshot {
    const members = this.presence.get(channel) ?? new Map<string, Member>();
    const hash: Record<string, unknown> = {};
    for (const [id, member] of members) hash[id] = member.info ?? null;
    return { ids: [...members.keys()], hash, count: members.size };
  }

  /** Client events: `client-` prefix, private or presence channel the sender is on, not echoed back. */
  private clientEvent(connection: PusherConnection, message: frames.ClientFrame): void {
    const { channel, event } = message;
    if (!this.options.clientEvents) {
      send(connection.ws, frames.clientEventError(this.options.errorStyle, "To send client events, you must enable this feature in the Settings page of your dashboard."), this.counters);
      return;
    }
    if (channel === undefined || frames.channelKind(channel) === "public") {
      send(connection.ws, frames.clientEventError(this.options.errorStyle, "Client event rejected - only supported on private and presence channels"), this.counters);
      return;
    }
    const subscription = connection.channels.get(channel);
    if (!subscription || subscription.pendingConfirm) {
      send(connection.ws, frames.clientEventError(this.options.errorStyle, `Client event rejected - not subscribed to ${channel}`), this.counters);
      return;
    }
    this.counters.broadcasts++;
    this.faults.noteBroadcast();
    this.publish(channel, frames.event(event, channel, message.data, subscription.userId), connection);
  }
}

/** `channel_data` of a presence subscription: `{"user_id":…, "user_info"?:…}`; a numeric id counts as its string. */
function presenceMember(channelData: string): { id: string; info: unknown } | undefined {
  const data = frames.dataObject(channelData);
  const userId = data?.user_id;
  if (typeof userId !== "string" && typeof userId !== "number") return undefined;
  return { id: String(userId), info: data?.user_info };
}

import type { ErrorName } from "../error-names.js";
import { CableError } from "../errors.js";
import { signStreamName } from "./anycable-signatures.js";
import { scanActionCableInto } from "./scan.js";
import type { Inbound, Protocol, SubscribeRequest } from "./types.js";

// Frame shapes: rails/rails actioncable/lib/action_cable/connection/{base,subscriptions}.rb and
// channel/base.rb (Rails 6.1), and AnyCable's docs/misc/action_cable_protocol.md.

export const ACTIONCABLE_V1_JSON = "actioncable-v1-json";
/** AnyCable's extended protocol: sessions, reliable streams, history, whispers, presence. */
export const ACTIONCABLE_V1_EXT_JSON = "actioncable-v1-ext-json";

/**
 * The identifier the server echoes back byte for byte. Key order is the JS client's
 * (`channel` first, then params), so a step's frames match what a browser sends.
 */
export function buildIdentifier(channel: string, params: Record<string, unknown> = {}): string {
  return JSON.stringify({ channel, ...params });
}

export function encodeSubscribe(identifier: string): string {
  return JSON.stringify({ command: "subscribe", identifier });
}

export function encodeUnsubscribe(identifier: string): string {
  return JSON.stringify({ command: "unsubscribe", identifier });
}

/** `data` is itself a JSON string, with `action` last, as @rails/actioncable's `perform` builds it. */
export function encodePerform(identifier: string, action: string, data: Record<string, unknown> = {}): string {
  return JSON.stringify({ command: "message", identifier, data: JSON.stringify({ ...data, action }) });
}

/** Ext: the answer to a server ping, which AnyCable uses to find dead clients. */
export const PONG = JSON.stringify({ command: "pong" });

/** Ext: asks for what a stream missed, since a time (unix s) or since known stream positions. */
export function encodeHistory(identifier: string, request: { since: number } | { streams: Record<string, { epoch: string; offset: number }> }): string {
  return JSON.stringify({ command: "history", identifier, history: request });
}

/** Ext: data relayed to the stream's other subscribers without the application (whispers). */
export function encodeWhisper(identifier: string, data: unknown): string {
  return JSON.stringify({ command: "whisper", identifier, data });
}

/** Ext: presence join and leave. */
export function encodePresence(command: "join" | "leave", identifier: string, presence: { id: string; info?: unknown }): string {
  return JSON.stringify({ command, identifier, presence });
}

/** AnyCable `$pubsub` identifiers: a public stream by name, or a signed one. */
export function pubsubIdentifier(stream: { name: string } | { signed: string }): string {
  return "name" in stream
    ? JSON.stringify({ channel: "$pubsub", stream_name: stream.name })
    : JSON.stringify({ channel: "$pubsub", signed_stream_name: stream.signed });
}

export class MalformedFrame extends Error {}

export function decodeActionCable(text: string): Inbound {
  let frame: unknown;
  try {
    frame = JSON.parse(text);
  } catch {
    throw new MalformedFrame(`not JSON: ${text.slice(0, 80)}`);
  }
  if (frame === null || typeof frame !== "object" || Array.isArray(frame)) {
    throw new MalformedFrame(`not an object: ${text.slice(0, 80)}`);
  }
  const f = frame as Record<string, unknown>;
  switch (f.type) {
    case "ping":
      return { kind: "ping" };
    case "welcome": {
      const welcome: Inbound = { kind: "welcome", sid: typeof f.sid === "string" ? f.sid : undefined };
      if (f.restored === true) {
        welcome.restored = true;
        welcome.restoredIds = Array.isArray(f.restored_ids) ? f.restored_ids.filter((id): id is string => typeof id === "string") : [];
      }
      return welcome;
    }
    case "confirm_history":
    case "reject_history":
      return { kind: "history", channel: identifierOf(f, text), ok: f.type === "confirm_history" };
    case "presence": {
      // AnyCable presence events: {"type":"presence","identifier":…,"message":{"type":"join"|"leave"|"info",…}}.
      const message = f.message as { type?: unknown } | undefined;
      return { kind: "message", channel: identifierOf(f, text), event: `presence:${String(message?.type ?? "info")}`, payload: message };
    }
    case "confirm_subscription":
      return { kind: "confirm", channel: identifierOf(f, text) };
    case "reject_subscription":
      // No reason on the wire: the channel's own `reject` in `subscribed` (or AnyCable's RPC saying so).
      return { kind: "reject", channel: identifierOf(f, text), reason: "rejected", cause: "app_rejected" };
    case "disconnect":
      return { kind: "disconnect", reason: typeof f.reason === "string" ? f.reason : "unknown", reconnect: f.reconnect !== false };
    case undefined:
      // A broadcast, and also a whisper: anycable-go relays whispers as plain broadcast frames.
      if (typeof f.identifier === "string" && "message" in f) {
        if (typeof f.stream_id === "string" && typeof f.offset === "number") {
          return { kind: "message", channel: f.identifier, payload: f.message, position: { stream: f.stream_id, epoch: String(f.epoch ?? ""), offset: f.offset } };
        }
        return { kind: "message", channel: f.identifier, payload: f.message };
      }
      throw new MalformedFrame(`no type and no identifier/message: ${text.slice(0, 80)}`);
    default:
      // Unknown types (newer servers' extensions) are tolerated, not errors.
      return { kind: "other" };
  }
}

function identifierOf(frame: Record<string, unknown>, text: string): string {
  if (typeof frame.identifier !== "string") throw new MalformedFrame(`no identifier: ${text.slice(0, 80)}`);
  return frame.identifier;
}

/**
 * The identifier of a subscribe step: a channel with params; an AnyCable `$pubsub` stream, public or
 * signed; or a channel with a signed stream name (`Turbo::StreamsChannel`).
 */
export function subscriptionIdentifier(request: SubscribeRequest, streamsSecret: string | undefined): string {
  if (request.stream !== undefined) return pubsubIdentifier({ name: request.stream });
  if (request.signedStream !== undefined) {
    if (!streamsSecret) throw new CableError("invalid_value", "signedStream needs the AnyCable streams secret");
    const signed = signStreamName(request.signedStream, streamsSecret);
    return request.channel === undefined ? pubsubIdentifier({ signed }) : buildIdentifier(request.channel, { ...request.params, signed_stream_name: signed });
  }
  return buildIdentifier(request.channel!, request.params);
}

/**
 * A `disconnect` frame's reason, by name: Rails' `unauthorized` (reject_unauthorized_connection) and
 * AnyCable's (common.go `*_REASON`, identity/jwt.go) are the user's to read: an expired token is
 * `cable.token_expired`. A restart or a server-side close (`server_restart`, `remote`) and unknown
 * reasons are `cable.server_disconnect`.
 */
const NAMED_DISCONNECTS: ReadonlySet<string> = new Set<ErrorName>(["unauthorized", "token_expired", "idle_timeout", "no_pong", "too_slow"]);
const isNamedDisconnect = (reason: string): reason is ErrorName => NAMED_DISCONNECTS.has(reason);

/** The causes `cable.server_disconnect.<cause>` counts (Rails' disconnect reasons; any other is `other`): a fixed set. */
export const DISCONNECT_CAUSES = new Set(["server_restart", "remote", "invalid_request"]);

export function disconnectCause(reason: string): string {
  return DISCONNECT_CAUSES.has(reason) ? reason : "other";
}

export function disconnectError(reason: string): CableError {
  return isNamedDisconnect(reason)
    ? new CableError(reason, `the server disconnected the client (${reason})`)
    : new CableError("server_disconnect", `the server disconnected the client (${reason})`);
}

export interface ActionCableOptions {
  extended: "off" | "preferred" | "required";
  streamsSecret?: string;
}

export function createActionCableProtocol(options: ActionCableOptions = { extended: "off" }): Protocol {
  return {
    name: "actioncable",
    // Only the extended protocol is offered when wanted: anycable-go prefers the plain one when a
    // client offers both. "preferred" falls back to a plain handshake (steps/connection.ts).
    subprotocols: options.extended === "off" ? [ACTIONCABLE_V1_JSON] : [ACTIONCABLE_V1_EXT_JSON],
    pingIntervalMs: 3_000,
    // Action Cable's JavaScript ConnectionMonitor: staleThreshold = 6 s, "BEAT_INTERVAL * 2 (missed
    // two pings)", then it reopens the connection; anycable-client's monitor likewise gives up on a
    // connection after two missed pings of its interval.
    staleAfterMs: (pingIntervalMs) => 2 * pingIntervalMs,
    url: (base) => base,
    decode: decodeActionCable,
    subscribe: (request) => {
      const key = subscriptionIdentifier(request, options.streamsSecret);
      return { key, frame: encodeSubscribe(key) };
    },
    unsubscribe: encodeUnsubscribe,
    // AnyCable uses the extended protocol's pongs to find dead clients; plain Action Cable wants none.
    pong: (extended) => (extended ? PONG : undefined),
    disconnectError,
    scan: scanActionCableInto,
  };
}


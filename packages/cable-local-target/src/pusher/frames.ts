/**
 * Pusher Channels protocol 7 frames, server side (Pusher docs, "Pusher Channels Protocol";
 * pusher-js src/core/connection/protocol/protocol.ts decodes them). Every frame is
 * `{"event","channel"?,"data"}`. The protocol document gives `data` as a JSON-encoded string for
 * connection_established, subscription_succeeded and member events, and as an object for
 * pusher:error and pusher:pong; Sockudo 5.2 does the same (seen by the conformance suite).
 */

function frameWithDataJson(event: string, dataJson: string, channel?: string): string {
  return channel === undefined
    ? `{"event":${JSON.stringify(event)},"data":${dataJson}}`
    : `{"event":${JSON.stringify(event)},"channel":${JSON.stringify(channel)},"data":${dataJson}}`;
}

/** A frame whose `data` is the JSON encoding of `data`, sent as a string. */
function frame(event: string, data: unknown, channel?: string): string {
  return frameWithDataJson(event, JSON.stringify(JSON.stringify(data)), channel);
}

/** A frame whose `data` is an object. */
function objectFrame(event: string, data: unknown, channel?: string): string {
  return frameWithDataJson(event, JSON.stringify(data), channel);
}

export function connectionEstablished(socketId: string, activityTimeoutS: number): string {
  return frame("pusher:connection_established", { socket_id: socketId, activity_timeout: activityTimeoutS });
}

export const PONG = objectFrame("pusher:pong", {});

/** `code` null: an error that is not about the connection and has no code of its own. */
export function error(message: string, code: number | null): string {
  return objectFrame("pusher:error", { message, code });
}

export interface PresenceSnapshot {
  ids: string[];
  hash: Record<string, unknown>;
  count: number;
}

export function subscriptionSucceeded(channel: string, presence?: PresenceSnapshot): string {
  return frame("pusher_internal:subscription_succeeded", presence ? { presence } : {}, channel);
}

export function memberAdded(channel: string, userId: string, userInfo: unknown): string {
  return frame("pusher_internal:member_added", userInfo === undefined ? { user_id: userId } : { user_id: userId, user_info: userInfo }, channel);
}

export function memberRemoved(channel: string, userId: string): string {
  return frame("pusher_internal:member_removed", { user_id: userId }, channel);
}

/**
 * How refusals are answered. "pusher": a refused subscription gets `pusher:subscription_error` on
 * the channel with pusher-js' `{type, error, status}`, a refused client event `pusher:error` without
 * a code. "sockudo": what Sockudo 5.2 sends (checked against the binary by the conformance suite):
 * `pusher:error` with code 4009 for subscriptions and 4301 for client events.
 */
export type ErrorStyle = "pusher" | "sockudo";

export function subscriptionError(style: ErrorStyle, channel: string, message: string): string {
  return style === "pusher"
    ? objectFrame("pusher:subscription_error", { type: "AuthError", error: message, status: 401 }, channel)
    : error(message, 4009);
}

export function clientEventError(style: ErrorStyle, message: string): string {
  return error(message, style === "pusher" ? null : 4301);
}

/**
 * An event frame whose `data` is passed through as the publisher gave it: a string from the HTTP
 * API, an object (or string) from a client event. `extra` adds `user_id` for presence client events.
 */
export function event(event: string, channel: string, data: unknown, userId?: string): string {
  const head = `{"event":${JSON.stringify(event)},"channel":${JSON.stringify(channel)},"data":${JSON.stringify(data ?? null)}`;
  return userId === undefined ? `${head}}` : `${head},"user_id":${JSON.stringify(userId)}}`;
}

export interface ClientFrame {
  event: string;
  channel?: string;
  data: unknown;
}

/** Parses a client frame; `data` may be an object or a JSON-encoded string, and both are accepted. */
export function parseClientFrame(raw: string): ClientFrame | { error: string } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    return { error: "not JSON" };
  }
  if (typeof parsed !== "object" || parsed === null) return { error: "not an object" };
  const { event, channel, data } = parsed as Record<string, unknown>;
  if (typeof event !== "string") return { error: "event is not a string" };
  if (channel !== undefined && typeof channel !== "string") return { error: "channel is not a string" };
  return { event, channel, data };
}

/** `data` as an object: pusher-js sends objects, other clients JSON strings. */
export function dataObject(data: unknown): Record<string, unknown> | undefined {
  if (typeof data === "string") {
    try {
      data = JSON.parse(data);
    } catch {
      return undefined;
    }
  }
  return typeof data === "object" && data !== null && !Array.isArray(data) ? (data as Record<string, unknown>) : undefined;
}

export type ChannelKind = "public" | "private" | "presence";

export function channelKind(channel: string): ChannelKind {
  if (channel.startsWith("presence-")) return "presence";
  if (channel.startsWith("private-")) return "private";
  return "public";
}

/**
 * Pusher Channels protocol 7 frames, server side (Pusher docs, "Pusher Channels Protocol";
 * pusher-js src/core/connection/protocol/protocol.ts decodes them). Every frame is
 * `{"event","channel"?,"data"}`; Pusher sends `data` of its own events as a JSON-encoded string.
 */

export function frame(event: string, data: unknown, channel?: string): string {
  const dataJson = JSON.stringify(typeof data === "string" ? data : JSON.stringify(data));
  return channel === undefined
    ? `{"event":${JSON.stringify(event)},"data":${dataJson}}`
    : `{"event":${JSON.stringify(event)},"channel":${JSON.stringify(channel)},"data":${dataJson}}`;
}

export function connectionEstablished(socketId: string, activityTimeoutS: number): string {
  return frame("pusher:connection_established", { socket_id: socketId, activity_timeout: activityTimeoutS });
}

export const PONG = frame("pusher:pong", {});

/** `code` null is what Pusher sends for errors that are not about the connection (e.g. a refused client event). */
export function error(message: string, code: number | null): string {
  return frame("pusher:error", { message, code });
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
 * How a refused subscription is answered. "pusher": `pusher:subscription_error` on the channel with
 * pusher-js' `{type, error, status}`. "sockudo": what Sockudo 5.2 sends instead (verified against
 * the binary by the conformance suite): a `pusher:error` with code 4009.
 */
export type SubscriptionErrorStyle = "pusher" | "sockudo";

export function subscriptionError(style: SubscriptionErrorStyle, channel: string, message: string): string {
  return style === "pusher"
    ? frame("pusher:subscription_error", { type: "AuthError", error: message, status: 401 }, channel)
    : frame("pusher:error", { code: 4009, message });
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

import type { Inbound, Protocol, Subscription } from "./types.js";

// Frame shapes: rails/rails actioncable/lib/action_cable/connection/{base,subscriptions}.rb and
// channel/base.rb (Rails 6.1), and AnyCable's docs/misc/action_cable_protocol.md.

export const ACTIONCABLE_V1_JSON = "actioncable-v1-json";

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
    case "welcome":
      return { kind: "welcome", sid: typeof f.sid === "string" ? f.sid : undefined };
    case "confirm_subscription":
      return { kind: "confirm", channel: identifierOf(f, text) };
    case "reject_subscription":
      return { kind: "reject", channel: identifierOf(f, text), reason: "rejected" };
    case "disconnect":
      return { kind: "disconnect", reason: typeof f.reason === "string" ? f.reason : "unknown", reconnect: f.reconnect !== false };
    case undefined:
      if (typeof f.identifier === "string" && "message" in f) {
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

export const actionCable: Protocol = {
  name: "actioncable",
  subprotocols: [ACTIONCABLE_V1_JSON],
  pingIntervalMs: 3_000,
  url: (base) => base,
  decode: decodeActionCable,
  subscribe: ({ channel, params }) => {
    const key = buildIdentifier(channel, params);
    return { key, frame: encodeSubscribe(key) };
  },
  unsubscribe: (sub: Subscription) => encodeUnsubscribe(sub.key),
};

import { parseExtendedCommand, parseHistoryField, type ExtendedCommand } from "../anycable/ext-frames.js";
import type { HistoryRequest } from "../anycable/history.js";

/**
 * Action Cable wire frames, server side, as Rails writes them.
 *
 * Shapes follow rails/rails actioncable/lib/action_cable/connection/base.rb (`send_welcome_message`,
 * `beat`, `close(reason:, reconnect:)`) and channel/base.rb (`transmit_subscription_confirmation`,
 * `transmit_subscription_rejection`, `transmit` → `{identifier, message}`). Key order matches Rails'
 * output so that byte-level comparisons with a real server hold.
 */

export const WELCOME = '{"type":"welcome"}';

/** Rails' heartbeat: `{"type":"ping","message":Time.now.to_i}` (unix seconds). */
export function ping(unixSeconds: number): string {
  return `{"type":"ping","message":${unixSeconds}}`;
}

/** Disconnect reasons Rails and AnyCable send (ActionCable::INTERNAL[:disconnect_reasons], plus AnyCable's). */
export type DisconnectReason = "unauthorized" | "invalid_request" | "server_restart" | "remote" | "idle_timeout" | "no_pong" | (string & {});

export function disconnect(reason: DisconnectReason, reconnect: boolean): string {
  return JSON.stringify({ type: "disconnect", reason, reconnect });
}

/** `identifier` is the client's string, echoed byte for byte (JSON-escaped once more as a string value). */
export function confirmSubscription(identifier: string): string {
  return `{"identifier":${JSON.stringify(identifier)},"type":"confirm_subscription"}`;
}

export function rejectSubscription(identifier: string): string {
  return `{"identifier":${JSON.stringify(identifier)},"type":"reject_subscription"}`;
}

/**
 * A channel message (a transmit or a broadcast). `messageJson` is already-serialised JSON, so a
 * broadcast serialises its payload once and only splices it into each identifier's frame.
 */
export function channelMessage(identifier: string, messageJson: string): string {
  return `{"identifier":${JSON.stringify(identifier)},"message":${messageJson}}`;
}

/**
 * AnyCable broadcasts carry `data` as a string that is "usually a JSON-encoded object, but not
 * necessarily" (AnyCable docs, broadcasting.md "Publication format"); JSON data is embedded as the
 * message itself, anything else as a JSON string.
 */
export function broadcastPayloadJson(data: string): string {
  try {
    JSON.parse(data);
    return data;
  } catch {
    return JSON.stringify(data);
  }
}

export type ClientCommand =
  | { command: "subscribe"; identifier: string; history?: HistoryRequest }
  | { command: "unsubscribe"; identifier: string }
  | { command: "message"; identifier: string; data: string }
  | ExtendedCommand;

/**
 * Parses a client frame. Returns an error string for anything Rails would log and drop
 * (subscriptions.rb `execute_command`: "Received unrecognized command"), never throws.
 * Only `extended` connections (AnyCable's `actioncable-v1-ext-json`) have the extra commands and
 * the `history` field of `subscribe`; on a plain connection they are unrecognized, as in Rails.
 */
export function parseClientCommand(raw: string, extended = false): ClientCommand | { error: string } {
  let frame: unknown;
  try {
    frame = JSON.parse(raw);
  } catch {
    return { error: "not JSON" };
  }
  if (typeof frame !== "object" || frame === null) return { error: "not an object" };
  const fields = frame as Record<string, unknown>;
  const { command, identifier, data } = fields;
  switch (command) {
    case "subscribe": {
      if (typeof identifier !== "string") return { error: "identifier is not a string" };
      const history = extended ? parseHistoryField(fields.history) : undefined;
      return history ? { command, identifier, history } : { command, identifier };
    }
    case "unsubscribe":
      if (typeof identifier !== "string") return { error: "identifier is not a string" };
      return { command, identifier };
    case "message":
      if (typeof identifier !== "string") return { error: "identifier is not a string" };
      if (typeof data !== "string") return { error: "data is not a string" };
      return { command, identifier, data };
    default:
      return extended ? parseExtendedCommand(command, fields) : { error: `unrecognized command ${JSON.stringify(command)}` };
  }
}

/** The decoded identifier: `{"channel":"ChatChannel","id":42}` → channel plus params. */
export function parseIdentifier(identifier: string): { channel: string; params: Record<string, unknown> } | undefined {
  try {
    const parsed: unknown = JSON.parse(identifier);
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return undefined;
    const { channel, ...params } = parsed as Record<string, unknown>;
    return typeof channel === "string" ? { channel, params } : undefined;
  } catch {
    return undefined;
  }
}

import { z } from "zod";
import type { HistoryRequest, StreamPosition } from "./history.js";
import type { PresenceEvent, PresenceInfo } from "./presence.js";

/**
 * AnyCable's extended Action Cable protocol, `actioncable-v1-ext-json` (docs.anycable.io
 * misc/action_cable_protocol.md, "Action Cable Extended protocol"). Server frames follow AnyCable's
 * `common.Reply` (anycable/anycable common/common.go), whose JSON key order is
 * type, identifier, message, reason, reconnect, stream_id, epoch, offset, sid, restored, restored_ids.
 * Client frames are those @anycable/core sends (packages/core/action_cable_ext/index.js).
 */

export const EXTENDED_PROTOCOL = "actioncable-v1-ext-json";

const id = (identifier: string) => JSON.stringify(identifier);

/** common.go `WelcomeMessage(sid)`: `{"type":"welcome","sid":…}`. */
export function welcome(sid: string): string {
  return `{"type":"welcome","sid":${JSON.stringify(sid)}}`;
}

/**
 * node.go `TryRestoreSession`: the NEW session's sid, `restored:true` and the identifiers whose
 * subscriptions came back (the client then asks each for history instead of subscribing).
 */
export function restoredWelcome(sid: string, identifiers: readonly string[]): string {
  return `{"type":"welcome","sid":${JSON.stringify(sid)},"restored":true,"restored_ids":${JSON.stringify(identifiers)}}`;
}

/**
 * common.go `StreamMessage.ToReplyFor`: a broadcast with its position in the stream,
 * `{"identifier":…,"message":…,"stream_id":…,"epoch":…,"offset":…}` (reliable_streams.md).
 */
export function positionedMessage(identifier: string, messageJson: string, position: StreamPosition): string {
  return `{"identifier":${id(identifier)},"message":${messageJson},"stream_id":${JSON.stringify(position.stream)},"epoch":${JSON.stringify(position.epoch)},"offset":${position.offset}}`;
}

/** node.go `History`: `{"type":"confirm_history","identifier":…}` after the replayed messages. */
export function confirmHistory(identifier: string): string {
  return `{"type":"confirm_history","identifier":${id(identifier)}}`;
}

/** node.go `History`: `{"type":"reject_history","identifier":…}` when the history cannot be served. */
export function rejectHistory(identifier: string): string {
  return `{"type":"reject_history","identifier":${id(identifier)}}`;
}

/**
 * A whisper as AnyCable delivers it: node.go `Whisper` hands the data to the broker as a transient
 * `StreamMessage`, which reaches the other subscribers as a plain broadcast frame,
 * `{"identifier":…,"message":<data>}`, with no `type` and no stream position (checked against
 * anycable-go 1.6.16 in test/conformance-anycable.test.ts). On the wire it cannot be told from a broadcast.
 */
export function whisperMessage(identifier: string, dataJson: string): string {
  return `{"identifier":${id(identifier)},"message":${dataJson}}`;
}

/**
 * Presence frames (node_test.go `TestPresence`, action_cable_ext/index.test.ts):
 * `{"type":"presence","identifier":…,"message":{"type":"join","id":…,"info":…}}`, `{"type":"leave","id":…}`,
 * and the answer to the `presence` command, `{"type":"info","total":N,"records":[{"id","info"}]}`
 * (or `{"type":"error"}`).
 */
export function presenceMessage(identifier: string, message: PresenceEvent | PresenceInfo | { type: "error" }): string {
  return `{"type":"presence","identifier":${id(identifier)},"message":${JSON.stringify(message)}}`;
}

/** The `history` field of `subscribe` and `history` commands (common.go `HistoryRequest`). */
const historyRequest = z
  .object({
    since: z.number().int().nonnegative().optional(),
    streams: z.record(z.string(), z.object({ epoch: z.string(), offset: z.number().int().nonnegative() })).optional(),
  })
  .refine((h) => Boolean(h.since) || h.streams !== undefined, { message: "history needs since or streams" });

/** `join` carries `presence: {id, info}`; @anycable/core passes the ID through, so numbers are accepted as their decimal string. */
const presenceJoin = z.object({
  id: z.union([z.string().min(1), z.number()]).transform(String),
  info: z.unknown().optional(),
});

export type ExtendedCommand =
  | { command: "pong" }
  | { command: "history"; identifier: string; history: HistoryRequest }
  | { command: "whisper"; identifier: string; dataJson: string }
  | { command: "join"; identifier: string; presenceId: string; info: unknown }
  | { command: "leave"; identifier: string }
  | { command: "presence"; identifier: string };

/** The `history` field of a subscribe command, or undefined when absent or unusable (then it is ignored, as AnyCable does). */
export function parseHistoryField(value: unknown): HistoryRequest | undefined {
  if (value === undefined) return undefined;
  const parsed = historyRequest.safeParse(value);
  return parsed.success ? parsed.data : undefined;
}

/**
 * The commands only the extended protocol has; an error string for what AnyCable would refuse
 * (node.go `HandleCommand` logs and drops it, without an answer).
 */
export function parseExtendedCommand(command: unknown, frame: Record<string, unknown>): ExtendedCommand | { error: string } {
  if (command === "pong") return { command };
  const { identifier } = frame;
  if (typeof identifier !== "string") return { error: "identifier is not a string" };
  switch (command) {
    case "history": {
      const history = parseHistoryField(frame.history);
      return history ? { command, identifier, history } : { error: "history request is missing or invalid" };
    }
    case "whisper":
      return frame.data === undefined ? { error: "whisper without data" } : { command, identifier, dataJson: JSON.stringify(frame.data) };
    case "join": {
      const presence = presenceJoin.safeParse(frame.presence);
      if (!presence.success) return { error: "presence.id is required" };
      return { command, identifier, presenceId: presence.data.id, info: presence.data.info };
    }
    case "leave":
    case "presence":
      return { command, identifier };
    default:
      return { error: `unrecognized command ${JSON.stringify(command)}` };
  }
}

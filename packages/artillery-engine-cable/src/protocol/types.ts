import type { ErrorName } from "../error-names.js";
import type { CableError } from "../errors.js";
import type { RejectCause } from "./rejections.js";
import type { RawBroadcast } from "./scan.js";
import type { Session } from "../session.js";

/** What a server frame means to a connection, independent of the wire protocol. */
export type Inbound =
  | { kind: "welcome"; socketId?: string; activityTimeout?: number; sid?: string; restored?: boolean; restoredIds?: string[] }
  | { kind: "ping"; reply?: string }
  | { kind: "confirm"; channel: string }
  /** `reason`: the server's own words (logs and traces only); `cause`: what the counters use. */
  | { kind: "reject"; channel: string; reason: string; cause: RejectCause }
  | { kind: "message"; channel: string; event?: string; payload: unknown; position?: StreamPosition }
  | { kind: "history"; channel: string; ok: boolean }
  | { kind: "disconnect"; reason: string; reconnect: boolean }
  | { kind: "error"; reason: ErrorName; channel?: string; message?: string }
  | { kind: "other" };

/** Where a message stands in its stream (AnyCable reliable streams: `stream_id`, `epoch`, `offset`). */
export interface StreamPosition {
  stream: string;
  epoch: string;
  offset: number;
}

export type Welcome = Extract<Inbound, { kind: "welcome" }>;

/** Who asks for a channel's auth: the app's endpoint as rendered for this user, its cookies and address. */
export interface UserAuth {
  endpoint?: { url: string; headers: Record<string, string> };
  session?: Session;
  localAddress?: string;
  /** Records the endpoint's answer time (`cable.auth_latency`). */
  timed?(ms: number): void;
}

export interface SubscribeRequest {
  /** Absent for an AnyCable `$pubsub` stream. */
  channel?: string;
  /** AnyCable: a public `$pubsub` stream, or a stream name to sign (with `channel`: Turbo Streams). */
  stream?: string;
  signedStream?: string;
  params?: Record<string, unknown>;
  /** A presence channel's member: signed into its channel_data. */
  user?: { id: string | number; info?: unknown };
}

/**
 * What `scan` makes of a raw frame without parsing it: a ping, a broadcast (the caller's `out`,
 * filled), or "decode it".
 */
export type Scanned = "ping" | RawBroadcast | undefined;

export interface Protocol {
  readonly name: string;
  /** Subprotocols offered on the upgrade. */
  readonly subprotocols: string[];
  /** The server pings at this interval, in ms (Pusher: the activity_timeout, until the server announces its own). */
  readonly pingIntervalMs: number;
  /**
   * How long a connection may go without a frame from the server before it is stale and dropped,
   * as the protocol's own clients decide it, for a ping interval.
   */
  staleAfterMs(pingIntervalMs: number): number;
  /** The URL to open, from the target (or the connect step's url). */
  url(base: string): string;
  /** Classifies one text frame; throws on a frame that is not valid for the protocol. */
  decode(text: string): Inbound;
  /** The subscribe frame and the key the server will confirm; Pusher's private channels sign it with the socket_id. */
  subscribe(request: SubscribeRequest, welcome: Welcome | undefined, auth?: UserAuth): Promise<{ key: string; frame: string }> | { key: string; frame: string };
  /** The unsubscribe frame for a channel key (the identifier, or Pusher's channel name). */
  unsubscribe(key: string): string;
  /** Names a 4xxx close code (Pusher gives them meaning); absent: every close is `connection_closed`. */
  closeReason?(code: number): ErrorName;
  /** Sent when the server has been quiet for a ping interval (Pusher clients ping; Action Cable's don't). */
  keepalive?: string;
  /** The answer to a server ping, if the protocol wants one (Pusher's pong; AnyCable's extended pong). */
  pong(extended: boolean, reply: string | undefined): string | undefined;
  /** The failure a `disconnect` frame means (Action Cable): named by its reason. */
  disconnectError?(reason: string): CableError;
  /** The listen path's fast reader of raw frames, with the stamp field's name as bytes. */
  scan?(data: Buffer, stampField: Buffer, out: RawBroadcast): Scanned;
}

import { verifySignedStreamName } from "../anycable/signed-streams.js";

/**
 * The channels of the local target. They mirror packages/cable-test-servers/rails/config.ru
 * (ChatChannel, BenchmarkChannel, RejectChannel) so that one conformance suite runs against both,
 * plus AnyCable's `$pubsub` pseudo-channel.
 */

/** What a channel action can do; the connection implements it. */
export interface ChannelContext {
  /** `current_user` of the connection (the part of the `uid` cookie after the last "/"). */
  readonly userId: string;
  readonly params: Record<string, unknown>;
  /** `transmit`: a message to this subscription only; `messageJson` is serialised JSON. */
  transmit(messageJson: string): void;
  /** `ActionCable.server.broadcast(stream, message)`. */
  broadcast(stream: string, messageJson: string): void;
  /** `connection.close(reason:, reconnect:)`. */
  close(reason: string, reconnect: boolean): void;
}

/**
 * `whisper` / `presence`: the subscription's single stream accepts whispers / presence commands
 * (AnyCable keeps them as the `$w` / `$p` channel state; streams/controller.go).
 */
export type SubscribeDecision = { streams: string[]; whisper?: boolean; presence?: boolean } | "reject";

export interface ChannelDefinition {
  subscribed(params: Record<string, unknown>): SubscribeDecision;
  actions: Record<string, (context: ChannelContext, data: Record<string, unknown>) => void>;
}

/** Ruby string interpolation of a param: `"chat_#{params[:id]}"` turns nil into "" and 42 into "42". */
function interpolate(value: unknown): string {
  if (value === undefined || value === null) return "";
  return typeof value === "string" ? value : JSON.stringify(value);
}

const chatChannel: ChannelDefinition = {
  subscribed: (params) => ({ streams: [`chat_${interpolate(params.id)}`] }),
  actions: {
    // Rails: broadcast {"action"=>"newMessage","author_id"=>current_user,"message"=>data["message"]}
    // merged with every other field of data (so stamps like ts/seq pass through).
    speak(context, data) {
      const { action: _action, message, ...extra } = data;
      const payload = { action: "newMessage", author_id: context.userId, message: message ?? null, ...extra };
      context.broadcast(`chat_${interpolate(context.params.id)}`, JSON.stringify(payload));
    },
    leave(context) {
      context.close("remote", false);
    },
  },
};

/** AnyCable's benchmark channel (anycable/websocket-bench): echo to the sender or broadcast to "all". */
const benchmarkChannel: ChannelDefinition = {
  subscribed: () => ({ streams: ["all"] }),
  actions: {
    echo(context, data) {
      context.transmit(JSON.stringify(data));
    },
    broadcast(context, data) {
      context.broadcast("all", JSON.stringify(data));
      context.transmit(JSON.stringify({ ...data, action: "broadcastResult" }));
    },
  },
};

const rejectChannel: ChannelDefinition = {
  subscribed: () => "reject",
  actions: {},
};

export interface PubSubOptions {
  /** AnyCable `--public_streams`: allow `{"channel":"$pubsub","stream_name":S}`. */
  publicStreams: boolean;
  /** AnyCable `--streams_secret`: verifies `signed_stream_name`; without it signed streams are rejected. */
  streamsSecret?: string;
  /** AnyCable `--streams_whisper`: whispers on signed streams (public streams always allow them). */
  streamsWhisper: boolean;
  /** AnyCable `--streams_presence`: presence on signed streams (public streams always allow it). */
  streamsPresence: boolean;
}

/**
 * AnyCable's `$pubsub` (docs/signed_streams.md): subscribe to a stream by name (public streams) or
 * by signed name, with no channel code and no actions. As in AnyCable's streams controller
 * (streams/controller.go `NewStreamsController`), public streams always accept whispers and
 * presence; signed streams only with `--streams_whisper` / `--streams_presence`.
 */
function pubSubChannel(options: PubSubOptions): ChannelDefinition {
  return {
    subscribed(params) {
      if (typeof params.signed_stream_name === "string") {
        const stream = options.streamsSecret ? verifySignedStreamName(params.signed_stream_name, options.streamsSecret) : undefined;
        return stream === undefined ? "reject" : { streams: [stream], whisper: options.streamsWhisper, presence: options.streamsPresence };
      }
      if (typeof params.stream_name === "string" && options.publicStreams) return { streams: [params.stream_name], whisper: true, presence: true };
      return "reject";
    },
    actions: {},
  };
}

export function actionCableChannels(pubsub: PubSubOptions): Map<string, ChannelDefinition> {
  return new Map([
    ["ChatChannel", chatChannel],
    ["BenchmarkChannel", benchmarkChannel],
    ["RejectChannel", rejectChannel],
    ["$pubsub", pubSubChannel(pubsub)],
  ]);
}

/**
 * Rails' `uid.split("/").last`: "Name/123" → "123", "abc" → "abc" (Ruby drops trailing empty parts).
 */
export function userIdFromUid(uid: string): string {
  return uid.replace(/\/+$/, "").split("/").pop() ?? "";
}

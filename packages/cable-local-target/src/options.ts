import { z } from "zod";
import { faultsSchema } from "./faults.js";

export const DEFAULT_PUSHER_APP = { appId: "local-app", key: "local-key", secret: "local-secret" } as const;
export const DEFAULT_STREAMS_SECRET = "local-streams-secret";

export const targetOptionsSchema = z
  .object({
    host: z.string().min(1).default("127.0.0.1"),
    /** 0 picks a free port. */
    port: z.number().int().min(0).max(65535).default(0),
    cable: z
      .object({
        /** Refuse connections without a `uid` cookie, like the Rails test server (default true). */
        requireUid: z.boolean().default(true),
        /** Action Cable heartbeat period; Rails uses 3 s. */
        pingIntervalMs: z.number().int().min(10).max(600_000).default(3_000),
        /** AnyCable `--public_streams`: `$pubsub` by plain `stream_name` (default true). */
        publicStreams: z.boolean().default(true),
        /** AnyCable `--streams_secret` for `signed_stream_name`. */
        streamsSecret: z.string().min(1).default(DEFAULT_STREAMS_SECRET),
        /** AnyCable `--broadcast_key`: when set, POST /_broadcast needs `Authorization: Bearer <key>`. */
        broadcastKey: z.string().min(1).optional(),
        /** AnyCable `--history_limit`: messages kept per stream for `history` requests. */
        historyLimit: z.number().int().min(1).max(100_000).default(100),
        /** AnyCable `--history_ttl` (300 s there): how long a message stays in a stream's history. */
        historyTtlMs: z.number().int().min(1).max(86_400_000).default(300_000),
        /** AnyCable `--sessions_ttl` (300 s there; 0 disables): how long a closed session can be restored. */
        sessionsTtlMs: z.number().int().min(0).max(86_400_000).default(300_000),
        /** AnyCable `--presence_ttl` (15 s there): how long a closed session stays in presence sets. */
        presenceTtlMs: z.number().int().min(0).max(3_600_000).default(15_000),
        /** AnyCable `--streams_whisper`: whispers on signed `$pubsub` streams (public ones always allow them). */
        streamsWhisper: z.boolean().default(false),
        /** AnyCable `--streams_presence`: presence on signed `$pubsub` streams (public ones always allow it). */
        streamsPresence: z.boolean().default(false),
      })
      .strict()
      .default({}),
    pusher: z
      .object({
        appId: z.string().min(1).default(DEFAULT_PUSHER_APP.appId),
        key: z.string().min(1).default(DEFAULT_PUSHER_APP.key),
        secret: z.string().min(1).default(DEFAULT_PUSHER_APP.secret),
        activityTimeoutS: z.number().int().min(1).max(3600).default(120),
        clientEvents: z.boolean().default(true),
        /** How refused subscriptions and client events are answered: like Pusher's servers, or like Sockudo. */
        errorStyle: z.enum(["pusher", "sockudo"]).default("pusher"),
      })
      .strict()
      .default({}),
    faults: faultsSchema.default({}),
    /** Enables the control endpoint `POST /_restart` (off by default: it drops every connection). */
    control: z.boolean().default(false),
  })
  .strict();

export type TargetOptions = z.input<typeof targetOptionsSchema>;
export type ResolvedTargetOptions = z.output<typeof targetOptionsSchema>;

export function parseTargetOptions(input: unknown): ResolvedTargetOptions {
  const result = targetOptionsSchema.safeParse(input ?? {});
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => `${["options", ...issue.path].join(".")}: ${issue.message}`);
  throw new Error(`Invalid local target options: ${problems.join("; ")}`);
}

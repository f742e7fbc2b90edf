import { nowMs } from "../clock.js";
import { pusherCodeError } from "../error-names.js";
import { CableError } from "../errors.js";
import type { TlsOptions } from "../tls.js";
import { httpRequest, jsonObject } from "../sidecall.js";
import { MalformedFrame } from "./actioncable.js";
import { scanPusherInto } from "./pusher-scan.js";
import { channelAuth } from "./pusher-signatures.js";
import { pusherRejectCause, type PusherRefusal } from "./rejections.js";
import { hasHeader } from "../session.js";
import type { Inbound, Protocol, SubscribeRequest, UserAuth, Welcome } from "./types.js";

// Pusher Channels protocol 7: pusher/pusher-js src/core/connection/protocol/protocol.ts and
// url_schemes.ts, and Pusher's docs ("Pusher Channels Protocol").

export const PROTOCOL_VERSION = 7;
/** pusher-js's default pong_timeout: how long it waits for the pong to its own ping. */
export const PONG_TIMEOUT_MS = 30_000;
const CLIENT = "artillery-engine-cable";
const CLIENT_VERSION = "0.1.0";

export interface PusherSettings {
  key: string;
  appId?: string;
  secret?: string;
  /** An app's own auth endpoint, called as pusher-js does: a form POST of socket_id and channel_name. */
  authEndpoint?: { url: string; headers: Record<string, string> };
  /** Base URL of the HTTP API; derived from the target when absent. */
  api?: string;
}

export const isPrivate = (channel: string) => channel.startsWith("private-") || channel.startsWith("presence-");
export const isPresence = (channel: string) => channel.startsWith("presence-");

/** `data` is a JSON-encoded string on some servers and an object on others: accept both. */
export function parseData(data: unknown): unknown {
  if (typeof data !== "string") return data;
  try {
    return JSON.parse(data);
  } catch {
    return data;
  }
}

const PONG = JSON.stringify({ event: "pusher:pong", data: {} });
export const PING = JSON.stringify({ event: "pusher:ping", data: {} });

export function decodePusher(text: string): Inbound {
  let frame: unknown;
  try {
    frame = JSON.parse(text);
  } catch {
    throw new MalformedFrame(`not JSON: ${text.slice(0, 80)}`);
  }
  if (frame === null || typeof frame !== "object" || Array.isArray(frame) || typeof (frame as { event?: unknown }).event !== "string") {
    throw new MalformedFrame(`no event: ${text.slice(0, 80)}`);
  }
  const { event, channel, data } = frame as { event: string; channel?: unknown; data?: unknown };
  const on = typeof channel === "string" ? channel : undefined;
  switch (event) {
    case "pusher:connection_established": {
      const d = parseData(data) as { socket_id?: unknown; activity_timeout?: unknown } | undefined;
      if (!d || typeof d.socket_id !== "string") throw new MalformedFrame(`connection_established without socket_id: ${text.slice(0, 80)}`);
      return { kind: "welcome", socketId: d.socket_id, activityTimeout: typeof d.activity_timeout === "number" ? d.activity_timeout : undefined };
    }
    case "pusher:ping":
      return { kind: "ping", reply: PONG };
    case "pusher:pong":
      return { kind: "ping" };
    case "pusher_internal:subscription_succeeded":
      if (!on) throw new MalformedFrame(`subscription_succeeded without channel: ${text.slice(0, 80)}`);
      return { kind: "confirm", channel: on };
    case "pusher:subscription_error": {
      const d = parseData(data) as PusherRefusal | undefined;
      return { kind: "reject", channel: on ?? "*", reason: String(d?.error ?? d?.type ?? d?.status ?? "subscription_error"), cause: pusherRejectCause(d) };
    }
    case "pusher:error": {
      const d = parseData(data) as { code?: unknown; message?: unknown } | undefined;
      const message = typeof d?.message === "string" ? d.message : "";
      // Some servers (Sockudo among them) answer a bad subscription auth with pusher:error 4009.
      if (d?.code === 4009) return { kind: "reject", channel: on ?? "*", reason: `4009 ${message}`.trim(), cause: "unauthorized" };
      const reason = pusherCodeError(d?.code);
      if (reason !== "pusher_error" || d?.code === undefined || d.code === null) return { kind: "error", reason, channel: on, message };
      const code = typeof d.code === "number" || typeof d.code === "string" ? String(d.code).slice(0, 40) : typeof d.code;
      return { kind: "error", reason, channel: on, message: `code ${code}${message ? `: ${message}` : ""}` };
    }
    default:
      if (!on) return { kind: "other" };
      return { kind: "message", channel: on, event, payload: parseData(data) };
  }
}

function encode(event: string, data: unknown, channel?: string): string {
  return JSON.stringify(channel === undefined ? { event, data } : { event, channel, data });
}

export function encodeClientEvent(channel: string, event: string, data: unknown): string {
  return encode(event, data, channel);
}

/**
 * The headers of a call to the app's auth endpoint, as Laravel Echo's axios sends them: JSON wanted
 * (Laravel then answers a refusal with 403, not a redirect to its login page), and the readable
 * `XSRF-TOKEN` cookie sent back as `X-XSRF-TOKEN`, unless the scenario sets it itself.
 */
export function authHeaders(url: string, headers: Record<string, string>, session: UserAuth["session"]): Record<string, string> {
  const out: Record<string, string> = { "Content-Type": "application/x-www-form-urlencoded" };
  if (!hasHeader(headers, "accept")) out.Accept = "application/json";
  // Echo sends both: its X-CSRF-TOKEN option and axios's X-XSRF-TOKEN.
  const xsrf = hasHeader(headers, "x-xsrf-token") ? undefined : session?.xsrfToken(url);
  if (xsrf) out["X-XSRF-TOKEN"] = xsrf;
  return { ...out, ...headers };
}

/** Auth from the app's own endpoint, as pusher-js's default authorizer asks for it, with the user's cookies. */
async function fetchAuth(endpoint: NonNullable<PusherSettings["authEndpoint"]>, user: UserAuth | undefined, socketId: string, channel: string, timeoutMs: number, tls: TlsOptions | undefined) {
  const session = user?.session;
  const startedAt = nowMs();
  // sidecall.ts names every failure (cable.auth_failed, cable.auth_timeout, a socket code).
  const answer = await httpRequest("auth", endpoint.url, {
    headers: authHeaders(endpoint.url, endpoint.headers, session),
    body: new URLSearchParams({ socket_id: socketId, channel_name: channel }).toString(),
    timeoutMs,
    tls,
    session,
    localAddress: user?.localAddress,
  });
  user?.timed?.(nowMs() - startedAt);
  if (answer.status < 200 || answer.status >= 300) {
    const refused = new CableError("auth_failed", `the auth endpoint answered HTTP ${answer.status} for ${channel}`);
    refused.httpStatus = answer.status;
    throw refused;
  }
  const body = jsonObject("auth", answer);
  if (typeof body.auth !== "string") throw new CableError("auth_failed", `the auth endpoint gave no "auth" for ${channel}`);
  return { auth: body.auth, channelData: typeof body.channel_data === "string" ? body.channel_data : undefined };
}

export function createPusherProtocol(settings: PusherSettings, timeoutMs: number, tls?: TlsOptions): Protocol {
  return {
    name: "pusher",
    subprotocols: [],
    // Servers ping within their activity_timeout (120 s by default); the connection pings by
    // itself after a quiet activity_timeout, as pusher-js does.
    pingIntervalMs: 120_000,
    // pusher-js: after activity_timeout without a frame it sends pusher:ping, and reconnects when no
    // pong comes within pong_timeout (30 s).
    staleAfterMs: (pingIntervalMs) => pingIntervalMs + PONG_TIMEOUT_MS,
    url(base) {
      const u = new URL(base);
      if (!/\/app\/[^/]+$/.test(u.pathname)) u.pathname = `${u.pathname.replace(/\/$/, "")}/app/${settings.key}`;
      u.searchParams.set("protocol", String(PROTOCOL_VERSION));
      u.searchParams.set("client", CLIENT);
      u.searchParams.set("version", CLIENT_VERSION);
      return u.toString();
    },
    decode: decodePusher,
    scan: scanPusherInto,
    async subscribe(request: SubscribeRequest, welcome: Welcome | undefined, user?: UserAuth) {
      // The schema gives Pusher subscriptions a channel (streams are refused before the run).
      const channel = request.channel!;
      const data: Record<string, unknown> = { channel };
      if (isPrivate(channel)) {
        const socketId = welcome?.socketId;
        if (!socketId) throw new CableError("not_connected", "no socket_id to sign the subscription with");
        // user_info is optional in Pusher's protocol, but Reverb 1.10 fails on a channel_data without
        // it ("Undefined array key user_info", and no answer: the subscribe times out); pusher-js
        // with Laravel's auth always sends one. An empty object when the scenario gives none.
        let channelData = isPresence(channel) ? JSON.stringify({ user_id: request.user?.id, user_info: request.user?.info ?? {} }) : undefined;
        let auth: string;
        // The app's endpoint, when there is one, decides: it is who the user is (a secret in the
        // environment for publishing must not sign every user in as the scenario's fixed member).
        const endpoint = user?.endpoint ?? settings.authEndpoint;
        if (endpoint) {
          const answer = await fetchAuth(endpoint, user, socketId, channel, timeoutMs, tls);
          auth = answer.auth;
          channelData = answer.channelData ?? channelData;
        } else if (settings.secret !== undefined) {
          auth = channelAuth(settings.key, settings.secret, socketId, channel, channelData);
        } else {
          throw new CableError("auth_failed", `${channel} needs auth: set config.cable.pusher.secret or authEndpoint`);
        }
        data.auth = auth;
        if (channelData !== undefined) data.channel_data = channelData;
      }
      return { key: channel, frame: encode("pusher:subscribe", data) };
    },
    unsubscribe: (key) => encode("pusher:unsubscribe", { channel: key }),
    // 4000–4099: do not reconnect; 4100–4199: back off, then reconnect; 4200–4299: reconnect now.
    closeReason: pusherCodeError,
    keepalive: PING,
    pong: (_extended, reply) => reply,
  };
}

import { createHash, createHmac, timingSafeEqual } from "node:crypto";

const hmacHex = (secret: string, text: string) => createHmac("sha256", secret).update(text).digest("hex");

function sameText(a: string, b: string): boolean {
  const [x, y] = [Buffer.from(a, "utf8"), Buffer.from(b, "utf8")];
  return x.length === y.length && timingSafeEqual(x, y);
}

/**
 * Channel authorisation (Pusher docs, "Authentication and authorization signatures"):
 * `auth = key + ":" + hex(HMAC-SHA256(secret, socket_id + ":" + channel [+ ":" + channel_data]))`.
 * `channel_data` is signed as the exact string the client sends (presence channels only).
 */
export function channelAuth(key: string, secret: string, socketId: string, channel: string, channelData?: string): string {
  const signed = channelData === undefined ? `${socketId}:${channel}` : `${socketId}:${channel}:${channelData}`;
  return `${key}:${hmacHex(secret, signed)}`;
}

export function verifyChannelAuth(
  auth: unknown,
  key: string,
  secret: string,
  socketId: string,
  channel: string,
  channelData?: string,
): boolean {
  return typeof auth === "string" && sameText(auth, channelAuth(key, secret, socketId, channel, channelData));
}

export const md5Hex = (body: string | Buffer) => createHash("md5").update(body).digest("hex");

/**
 * The string the HTTP API signs (Pusher "HTTP API reference", "Generating authentication
 * signatures"; pusher-http-node lib/requests.js): method, path and the query parameters other than
 * auth_signature, keys lower-cased and sorted, joined unescaped with "&", all separated by "\n".
 */
export function apiStringToSign(method: string, path: string, params: Record<string, string>): string {
  const query = Object.entries(params)
    .filter(([k]) => k !== "auth_signature")
    .map(([k, v]) => [k.toLowerCase(), v] as const)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join("&");
  return `${method.toUpperCase()}\n${path}\n${query}`;
}

export function apiSignature(secret: string, method: string, path: string, params: Record<string, string>): string {
  return hmacHex(secret, apiStringToSign(method, path, params));
}

/** Pusher refuses requests whose auth_timestamp is more than 600 s away from its clock. */
export const API_TIMESTAMP_GRACE_S = 600;

export interface ApiRequest {
  method: string;
  path: string;
  params: Record<string, string>;
  body: string;
}

/** Why an HTTP API request fails authentication, or undefined when it passes. */
export function apiAuthError(request: ApiRequest, key: string, secret: string, nowSeconds: number): string | undefined {
  const { params } = request;
  if (params.auth_key !== key) return "Unknown auth_key";
  if (params.auth_version !== "1.0") return "auth_version must be 1.0";
  const timestamp = Number(params.auth_timestamp);
  if (!Number.isFinite(timestamp) || Math.abs(nowSeconds - timestamp) > API_TIMESTAMP_GRACE_S) {
    return `Timestamp expired: auth_timestamp must be within ${API_TIMESTAMP_GRACE_S} s of the server time`;
  }
  if (request.body.length > 0 && params.body_md5 !== md5Hex(request.body)) return "body_md5 does not match the body";
  const expected = apiSignature(secret, request.method, request.path, params);
  if (typeof params.auth_signature !== "string" || !sameText(params.auth_signature, expected)) {
    return "Invalid signature: you should have sent the HMAC-SHA256 hex digest of the string to sign";
  }
  return undefined;
}

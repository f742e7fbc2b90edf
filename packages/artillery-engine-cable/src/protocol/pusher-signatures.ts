import { createHash, createHmac } from "node:crypto";

// Pusher's signatures, computed locally when the test knows the app secret. Sources: Pusher docs
// "Authentication and authorization signatures" and "HTTP API reference: generating authentication
// signatures"; pusher/pusher-http-node lib/requests.js and lib/auth.js.

const hmacHex = (secret: string, text: string) => createHmac("sha256", secret).update(text).digest("hex");

export const md5Hex = (body: string) => createHash("md5").update(body).digest("hex");

/**
 * `auth` for a private or presence subscription: `key:hex(HMAC-SHA256(secret, socket_id:channel))`,
 * with `:channel_data` appended for presence channels (signed as the exact string sent).
 */
export function channelAuth(key: string, secret: string, socketId: string, channel: string, channelData?: string): string {
  const signed = channelData === undefined ? `${socketId}:${channel}` : `${socketId}:${channel}:${channelData}`;
  return `${key}:${hmacHex(secret, signed)}`;
}

/**
 * The query string of a signed HTTP API request: `auth_key`, `auth_timestamp`, `auth_version`,
 * `body_md5` and `auth_signature` = hex(HMAC-SHA256(secret, "METHOD\nPATH\n" + sorted query)).
 */
export function signedQuery(options: { key: string; secret: string; method: string; path: string; body: string; timestamp: number }): string {
  const params: [string, string][] = [
    ["auth_key", options.key],
    ["auth_timestamp", String(options.timestamp)],
    ["auth_version", "1.0"],
    ["body_md5", md5Hex(options.body)],
  ];
  params.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const query = params.map(([k, v]) => `${k}=${v}`).join("&");
  const signature = hmacHex(options.secret, `${options.method.toUpperCase()}\n${options.path}\n${query}`);
  return `${query}&auth_signature=${signature}`;
}

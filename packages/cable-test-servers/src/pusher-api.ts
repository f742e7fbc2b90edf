import { createHmac } from "node:crypto";

export interface PusherCredentials {
  appId: string;
  key: string;
  secret: string;
}

/**
 * A GET on a Pusher-protocol server's HTTP API (Reverb, Soketi, Pusher), signed as Pusher's
 * libraries sign it: HMAC-SHA256 (hex) of `GET\n<path>\n<query sorted by key>` with the app secret.
 */
export async function pusherApiGet(base: string, creds: PusherCredentials, apiPath: string, timeoutMs = 5_000): Promise<unknown> {
  const params: Record<string, string> = {
    auth_key: creds.key,
    auth_timestamp: String(Math.floor(Date.now() / 1000)),
    auth_version: "1.0",
  };
  const query = Object.keys(params)
    .sort()
    .map((k) => `${k}=${params[k]}`)
    .join("&");
  const signature = createHmac("sha256", creds.secret).update(`GET\n${apiPath}\n${query}`).digest("hex");
  const res = await fetch(`${base}${apiPath}?${query}&auth_signature=${signature}`, { signal: AbortSignal.timeout(timeoutMs) });
  const body = await res.text();
  if (!res.ok) throw new Error(`GET ${apiPath}: ${res.status} ${body}`);
  return JSON.parse(body);
}

/** The user ids in a presence channel, as the server sees them (`GET /apps/<id>/channels/<channel>/users`). */
export async function presenceUsers(base: string, creds: PusherCredentials, channel: string): Promise<string[]> {
  const body = (await pusherApiGet(base, creds, `/apps/${creds.appId}/channels/${encodeURIComponent(channel)}/users`)) as {
    users: { id: string | number }[];
  };
  return body.users.map((u) => String(u.id));
}

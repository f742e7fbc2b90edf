import { connect, type RawClient } from "cable-test-servers";
import { apiSignature, channelAuth, md5Hex } from "../src/index.js";

export { cableClient, connect, type RawClient } from "cable-test-servers";

/** Action Cable identifiers are JSON strings; build them the way @rails/actioncable does. */
export const identifier = (channel: string, params: Record<string, unknown> = {}) => JSON.stringify({ channel, ...params });

export const isPing = (frame: any) => frame.type === "ping";
export const notPing = (frame: any) => frame.type !== "ping";

/** `data` of a Pusher frame, whether the server sent it as a JSON string or an object. */
export function pusherData(frame: any): any {
  return typeof frame.data === "string" ? JSON.parse(frame.data) : frame.data;
}

export const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));


export interface PusherApp {
  appId: string;
  key: string;
  secret: string;
}

/** POST /apps/<id>/events signed as pusher-http-node does. */
export function triggerSigned(httpUrl: string, app: PusherApp, body: unknown, tamper: { secret?: string } = {}): Promise<Response> {
  const text = JSON.stringify(body);
  const path = `/apps/${app.appId}/events`;
  const params: Record<string, string> = {
    auth_key: app.key,
    auth_timestamp: String(Math.floor(Date.now() / 1000)),
    auth_version: "1.0",
    body_md5: md5Hex(text),
  };
  params.auth_signature = apiSignature(tamper.secret ?? app.secret, "POST", path, params);
  return fetch(`${httpUrl}${path}?${new URLSearchParams(params)}`, { method: "POST", headers: { "content-type": "application/json" }, body: text });
}

/** Connects like pusher-js and returns the client with its socket_id (connection_established consumed). */
export async function pusherClient(baseUrl: string, key: string): Promise<{ client: RawClient; socketId: string }> {
  const client = await connect(`${baseUrl}/app/${key}?protocol=7&client=js&version=8.4.0`);
  const established = await client.next();
  if (established.event !== "pusher:connection_established") throw new Error(`expected connection_established, got ${JSON.stringify(established)}`);
  return { client, socketId: pusherData(established).socket_id };
}

export function subscribeFrame(
  app: PusherApp,
  socketId: string,
  channel: string,
  channelData?: string,
): { event: "pusher:subscribe"; data: { channel: string; auth?: string; channel_data?: string } } {
  if (channel.startsWith("private-") || channel.startsWith("presence-")) {
    return { event: "pusher:subscribe", data: { channel, auth: channelAuth(app.key, app.secret, socketId, channel, channelData), ...(channelData ? { channel_data: channelData } : {}) } };
  }
  return { event: "pusher:subscribe", data: { channel } };
}

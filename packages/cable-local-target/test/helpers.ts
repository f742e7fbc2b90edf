import WebSocket from "ws";
import { apiSignature, channelAuth, md5Hex } from "../src/index.js";

/** A raw WebSocket client that queues every text frame, for asserting on exact wire traffic. */
export interface RawClient {
  ws: WebSocket;
  /** Raw text of every frame received so far, in order. */
  received: string[];
  /** Next frame (parsed) matching `match`, waiting at most `timeoutMs`. Frames skipped over stay consumed. */
  next(match?: (frame: any) => boolean, timeoutMs?: number): Promise<any>;
  /** Next raw frame text, parsed or not. */
  nextRaw(timeoutMs?: number): Promise<string>;
  /** Resolves with every frame matching `match` that arrives within `ms`. */
  collect(ms: number, match?: (frame: any) => boolean): Promise<any[]>;
  send(frame: unknown): void;
  closed: Promise<{ code: number; reason: string }>;
  close(): void;
}

export async function connect(
  url: string,
  options: { protocols?: string[]; cookie?: string; origin?: string; handshakeTimeoutMs?: number; headers?: Record<string, string> } = {},
): Promise<RawClient> {
  const headers: Record<string, string> = { origin: options.origin ?? "http://127.0.0.1", ...options.headers };
  if (options.cookie) headers.cookie = options.cookie;
  const ws = new WebSocket(url, options.protocols ?? [], { headers, handshakeTimeout: options.handshakeTimeoutMs ?? 10_000 });
  const received: string[] = [];
  let cursor = 0;
  let wake: (() => void) | undefined;
  ws.on("message", (data) => {
    received.push(data.toString());
    wake?.();
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.on("close", (code, reason) => {
      resolve({ code, reason: reason.toString() });
      wake?.();
    }),
  );
  await new Promise<void>((resolve, reject) => {
    ws.once("open", () => resolve());
    ws.once("error", reject);
  });
  ws.on("error", () => undefined);

  const nextRaw = async (timeoutMs = 5_000): Promise<string> => {
    const deadline = Date.now() + timeoutMs;
    while (cursor >= received.length) {
      if (ws.readyState === WebSocket.CLOSED) throw new Error(`socket closed while waiting; received: ${received.join("\n")}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no frame within ${timeoutMs} ms; received so far:\n${received.join("\n")}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      wake = undefined;
    }
    return received[cursor++];
  };

  return {
    ws,
    received,
    nextRaw,
    async next(match = () => true, timeoutMs = 5_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const raw = await nextRaw(Math.max(1, deadline - Date.now()));
        const frame = JSON.parse(raw);
        if (match(frame)) return frame;
      }
    },
    async collect(ms, match = () => true) {
      await new Promise((resolve) => setTimeout(resolve, ms));
      const frames = received.slice(cursor).map((raw) => JSON.parse(raw));
      cursor = received.length;
      return frames.filter(match);
    },
    send: (frame) => ws.send(typeof frame === "string" ? frame : JSON.stringify(frame)),
    closed,
    close: () => ws.terminate(),
  };
}

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

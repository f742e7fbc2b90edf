import assert from "node:assert/strict";
import WebSocket from "ws";

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

/** An Action Cable client (`actioncable-v1-json`, signed in by `cookie`) past the server's welcome; pushed onto `open` for the caller to close. */
export async function cableClient(url: string, cookie: string, open: RawClient[]): Promise<RawClient> {
  const client = await connect(url, { protocols: ["actioncable-v1-json"], cookie });
  open.push(client);
  assert.deepEqual(await client.next(), { type: "welcome" });
  return client;
}

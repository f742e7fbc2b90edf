import type { IncomingMessage, ServerResponse } from "node:http";
import { SURVIVORS, type Survivors } from "./partition.js";
import { z } from "zod";
import { parseBroadcastBody } from "./anycable/broadcast.js";
import { PROMETHEUS_CONTENT_TYPE } from "./metrics.js";
import { apiAuthError } from "./pusher/signatures.js";

/** Bodies are bounded: this is a local target, and a runaway client must not exhaust memory. */
const MAX_BODY_BYTES = 1024 * 1024;

export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    request.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(new HttpError(413, `body larger than ${MAX_BODY_BYTES} bytes`));
        request.destroy();
        return;
      }
      chunks.push(chunk);
    });
    request.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    request.on("error", reject);
  });
}

function reply(response: ServerResponse, status: number, body?: unknown): void {
  if (body === undefined) {
    response.writeHead(status).end();
    return;
  }
  const text = JSON.stringify(body);
  response.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) }).end(text);
}

/** Pusher HTTP API, POST /apps/{app_id}/events: "name", "data", "channel" or "channels", "socket_id"? */
const eventBody = z
  .object({
    name: z.string().min(1).max(200),
    data: z.union([z.string(), z.record(z.string(), z.unknown())]),
    channel: z.string().min(1).optional(),
    channels: z.array(z.string().min(1)).min(1).max(100).optional(),
    socket_id: z.string().optional(),
  })
  .refine((b) => (b.channel === undefined) !== (b.channels === undefined), { message: "exactly one of channel or channels is required" });

export interface HttpHandlers {
  pusher: { appId: string; key: string; secret: string };
  broadcastKey?: string;
  /** AnyCable broadcast to an Action Cable stream. */
  broadcast(stream: string, data: string): void;
  /** Pusher event to one channel. */
  trigger(channel: string, event: string, data: unknown, exceptSocketId?: string): void;
  health(): unknown;
  /** `GET /metrics`: the Prometheus text exposition. */
  metrics(): string;
  /** `POST /_restart[?forget_state=1]`, only when the target was started with `control`. */
  restart?(options: { forgetState: boolean }): number;
  /** `POST /_partition?ms=N&survivors=reset|forget|resume`, only with `control`. */
  partition?(ms: number, survivors: Survivors): number;
}

async function handleBroadcast(request: IncomingMessage, response: ServerResponse, handlers: HttpHandlers): Promise<void> {
  // AnyCable docs (broadcasting.md, "Securing HTTP endpoint"): with a broadcast key, every request
  // carries `Authorization: Bearer <key>`; answers 201 on success.
  if (handlers.broadcastKey !== undefined && request.headers.authorization !== `Bearer ${handlers.broadcastKey}`) {
    throw new HttpError(401, "Authorization: Bearer <broadcast key> required");
  }
  let publications;
  try {
    publications = parseBroadcastBody(await readBody(request));
  } catch (error) {
    if (error instanceof HttpError) throw error;
    throw new HttpError(400, (error as Error).message);
  }
  for (const { stream, data } of publications) handlers.broadcast(stream, data);
  reply(response, 201);
}

async function handleEvents(request: IncomingMessage, response: ServerResponse, url: URL, handlers: HttpHandlers): Promise<void> {
  const body = await readBody(request);
  const authError = apiAuthError(
    { method: "POST", path: url.pathname, params: Object.fromEntries(url.searchParams), body },
    handlers.pusher.key,
    handlers.pusher.secret,
    Math.floor(Date.now() / 1000),
  );
  if (authError) throw new HttpError(401, authError);
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    throw new HttpError(400, "body is not JSON");
  }
  const parsed = eventBody.safeParse(json);
  if (!parsed.success) throw new HttpError(400, parsed.error.issues.map((i) => `${["body", ...i.path].join(".")}: ${i.message}`).join("; "));
  const { name, data, channel, channels, socket_id: socketId } = parsed.data;
  for (const target of channels ?? [channel as string]) handlers.trigger(target, name, data, socketId);
  reply(response, 200, {});
}

/** The target's plain HTTP routes: AnyCable's broadcast endpoint, Pusher's events API, a health check and Prometheus metrics. */
export async function handleHttp(request: IncomingMessage, response: ServerResponse, handlers: HttpHandlers): Promise<void> {
  const url = new URL(request.url ?? "/", "http://localhost");
  try {
    if (request.method === "POST" && url.pathname === "/_broadcast") return await handleBroadcast(request, response, handlers);
    if (request.method === "POST" && url.pathname === `/apps/${handlers.pusher.appId}/events`) return await handleEvents(request, response, url, handlers);
    if (request.method === "POST" && /^\/apps\/[^/]+\/events$/.test(url.pathname)) throw new HttpError(404, "Unknown app id");
    if (request.method === "GET" && url.pathname === "/health") return reply(response, 200, handlers.health());
    if (request.method === "GET" && url.pathname === "/metrics") {
      const text = handlers.metrics();
      response.writeHead(200, { "content-type": PROMETHEUS_CONTENT_TYPE, "content-length": Buffer.byteLength(text) }).end(text);
      return;
    }
    if (request.method === "POST" && url.pathname === "/_restart" && handlers.restart) {
      const forgetState = ["1", "true"].includes(url.searchParams.get("forget_state") ?? "");
      return reply(response, 200, { disconnected: handlers.restart({ forgetState }) });
    }
    if (request.method === "POST" && url.pathname === "/_partition" && handlers.partition) {
      const ms = Number(url.searchParams.get("ms"));
      const survivors = (url.searchParams.get("survivors") ?? "forget") as Survivors;
      if (!(ms > 0 && ms <= 600_000)) throw new HttpError(400, "ms: the partition's length in ms, 1 to 600000");
      if (!SURVIVORS.includes(survivors)) throw new HttpError(400, `survivors: one of ${SURVIVORS.join(", ")}`);
      return reply(response, 200, { silenced: handlers.partition(ms, survivors) });
    }
    throw new HttpError(404, `No route for ${request.method} ${url.pathname}`);
  } catch (error) {
    if (response.headersSent) return;
    if (error instanceof HttpError) reply(response, error.status, { error: error.message });
    else reply(response, 500, { error: (error as Error).message });
  }
}

import type { IncomingMessage } from "node:http";
import WebSocket from "ws";
import { httpStatusError, type ErrorName } from "./error-names.js";
import { ADDRESS_REFUSED, guardedLookup } from "./destinations.js";
import { CableError } from "./errors.js";
import { headerOf } from "./session.js";
import { serverIdentity } from "./server-software.js";
import type { TlsOptions } from "./tls.js";
import { trace, traceableUrl, tracing } from "./trace.js";

export interface OpenOptions {
  url: string;
  headers: Record<string, string>;
  subprotocols: string[];
  timeoutMs: number;
  localAddress?: string;
  /** `config.tls` (tls.ts): CA, client certificate, `rejectUnauthorized` (`--insecure`). */
  tls?: TlsOptions;
}

/** What a socket reports to its connection. */
export interface SocketListener {
  frame(data: Buffer, isBinary: boolean): void;
  close(code: number, reason: string): void;
  error(err: Error): void;
}

/**
 * The socket a connection drives: a WebSocket in a run, a fake in unit tests (the connection's
 * states, keepalives and timeouts are tested without a network).
 */
export interface CableSocket {
  /** The subprotocol the server picked ("" before the upgrade or when none). */
  readonly protocol: string;
  readonly isOpen: boolean;
  readonly isConnecting: boolean;
  /** What the server said it is in its upgrade answer (server-software.ts); undefined before it, or when it said nothing. */
  readonly server?: string;
  send(text: string): void;
  close(code: number): void;
  terminate(): void;
}

export type OpenSocket = (options: OpenOptions, listener: SocketListener) => CableSocket;

/** The real socket: `ws`, with the settings a load generator needs. */
export const openWebSocket: OpenSocket = (options, listener) => {
  const ws = new WebSocket(options.url, options.subprotocols, {
    ...options.tls,
    headers: options.headers,
    // No handshakeTimeout: the connection's own wait for the welcome bounds the handshake and
    // terminates the socket; ws's would add a socket timer per connect.
    perMessageDeflate: false,
    // Every text frame is parsed as JSON, which fails on broken UTF-8 as a malformed frame anyway.
    skipUTF8Validation: true,
    localAddress: options.localAddress,
    // A name that resolves to a link-local or metadata address is refused where it is resolved (destinations.ts).
    lookup: guardedLookup as never,
    // A hostile server must not make the generator buffer an unbounded frame.
    maxPayload: 16 * 1024 * 1024,
  });
  const origin = headerOf(options.headers, "origin");
  if (tracing()) trace("upgrade %s, %s", traceableUrl(options.url), origin === undefined ? "no Origin" : `Origin: ${origin}`);
  let server: string | undefined;
  // Once per connection, before the first frame: the upgrade answer's headers.
  ws.once("upgrade", (res) => (server = serverIdentity(res.headers)));
  ws.on("message", (data, isBinary) => listener.frame(data as Buffer, isBinary));
  ws.on("close", (code, reason) => listener.close(code, reason.toString()));
  ws.on("error", (err) => listener.error((err as { code?: unknown }).code === ADDRESS_REFUSED ? new CableError("http_address_refused", err.message) : err));
  ws.on("unexpected-response", (_req, res) => {
    const refused: RefusedUpgrade = { status: res.statusCode ?? 0, contentType: res.headers["content-type"], origin };
    const report = (body?: string) => {
      // The VU may have ended the socket (its handshake timeout) while the body was read.
      if (ws.readyState !== WebSocket.CONNECTING) return;
      const answer = { ...refused, body };
      const name = refusedUpgradeName(answer);
      if (tracing()) trace("upgrade refused: HTTP %d %s %j: %s", answer.status, answer.contentType ?? "(no Content-Type)", body ?? "(not read)", name);
      listener.error(new CableError(name, refusalMessage(name, answer)));
      ws.terminate();
    };
    if (!needsBody(refused)) {
      res.resume();
      report();
      return;
    }
    void readPrefix(res, REFUSAL_BODY_BYTES, REFUSAL_BODY_WAIT_MS).then(report);
  });
  return {
    get protocol() {
      return ws.protocol;
    },
    get isOpen() {
      return ws.readyState === WebSocket.OPEN;
    },
    get isConnecting() {
      return ws.readyState === WebSocket.CONNECTING;
    },
    get server() {
      return server;
    },
    send: (text) => ws.send(text),
    close: (code) => ws.close(code),
    terminate: () => ws.terminate(),
  };
};

/** A refused upgrade: the answer's status and type, the start of its body when it was read, and the Origin the request carried. */
export interface RefusedUpgrade {
  status: number;
  contentType?: string;
  /** At most REFUSAL_BODY_BYTES of the body, read only when the name depends on it (needsBody). */
  body?: string;
  /** The Origin header the upgrade carried; undefined: none (`origin: false`). */
  origin?: string;
}

/** What is read of a refused upgrade's body, at most, and how long for; the rest is never read. */
export const REFUSAL_BODY_BYTES = 256;
export const REFUSAL_BODY_WAIT_MS = 250;

/** Rails' answer to an upgrade it refuses (ActionCable::Connection::Base#respond_to_invalid_request, 6.1 to 8). */
const RAILS_REFUSAL_BODY = "Page not found";

const isTextPlain = (contentType: string | undefined) => contentType?.split(";")[0].trim().toLowerCase() === "text/plain";

/**
 * Which refused upgrades are an Origin refusal (`cable.origin_rejected`, with its hint), from what the
 * servers answer when they refuse an Origin, so that a wrong mount path's 404 stays `http_404`:
 *
 * - Rails Action Cable (6.1–8): 404, `Content-Type: text/plain`, body `Page not found` — its answer to
 *   an upgrade whose Origin is not in `allowed_request_origins` (nor the host's own, with
 *   `allow_same_origin_as_host`). A wrong path in the same app answers otherwise: Rails' router
 *   404 is HTML (public/404.html), Rack::URLMap's is `Not Found: /path`. Rails gives the same answer
 *   to a request that is no WebSocket upgrade, which a proxy that does not pass `Upgrade` on makes
 *   of ours: the message says so.
 * - anycable-go (`--allowed_origins`) and every gorilla/websocket server (CheckOrigin): 403
 *   `Forbidden`; Phoenix's check_origin and Spring's origin check: 403 too. A 403 to an upgrade
 *   that carried an Origin is taken as this, whatever its body: the body is not read.
 * - Reverb and Soketi accept the upgrade and close with Pusher's 4009: `pusher_4009`, not this.
 *
 * An upgrade that carried no Origin is never an Origin refusal (Rails refuses it too, with the
 * same 404: it stays `http_404`). Everything else is `http_<status>`.
 */
export function refusedUpgradeName(r: RefusedUpgrade): ErrorName {
  if (r.origin !== undefined) {
    if (r.status === 403) return "origin_rejected";
    if (r.status === 404 && isTextPlain(r.contentType) && r.body?.trim() === RAILS_REFUSAL_BODY) return "origin_rejected";
  }
  return httpStatusError(r.status);
}

/** Whether the name of a refused upgrade depends on its body: only Rails' 404 shape, to an upgrade that carried an Origin. */
export function needsBody(r: RefusedUpgrade): boolean {
  return r.origin !== undefined && r.status === 404 && isTextPlain(r.contentType);
}

function refusalMessage(name: ErrorName, r: RefusedUpgrade): string {
  if (name !== "origin_rejected") return `the server answered the upgrade with HTTP ${r.status}`;
  const rails = r.status === 404 ? ` ("${RAILS_REFUSAL_BODY}": Rails' answer to an Origin outside allowed_request_origins, and to a request a proxy passed on without its Upgrade header)` : "";
  return `the server refused the upgrade from Origin ${r.origin} with HTTP ${r.status}${rails}`;
}

/**
 * At most `max` bytes of a body, waiting at most `waitMs`: a refusal's few words, never a page
 * (nor a server that trickles one). What is not read is dropped with the socket.
 */
function readPrefix(res: IncomingMessage, max: number, waitMs: number): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = () => {
      clearTimeout(timer);
      res.off("data", onData).off("end", done).off("error", done).off("close", done);
      res.pause();
      resolve(Buffer.concat(chunks).subarray(0, max).toString("utf8"));
    };
    const onData = (chunk: Buffer) => {
      chunks.push(chunk.length + size > max ? chunk.subarray(0, max - size) : chunk);
      size = Math.min(max, size + chunk.length);
      if (size >= max) done();
    };
    const timer = setTimeout(done, waitMs);
    res.on("data", onData).once("end", done).once("error", done).once("close", done);
  });
}

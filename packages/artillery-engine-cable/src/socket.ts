import WebSocket from "ws";
import { httpStatusError } from "./error-names.js";
import { CableError } from "./errors.js";
import { serverIdentity } from "./server-software.js";
import type { TlsOptions } from "./tls.js";

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
    // A hostile server must not make the generator buffer an unbounded frame.
    maxPayload: 16 * 1024 * 1024,
  });
  let server: string | undefined;
  // Once per connection, before the first frame: the upgrade answer's headers.
  ws.once("upgrade", (res) => (server = serverIdentity(res.headers)));
  ws.on("message", (data, isBinary) => listener.frame(data as Buffer, isBinary));
  ws.on("close", (code, reason) => listener.close(code, reason.toString()));
  ws.on("error", (err) => listener.error(err));
  ws.on("unexpected-response", (_req, res) => {
    listener.error(new CableError(httpStatusError(res.statusCode ?? 0), `the server answered the upgrade with HTTP ${res.statusCode}`));
    res.resume();
    ws.terminate();
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

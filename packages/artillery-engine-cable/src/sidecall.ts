import { Agent, errors as undiciErrors, request, type Dispatcher } from "undici";
import { ADDRESS_REFUSED, checkDestination, guardedLookup } from "./destinations.js";
import { CableError } from "./errors.js";
import { withCookies, type Session } from "./session.js";
import type { TlsOptions } from "./tls.js";

/**
 * Which call failed: its errors are `cable.<kind>_failed` and `cable.<kind>_timeout`.
 * `publish`: Pusher's events API and AnyCable's broadcast endpoint; `auth`: a Pusher authEndpoint;
 * `http`: a scenario's own HTTP step (a sign-in, a token).
 */
export type SideCall = "publish" | "auth" | "http";

export interface HttpAnswer {
  status: number;
  body: string;
  /** Lower-case names; `set-cookie` is a list. */
  headers: Record<string, string | string[] | undefined>;
}

export interface HttpCall {
  method?: string;
  headers: Record<string, string>;
  body?: string;
  /** The call's time allowed, for its own deadline and for the timeout's message. */
  timeoutMs: number;
  /** A deadline shared with other calls (an HTTP step's hops and retries); without it, the call's own of `timeoutMs`. */
  signal?: AbortSignal;
  tls?: TlsOptions;
  /** The source address (config.cable.localAddress, as the user was given it). */
  localAddress?: string;
  /** The virtual user's cookie jar: its cookies go with the call, the answer's `Set-Cookie` into it. */
  session?: Session;
}

/**
 * The side-calls' dispatchers, one pool per TLS options and source address, every one resolving
 * through guardedLookup. Both keep connections alive, as undici's global pool does.
 */
const NO_TLS = {} as TlsOptions;
const agents = new WeakMap<TlsOptions, Map<string, Dispatcher>>();
export function dispatcher(tls: TlsOptions | undefined, localAddress: string | undefined): Dispatcher {
  const key = tls ?? NO_TLS;
  let byAddress = agents.get(key);
  if (!byAddress) agents.set(key, (byAddress = new Map()));
  let agent = byAddress.get(localAddress ?? "");
  if (!agent) {
    // undici takes the source address on the pool (Client's localAddress), not among the connect options.
    agent = new Agent({ localAddress, connect: { ...tls, ca: tls?.ca, lookup: guardedLookup } as never });
    byAddress.set(localAddress ?? "", agent);
  }
  return agent;
}

/** An answer body is read up to this size: a hostile endpoint must not make the VU buffer without end. */
const MAX_BODY_BYTES = 1024 * 1024;

/**
 * One HTTP side-call of a VU, bounded by `timeoutMs` from the request to the answer's last byte.
 * Every failure is named: a socket error keeps its code (ECONNREFUSED, UND_ERR_SOCKET, …), a
 * timeout is `cable.<kind>_timeout`, anything else `cable.<kind>_failed`; the message says what
 * happened for the logs, the code is what the report counts.
 *
 * undici's `request`, not `fetch`: a scenario that publishes through the HTTP API makes hundreds
 * of calls a second, and fetch's WHATWG streams cost about a fifth of the generator's CPU in the
 * RelayBox replay (docs/benchmarks.md). Both keep connections alive in undici's global pool.
 */
export async function httpRequest(kind: SideCall, url: string, init: HttpCall): Promise<HttpAnswer> {
  const signal = init.signal ?? AbortSignal.timeout(init.timeoutMs);
  try {
    checkDestination(url);
    const headers = withCookies(init.session, url, init.headers);
    const method = (init.method ?? "POST") as "POST";
    const res = await request(url, { method, headers, body: init.body, signal, dispatcher: dispatcher(init.tls, init.localAddress) });
    init.session?.store(url, res.headers["set-cookie"]);
    return { status: res.statusCode, body: await readBounded(res.body), headers: res.headers };
  } catch (err) {
    if (err instanceof CableError) throw err;
    if (signal.aborted || err instanceof undiciErrors.RequestAbortedError || (err as Error).name === "TimeoutError" || (err as Error).name === "AbortError") {
      throw new CableError(`${kind}_timeout`, `${kind}: no complete answer within ${init.timeoutMs} ms`);
    }
    // A socket or protocol error keeps its own code, as the WebSocket steps' do.
    const code = (err as { code?: unknown }).code ?? (err as { cause?: { code?: unknown } }).cause?.code;
    if (code === ADDRESS_REFUSED) throw new CableError("http_address_refused", `${kind} refused: ${(err as Error).message}`);
    if (typeof code === "string" && /^[A-Z][A-Z0-9_]+$/.test(code)) throw CableError.socket(code, `${kind} failed: ${code}`);
    throw new CableError(`${kind}_failed`, `${kind} failed: ${(err as Error).message}`);
  }
}

async function readBounded(body: AsyncIterable<Buffer> & { destroy(): unknown }): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.byteLength;
    if (size > MAX_BODY_BYTES) {
      // The rest is not wanted: free the connection instead of reading on.
      body.destroy();
      throw new CableError("response_too_large", `the answer is larger than ${MAX_BODY_BYTES} bytes`);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/** The JSON object of an answer, or `cable.<kind>_failed` for anything that is not one. */
export function jsonObject(kind: SideCall, answer: HttpAnswer): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(answer.body);
  } catch {
    throw new CableError(`${kind}_failed`, `${kind}: the answer is not JSON (HTTP ${answer.status}, ${answer.body.length} bytes)`);
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) throw new CableError(`${kind}_failed`, `${kind}: the answer is not a JSON object`);
  return value as Record<string, unknown>;
}

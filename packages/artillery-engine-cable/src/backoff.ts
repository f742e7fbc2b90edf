import { CableError } from "./errors.js";

// How a VU gets back in after its connection dropped, as real clients do it (@rails/actioncable's
// ConnectionMonitor, pusher-js, @anycable/core): retry with an exponential back-off and jitter
// until a deadline. Pure: the caller sleeps, connects and reads the clock.

export interface BackoffPolicy {
  /** The delay after the first failed attempt, in ms; it doubles after each failure. */
  initialMs: number;
  /** The longest delay between two attempts, in ms. */
  maxMs: number;
}

/**
 * The pause after failed attempt number `failures` (1 after the first failure): half the capped
 * exponential delay plus a random half of it ("equal jitter"), so that a crowd dropped at the same
 * moment spreads its retries without any client waiting less than half its due.
 */
export function backoffDelay(failures: number, policy: BackoffPolicy, random: () => number = Math.random): number {
  const ceiling = Math.min(policy.maxMs, policy.initialMs * 2 ** Math.max(0, failures - 1));
  return ceiling / 2 + random() * (ceiling / 2);
}

// Socket errors that a restarting server or a flapping network produces: worth another attempt.
const TRANSIENT_SOCKET_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "ECONNABORTED", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "EAI_AGAIN", "ENOTCONN"]);
// The engine's codes that mean "the server is not (yet) there": a restart in progress.
const TRANSIENT_CABLE_CODES = new Set([
  "cable.connection_closed",
  "cable.handshake_timeout",
  "cable.subscription_timeout",
  "cable.server_disconnect",
  // AnyCable dropped a client it found dead or slow: a new connection is welcome.
  "cable.idle_timeout",
  "cable.no_pong",
  "cable.too_slow",
  "cable.http_502",
  "cable.http_503",
  "cable.http_504",
]);

/**
 * Whether a failed attempt is worth retrying. A refusal that will not change by waiting
 * (unauthorized, a rejected subscription, HTTP 4xx, Pusher's 4000–4099 "do not reconnect") is not.
 */
export function isTransient(err: unknown): boolean {
  const code = err instanceof CableError ? err.code : (err as { code?: unknown } | undefined)?.code;
  if (typeof code !== "string") return false;
  if (TRANSIENT_SOCKET_CODES.has(code) || TRANSIENT_CABLE_CODES.has(code)) return true;
  // Pusher: 4100–4199 reconnect after a back-off, 4200–4299 reconnect at once.
  return /^cable\.pusher_4[12]\d\d$/.test(code);
}

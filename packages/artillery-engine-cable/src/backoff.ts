import { errorTraits, nameOfCode } from "./error-names.js";
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

/**
 * Whether a failed attempt is worth retrying. A refusal that will not change by waiting
 * (unauthorized, a rejected subscription, HTTP 4xx, Pusher's 4000–4099 "do not reconnect") is not.
 */
export function isTransient(err: unknown): boolean {
  const code = err instanceof CableError ? err.code : (err as { code?: unknown } | undefined)?.code;
  if (typeof code !== "string") return false;
  if (TRANSIENT_SOCKET_CODES.has(code)) return true;
  // The engine's names say it themselves (error-names.ts): the server is not (yet) there, a restart in progress.
  const name = nameOfCode(code);
  return name !== undefined && errorTraits(name).transient === true;
}

/**
 * Every error name the engine counts (`errors.cable.<name>`), once, with what the code needs to
 * know of it; the report, the fan-out and the tests import them (`artillery-engine-cable/errors`).
 * `CableError` takes only these names, so the compiler checks every site that raises one, and the
 * README's error table is checked against this one (test/error-names.test.ts). Keep them stable: a
 * user's dashboards and `ensure` conditions group by them.
 */
export interface ErrorTraits {
  /** The server is not (yet) there, a restart in progress: worth another attempt after a back-off (backoff.ts). */
  transient?: true;
  /** The user's subscription did not happen (engine.ts counts it beside the error). */
  subscription?: true;
}

export const ERROR_NAMES = {
  // Connecting.
  handshake_timeout: { transient: true },
  subprotocol_rejected: {},
  ext_unsupported: {},
  connection_closed: { transient: true },
  socket_error: {},
  not_connected: {},
  stale: {},
  // The server's disconnect frames, by reason (Rails' `unauthorized`, AnyCable's others); any other reason is server_disconnect.
  unauthorized: {},
  token_expired: {},
  idle_timeout: { transient: true },
  no_pong: { transient: true },
  too_slow: { transient: true },
  server_disconnect: { transient: true },
  // A Pusher code outside the documented ranges (pusherCodeError).
  pusher_error: {},
  // Channels and messages.
  subscription_rejected: { subscription: true },
  subscription_timeout: { transient: true, subscription: true },
  not_subscribed: {},
  receive_timeout: {},
  capture_failed: {},
  malformed_frame: {},
  history_rejected: {},
  history_timeout: {},
  reconnect_timeout: {},
  drop_timeout: {},
  // HTTP side-calls (sidecall.ts `${kind}_failed` and `${kind}_timeout`) and HTTP steps.
  auth_failed: { subscription: true },
  auth_timeout: { subscription: true },
  publish_failed: {},
  publish_timeout: {},
  http_failed: {},
  http_timeout: {},
  http_too_many_redirects: {},
  response_too_large: {},
  // Certificates and TLS (tls.ts), Node's code kept in the message.
  tls_untrusted: {},
  tls_expired: {},
  tls_hostname: {},
  tls_handshake: {},
  // The scenario's own code and values at run time.
  invalid_value: {},
  invalid_scenario: {},
  function_missing: {},
  function_failed: {},
  // Fallbacks for a failure with no name of its own.
  timeout: {},
  unexpected_error: {},
} as const satisfies Record<string, ErrorTraits>;

export type FixedErrorName = keyof typeof ERROR_NAMES;

/** The families: a status or code the server chose, one name per value (`cable.http_419`, `cable.pusher_4009`). */
export type ErrorName = FixedErrorName | `http_${number}` | `pusher_${number}`;

/** The counter Artillery keeps for a name. */
export type ErrorCounter = `errors.cable.${ErrorName}`;

export const cableCode = (name: ErrorName): `cable.${ErrorName}` => `cable.${name}`;
export const errorCounter = (name: ErrorName): ErrorCounter => `errors.cable.${name}`;

/** A refused upgrade or an HTTP step's unexpected status. */
export const httpStatusError = (status: number): ErrorName => `http_${status}`;

/**
 * The name of a Pusher close or `pusher:error` code. Only the codes Pusher documents get their
 * own ("Pusher Channels Protocol", and pusher-js's getCloseAction): 4000–4099 do not reconnect,
 * 4100–4199 back off then reconnect, 4200–4299 reconnect now (the ranges servers fill with their
 * own codes: Soketi's 4100, Reverb's 4001), and of "4300–4399: any other error" the one documented,
 * 4301 (a client event over its rate). Any other code is `pusher_error`, its number kept in the
 * server's words: a server inventing a code per frame cannot mint a metric per frame.
 */
export function pusherCodeError(code: unknown): ErrorName {
  return typeof code === "number" && Number.isInteger(code) && ((code >= 4000 && code <= 4299) || code === 4301) ? `pusher_${code}` : "pusher_error";
}

export function isFixedErrorName(name: string): name is FixedErrorName {
  return Object.hasOwn(ERROR_NAMES, name);
}

/** Whether `cable.<name>` (or a bare name) is one of the engine's names. */
export function isErrorName(name: string): name is ErrorName {
  return isFixedErrorName(name) || /^http_\d{3}$/.test(name) || /^pusher_4\d{3}$/.test(name);
}

/** The engine's name inside a counted code (`cable.stale` → `stale`); undefined for a socket code or anything else. */
export function nameOfCode(code: string): ErrorName | undefined {
  const name = code.startsWith("cable.") ? code.slice("cable.".length) : "";
  return isErrorName(name) ? name : undefined;
}

// A gateway in front of a restarting server answers these while it comes back.
const TRANSIENT_HTTP = new Set([502, 503, 504]);

/** What the code knows of a name; the families' by their number. */
export function errorTraits(name: ErrorName): ErrorTraits {
  if (isFixedErrorName(name)) return ERROR_NAMES[name];
  const [family, n] = [name.slice(0, name.lastIndexOf("_")), Number(name.slice(name.lastIndexOf("_") + 1))];
  // Pusher: 4100–4199 reconnect after a back-off, 4200–4299 reconnect at once.
  if (family === "pusher") return n >= 4100 && n <= 4299 ? { transient: true } : {};
  return TRANSIENT_HTTP.has(n) ? { transient: true } : {};
}

/**
 * Every error name the engine counts (`errors.cable.<name>`), once, with what the code needs to
 * know of it: transient (the back-off), a subscription's (the engine's count), the steps that raise
 * it, the report's hint. The report, the fan-out and the tests import them
 * (`artillery-engine-cable/errors`).
 * `CableError` takes only these names, so the compiler checks every site that raises one, and the
 * README's error table is checked against this one (test/error-names.test.ts). Keep them stable: a
 * user's dashboards and `ensure` conditions group by them.
 */
export interface ErrorTraits {
  /** The server is not (yet) there, a restart in progress: worth another attempt after a back-off (backoff.ts). */
  transient?: true;
  /** The user's subscription did not happen (engine.ts counts it beside the error). */
  subscription?: true;
  /**
   * Where it is raised: the steps that fail with it (or count it), by their key in a flow
   * (steps/table.ts), and `connection`, `any` or `engine` (NOT_STEPS). `connect` and `reconnect`
   * name a failure during the handshake, `connection` one after it. A transient name is never
   * `reconnect`'s: the step retries it, and fails with `reconnect_timeout` (test/error-names.test.ts
   * holds the step compilers' own raises to this, and the README's column to all of it).
   */
  steps: readonly string[];
  /** What it means and what to look at, for one a user fixes outside the test; report.md prints it under its table, in this table's order. */
  hint?: string;
}

/**
 * The raisers that are not steps: `connection`, the open connection after its handshake (the
 * server's disconnect frame, close or error frame, its silence, a frame it cannot read, a socket
 * error), which fails the step waiting on it, the next one that uses it or the user at its end, or
 * is only counted; `any`, any step (the fallbacks); `engine`, the engine before any step.
 */
export const NOT_STEPS = ["connection", "any", "engine"] as const;

/** The HTTP steps, one method each (steps/request.ts). */
const HTTP_STEPS = ["get", "post", "put", "patch", "delete"] as const;
/** The steps that name a subscribed channel (`vu.channel`), and so use the open connection (`vu.open`). */
const ON_CHANNEL = ["perform", "receive", "listen", "unsubscribe", "trigger", "whisper", "join", "leave"] as const;

const TRUST_CA = "trust its CA with `config.tls.ca: ./ca.pem` (or `NODE_EXTRA_CA_CERTS=ca.pem`), or run with `--insecure` against a throwaway staging server";
/** wss:// (the upgrade) and every https:// side-call: a Pusher authEndpoint, a publish, an HTTP step. */
const TLS_STEPS = ["connect", "subscribe", "publish", "reconnect", ...HTTP_STEPS] as const;

export const ERROR_NAMES = {
  // Connecting.
  handshake_timeout: { transient: true, steps: ["connect"] },
  subprotocol_rejected: { steps: ["connect", "reconnect"] },
  ext_unsupported: { steps: ["connect", "whisper", "join", "leave", "reconnect"] },
  connection_closed: { transient: true, steps: ["connect", "connection"] },
  socket_error: { steps: ["connect", "reconnect", "connection"] },
  not_connected: { steps: ["subscribe", ...ON_CHANNEL, "reconnect"] },
  stale: { steps: ["connection"] },
  // Certificates and TLS (tls.ts), Node's code kept in the message.
  tls_untrusted: {
    steps: TLS_STEPS,
    hint: `the server's certificate is not signed by a CA Node trusts (an internal CA, a self-signed certificate): ${TRUST_CA}`,
  },
  tls_expired: { steps: TLS_STEPS, hint: "the server's certificate has expired or is not valid yet: renew it (or check this machine's clock); `--insecure` skips the check" },
  tls_hostname: {
    steps: TLS_STEPS,
    hint: "the server's certificate is for another name than the target's host: use the name it was issued for (`config.tls.servername` when connecting by address)",
  },
  tls_handshake: { steps: TLS_STEPS, hint: "no TLS handshake: a wss:// or https:// URL on a port that speaks plain HTTP, or a protocol or cipher the server refuses" },
  // Channels and messages.
  subscription_rejected: { subscription: true, steps: ["subscribe", "reconnect"], hint: "the server refused subscriptions; why, as the server said it:" },
  subscription_timeout: { transient: true, subscription: true, steps: ["subscribe"] },
  not_subscribed: { steps: ON_CHANNEL },
  receive_timeout: { steps: ["receive"] },
  capture_failed: {
    steps: ["receive", ...HTTP_STEPS],
    hint: "a capture found nothing in the answer: the page is not the one the scenario expects (a wrong password shows the form again or redirects to it, a session that expired, an error page); what the step saw:",
  },
  malformed_frame: { steps: ["connection"] },
  history_rejected: { steps: ["subscribe", "reconnect"] },
  history_timeout: { steps: ["subscribe", "reconnect"] },
  reconnect_timeout: { steps: ["reconnect"] },
  drop_timeout: { steps: ["reconnect"] },
  // The server's disconnect frames, by reason (Rails' `unauthorized`, AnyCable's others); any other reason is server_disconnect.
  unauthorized: { steps: ["connect", "reconnect", "connection"] },
  token_expired: { steps: ["connect", "reconnect", "connection"] },
  idle_timeout: { transient: true, steps: ["connect", "connection"] },
  no_pong: { transient: true, steps: ["connect", "connection"] },
  too_slow: { transient: true, steps: ["connect", "connection"] },
  server_disconnect: { transient: true, steps: ["connect", "connection"], hint: "the server ended connections with a disconnect frame; why:" },
  // A Pusher code outside the documented ranges (pusherCodeError), closing the connection or in an error frame.
  pusher_error: { steps: ["connect", "reconnect", "connection"] },
  // HTTP side-calls (sidecall.ts `${kind}_failed` and `${kind}_timeout`) and HTTP steps. Auth is a
  // Pusher private or presence channel's subscription, signed again by a reconnect.
  auth_failed: { subscription: true, steps: ["subscribe", "reconnect"] },
  auth_timeout: { subscription: true, steps: ["subscribe", "reconnect"] },
  publish_failed: { steps: ["publish"] },
  publish_timeout: { steps: ["publish"] },
  http_failed: { steps: HTTP_STEPS },
  http_timeout: { steps: HTTP_STEPS },
  http_too_many_redirects: { steps: HTTP_STEPS },
  // A redirect the engine does not follow (steps/request.ts): another scheme than http(s), or an
  // address no app has a reason to send a user to (the cloud's metadata and link-local ones).
  http_redirect_refused: { steps: HTTP_STEPS, hint: "the app redirected to a URL that is not http(s) (`file:`, `data:`, …): the engine follows only http and https, as a browser's fetch does" },
  http_address_refused: {
    steps: ["connect", "subscribe", "publish", "reconnect", ...HTTP_STEPS],
    hint: "a request would have gone to a link-local or cloud metadata address (169.254.0.0/16, fe80::/10, fd00:ec2::254), by a redirect, a URL or a name that resolves there: the engine never sends a user's request there (where a Fargate task reads its role's credentials)",
  },
  // The upgrade refused where the request carried an Origin the server does not allow (socket.ts).
  origin_rejected: {
    steps: ["connect", "reconnect"],
    hint: "the server refused the WebSocket's Origin: add the Origin the engine sends (the target's, or `config.cable.origin`) to the server's allowed origins (Rails `config.action_cable.allowed_request_origins`, Reverb `allowed_origins` in config/reverb.php, anycable-go `--allowed_origins`), or send none with `connect: { origin: false }`",
  },
  response_too_large: { steps: ["subscribe", "publish", "reconnect", ...HTTP_STEPS] },
  // The scenario's own code and values at run time.
  invalid_value: { steps: ["connect", "subscribe", "receive", "publish", "reconnect", "listen", "think", "loop", ...HTTP_STEPS] },
  invalid_scenario: { steps: ["engine"] },
  function_missing: { steps: ["function"] },
  function_failed: { steps: ["function"] },
  // Fallbacks for a failure with no name of its own.
  timeout: { steps: ["any"] },
  unexpected_error: { steps: ["any"] },
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

/** Pusher's close codes, 4000–4299: the server closes the connection with one, announced by an error frame of the same code. */
const closesConnection = (code: number) => code >= 4000 && code <= 4299;

/**
 * The name of a Pusher close or `pusher:error` code. Only the codes Pusher documents get their
 * own ("Pusher Channels Protocol", and pusher-js's getCloseAction): 4000–4099 do not reconnect,
 * 4100–4199 back off then reconnect, 4200–4299 reconnect now (the ranges servers fill with their
 * own codes: Soketi's 4100, Reverb's 4001), and of "4300–4399: any other error" the one documented,
 * 4301 (a client event over its rate). Any other code is `pusher_error`, its number kept in the
 * server's words: a server inventing a code per frame cannot mint a metric per frame.
 */
export function pusherCodeError(code: unknown): ErrorName {
  return typeof code === "number" && Number.isInteger(code) && (closesConnection(code) || code === 4301) ? `pusher_${code}` : "pusher_error";
}

/** Whether a name is a Pusher close code's (`pusher_4000`–`pusher_4299`): its error frame announces the close, which is the failure. */
export function isPusherCloseCode(name: ErrorName): boolean {
  return name.startsWith("pusher_") && closesConnection(Number(name.slice("pusher_".length)));
}

/** The Pusher codes the report explains (`pusher_<code>`'s hint), and where each is fixed. */
export const PUSHER_CODE_HINTS: Readonly<Record<number, string>> = {
  4001: "the server knows no app with this key: check `config.cable.pusher.key` against the server's app",
  4003: "the app is disabled on the server",
  4004: "the app is over its quota on the server (messages or connections)",
  4100: "the server is over capacity and closed the connection: its connection limit per app (Soketi `SOKETI_DEFAULT_APP_MAX_CONNS`, Sockudo `SOCKUDO_DEFAULT_APP_MAX_CONNECTIONS`, Reverb `max_connections` in config/reverb.php)",
  4301: "client events over the server's rate limit (Soketi `SOKETI_DEFAULT_APP_MAX_CLIENT_EVENTS_PER_SECOND`, Sockudo `max_client_events_per_second`)",
};

/** The HTTP statuses the report explains (`http_<status>`'s hint), as a sign-in meets them. */
export const HTTP_CODE_HINTS: Readonly<Record<number, string>> = {
  429: "the app limits requests per source address (Laravel's `throttle:60,1` on its login, Rails' rack-attack), and every virtual user of a task comes from that task's one address: sign in at a rate under the limit (a slower arrival phase), sign a pool in once (scenarios/laravel-token-pool.yml), spread users over addresses (`config.cable.localAddress`, more tasks), or let the step wait it out with `retry` (it honours Retry-After)",
};

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
  const n = Number(name.slice(name.lastIndexOf("_") + 1));
  if (name.startsWith("pusher_")) return pusherTraits(n);
  // The upgrade refused (connect, reconnect), or an HTTP step's unexpected status.
  const traits: ErrorTraits = TRANSIENT_HTTP.has(n) ? { transient: true, steps: ["connect", ...HTTP_STEPS] } : { steps: ["connect", "reconnect", ...HTTP_STEPS] };
  const hint = HTTP_CODE_HINTS[n];
  return hint === undefined ? traits : { ...traits, hint };
}

/** Pusher: 4000–4099 do not reconnect, 4100–4299 reconnect (after a back-off, or at once); 4301 comes in an error frame, counted. */
function pusherTraits(code: number): ErrorTraits {
  const hint = PUSHER_CODE_HINTS[code];
  const traits: ErrorTraits =
    code >= 4100 && code <= 4299 ? { transient: true, steps: ["connect", "connection"] } : closesConnection(code) ? { steps: ["connect", "reconnect", "connection"] } : { steps: ["connection"] };
  return hint === undefined ? traits : { ...traits, hint };
}

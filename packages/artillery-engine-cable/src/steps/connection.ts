import { z } from "zod";
import { cableCode } from "../error-names.js";
import { checkDestination } from "../destinations.js";
import { CableError } from "../errors.js";
import { ACTIONCABLE_V1_JSON } from "../protocol/actioncable.js";
import { withCookies, withoutHeaders } from "../session.js";
import { asyncStep, type StepFn } from "../vu.js";
import { templater, type Compiler } from "./compiler.js";
import { defineStep, stringMap } from "./define.js";

const connectSchema = z
  .object({
    url: z.string().optional(),
    headers: stringMap.optional(),
    cookies: z.union([z.string(), stringMap]).optional(),
    query: stringMap.optional(),
    subprotocol: z.union([z.string(), z.array(z.string()).nonempty()]).optional(),
    /** The upgrade's Origin for this step (over `config.cable.origin`); false: none at all. */
    origin: z.union([z.string(), z.literal(false)]).optional(),
  })
  .strict()
  .nullable();

export type ConnectSpec = NonNullable<z.output<typeof connectSchema>>;

/** Browsers send an Origin, and Rails checks it against allowed origins: default to the target's. */
export function originOf(url: string): string {
  const u = new URL(url);
  return `${u.protocol === "wss:" ? "https:" : "http:"}//${u.host}`;
}

export function cookieHeader(cookies: ConnectSpec["cookies"]): string | undefined {
  if (cookies === undefined) return undefined;
  if (typeof cookies === "string") return cookies;
  return Object.entries(cookies)
    .map(([name, value]) => `${name}=${encodeURIComponent(String(value))}`)
    .join("; ");
}

export function withQuery(url: string, query: ConnectSpec["query"]): string {
  if (!query) return url;
  const u = new URL(url);
  for (const [k, v] of Object.entries(query)) u.searchParams.set(k, String(v));
  return u.toString();
}

const ORIGIN = new Set(["origin"]);

export function compileConnect(compiler: Compiler, raw: ConnectSpec | null): StepFn {
  const spec = templater(raw ?? {});
  const { settings, protocol } = compiler;
  const handshake = (s: ConnectSpec) => {
    const base = s.url ?? compiler.target;
    if (!base) throw new CableError("invalid_value", "connect has no url and config.target is not set");
    const url = withQuery(protocol.url(base), s.query);
    // The Origin, the nearer setting winning: the target's own (a browser on the app's page sends
    // its origin, and Rails allows the host's by default) < config.cable.origin < an Origin in
    // config.cable.headers < the step's `origin` < an Origin in the step's `headers`. `false` sends
    // no Origin header at all, as a native app or a server-side client does.
    const configOrigin = settings.origin ?? originOf(url);
    let headers: Record<string, string> = { ...(configOrigin === false ? {} : { Origin: configOrigin }), ...settings.headers };
    if (s.origin !== undefined) {
      headers = withoutHeaders(headers, ORIGIN);
      // A whole-string template keeps its value's type (template.ts): `{{ origin }}` may be false.
      if ((s.origin as unknown) !== false) headers.Origin = String(s.origin);
    }
    for (const [k, v] of Object.entries(s.headers ?? {})) headers[k] = String(v);
    const cookie = cookieHeader(s.cookies);
    if (cookie) headers.Cookie = cookie;
    return { url, headers, subprotocols: s.subprotocol === undefined ? protocol.subprotocols : ([] as string[]).concat(s.subprotocol) };
  };
  // A connect step without templates opens every socket the same way: its URL and headers are
  // worked out once, not per VU (nothing mutates them: ws and reconnect copy the headers).
  const fixed = !JSON.stringify(raw ?? {}).includes("{{") && (raw?.url ?? compiler.target) ? handshake(raw ?? {}) : undefined;
  return asyncStep(async (vu, context) => {
    const { url, headers, subprotocols } = fixed ?? handshake(spec(context));
    // A URL made of a captured value may name a metadata address: refused before the socket (names at their lookup, socket.ts).
    checkDestination(url);
    vu.opened = {
      url,
      // A signed-in user's upgrade carries its session, as the browser's does (Rails' identified_by
      // reads it); the step's own `cookies` come after the jar's.
      headers: withCookies(vu.session, url, headers),
      subprotocols,
      timeoutMs: settings.timeout * 1000,
      localAddress: compiler.localAddress(vu),
      tls: compiler.tls,
    };
    let connection = compiler.connect(vu);
    try {
      await connection.open(vu.opened);
    } catch (err) {
      // "preferred": a server without AnyCable's extended protocol gets a second, plain handshake.
      if (settings.anycable.extended !== "preferred" || (err as CableError).code !== cableCode("ext_unsupported")) throw err;
      vu.opened = { ...vu.opened, subprotocols: [ACTIONCABLE_V1_JSON] };
      connection = compiler.connect(vu);
      await connection.open(vu.opened);
    }
    if (settings.anycable.extended === "required" && !connection.extended) {
      throw new CableError("ext_unsupported", "the server did not accept actioncable-v1-ext-json (config.cable.anycable.extended: required)");
    }
    if (connection.welcome?.sid) context.vars.sid = connection.welcome.sid;
    // Pusher: later templates and processors may need it, as pusher-js apps send it to their backend.
    if (connection.welcome?.socketId) context.vars.socket_id = connection.welcome.socketId;
  });
}

export function compileDisconnect(): StepFn {
  return asyncStep((vu) => vu.drop());
}

export const connect = defineStep({ schema: connectSchema, opens: true, compile: (compiler, spec) => compileConnect(compiler, spec) });

export const disconnect = defineStep({
  schema: z.union([z.null(), z.object({}).strict()]),
  closes: true,
  compile: () => compileDisconnect(),
});

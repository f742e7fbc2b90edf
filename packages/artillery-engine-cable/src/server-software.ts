// What the server says it is, read from its answer to the WebSocket upgrade once per connection and
// counted as `cable.server_software.<identity>`: the report names the server that was loaded from it
// (the cable-report plugin runs in Artillery's main thread, the VUs in worker threads; a metric is
// the one way from one to the other). Never on the per-frame path.
//
// What the servers this project is tested against answer (probed with cable-test-servers):
//   anycable-go 1.6   X-AnyCable-Version: 1.6.16 (no Server)        → anycable-go/1.6.16
//   Soketi 1.6        uWebSockets: 20 (no Server)                  → uWebSockets/20
//   Laravel Reverb    X-Powered-By: Laravel Reverb                 → Laravel_Reverb
//   Sockudo           nothing                                      → (none)
//   the local target  Server: cable-local-target/0.1.0             → cable-local-target/0.1.0
//   behind a proxy    Server: nginx/1.25.3 (Ubuntu)                → nginx/1.25.3
// The Pusher protocol's connection_established and AnyCable's welcome name no server (socket_id,
// activity_timeout; sid).
import type { IncomingHttpHeaders } from "node:http";
import { METRICS, type Events } from "./metrics.js";
import { printable } from "./server-words.js";

/** Characters of an identity: the end of a metric's name. */
export const MAX_IDENTITY = 60;
/** Distinct identities counted per worker thread: a server answering a new name per connection cannot grow the metrics. */
export const MAX_DISTINCT_IDENTITIES = 8;

/**
 * Server text as the end of a metric's name: printable, white space as `_`, then letters, digits and
 * `._/-` only, at most MAX_IDENTITY characters. Undefined when nothing readable is left.
 */
export function cleanIdentity(text: string): string | undefined {
  const clean = printable(text)
    .replace(/\s+/g, "_")
    .replace(/[^A-Za-z0-9._/-]/g, "")
    .slice(0, MAX_IDENTITY);
  return /[A-Za-z0-9]/.test(clean) ? clean : undefined;
}

function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** The first product of a `Server` header (RFC 9110 §10.2.4: the primary one first), without its comments. */
function firstProduct(value: string): string {
  return printable(value).split(" ")[0] ?? "";
}

/**
 * The server's identity from the upgrade answer's headers, or undefined when it gave none. AnyCable's
 * own version header first (a proxy in front of it answers the Server header), then the Server
 * header's first product, then X-Powered-By, then uWebSockets' version header (Soketi).
 */
export function serverIdentity(headers: IncomingHttpHeaders): string | undefined {
  const anycable = header(headers, "x-anycable-version");
  if (anycable) return cleanIdentity(`anycable-go/${firstProduct(anycable)}`);
  const server = header(headers, "server");
  if (server) return cleanIdentity(firstProduct(server));
  const poweredBy = header(headers, "x-powered-by");
  if (poweredBy) return cleanIdentity(poweredBy);
  const uws = header(headers, "uwebsockets");
  if (uws) return cleanIdentity(`uWebSockets/${firstProduct(uws)}`);
  return undefined;
}

const counted = new Set<string>();

/** Counts a welcomed connection to the server that said `identity`, as `cable.server_software.<identity>`. */
export function countServerSoftware(events: Events, identity: string | undefined): void {
  if (identity === undefined) return;
  if (!counted.has(identity)) {
    if (counted.size >= MAX_DISTINCT_IDENTITIES) return;
    counted.add(identity);
  }
  events.emit("counter", `${METRICS.serverSoftware}.${identity}`, 1);
}

/** Tests only. */
export function resetServerSoftwareForTest(): void {
  counted.clear();
}

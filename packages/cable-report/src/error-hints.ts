// What an error key means and what to look at, for the ones a user fixes outside the test: a
// certificate, a server's setting, the app's own code. report.md lists the keys the run counted,
// under the table; keys without a hint are left to the README's metrics table.
import type { ErrorCounter } from "artillery-engine-cable/errors";
import type { MergedResults } from "./model.js";
import { code, LIMITS } from "./text.js";

const TRUST = "trust its CA with `config.tls.ca: ./ca.pem` (or `NODE_EXTRA_CA_CERTS=ca.pem`), or run with `--insecure` against a throwaway staging server";

// Keyed by the engine's error counters (artillery-engine-cable/errors): a renamed error does not compile here.
export const ERROR_HINTS: Readonly<Partial<Record<ErrorCounter, string>>> = {
  "errors.cable.tls_untrusted": `the server's certificate is not signed by a CA Node trusts (an internal CA, a self-signed certificate): ${TRUST}`,
  "errors.cable.tls_expired": "the server's certificate has expired or is not valid yet: renew it (or check this machine's clock); `--insecure` skips the check",
  "errors.cable.tls_hostname": "the server's certificate is for another name than the target's host: use the name it was issued for (`config.tls.servername` when connecting by address)",
  "errors.cable.tls_handshake": "no TLS handshake: a wss:// or https:// URL on a port that speaks plain HTTP, or a protocol or cipher the server refuses",
  "errors.cable.subscription_rejected": "the server refused subscriptions; why, as the server said it:",
  "errors.cable.server_disconnect": "the server ended connections with a disconnect frame; why:",
  "errors.cable.pusher_4001": "the server knows no app with this key: check `config.cable.pusher.key` against the server's app",
  "errors.cable.pusher_4003": "the app is disabled on the server",
  "errors.cable.pusher_4004": "the app is over its quota on the server (messages or connections)",
  "errors.cable.pusher_4100": `the server is over capacity and closed the connection: its connection limit per app (${"Soketi `SOKETI_DEFAULT_APP_MAX_CONNS`, Sockudo `SOCKUDO_DEFAULT_APP_MAX_CONNECTIONS`, Reverb `max_connections` in config/reverb.php"})`,
  "errors.cable.pusher_4301": "client events over the server's rate limit (Soketi `SOKETI_DEFAULT_APP_MAX_CLIENT_EVENTS_PER_SECOND`, Sockudo `max_client_events_per_second`)",
};

/**
 * Why subscriptions were refused, by the engine's fixed causes (`cable.subscription_rejected.<cause>`,
 * artillery-engine-cable's protocol/rejections.ts), and where each is fixed.
 */
export const REJECTION_CAUSES: Readonly<Record<string, string>> = {
  limit_reached:
    "a server limit: presence members per channel (Soketi allows 100 unless `SOKETI_PRESENCE_MAX_MEMBERS` raises it; Sockudo `presence.max_members_per_channel`), or connections per app (Soketi `SOKETI_DEFAULT_APP_MAX_CONNS`, Sockudo `SOCKUDO_DEFAULT_APP_MAX_CONNECTIONS`, Reverb `max_connections`)",
  unauthorized: "the signature did not verify: the app's secret (`PUSHER_APP_SECRET`) is not the server's, or the authEndpoint signed for another key",
  app_rejected: "the app's own channel refused it (`reject` in `subscribed`; Action Cable sends no reason): look at the channel's code and at who the connection identified",
  other: "a reason the engine does not name: `NODE_DEBUG=cable` prints the server's own words",
};

/** Why the server disconnected (`cable.server_disconnect.<cause>`, Action Cable's disconnect reasons). */
export const DISCONNECT_CAUSES: Readonly<Record<string, string>> = {
  server_restart: "the server restarted (a deploy, `ActionCable.server.restart`): a `reconnect` step brings the users back; the reconnect storm verdict says how fast",
  remote: "the app disconnected these users itself (`ActionCable.server.remote_connections.where(…).disconnect`)",
  invalid_request: "the server refused the request: the mount path, `allowed_request_origins`, or a subprotocol it does not speak",
  other: "a reason the engine does not name: `NODE_DEBUG=cable` prints the server's own words",
};

/** The breakdown under each error key that has one: counter prefix, and the words for each cause. */
const BREAKDOWNS: Readonly<Partial<Record<ErrorCounter, { prefix: string; causes: Readonly<Record<string, string>> }>>> = {
  "errors.cable.subscription_rejected": { prefix: "cable.subscription_rejected.", causes: REJECTION_CAUSES },
  "errors.cable.server_disconnect": { prefix: "cable.server_disconnect.", causes: DISCONNECT_CAUSES },
};

/** "- `cable.tls_untrusted` (20): the server's certificate …", for each key with a hint the run counted. */
export function errorHints(merged: MergedResults): string[] {
  const counters = merged.all.counters;
  const lines = (Object.entries(ERROR_HINTS) as Array<[ErrorCounter, string]>)
    .filter(([key]) => (counters[key] ?? 0) > 0)
    .flatMap(([key, hint]) => {
      const breakdown = BREAKDOWNS[key];
      return [
        `- \`${key.slice("errors.".length)}\` (${counters[key].toLocaleString("en-US")}): ${hint}`,
        ...(breakdown ? causeLines(counters, breakdown, (merged.serverWords ?? []).filter((w) => `errors.${w.error}` === key)) : []),
      ];
    });
  return lines.length === 0 ? [] : ["", "**What the errors mean**", "", ...lines];
}

/** "  - `limit_reached` (800): a server limit: …", most first; none when the engine counted no causes (an older engine). */
function causeLines(counters: Record<string, number>, { prefix, causes }: { prefix: string; causes: Readonly<Record<string, string>> }, words: { cause: string; text: string }[]): string[] {
  return Object.entries(counters)
    .filter(([key, count]) => key.startsWith(prefix) && count > 0)
    .map(([key, count]) => [key.slice(prefix.length), count] as const)
    .sort((a, b) => b[1] - a[1])
    .map(([cause, count]) => {
      // The server's words are outside text: quoted in code spans, which render inert (text.ts).
      const said = words.filter((w) => w.cause === cause).map((w) => code(w.text, LIMITS.quote));
      return `  - ${code(cause, LIMITS.name)} (${count.toLocaleString("en-US")}): ${causes[cause] ?? causes.other}${said.length > 0 ? `. The server said: ${said.join(", ")}` : ""}`;
    });
}

// What an error key means and what to look at, for the ones a user fixes outside the test: a
// certificate, a server's setting, the app's own code. report.md lists the keys the run counted,
// under the table; keys without a hint are left to the README's metrics table.
import { ERROR_NAMES, errorCounter, errorTraits, HTTP_CODE_HINTS, httpStatusError, PUSHER_CODE_HINTS, pusherCodeError, type ErrorCounter, type ErrorName, type FixedErrorName } from "artillery-engine-cable/errors";
import type { MergedResults } from "./model.js";
import { code, LIMITS } from "./text.js";

// The hints are the engine's error table's (artillery-engine-cable/errors: each name's `hint`, and
// the Pusher codes it explains), in its order: a renamed error does not compile here, and its hint
// moves with it.
const HINTED: ErrorName[] = [
  ...(Object.keys(ERROR_NAMES) as FixedErrorName[]),
  ...Object.keys(HTTP_CODE_HINTS).map((c) => httpStatusError(Number(c))),
  ...Object.keys(PUSHER_CODE_HINTS).map((c) => pusherCodeError(Number(c))),
];

export const ERROR_HINTS: Readonly<Partial<Record<ErrorCounter, string>>> = Object.fromEntries(
  HINTED.flatMap((name) => {
    const hint = errorTraits(name).hint;
    return hint === undefined ? [] : [[errorCounter(name), hint]];
  }),
);

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
      const words = (merged.serverWords ?? []).filter((w) => `errors.${w.error}` === key);
      // Without causes to file them under (a failed capture's own words), the samples follow the hint.
      const seen = breakdown ? "" : words.map((w) => code(w.text, LIMITS.quote)).join(", ");
      return [
        `- \`${key.slice("errors.".length)}\` (${counters[key].toLocaleString("en-US")}): ${hint}${seen ? ` ${seen}` : ""}`,
        ...(breakdown ? causeLines(counters, breakdown, words) : []),
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

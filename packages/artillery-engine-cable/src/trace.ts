import { debuglog, format } from "node:util";
import { printable } from "./server-words.js";

/**
 * `NODE_DEBUG=cable npx artillery run …` prints every frame in and out and every connection state
 * change, for users debugging a scenario. Off, it costs one boolean check per frame.
 */
const log = debuglog("cable");
// NODE_DEBUG is read once at start-up; debuglog's `enabled` getter showed in the connect profile
// (~1 % of a VU's connect), as it is asked on every frame and state change.
const enabled = log.enabled;

/** A frame of a few KB still shows whole; a megabyte broadcast does not flood the terminal. */
const MAX_LINE = 4_000;

export const tracing = (): boolean => enabled;

/**
 * Every line is the server's text as much as ours, and ends up pasted into issues: it is made one
 * printable line (server-words.ts, as the console's server words), and the secrets a frame carries
 * are masked (traceLine).
 */
export function trace(fmt: string, ...args: unknown[]): void {
  if (enabled) log("%s", traceLine(format(fmt, ...args)));
}

/** A trace line: printable, Pusher's `auth` signatures and signed stream names masked, bounded. */
export function traceLine(text: string): string {
  const line = maskSecrets(printable(text));
  return line.length > MAX_LINE ? `${line.slice(0, MAX_LINE)}… (${line.length - MAX_LINE} more characters)` : line;
}

/**
 * `"auth":"…"` (a Pusher subscription's or sign-in's signature) and `"signed_stream_name":"…"`
 * (AnyCable's and Turbo's signed streams), also where the key sits inside a JSON string, as in an
 * Action Cable identifier (`\"signed_stream_name\":\"…\"`).
 */
const SECRET_KEY = /(\\*)"(?:auth|signed_stream_name)\1"\s*:\s*\1"/g;

/** Masks the values of SECRET_KEY; a value without its closing quote is masked to the end. */
export function maskSecrets(text: string): string {
  let out = "";
  let from = 0;
  for (const match of text.matchAll(SECRET_KEY)) {
    if (match.index < from) continue;
    const start = match.index + match[0].length;
    out += `${text.slice(from, start)}…`;
    from = closingQuote(text, start, match[1].length);
  }
  return out + text.slice(from);
}

/** Where the value that starts at `start` ends: the quote escaped as its opening one was (`level` backslashes). */
function closingQuote(text: string, start: number, level: number): number {
  for (let i = text.indexOf('"', start); i >= 0; i = text.indexOf('"', i + 1)) {
    let backslashes = 0;
    while (i - backslashes - 1 >= start && text[i - backslashes - 1] === "\\") backslashes++;
    if (backslashes === level) return i - level;
  }
  return text.length;
}

/**
 * A URL for a trace line (an upgrade's, an HTTP step's hop): query values masked (a `token=`, a `sid=`, a signed stream
 * may ride there), the user-info of `ws://user:password@host` masked, the fragment dropped.
 */
export function traceableUrl(url: string): string {
  const [beforeFragment] = url.split("#", 1);
  const q = beforeFragment.indexOf("?");
  const base = (q < 0 ? beforeFragment : beforeFragment.slice(0, q)).replace(/^([a-z][a-z0-9+.-]*:\/\/)[^@/?]*@/i, "$1…@");
  if (q < 0) return base;
  const query = beforeFragment
    .slice(q + 1)
    .split("&")
    .map((pair) => {
      const eq = pair.indexOf("=");
      // A bare item (`?abc123`) may itself be the secret.
      return eq < 0 ? (pair ? "…" : pair) : `${pair.slice(0, eq)}=…`;
    })
    .join("&");
  return `${base}?${query}`;
}

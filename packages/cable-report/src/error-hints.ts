// What an error key means and what to look at, for the ones a user fixes outside the test: a
// certificate, a server's setting, the app's own code. report.md lists the keys the run counted,
// under the table; keys without a hint are left to the README's metrics table.
import type { MergedResults } from "./model.js";

const TRUST = "trust its CA with `config.tls.ca: ./ca.pem` (or `NODE_EXTRA_CA_CERTS=ca.pem`), or run with `--insecure` against a throwaway staging server";

export const ERROR_HINTS: Readonly<Record<string, string>> = {
  "errors.cable.tls_untrusted": `the server's certificate is not signed by a CA Node trusts (an internal CA, a self-signed certificate): ${TRUST}`,
  "errors.cable.tls_expired": "the server's certificate has expired or is not valid yet: renew it (or check this machine's clock); `--insecure` skips the check",
  "errors.cable.tls_hostname": "the server's certificate is for another name than the target's host: use the name it was issued for (`config.tls.servername` when connecting by address)",
  "errors.cable.tls_handshake": "no TLS handshake: a wss:// or https:// URL on a port that speaks plain HTTP, or a protocol or cipher the server refuses",
};

/** "- `cable.tls_untrusted` (20): the server's certificate …", for each key with a hint the run counted. */
export function errorHints(merged: MergedResults): string[] {
  const lines = Object.entries(ERROR_HINTS)
    .filter(([key]) => (merged.all.counters[key] ?? 0) > 0)
    .map(([key, hint]) => `- \`${key.slice("errors.".length)}\` (${merged.all.counters[key].toLocaleString("en-US")}): ${hint}`);
  return lines.length === 0 ? [] : ["", "**What the errors mean**", "", ...lines];
}

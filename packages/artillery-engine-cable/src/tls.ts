// wss:// and https:// side-calls as Artillery users expect them: `config.tls` in Artillery's shape
// (its HTTP engine hands it to Node's TLS), and `artillery run --insecure` / `-k`, which Artillery
// itself turns into `config.tls.rejectUnauthorized: false` (lib/util.ts) before any engine sees the
// script. The same options reach the WebSocket (ws → https.request) and every HTTP side-call
// (undici's Agent: the Pusher auth endpoint, the events API, AnyCable's /_broadcast).
import { readFileSync } from "node:fs";
import path from "node:path";
import type { ErrorName } from "./error-names.js";

/** What Node's TLS takes from `config.tls`: PEM text, read from files where the scenario names them. */
export interface TlsOptions {
  rejectUnauthorized?: boolean;
  ca?: string[];
  cert?: string;
  key?: string;
  passphrase?: string;
  servername?: string;
}

const FIELDS = new Set(["rejectUnauthorized", "ca", "cert", "key", "passphrase", "servername"]);
const isPem = (text: string) => text.includes("-----BEGIN ");

/**
 * Reads `config.tls`: `ca`, `cert` and `key` are PEM text or a file's path, relative to the
 * scenario's folder (so a CA file travels with the scenario, to Fargate too). Every problem is
 * named by its field, before any load.
 */
export function readTls(raw: unknown, scriptPath?: string): { tls?: TlsOptions; problems: string[] } {
  if (raw === undefined || raw === null) return { problems: [] };
  if (typeof raw !== "object" || Array.isArray(raw)) return { problems: ["config.tls: must be an object such as { rejectUnauthorized: false } or { ca: ./ca.pem }"] };
  const problems: string[] = [];
  const input = raw as Record<string, unknown>;
  for (const field of Object.keys(input)) if (!FIELDS.has(field)) problems.push(`config.tls: unknown field "${field}" (the engine takes ${[...FIELDS].join(", ")})`);
  const base = scriptPath ? path.dirname(scriptPath) : process.cwd();
  const pem = (field: string, value: unknown): string | undefined => {
    if (typeof value !== "string" || value.trim() === "") {
      problems.push(`config.tls.${field}: must be PEM text or the path of a PEM file`);
      return undefined;
    }
    if (isPem(value)) return value;
    const file = path.resolve(base, value);
    try {
      const text = readFileSync(file, "utf8");
      if (!isPem(text)) problems.push(`config.tls.${field}: ${value} holds no PEM block`);
      return text;
    } catch (err) {
      problems.push(`config.tls.${field}: cannot read ${value} (${(err as NodeJS.ErrnoException).code ?? "unreadable"})`);
      return undefined;
    }
  };
  const tls: TlsOptions = {};
  if (input.rejectUnauthorized !== undefined) {
    if (typeof input.rejectUnauthorized !== "boolean") problems.push("config.tls.rejectUnauthorized: must be true or false");
    else tls.rejectUnauthorized = input.rejectUnauthorized;
  }
  if (input.ca !== undefined) tls.ca = ([] as unknown[]).concat(input.ca).flatMap((v, i) => pem(Array.isArray(input.ca) ? `ca[${i}]` : "ca", v) ?? []);
  if (input.cert !== undefined) tls.cert = pem("cert", input.cert);
  if (input.key !== undefined) tls.key = pem("key", input.key);
  for (const field of ["passphrase", "servername"] as const) {
    if (input[field] === undefined) continue;
    if (typeof input[field] !== "string") problems.push(`config.tls.${field}: must be a string`);
    else tls[field] = input[field] as string;
  }
  if ((tls.cert === undefined) !== (tls.key === undefined) && problems.length === 0) problems.push("config.tls: a client certificate needs both cert and key");
  return problems.length > 0 ? { problems } : { tls, problems };
}

/**
 * Node's certificate and TLS error codes, by what the user does about them: trust the CA
 * (`config.tls.ca`, NODE_EXTRA_CA_CERTS) or `--insecure`; fix the certificate's dates; use the name
 * the certificate is for; check that the port speaks TLS at all.
 */
const TLS_REASONS: Record<string, ErrorName> = {
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: "tls_untrusted",
  UNABLE_TO_GET_ISSUER_CERT: "tls_untrusted",
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: "tls_untrusted",
  SELF_SIGNED_CERT_IN_CHAIN: "tls_untrusted",
  DEPTH_ZERO_SELF_SIGNED_CERT: "tls_untrusted",
  CERT_UNTRUSTED: "tls_untrusted",
  CERT_REJECTED: "tls_untrusted",
  CERT_SIGNATURE_FAILURE: "tls_untrusted",
  CERT_HAS_EXPIRED: "tls_expired",
  CERT_NOT_YET_VALID: "tls_expired",
  ERR_TLS_CERT_ALTNAME_INVALID: "tls_hostname",
  HOSTNAME_MISMATCH: "tls_hostname",
  EPROTO: "tls_handshake",
  ERR_TLS_HANDSHAKE_TIMEOUT: "tls_handshake",
};

/** `tls_untrusted`, `tls_expired`, `tls_hostname` or `tls_handshake` for a TLS failure's Node code; undefined otherwise. */
export function tlsReason(code: string): ErrorName | undefined {
  return TLS_REASONS[code] ?? (code.startsWith("ERR_SSL_") ? "tls_handshake" : undefined);
}

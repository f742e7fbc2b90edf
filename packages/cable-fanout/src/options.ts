// Parsing the flags' values; every error names the flag.
import { FargateSizeError, SECRETS_MANAGER_SCHEME, SECRETS_PATH, assertFargateSize, isUnderSecretsPath } from "cable-infra/contract";
import { FanoutInputError } from "./errors.js";
import { type BackendKind, regionNameProblem } from "./region-names.js";
import { durationToMs } from "./scenario.js";

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export function parseRegions(text: string, backend: BackendKind): string[] {
  const regions = text.split(",").map((r) => r.trim()).filter(Boolean);
  if (regions.length === 0) throw new FanoutInputError("--regions names no region");
  const problems = regions.flatMap((r) => regionNameProblem(r, backend) ?? []);
  if (problems.length > 0) throw new FanoutInputError(problems.join("\n"));
  const dup = regions.find((r, i) => regions.indexOf(r) !== i);
  if (dup) throw new FanoutInputError(`--regions names ${dup} twice`);
  return regions;
}

export function parsePositiveInt(flag: string, text: string): number {
  if (!/^[1-9]\d*$/.test(text.trim())) throw new FanoutInputError(`${flag} wants a positive whole number, not "${text}"`);
  return Number(text);
}

/** Seconds, or a number with a unit ("90s", "15m", "1h"). */
export function parseDuration(flag: string, text: string): number {
  const ms = durationToMs(text);
  if (ms === undefined || ms <= 0) throw new FanoutInputError(`${flag} wants a duration such as 900, 90s, 15m or 1h, not "${text}"`);
  return ms;
}

export function parseJsonObject(flag: string, text: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new FanoutInputError(`${flag} is not valid JSON: ${(err as Error).message}`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw new FanoutInputError(`${flag} must be a JSON object`);
  return value as Record<string, unknown>;
}

export function parsePercent(flag: string, text: string): number {
  const match = /^(\d+(?:\.\d+)?)%?$/.exec(text.trim());
  if (!match) throw new FanoutInputError(`${flag} wants a percentage such as 10%, not "${text}"`);
  return Number(match[1]);
}

/** `--min-ready`: a share of the tasks, above 0 and at most 100%. */
export function parseMinReady(text: string): number {
  const pct = parsePercent("--min-ready", text);
  if (pct <= 0 || pct > 100) throw new FanoutInputError(`--min-ready wants a percentage above 0 and at most 100%, not "${text}"`);
  return pct;
}

/** `--run-id`: chosen by the caller (e.g. CI, so a cancelled job can stop it); one path segment, fits ECS startedBy. */
export function parseRunId(text: string): string {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,35}$/.test(text)) throw new FanoutInputError(`--run-id wants 1–36 letters, digits, ".", "_" or "-" (starting with a letter or digit), not "${text}"`);
  return text;
}

export interface TaskSize {
  cpu?: number;
  memory?: number;
}

/**
 * `--cpu` and `--memory` override the stack's task size, checked against Fargate's pairs (the
 * contract's check, the one the stack's own size passes at synth) before anything is uploaded. They
 * go together: the stack's size is not known here, so only a whole pair can be checked up front.
 */
export function parseTaskSize(cpuText: string | undefined, memoryText: string | undefined): TaskSize {
  if (cpuText === undefined && memoryText === undefined) return {};
  if (cpuText === undefined || memoryText === undefined) {
    throw new FanoutInputError(`${cpuText === undefined ? "--memory" : "--cpu"} needs ${cpuText === undefined ? "--cpu" : "--memory"} too: a Fargate task size is a CPU/memory pair`);
  }
  const cpu = parsePositiveInt("--cpu", cpuText);
  const memory = parsePositiveInt("--memory", memoryText);
  try {
    assertFargateSize(cpu, memory, { cpu: "--cpu", memory: "--memory" });
  } catch (err) {
    if (err instanceof FargateSizeError) throw new FanoutInputError(err.message);
    throw err;
  }
  return { cpu, memory };
}

export interface Secrets {
  /** Env var → reference, resolved by the worker. */
  refs: Record<string, string>;
  /** Env var → value (local backend only), taken from this process's environment. */
  values: Record<string, string>;
}

/**
 * `--secret NAME=ssm:/cable-loadtest/x`, `NAME=arn:…:ssm:…` or `NAME=arn:…:secretsmanager:…` pass a
 * reference the worker resolves; bare `NAME` (local only) passes this process's $NAME to the workers.
 * Values never go into RunTask overrides.
 */
export function parseSecrets(specs: string[], backend: "aws" | "local", env: NodeJS.ProcessEnv): Secrets {
  const secrets: Secrets = { refs: {}, values: {} };
  for (const spec of specs) {
    const eq = spec.indexOf("=");
    const name = eq === -1 ? spec : spec.slice(0, eq);
    if (!ENV_NAME.test(name)) throw new FanoutInputError(`--secret ${spec}: "${name}" is not an environment variable name`);
    if (eq === -1) {
      if (backend === "aws") throw new FanoutInputError(`--secret ${name}: Fargate tasks take secrets by reference only, e.g. --secret ${name}=ssm:/${SECRETS_PATH}/${name.toLowerCase()}`);
      const value = env[name];
      if (value === undefined) throw new FanoutInputError(`--secret ${name}: $${name} is not set in this environment`);
      secrets.values[name] = value;
      continue;
    }
    const ref = spec.slice(eq + 1);
    // ssm:<name> passes the bare parameter name; secretsmanager:<name> keeps its scheme for the worker.
    const resolved = ref.startsWith("ssm:") ? ref.slice("ssm:".length) : ref;
    if (!ref.startsWith("ssm:") && !ref.startsWith(SECRETS_MANAGER_SCHEME) && !/^arn:[^:]+:(ssm|secretsmanager):/.test(ref)) {
      throw new FanoutInputError(`--secret ${name}=…: the reference must be ssm:<parameter name>, secretsmanager:<secret name> or an SSM parameter / Secrets Manager ARN (never the value itself)`);
    }
    if (backend === "aws" && !isUnderSecretsPath(resolved)) {
      throw new FanoutInputError(`--secret ${name}=${ref}: the task role may read only parameters and secrets under ${SECRETS_PATH}/ (e.g. ssm:/${SECRETS_PATH}/${name.toLowerCase()})`);
    }
    secrets.refs[name] = resolved;
  }
  return secrets;
}

/** `--max-cost`: dollars, e.g. 40 or $40. */
export function parseMaxCost(text: string): number {
  const match = /^\s*\$?(\d+(?:\.\d+)?)\s*$/.exec(text);
  if (!match) throw new FanoutInputError(`--max-cost wants an amount in US dollars such as 40 or 12.50, not "${text}"`);
  return Number(match[1]);
}

export function parseHttpUrl(flag: string, text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new FanoutInputError(`${flag} wants an http(s) URL such as http://127.0.0.1:8080/metrics, not "${text}"`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new FanoutInputError(`${flag} wants an http(s) URL, not "${text}"`);
  return url.toString();
}

/** Hosts that only this machine can reach: a page on them needs no warning. */
function isLoopback(host: string): boolean {
  const h = host.toLowerCase().replace(/^\[|\]$/g, "");
  return h === "localhost" || h === "::1" || /^127(\.\d{1,3}){3}$/.test(h);
}

/**
 * `--live[=PORT]` and `--live-host <host>`: commander gives `true` for a bare --live (port 0: any
 * free port) and the string for --live=PORT. A host other than loopback gets a warning: the page is
 * then open to anyone who can reach it and has the printed URL (its token is in it).
 */
export function parseLive(live: boolean | string | undefined, host: string | undefined, defaultHost: string): { live?: { port: number; host: string }; warning?: string } {
  if (live === undefined || live === false) {
    if (host !== undefined) throw new FanoutInputError("--live-host needs --live: it says where the live page listens");
    return {};
  }
  let port = 0;
  if (live !== true) {
    if (!/^\d{1,5}$/.test(live.trim()) || Number(live) > 65_535) throw new FanoutInputError(`--live wants a port number from 0 to 65535 (0 or none: any free port), as --live=8080, not "${live}"`);
    port = Number(live);
  }
  if (host !== undefined && (host.trim() === "" || /[\s/?#@]/.test(host))) throw new FanoutInputError(`--live-host wants a host name or an address such as 127.0.0.1 or 0.0.0.0, not "${host}"`);
  // Node's listen takes an IPv6 address without the brackets a URL needs.
  const chosen = host?.trim().replace(/^\[(.*)\]$/, "$1") ?? defaultHost;
  const warning = isLoopback(chosen)
    ? undefined
    : `warning: --live-host ${chosen} is not a loopback address: the live page is then reachable by anyone who can reach ${chosen} on that port and has the printed URL (the token is in it)`;
  return { live: { port, host: chosen }, ...(warning ? { warning } : {}) };
}

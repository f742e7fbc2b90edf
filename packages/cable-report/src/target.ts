// The server a run loaded, pure. Each task names it in its sidecar (the plugin, from the script's
// config.target and the engine's `cable.server_software.<identity>` counters), the merge names it in
// merged.json, the fan-out in fanout.json; and a baseline is compared only with a run of the same
// scenario against the same target: a pull request's run against a baseline of staging, of another
// server, or of another scenario says nothing about the pull request.
//
// What a target's URL keeps: scheme, host, port and path. Never the credentials (`user:pass@`), the
// query (`?token=…`) or the fragment; nor path parameters (`;jsessionid=…`). http(s) is written
// ws(s): the engine opens a WebSocket either way.
//
// The baseline check (judgeBaseline):
// - Refused (with the gate on, unless --baseline-any): another test name (both named), scenarios
//   sharing no name, another target URL (both known), another server software (both said, by its
//   name: `anycable-go/1.6.15` and `anycable-go/1.6.16` are the same server, `soketi` is not).
// - Compared, and said: a baseline that names no target (merged.json files written before targets
//   were recorded, or tasks without the plugin) is compared as the same target, and the report says
//   "the baseline names no target": refusing every old baseline would fail every pull request once,
//   after an upgrade, for no fault of its own. A server's new version, and scenarios that differ but
//   overlap, are said too.
// - Without the gate (deltas only), a mismatch is compared and said, not refused.
import { METRICS } from "artillery-engine-cable/metrics";
import { quoteName } from "./task-file.js";

export interface Target {
  /** Scheme, host, port and path (redactTarget); null: not known (or the tasks disagreed). */
  url: string | null;
  /** What the server said it is (`anycable-go/1.6.16`); null: it said nothing (or the tasks disagreed). */
  server: string | null;
}

export const TARGET_LIMITS = {
  /** Characters of a redacted URL; a longer one is not kept. */
  url: 1_000,
  /** Characters of a server's identity, as the engine cuts it (server-software.ts). */
  server: 60,
} as const;

/**
 * Counter prefix the engine counts each welcomed connection under, by what the server said it is
 * (`cable.server_software.anycable-go/1.6.16`): who was loaded, not a figure of the run.
 */
export const SERVER_SOFTWARE_PREFIX = `${METRICS.serverSoftware}.`;

export function isServerSoftwareCounter(name: string): boolean {
  return name.startsWith(SERVER_SOFTWARE_PREFIX);
}

const SCHEMES: Record<string, string> = { "ws:": "ws:", "wss:": "wss:", "http:": "ws:", "https:": "wss:" };

/**
 * A target URL as a file may keep it: scheme, host, port and path; no credentials, query, fragment
 * or path parameters. null for anything that is not an absolute ws(s) or http(s) URL with a host
 * (junk, a `{{ template }}` the runner cannot resolve, a relative path), or that is longer than
 * TARGET_LIMITS.url once redacted.
 */
export function redactTarget(url: unknown): string | null {
  if (typeof url !== "string") return null;
  const text = url.trim();
  if (text === "" || text.length > 8 * TARGET_LIMITS.url || text.includes("{{")) return null;
  let parsed: URL;
  try {
    parsed = new URL(text);
  } catch {
    return null;
  }
  const scheme = SCHEMES[parsed.protocol];
  if (!scheme || parsed.hostname === "") return null;
  const path = parsed.pathname.split(";")[0];
  const out = `${scheme}//${parsed.host}${path === "/" ? "" : path}`;
  return out.length <= TARGET_LIMITS.url ? out : null;
}

/**
 * A server's identity from a file (untrusted): white space as `_`, letters, digits and `._/-` only,
 * at most TARGET_LIMITS.server characters (the engine's own rule); null when nothing readable is left.
 */
export function cleanServerName(text: unknown): string | null {
  if (typeof text !== "string") return null;
  const clean = text
    .slice(0, 4 * TARGET_LIMITS.server)
    .replace(/\s+/g, "_")
    .replace(/[^A-Za-z0-9._/-]/g, "")
    .slice(0, TARGET_LIMITS.server);
  return /[A-Za-z0-9]/.test(clean) ? clean : null;
}

/** `anycable-go/1.6.16` → name `anycable-go`, version `1.6.16`; `cloudflare` → version null. */
export function parseServerIdentity(identity: string): { name: string; version: string | null } {
  const slash = identity.indexOf("/");
  if (slash < 0) return { name: identity, version: null };
  return { name: identity.slice(0, slash), version: identity.slice(slash + 1) || null };
}

function sameServer(a: string, b: string): boolean {
  return parseServerIdentity(a).name.toLowerCase() === parseServerIdentity(b).name.toLowerCase();
}

/** Every identity the engine counted a connection to (count above 0), each once, cleaned. */
export function serversInCounters(counters: Record<string, number> | undefined): string[] {
  const out = new Set<string>();
  for (const name in counters ?? {}) {
    if (!isServerSoftwareCounter(name) || !(counters![name] > 0)) continue;
    const identity = cleanServerName(name.slice(SERVER_SOFTWARE_PREFIX.length));
    if (identity) out.add(identity);
  }
  return [...out].sort();
}

/** The one server a task's connections reached, from its counters; null: none said, or several did. */
export function serverFromCounters(counters: Record<string, number> | undefined): string | null {
  const servers = serversInCounters(counters);
  return servers.length === 1 ? servers[0] : null;
}

/**
 * What the tasks of a run say of their target, folded one task at a time: each field is the one
 * value every task that knew it gave, or null when they gave several. A task that knew nothing
 * (a sidecar before targets were recorded, a report without the plugin) does not count.
 */
export class TargetFold {
  private readonly urls = new Set<string>();
  private readonly servers = new Set<string>();

  /** `counters`: the task's own, whose server-software counters name every server its connections reached. */
  add(target: Partial<Target> | null | undefined, counters?: Record<string, number>): void {
    const url = redactTarget(target?.url);
    if (url && this.urls.size < 2) this.urls.add(url);
    const said = cleanServerName(target?.server);
    for (const server of [...(said ? [said] : []), ...serversInCounters(counters)]) {
      if (this.servers.size >= 2) break;
      this.servers.add(server);
    }
  }

  /** undefined: no task knew its target or its server. */
  result(): Target | undefined {
    if (this.urls.size === 0 && this.servers.size === 0) return undefined;
    const one = (values: Set<string>) => (values.size === 1 ? [...values][0] : null);
    return { url: one(this.urls), server: one(this.servers) };
  }
}

/** What the tasks recorded, combined: equal → that, disagreeing → null, nothing → undefined. */
export function mergeTargets(targets: Iterable<Partial<Target> | null | undefined>): Target | undefined {
  const fold = new TargetFold();
  for (const target of targets) fold.add(target);
  return fold.result();
}

/** What a baseline check reads of a run: merged.json's test and target. */
export interface RunIdentity {
  test: { name: string; scenarios: string[] };
  /** Absent: a file from before targets were recorded. */
  target?: { url: string | null; server: string | null };
}

export type MismatchKind = "scenario" | "target" | "server";

function listed(names: string[]): string {
  const shown = names.slice(0, 5).map(quoteName).join(", ");
  return names.length > 5 ? `${shown}, … ${names.length - 5} more` : shown;
}

/** Why the baseline is of another scenario or target, and of which kind; null when it is comparable. */
export function mismatchOf(current: RunIdentity, baseline: RunIdentity): { kind: MismatchKind; reason: string } | null {
  const [was, now] = [baseline.test, current.test];
  if (was.name && now.name && was.name !== now.name) {
    return { kind: "scenario", reason: `baseline is of another scenario: test ${quoteName(was.name)}, this run test ${quoteName(now.name)}` };
  }
  if (was.scenarios.length > 0 && now.scenarios.length > 0 && !was.scenarios.some((s) => now.scenarios.includes(s))) {
    return { kind: "scenario", reason: `baseline is of another scenario: ${listed(was.scenarios)}, this run ${listed(now.scenarios)}` };
  }
  const [urlWas, urlNow] = [redactTarget(baseline.target?.url), redactTarget(current.target?.url)];
  if (urlWas && urlNow && urlWas !== urlNow) return { kind: "target", reason: `baseline is of another target: ${urlWas}, this run ${urlNow}` };
  const [serverWas, serverNow] = [cleanServerName(baseline.target?.server), cleanServerName(current.target?.server)];
  if (serverWas && serverNow && !sameServer(serverWas, serverNow)) {
    return { kind: "server", reason: `baseline is of another server: ${serverWas}, this run ${serverNow}` };
  }
  return null;
}

/**
 * Why the baseline is of another scenario (test name, scenarios) or another target (URL, server
 * software), in one line; null when it may be compared. Not knowing is no mismatch (see above).
 */
export function baselineMismatch(current: RunIdentity, baseline: RunIdentity): string | null {
  return mismatchOf(current, baseline)?.reason ?? null;
}

/** What a comparison should say though it is made: a baseline without a target, a server's new version, scenarios that changed. */
export function baselineCaveats(current: RunIdentity, baseline: RunIdentity): string[] {
  const out: string[] = [];
  const [urlWas, urlNow] = [redactTarget(baseline.target?.url), redactTarget(current.target?.url)];
  if (!urlWas && urlNow) out.push(`the baseline names no target (written before runs named theirs, or without the cable-report plugin): compared as a run against ${urlNow}`);
  if (urlWas && !urlNow) out.push(`this run names no target: compared as a run against the baseline's ${urlWas}`);
  const [serverWas, serverNow] = [cleanServerName(baseline.target?.server), cleanServerName(current.target?.server)];
  if (serverWas && serverNow && serverWas !== serverNow && sameServer(serverWas, serverNow)) out.push(`the server's version changed: ${serverWas} → ${serverNow}`);
  const [was, now] = [baseline.test.scenarios, current.test.scenarios];
  const gone = was.filter((s) => !now.includes(s));
  const added = now.filter((s) => !was.includes(s));
  if (was.length > 0 && now.length > 0 && (gone.length > 0 || added.length > 0) && gone.length < was.length) {
    out.push(`the scenarios changed:${gone.length > 0 ? ` only in the baseline ${listed(gone)}` : ""}${gone.length > 0 && added.length > 0 ? ";" : ""}${added.length > 0 ? ` only in this run ${listed(added)}` : ""}`);
  }
  return out;
}

export interface BaselineVerdict {
  /** Set when the gate refuses the baseline: one line, naming the mismatch and the flag that compares anyway. */
  refused?: string;
  /** What the report says beside the comparison, when it is made. */
  notes: string[];
}

const ACROSS: Record<MismatchKind, string> = { scenario: "scenarios", target: "targets", server: "servers" };

/**
 * Whether a baseline may be compared. `gate`: --fail-on-regression was given; `any`: --baseline-any.
 * A mismatch refuses the gate unless `any`; a comparison across it (asked for, or deltas only) says so.
 */
export function judgeBaseline(current: RunIdentity, baseline: RunIdentity, options: { gate: boolean; any: boolean }): BaselineVerdict {
  const mismatch = mismatchOf(current, baseline);
  const caveats = baselineCaveats(current, baseline);
  if (!mismatch) return { notes: caveats };
  if (options.gate && !options.any) return { refused: `${mismatch.reason}; --baseline-any compares anyway`, notes: [] };
  const across = options.any
    ? `compared across ${ACROSS[mismatch.kind]} (--baseline-any): ${mismatch.reason}`
    : `⚠️ compared across ${ACROSS[mismatch.kind]}: ${mismatch.reason} (--fail-on-regression refuses it without --baseline-any)`;
  return { notes: [across, ...caveats] };
}

// --history: every run kept as one record (cable-report history/record.ts) in a folder or an S3
// prefix, and the run judged against the band of its comparable runs there (history/gate.ts).
//
// What makes runs comparable is decided when the run starts and kept in fanout.json (so that
// `collect` on another day writes the same record): the scenario hash (the scenario file's text,
// the effective --overrides with --target and --variables, -e, and --count; the processor and the
// payload files are not in it: a new user list or a fixed typo in a processor keeps the history
// going), and where the run came from: the branch and commit from GitHub Actions' variables
// (GITHUB_HEAD_REF on a pull request, else GITHUB_REF_NAME; GITHUB_SHA), else from git in the
// scenario's folder, else unknown.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { HistoryInputError, openHistory, scenarioHash, type HistoryRead, type HistoryRecord, type HistoryStore, type MergedResults, type RunKind } from "artillery-plugin-cable-report";
import { HISTORY_PREFIX } from "cable-worker/contract";
import { FanoutInputError } from "../errors.js";
import type { RunRecord } from "./record.js";

/** --history and its companions, as a run is asked for them. */
export interface HistoryOptions {
  /** A folder or s3://bucket/prefix. */
  location: string;
  /** --history-branch: the branch whose runs make the band (default main); null: every branch. */
  branch: string | null;
  /** What made the run: `run`, one server of `compare`, one step of `capacity`. */
  kind?: RunKind;
  /** compare: the server's name; capacity: the step. */
  label?: string | null;
}

/** Kept in fanout.json when the run starts. */
export interface HistoryFacts {
  /** The scenario as its project names it (relative to the bundle root, `scenarios/chat.yml`): the same from any folder. */
  file?: string;
  scenarioHash: string;
  branch: string | null;
  commit: string | null;
}

/** cable-fanout's version, as the record names the tool. */
export function toolVersion(): string {
  try {
    return (JSON.parse(readFileSync(path.join(__dirname, "..", "..", "package.json"), "utf8")) as { version?: string }).version ?? "unknown";
  } catch {
    return "unknown";
  }
}

export function historyFacts(input: { scenarioFile: string; projectDir?: string; overrides: unknown; environment?: string; count: number }, env: NodeJS.ProcessEnv = process.env): HistoryFacts {
  return {
    ...(input.projectDir ? { file: path.relative(input.projectDir, input.scenarioFile).split(path.sep).join("/") } : {}),
    scenarioHash: scenarioHash({
      scenario: readFileSync(input.scenarioFile),
      overrides: input.overrides === undefined ? null : canonicalJson(input.overrides),
      environment: input.environment ?? null,
      tasksPerRegion: input.count,
    }),
    ...sourceOf(path.dirname(input.scenarioFile), env),
  };
}

/** The branch and commit of the run: GitHub's variables, else git, else null. */
export function sourceOf(dir: string, env: NodeJS.ProcessEnv): { branch: string | null; commit: string | null } {
  const given = (name: string) => (env[name] && env[name]!.trim() !== "" ? env[name]!.trim().slice(0, 200) : null);
  const branch = given("GITHUB_HEAD_REF") ?? given("GITHUB_REF_NAME") ?? git(dir, ["symbolic-ref", "--short", "-q", "HEAD"]);
  const commit = given("GITHUB_SHA") ?? git(dir, ["rev-parse", "-q", "--verify", "HEAD"]);
  return { branch, commit };
}

function git(dir: string, args: string[]): string | null {
  try {
    const out = execFileSync("git", args, { cwd: dir, timeout: 5_000, stdio: ["ignore", "pipe", "ignore"], encoding: "utf8" }).trim();
    return out === "" ? null : out.slice(0, 200);
  } catch {
    return null;
  }
}

/** JSON with sorted keys: the same overrides hash alike however they were written. */
function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === "object" && !Array.isArray(v) ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : v,
  );
}

/** What fanout.json keeps of --history. */
export function historyRecordFacts(options: HistoryOptions, facts: HistoryFacts): NonNullable<RunRecord["history"]> {
  return { location: options.location, bandBranch: options.branch, kind: options.kind ?? "run", label: options.label ?? null, ...facts };
}

/** The history options of a recorded run: `collect` and `attach` keep it as it started, unless told otherwise. */
export function historyOptionsOf(record: RunRecord, given?: HistoryOptions): HistoryOptions | undefined {
  if (given) return given;
  const kept = record.history;
  return kept && { location: kept.location, branch: kept.bandBranch, kind: kept.kind, label: kept.label };
}

/** `--history stack`: the first region's results store, under history/ (kept: the stack's expiry rule covers runs/ only). */
export const STACK_HISTORY = "stack";

export function resolveLocation<T extends { location: string }>(options: T, regions: Array<{ location: string }>): T {
  if (options.location !== STACK_HISTORY) return options;
  const store = regions[0]?.location;
  if (!store) throw new FanoutInputError("--history stack: no region to keep the history in");
  return { ...options, location: store.startsWith("s3://") ? `${store.replace(/\/+$/, "")}/${HISTORY_PREFIX}/` : path.join(store, HISTORY_PREFIX) };
}

/** The store, opened and listed (not read) before any task starts: a location that cannot be listed is said now, not after the run. */
export async function checkHistory(options: HistoryOptions): Promise<void> {
  try {
    await openHistory(options.location).check();
  } catch (err) {
    if (err instanceof HistoryInputError) throw new FanoutInputError(`not starting any task: ${err.message}`);
    throw err;
  }
}

/** What the history says of a finished run, for the report; undefined and said when it cannot be read now. */
export async function readForRun(options: HistoryOptions, log: (line: string) => void): Promise<{ store: HistoryStore; read: HistoryRead } | undefined> {
  try {
    const store = openHistory(options.location);
    return { store, read: await store.read() };
  } catch (err) {
    log(`history: ${(err as Error).message}; the run is not judged against it`);
    return undefined;
  }
}

export function identityOf(record: RunRecord, facts: HistoryFacts, merged: MergedResults, options: HistoryOptions) {
  return {
    id: record.runId,
    kind: options.kind ?? ("run" as const),
    label: options.label ?? null,
    at: record.startAt ?? merged.timeline?.start ?? merged.all.firstMetricAt ?? record.createdAt ?? Date.now(),
    scenario: { file: (facts.file ?? record.scenario).slice(-200), hash: facts.scenarioHash },
    target: { url: merged.target?.url ?? record.target ?? null, server: merged.target?.server ?? null },
    branch: facts.branch,
    commit: facts.commit,
    tool: toolVersion(),
    regions: record.regions,
    tasksPerRegion: record.count,
  };
}

/** The record appended; a failure is said and never fails the run (its report is written already). */
export async function appendRecord(store: HistoryStore, record: HistoryRecord, log: (line: string) => void): Promise<string | undefined> {
  try {
    const where = await store.append(record);
    log(`history: this run kept as ${where}`);
    return where;
  } catch (err) {
    log(`history: could not keep this run in ${store.where}: ${(err as Error).message}`);
    return undefined;
  }
}

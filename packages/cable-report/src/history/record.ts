// One run in the history (`--history`): who ran what against which server when, and what came of it,
// small enough to keep one per night for years. Pure: no I/O (store.ts reads and writes them).
//
// The figures are a slimmed merged result (model.ts's own schema, so a record reads back as a
// `--baseline` does and every gate, row and verdict function takes it unchanged): each column's
// counters of users, messages and errors, the engine's latency histograms with their merged
// DDSketches (so that a later merge of runs, or the two-run gate against the last record, stays
// exact), the generator's lag and the tasks it was unfit in, the rates, peak connections, checks and
// the verdicts that need time. Left out: the series over time, the task files' names, every task's
// generator line, the notes and the server's words: they are report.html's, and they are what makes a
// merged.json of 500 tasks weigh megabytes.
import { createHash } from "node:crypto";
import { z } from "zod";
import { runState, stateWords } from "../headline.js";
import { EVENT_LOOP_LAG } from "../merge.js";
import { mergedSchema, type Column, type MergedResults, type RegionColumn } from "../model.js";
import { isLatencyMetric } from "../series.js";
import { nameSchema } from "../task-file.js";

export const HISTORY_FORMAT = "cable-history-run";
export const HISTORY_VERSION = 1;

/** What kind of run made the record: `cable-fanout run`, one server of `compare`, one step of `capacity`. */
export const RUN_KINDS = ["run", "compare", "capacity"] as const;

/** Error kinds kept per column (the most frequent; the rest are summed under `errors.other`): a hostile server can invent thousands. */
export const MAX_ERROR_KINDS = 20;
/** Tasks named per column as saturated or starved (their latencies are left out of the band); the rest are counted. */
const MAX_UNFIT_TASKS = 5;

const short = z.string().max(200);

export const runIdentitySchema = z.object({
  /** The fan-out's run id (`cable-fanout collect RUN_ID`). */
  id: short,
  kind: z.enum(RUN_KINDS),
  /** compare: the server's label; capacity: the step (e.g. "step 3: 4 tasks"). */
  label: short.nullable(),
  /** When the load started (epoch ms): the history's order. */
  at: z.number(),
  scenario: z.object({
    /** The scenario's path as given, for people. */
    file: short,
    /**
     * sha256 (hex) of what the tasks ran: the scenario's text, the --overrides and --variables, -e,
     * and the tasks per region. Two runs compare only when it is the same: another scenario, another
     * load shape, another count of tasks is another experiment.
     */
    hash: z.string().regex(/^[0-9a-f]{64}$/),
  }),
  target: z.object({ url: z.string().max(1_000).nullable(), server: short.nullable() }),
  /** Where the run came from: the branch and commit (GitHub's variables, else git), null when unknown. */
  branch: short.nullable(),
  commit: short.nullable(),
  /** cable-fanout's version. */
  tool: short,
  regions: z.array(nameSchema).max(100),
  tasksPerRegion: z.number().int().positive(),
});

export const historyRecordSchema = z.object({
  format: z.literal(HISTORY_FORMAT),
  version: z.literal(HISTORY_VERSION),
  run: runIdentitySchema,
  /** The headline's verdict (headline.ts), and what the runner judged beyond it. */
  verdict: z.object({
    state: z.enum(["ok", "warning", "failed"]),
    words: z.string().max(300),
    /** More users failed than `config.cable.maxFailedUsers` allows. */
    usersOverLine: z.boolean(),
    /** An ensure check failed. */
    checksFailed: z.boolean(),
    /** Stopped by --abort-on. */
    aborted: z.boolean(),
    /** Regressions the gate found against the history or the baseline; null: not gated. */
    regressions: z.number().int().nonnegative().nullable(),
  }),
  /** US dollars: the plan's estimate and what Fargate billed at list prices; null for local runs. */
  cost: z.object({ estimateUsd: z.number().nullable(), billedUsd: z.number().nullable() }),
  results: mergedSchema,
});

export type RunIdentity = z.infer<typeof runIdentitySchema>;
export type HistoryRecord = z.infer<typeof historyRecordSchema>;
export type RunKind = (typeof RUN_KINDS)[number];

export interface RecordInput {
  identity: RunIdentity;
  merged: MergedResults;
  usersOverLine: boolean;
  checksFailed: boolean;
  regressions: number | null;
  cost?: { estimateUsd?: number | null; billedUsd?: number | null };
}

/** The record of one finished run. */
export function historyRecord(input: RecordInput): HistoryRecord {
  const { merged } = input;
  const { mark, label } = stateWords(runState(merged));
  return {
    format: HISTORY_FORMAT,
    version: HISTORY_VERSION,
    run: input.identity,
    verdict: {
      state: mark === "❌" || input.usersOverLine || input.checksFailed || (input.regressions ?? 0) > 0 ? "failed" : mark === "✅" ? "ok" : "warning",
      words: `${mark} ${label}`.slice(0, 300),
      usersOverLine: input.usersOverLine,
      checksFailed: input.checksFailed,
      aborted: merged.timeline?.aborted != null,
      regressions: input.regressions,
    },
    cost: { estimateUsd: input.cost?.estimateUsd ?? null, billedUsd: input.cost?.billedUsd ?? null },
    results: slimResults(merged),
  };
}

/** A merged result without what only report.html needs (see the top of the file). */
export function slimResults(merged: MergedResults): MergedResults {
  return {
    format: merged.format,
    version: merged.version,
    test: merged.test,
    regions: merged.regions.map((r): RegionColumn => ({ ...slimColumn(r), expectedTasks: r.expectedTasks })),
    all: slimColumn(merged.all),
    notes: [],
    ...(merged.timeline ? { timeline: { ...merged.timeline, server: null } } : {}),
    ...(merged.verdicts ? { verdicts: merged.verdicts } : {}),
    ...(merged.target ? { target: merged.target } : {}),
    ...(merged.clockBoundMs !== undefined ? { clockBoundMs: merged.clockBoundMs } : {}),
  };
}

function slimColumn(column: Column): Column {
  const histograms: Column["histograms"] = Object.create(null);
  for (const [metric, d] of Object.entries(column.histograms)) {
    if (isLatencyMetric(metric)) histograms[metric] = d;
    // The generator's lag is the floor under every latency verdict; its sketch is never tested.
    else if (metric === EVENT_LOOP_LAG) histograms[metric] = { ...d, sketch: undefined };
  }
  const unfit = column.generator.filter((t) => t.saturated || t.starved);
  return {
    name: column.name,
    tasks: column.tasks,
    files: [],
    counters: slimCounters(column.counters),
    histograms,
    rates: column.rates,
    peakOpenConnections: column.peakOpenConnections,
    checks: column.checks,
    tasksWithChecks: column.tasksWithChecks,
    firstMetricAt: column.firstMetricAt,
    lastMetricAt: column.lastMetricAt,
    generator: unfit.slice(0, MAX_UNFIT_TASKS),
    rejected: [],
    partialTasks: column.partialTasks,
  };
}

/** Every counter but the error kinds beyond the most frequent (summed under `errors.other`). */
function slimCounters(counters: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = Object.create(null);
  const errors: Array<[string, number]> = [];
  for (const [name, value] of Object.entries(counters)) {
    if (name.startsWith("errors.")) errors.push([name, value]);
    else out[name] = value;
  }
  errors.sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  for (const [name, value] of errors.slice(0, MAX_ERROR_KINDS)) out[name] = value;
  const rest = errors.slice(MAX_ERROR_KINDS).reduce((sum, [, value]) => sum + value, 0);
  if (rest > 0) out["errors.other"] = (out["errors.other"] ?? 0) + rest;
  return out;
}

/**
 * sha256 of what the tasks ran, as `scenario.hash`: the scenario file's bytes and every input that
 * changes the load, each length-prefixed so that no two different inputs hash alike.
 */
export function scenarioHash(parts: { scenario: string | Buffer; overrides?: string | null; variables?: string | null; environment?: string | null; tasksPerRegion: number }): string {
  const hash = createHash("sha256");
  const add = (field: string, value: string | Buffer) => {
    const bytes = typeof value === "string" ? Buffer.from(value, "utf8") : value;
    hash.update(`${field}:${bytes.length}:`);
    hash.update(bytes);
  };
  add("scenario", parts.scenario);
  add("overrides", parts.overrides ?? "");
  add("variables", parts.variables ?? "");
  add("environment", parts.environment ?? "");
  add("tasks", String(parts.tasksPerRegion));
  return hash.digest("hex");
}

/** A history file's name: sorts by time in any listing (a directory, an S3 prefix), and names the run. */
export function recordFileName(record: Pick<HistoryRecord, "run">): string {
  const at = new Date(record.run.at).toISOString().replace(/[-:]/g, "").replace(/\.\d+Z$/, "Z");
  const safe = (s: string) => s.replace(/[^A-Za-z0-9._-]+/g, "-").slice(0, 60);
  const label = record.run.label ? `-${safe(record.run.label)}` : "";
  return `${at}-${safe(record.run.id)}${label}.json`;
}

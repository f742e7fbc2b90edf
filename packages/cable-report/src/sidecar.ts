// The sidecar file: what Artillery's JSON report leaves out (raw DDSketch
// histograms, the test's identity, `ensure` outcomes), written by the plugin
// beside the report and read back by the merger.
import { PERCENT } from "artillery-engine-cable/failed-users";
import { z } from "zod";
import { PERIOD_MS, phaseStartSchema, periodRecordSchema } from "./period.js";
import { RELATIVE_ACCURACY } from "./sketch-codec.js";
import { cleanServerName, redactTarget, TARGET_LIMITS } from "./target.js";
import { countRecordSchema, countSchema, listOf, maxPeriods, nameSchema, phaseSchema, sketchRecordSchema, TASK_FILE_LIMITS } from "./task-file.js";

export { decodeSketch, encodeSketch, RELATIVE_ACCURACY } from "./sketch-codec.js";

export const SIDECAR_FORMAT = "artillery-cable-report-sidecar";
/** 2 added each period's sketches and CPU, and the phases' start times; version 1 files still load. */
export const SIDECAR_VERSION = 2;
export const SIDECAR_SUFFIX = ".sketches.json";

/** `report.json` → `report.json.sketches.json`, in the same directory. */
export function sidecarPathFor(reportPath: string): string {
  return reportPath + SIDECAR_SUFFIX;
}

export function isSidecarPath(path: string): boolean {
  return path.endsWith(SIDECAR_SUFFIX);
}

export const serverWordsSchema = z.object({ error: nameSchema, cause: nameSchema, text: z.string().max(200) });
export type ServerWords = z.infer<typeof serverWordsSchema>;

/**
 * The server the task loaded (target.ts). Redacted and cleaned again as it is read: a file written
 * elsewhere, or by an older plugin, may hold what a URL must not keep.
 */
export const targetSchema = z.object({
  url: z
    .string()
    .max(TARGET_LIMITS.url * 8)
    .nullable()
    .transform((url) => (url === null ? null : redactTarget(url))),
  server: z
    .string()
    .max(TARGET_LIMITS.server * 4)
    .nullable()
    .transform((server) => (server === null ? null : cleanServerName(server))),
});

const checkSchema = z.object({
  check: nameSchema,
  strict: z.boolean(),
  passed: z.boolean(),
});

/**
 * Written by a task, read back by the merge: every figure, name and list bounded (task-file.ts). The
 * periods' bound is the task's span; their times are checked against the report's (task.ts).
 */
export const sidecarSchema = z.object({
  format: z.literal(SIDECAR_FORMAT),
  version: z.union([z.literal(1), z.literal(SIDECAR_VERSION)]),
  artilleryVersion: nameSchema,
  testRunId: nameSchema,
  test: z.object({
    name: nameSchema,
    scenarios: listOf(nameSchema),
    phases: listOf(phaseSchema, TASK_FILE_LIMITS.phases),
    /** The plugin's own `ensure` conditions on the time verdicts (verdict-checks.ts), as written. */
    verdictChecks: listOf(nameSchema).optional(),
    /** The plugin's `soakMinimum`, ms: the shortest run judged for drift, when lowered. */
    soakMinimumMs: z.number().finite().positive().optional(),
    /** `config.cable.maxFailedUsers` as the engine read it (failed-users.ts); absent in older sidecars: the default. */
    maxFailedUsers: z.union([z.number().int().nonnegative(), z.string().regex(PERCENT).max(20), z.literal(false)]).optional(),
    /** `config.cable.timeout` in ms: what a handshake's time is held against. */
    timeoutMs: z.number().finite().positive().optional(),
  }),
  relativeAccuracy: z.literal(RELATIVE_ACCURACY),
  aggregate: z.object({
    counters: countRecordSchema,
    rates: countRecordSchema,
    /** Metric name → base64 of `DDSketch.toProto()`. */
    histograms: sketchRecordSchema,
  }),
  /** Every metrics period: counters, rates and (version 2) raw sketches and the generator's CPU. */
  periods: listOf(periodRecordSchema, maxPeriods(PERIOD_MS)),
  /** When each phase started (version 2): the time series name them. */
  phaseStarts: listOf(phaseStartSchema).default([]),
  /** null: no `ensure` checks ran in that task. */
  checks: listOf(checkSchema).nullable(),
  /**
   * The server's own words for refusals, as the engine logged them (artillery-engine-cable's
   * server-words.ts): a few distinct texts per error key and cause. Absent before it was recorded.
   */
  serverWords: listOf(serverWordsSchema).optional(),
  /**
   * The server loaded: config.target without credentials, query or fragment, and what the server
   * said it is (the engine's `cable.server_software.<identity>` counters, when they name one
   * server). Absent in sidecars written before it was recorded.
   */
  target: targetSchema.optional(),
  /**
   * The generator's CPU: process CPU time (every thread) over wall time, in %
   * of `workers` threads, over the whole run since the first phase started and
   * in its busiest period. Absent in sidecars written before it was recorded.
   * The machine around it, where it could be read (absent otherwise, and in
   * sidecars written before it was recorded): its CPU steal over the run (%),
   * its busiest one-minute load average at a period's end, and the cores the
   * process may use; saturation.ts words a starved generator with them.
   */
  generator: z
    .object({
      workers: z.number().int().nonnegative().max(100_000),
      cpuMean: countSchema.nullable(),
      cpuPeak: countSchema.nullable(),
      stealPercent: z.number().finite().min(0).max(100).optional(),
      loadPeak: z.number().finite().min(0).max(1_000_000).optional(),
      cores: z.number().int().positive().max(100_000).optional(),
    })
    .optional(),
});

export type Sidecar = z.infer<typeof sidecarSchema>;
export type CheckOutcome = z.infer<typeof checkSchema>;
export type Phase = z.infer<typeof phaseSchema>;

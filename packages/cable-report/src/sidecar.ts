// The sidecar file: what Artillery's JSON report leaves out (raw DDSketch
// histograms, the test's identity, `ensure` outcomes), written by the plugin
// beside the report and read back by the merger.
import { z } from "zod";
import { phaseStartSchema, periodRecordSchema } from "./period.js";
import { RELATIVE_ACCURACY } from "./sketch-codec.js";

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

const numberRecord = z.record(z.string(), z.number());

const phaseSchema = z.record(z.string(), z.unknown());

export const serverWordsSchema = z.object({ error: z.string(), cause: z.string(), text: z.string().max(200) });
export type ServerWords = z.infer<typeof serverWordsSchema>;

const checkSchema = z.object({
  check: z.string(),
  strict: z.boolean(),
  passed: z.boolean(),
});

export const sidecarSchema = z.object({
  format: z.literal(SIDECAR_FORMAT),
  version: z.union([z.literal(1), z.literal(SIDECAR_VERSION)]),
  artilleryVersion: z.string(),
  testRunId: z.string(),
  test: z.object({
    name: z.string(),
    scenarios: z.array(z.string()),
    phases: z.array(phaseSchema),
    /** The plugin's own `ensure` conditions on the time verdicts (verdict-checks.ts), as written. */
    verdictChecks: z.array(z.string()).optional(),
    /** The plugin's `soakMinimum`, ms: the shortest run judged for drift, when lowered. */
    soakMinimumMs: z.number().positive().optional(),
  }),
  relativeAccuracy: z.literal(RELATIVE_ACCURACY),
  aggregate: z.object({
    counters: numberRecord,
    rates: numberRecord,
    /** Metric name → base64 of `DDSketch.toProto()`. */
    histograms: z.record(z.string(), z.string()),
  }),
  /** Every metrics period: counters, rates and (version 2) raw sketches and the generator's CPU. */
  periods: z.array(periodRecordSchema),
  /** When each phase started (version 2): the time series name them. */
  phaseStarts: z.array(phaseStartSchema).default([]),
  /** null: no `ensure` checks ran in that task. */
  checks: z.array(checkSchema).nullable(),
  /**
   * The server's own words for refusals, as the engine logged them (artillery-engine-cable's
   * server-words.ts): a few distinct texts per error key and cause. Absent before it was recorded.
   */
  serverWords: z.array(serverWordsSchema).optional(),
  /**
   * The generator's CPU: process CPU time (every thread) over wall time, in %
   * of `workers` threads, over the whole run since the first phase started and
   * in its busiest period. Absent in sidecars written before it was recorded.
   */
  generator: z
    .object({
      workers: z.number(),
      cpuMean: z.number().nullable(),
      cpuPeak: z.number().nullable(),
    })
    .optional(),
});

export type Sidecar = z.infer<typeof sidecarSchema>;
export type CheckOutcome = z.infer<typeof checkSchema>;
export type Phase = z.infer<typeof phaseSchema>;

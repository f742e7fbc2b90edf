// The merged result: what `--json` writes and `--baseline` reads back. The
// schema is the single definition of its shape; the types derive from it.
import { z } from "zod";

export const MERGED_FORMAT = "cable-report-merged";
/** 2 added the merged sketches, the generator's health and the tasks left out; version 1 files still load. */
export const MERGED_VERSION = 2;
export const ALL_REGIONS = "all regions";

const distributionSchema = z.object({
  count: z.number(),
  min: z.number(),
  max: z.number(),
  mean: z.number(),
  p50: z.number(),
  p75: z.number(),
  p90: z.number(),
  p95: z.number(),
  p99: z.number(),
  p999: z.number(),
  /** Percentiles interpolated from Artillery's summaries because some task had no sidecar. */
  approximate: z.boolean(),
  /** base64 of the merged `DDSketch.toProto()` when exact: what the regression gate tests. */
  sketch: z.string().optional(),
});

/** The load generator's own health in one task (see saturation.ts). */
const generatorTaskSchema = z.object({
  /** Report file, relative to the results directory. */
  file: z.string(),
  /** p99 of `cable.event_loop_lag` (ms); null when the engine recorded none. */
  lagP99: z.number().nullable(),
  /** Process CPU time over wall time, in % of the worker threads' capacity: whole run, and busiest period. */
  cpuMean: z.number().nullable(),
  cpuPeak: z.number().nullable(),
  saturated: z.boolean(),
  /** Why it counts as saturated, e.g. "event-loop lag p99 424 ms > 100 ms". */
  reasons: z.array(z.string()),
});

/** A task file that could not be used, and why. */
const rejectedSchema = z.object({
  file: z.string(),
  kind: z.enum(["corrupt", "duplicate"]),
  reason: z.string(),
});

const checkTallySchema = z.object({
  check: z.string(),
  strict: z.boolean(),
  passed: z.number(),
  failed: z.number(),
});

const columnSchema = z.object({
  name: z.string(),
  tasks: z.number(),
  /** Report files, relative to the results directory. */
  files: z.array(z.string()),
  counters: z.record(z.string(), z.number()),
  histograms: z.record(z.string(), distributionSchema),
  /** Per rate: mean and peak, over 10 s periods aligned by timestamp, of the sum over tasks. */
  rates: z.record(z.string(), z.object({ mean: z.number(), peak: z.number() })),
  /** Max over aligned periods of the summed per-period `cable.connections_open_period_peak`; null if never emitted. */
  peakOpenConnections: z.number().nullable(),
  checks: z.array(checkTallySchema),
  /** Tasks that recorded `ensure` outcomes (only tasks with a sidecar can). */
  tasksWithChecks: z.number(),
  firstMetricAt: z.number().nullable(),
  lastMetricAt: z.number().nullable(),
  generator: z.array(generatorTaskSchema).default([]),
  /** Task files that were corrupt or truncated (left out) or duplicates (counted once). */
  rejected: z.array(rejectedSchema).default([]),
});

const regionSchema = columnSchema.extend({
  expectedTasks: z.number(),
});

export const mergedSchema = z.object({
  format: z.literal(MERGED_FORMAT),
  version: z.union([z.literal(1), z.literal(MERGED_VERSION)]),
  test: z.object({
    /** "" when no task had a sidecar to name it. */
    name: z.string(),
    scenarios: z.array(z.string()),
    phases: z.array(z.record(z.string(), z.unknown())),
  }),
  regions: z.array(regionSchema),
  all: columnSchema,
  notes: z.array(z.string()),
});

export type Distribution = z.infer<typeof distributionSchema>;
export type GeneratorTask = z.infer<typeof generatorTaskSchema>;
export type RejectedFile = z.infer<typeof rejectedSchema>;
export type CheckTally = z.infer<typeof checkTallySchema>;
export type Column = z.infer<typeof columnSchema>;
export type RegionColumn = z.infer<typeof regionSchema>;
export type MergedResults = z.infer<typeof mergedSchema>;

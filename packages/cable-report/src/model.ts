// The merged result: what `--json` writes and `--baseline` reads back. The
// schema is the single definition of its shape; the types derive from it.
import { z } from "zod";

export const MERGED_FORMAT = "cable-report-merged";
export const MERGED_VERSION = 1;
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
  /** Max over aligned periods of the summed per-period `cable.connections_open_peak`; null if never emitted. */
  peakOpenConnections: z.number().nullable(),
  checks: z.array(checkTallySchema),
  /** Tasks that recorded `ensure` outcomes (only tasks with a sidecar can). */
  tasksWithChecks: z.number(),
  firstMetricAt: z.number().nullable(),
  lastMetricAt: z.number().nullable(),
});

const regionSchema = columnSchema.extend({
  expectedTasks: z.number(),
});

export const mergedSchema = z.object({
  format: z.literal(MERGED_FORMAT),
  version: z.literal(MERGED_VERSION),
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
export type CheckTally = z.infer<typeof checkTallySchema>;
export type Column = z.infer<typeof columnSchema>;
export type RegionColumn = z.infer<typeof regionSchema>;
export type MergedResults = z.infer<typeof mergedSchema>;

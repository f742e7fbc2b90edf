// The merged result: what `--json` writes and `--baseline` reads back. The
// schema is the single definition of its shape; the types derive from it. Records keyed by names
// from outside (metrics, regions, error codes) are read without a prototype (task-file.ts byName).
import { z } from "zod";
import { nameRecordSchema as byNames, phaseSchema } from "./task-file.js";

export const MERGED_FORMAT = "cable-report-merged";
/**
 * 2 added the merged sketches, the generator's health and the tasks left out; 3 the time series
 * (`series` in every column, `timeline` at the top). Versions 1 and 2 still load.
 */
export const MERGED_VERSION = 3;
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
  /** The lag as the report shows it (saturation.ts lagFigure): p99 over 100 samples or more, else the max; absent before it. */
  lag: z.object({ stat: z.enum(["p99", "max"]), ms: z.number(), samples: z.number() }).nullable().optional(),
  /** Process CPU time over wall time, in % of the worker threads' capacity: whole run, and busiest period. */
  cpuMean: z.number().nullable(),
  cpuPeak: z.number().nullable(),
  /** The generator itself was the limit (saturation.ts). */
  saturated: z.boolean(),
  /**
   * Late while using little CPU of its own: its machine was busy with other work (saturation.ts).
   * Never with `saturated`; absent where false, and in files written before it (they said saturated).
   */
  starved: z.boolean().optional(),
  /** Why it counts as saturated or starved, e.g. "event-loop lag p99 424 ms > 100 ms". */
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

/** One value per period of the column's `periods`; null where the period has nothing to say. */
const perPeriod = z.array(z.number().nullable());

/**
 * What happened when, in one column (a region, or all regions): one entry per 10 s period, aligned
 * by timestamp across tasks (series.ts). Latency percentiles come from each period's DDSketches
 * merged across the column's tasks, never from averaged percentiles.
 */
export const seriesSchema = z.object({
  /** Period starts, epoch ms, ascending, every 10 s from the column's first period to its last (gaps included). */
  periods: z.array(z.number()),
  /** Per latency histogram (`cable.*`): samples, p50, p95 and p99 per period (null: no sample). */
  latency: byNames(z.object({ count: perPeriod, p50: perPeriod, p95: perPeriod, p99: perPeriod, approximate: z.boolean() }), "latency"),
  /** Open connections: each task's most-at-once in the period (`cable.connections_open_period_peak`), summed. */
  connections: perPeriod,
  /**
   * Virtual users created, completed and failed in each period, active (created so far minus ended
   * so far) at its end, and connected in it (`cable.connections`; absent from merged.json v3 files
   * written before it).
   */
  users: z.object({ created: perPeriod, completed: perPeriod, failed: perPeriod, active: perPeriod, connected: perPeriod.optional() }),
  /** Messages a second over each period (`cable.messages_sent` / `cable.messages_received` ÷ 10 s). */
  messages: z.object({ sent: perPeriod, received: perPeriod }),
  /** Per error code (`errors.*`), its count in each period; `total` sums them. */
  errors: byNames(perPeriod, "errors"),
  /**
   * Each task's generator per period: its event-loop lag (ms; the period's max: a period holds too
   * few samples for a p99, saturation.ts) and CPU (% of its worker cores).
   */
  generator: z.array(z.object({ file: z.string(), lagP99: perPeriod, cpu: perPeriod })),
});

const columnSchema = z.object({
  name: z.string(),
  tasks: z.number(),
  /** Report files, relative to the results directory. */
  files: z.array(z.string()),
  counters: byNames(z.number(), "counters"),
  histograms: byNames(distributionSchema, "histograms"),
  /** Per rate: mean and peak, over 10 s periods aligned by timestamp, of the sum over tasks. */
  rates: byNames(z.object({ mean: z.number(), peak: z.number() }), "rates"),
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
  /** Absent in merged files before version 3. */
  series: seriesSchema.optional(),
  /** Tasks rebuilt from their live periods: stopped before Artillery wrote their report (live-task.ts). */
  partialTasks: z.number().default(0),
});

const regionSchema = columnSchema.extend({
  expectedTasks: z.number(),
});

/** The server's own figures over time (`--server-metrics`: a Prometheus endpoint scraped by the runner). */
export const serverSeriesSchema = z.object({
  /** Scrape times, epoch ms. */
  at: z.array(z.number()),
  /** vCPU the server used since the scrape before (Δ process_cpu_seconds_total ÷ Δ wall seconds). */
  vcpu: perPeriod,
  memoryMiB: perPeriod,
  connections: perPeriod,
});

/** The run's time axis, shared by every column's series. */
export const timelineSchema = z.object({
  periodMs: z.number(),
  /**
   * The load's start, epoch ms: elapsed times count from it (the first phase's start; files before
   * the phases' own ends held the first period's start).
   */
  start: z.number().nullable(),
  /**
   * Each phase as it ran: its earliest start over the tasks (they start together behind the
   * fan-out's barrier), its end that start plus its written duration (phases.ts phaseBounds).
   */
  phases: z.array(z.object({ index: z.number(), name: z.string(), startTime: z.number(), endTime: z.number().nullable() })),
  server: serverSeriesSchema.nullable(),
  /** What stopped the run early (`cable-fanout run --abort-on`), if anything. */
  aborted: z.object({ condition: z.string(), at: z.number(), figure: z.string() }).nullable().default(null),
});

/** One column's recovery from one spike (recovery.ts). */
export const spikeColumnSchema = z.object({
  /** Median p95 of the last whole periods of the phase before, ms; null when there were none. */
  before: z.number().nullable(),
  /** The highest p95 of a period overlapping the spike phase, ms. */
  worst: z.number().nullable(),
  /** The p95 a period must be at or under to count as recovered, ms. */
  threshold: z.number().nullable(),
  /** From the spike phase's end to the start of the first recovered stretch; null: not recovered by the end of the run. */
  recoveredAfterMs: z.number().nullable(),
  recoveredAt: z.number().nullable(),
});

export const spikeSchema = z.object({
  phase: z.string(),
  index: z.number(),
  /** The latency judged: the main one (broadcast latency when there is one). */
  metric: z.string(),
  start: z.number(),
  end: z.number().nullable(),
  rateBefore: z.number(),
  rate: z.number(),
  /** By column name (each region, and all regions). */
  columns: byNames(spikeColumnSchema, "columns"),
});

/** A reconnect storm in one column: how long until the dropped users were back (storms.ts). */
export const stormColumnSchema = z.object({
  /** Users whose connection dropped: back (`cable.restore_latency` samples) plus never back (`cable.reconnect_timeout`). */
  dropped: z.number(),
  back: z.number(),
  never: z.number(),
  /** From the drop until 50%, 95% and all of the dropped users were back, ms; null: that many never came back. */
  halfBackMs: z.number().nullable(),
  mostBackMs: z.number().nullable(),
  allBackMs: z.number().nullable(),
  /** Read from the summary's percentiles, not a sketch. */
  approximate: z.boolean(),
});

/** A connection storm in one column: how long after its phase began the users were connected (storms.ts). */
export const connectStormColumnSchema = z.object({
  phase: z.string(),
  /** The storm phase's start, epoch ms: the times below count from it. */
  start: z.number(),
  users: z.number(),
  connected: z.number(),
  /** Users created that never connected (created − `cable.connections`). */
  never: z.number(),
  /** From the phase's start until 50%, 95% and all of its users were connected, ms; null: that many never were. */
  halfMs: z.number().nullable(),
  mostMs: z.number().nullable(),
  allMs: z.number().nullable(),
  /** "arrivals": held to the arrivals and the engine's handshake latencies; "periods": read off the 10 s periods alone. */
  basis: z.enum(["arrivals", "periods"]),
});

/** A trend over the run (drift.ts): Theil–Sen per hour with its 95% interval, judged against a floor. */
export const driftVerdictSchema = z.object({
  kind: z.enum(["drifting", "flat", "too-short", "no-data"]),
  perHour: z.number().nullable(),
  low: z.number().nullable(),
  high: z.number().nullable(),
  level: z.number().nullable(),
  relativePerHour: z.number().nullable(),
  reason: z.string(),
});

/** Answers that need time: each spike's recovery, the reconnect storm's completion per column, a soak's drift. */
export const verdictsSchema = z.object({
  spikes: z.array(spikeSchema),
  storms: byNames(stormColumnSchema, "storms").default({}),
  /** A run whose users all arrive in one burst (connection-storm.yml): until when they were connected, per column. */
  connects: byNames(connectStormColumnSchema, "connects").default({}),
  /** `config.plugins.cable-report.ensure` conditions (verdict-checks.ts), judged per column. */
  checks: z.array(z.object({ check: z.string(), columns: byNames(z.object({ passed: z.boolean(), value: z.string() }), "columns") })).default([]),
  /** Runs of at least 10 minutes: the main latency's p95 per column, and the server's memory (--server-metrics). */
  drift: z
    .object({
      metric: z.string().nullable(),
      latency: byNames(driftVerdictSchema, "latency"),
      memory: driftVerdictSchema.nullable(),
    })
    .nullable()
    .default(null),
});

export const mergedSchema = z.object({
  format: z.literal(MERGED_FORMAT),
  version: z.union([z.literal(1), z.literal(2), z.literal(MERGED_VERSION)]),
  test: z.object({
    /** "" when no task had a sidecar to name it. */
    name: z.string(),
    scenarios: z.array(z.string()),
    phases: z.array(phaseSchema),
    /** `config.cable.maxFailedUsers` (failed-users.ts); absent: the default, 0. */
    maxFailedUsers: z.union([z.number(), z.string(), z.literal(false)]).optional(),
    /** `config.cable.timeout`, ms; absent in older results. */
    timeoutMs: z.number().optional(),
  }),
  regions: z.array(regionSchema),
  all: columnSchema,
  notes: z.array(z.string()),
  /** Absent in merged files before version 3. */
  timeline: timelineSchema.optional(),
  verdicts: verdictsSchema.optional(),
  /**
   * The server loaded: scheme, host, port and path (no credentials, no query), and the server's own
   * name and version where it gave one (absent in files written before it; null when the tasks
   * disagreed or none said).
   */
  target: z.object({ url: z.string().nullable(), server: z.string().nullable() }).optional(),
  /**
   * How far two tasks' clocks may disagree by their error bounds (ms; cable-fanout collect, from each
   * task's status): what a cross-task latency (cable.broadcast_latency) carries. null: unknown;
   * absent: not measured (a plain merge).
   */
  clockBoundMs: z.number().nullable().optional(),
  /** The server's own words for refusals, a few per error key and cause, from every task (absent: none logged). */
  serverWords: z.array(z.object({ error: z.string(), cause: z.string(), text: z.string() })).optional(),
  /** A run still going, drawn by the live page from the periods merged so far (live.ts); absent once it ended. */
  live: z.object({ asOf: z.number() }).optional(),
});

export type Distribution = z.infer<typeof distributionSchema>;
export type GeneratorTask = z.infer<typeof generatorTaskSchema>;
export type RejectedFile = z.infer<typeof rejectedSchema>;
export type CheckTally = z.infer<typeof checkTallySchema>;
export type Column = z.infer<typeof columnSchema>;
export type RegionColumn = z.infer<typeof regionSchema>;
export type MergedResults = z.infer<typeof mergedSchema>;
export type Series = z.infer<typeof seriesSchema>;
export type ServerSeries = z.infer<typeof serverSeriesSchema>;
export type Timeline = z.infer<typeof timelineSchema>;
export type Spike = z.infer<typeof spikeSchema>;
export type SpikeColumn = z.infer<typeof spikeColumnSchema>;
export type Verdicts = z.infer<typeof verdictsSchema>;
export type StormColumn = z.infer<typeof stormColumnSchema>;
export type ConnectStormColumn = z.infer<typeof connectStormColumnSchema>;

import { z } from "zod";

/**
 * How far the task's clock may be from true time (clock-bound.ts): cross-task latencies (a
 * broadcast stamped by one task, received by another) carry up to the sum of two tasks' bounds.
 */
export const taskClockSchema = z.object({
  /** The clock error bound, ms (the largest of the task's readings); null: not known. */
  errorBoundMs: z.number().nonnegative().nullable(),
  /** Where it comes from: ECS task metadata (Amazon Time Sync) on Fargate, `chronyc tracking` elsewhere, the kernel's NTP state (`adjtimex`) without chrony, or nowhere. */
  source: z.enum(["fargate", "chrony", "kernel", "unknown"]),
  /** Whether the clock was synchronized at every reading; absent when the source does not say. */
  synchronized: z.boolean().optional(),
});
export type TaskClock = z.infer<typeof taskClockSchema>;

/*
 * How a task ends: one closed union, two writers. The task writes what it saw into status.json
 * (`end`); the runner writes what it decided when it stopped a task into its record (fanout.json
 * `stops`), so a task killed before it wrote its status is still known. cable-fanout's
 * run/task-end.ts reads both into one TaskEnd and the outcome the report shows.
 *
 *   by                 written by                 means
 *   phases-done        task                       Artillery ran to its end by itself, exit 0
 *   artillery-failed   task                       Artillery exited non-zero by itself, or died of a signal the task did not send
 *   stop-signal        task                       the worker got a stop signal (StopTask, a kill) from someone it cannot name
 *   max-duration       task, runner               the run's --max-duration passed (on the task's clock, or the runner's)
 *   heartbeat          task                       the runner's heartbeat went stale: the runner is gone
 *   go-cancelled       task                       the go marker called the run off before the start
 *   barrier-missed     task, runner               the run started without this task
 *   crash              task                       set-up, Artillery's start or an upload failed
 *   abort              runner                     --abort-on stopped the run
 *   interrupt          runner                     the runner was interrupted (Ctrl-C, a signal)
 *   barrier-failed     runner                     too few tasks were ready: the run never started
 *   capacity-stop      runner                     the capacity search had its answer and ended the run
 *   start-timeout      runner                     the task did not start within --start-timeout
 *   watch-lost         runner                     DescribeTasks kept failing: the runner gave the region up
 */
const phasesDone = z.object({ by: z.literal("phases-done") });
const artilleryFailed = z.object({ by: z.literal("artillery-failed"), exitCode: z.number().int().nullable(), signal: z.string().nullable() });
const stopSignal = z.object({ by: z.literal("stop-signal"), signal: z.string() });
const maxDuration = z.object({ by: z.literal("max-duration"), limitMs: z.number().nonnegative() });
const heartbeat = z.object({ by: z.literal("heartbeat"), silentMs: z.number().nonnegative() });
const goCancelled = z.object({ by: z.literal("go-cancelled"), reason: z.string() });
const barrierMissed = z.object({ by: z.literal("barrier-missed") });
const crash = z.object({ by: z.literal("crash"), reason: z.string() });
const abort = z.object({ by: z.literal("abort") });
const interrupt = z.object({ by: z.literal("interrupt") });
const barrierFailed = z.object({ by: z.literal("barrier-failed") });
const capacityStop = z.object({ by: z.literal("capacity-stop") });
const startTimeout = z.object({ by: z.literal("start-timeout") });
const watchLost = z.object({ by: z.literal("watch-lost") });

/** What a task can see of its own end: status.json's `end`. */
export const seenEndSchema = z.discriminatedUnion("by", [phasesDone, artilleryFailed, stopSignal, maxDuration, heartbeat, goCancelled, barrierMissed, crash]);
export type SeenEnd = z.infer<typeof seenEndSchema>;
/** Why the runner stopped a task: fanout.json's `stops`. */
export const runnerStopSchema = z.discriminatedUnion("by", [abort, maxDuration, interrupt, barrierMissed, barrierFailed, capacityStop, startTimeout, watchLost]);
export type RunnerStop = z.infer<typeof runnerStopSchema>;
export const taskEndSchema = z.union([seenEndSchema, runnerStopSchema]);
export type TaskEnd = SeenEnd | RunnerStop;
/** The task's own stops (TaskStops): what ends it before its Artillery ends. */
export type SelfStop = Extract<SeenEnd, { by: "stop-signal" | "max-duration" | "heartbeat" }>;

/** The words status.json's reason begins with for a task that stopped early. */
export function describeStop(stop: SelfStop): string {
  switch (stop.by) {
    case "stop-signal":
      return `the task was stopped (${stop.signal})`;
    case "max-duration":
      return `the run's --max-duration (${Math.round(stop.limitMs / 1000)} s) passed`;
    case "heartbeat":
      return `the runner's heartbeat has not changed for ${Math.round(stop.silentMs / 1000)} s (runner gone?)`;
    default:
      return unreachable(stop);
  }
}

/** A `switch` over a closed union ends here: a member added to it without a case fails to compile. */
export function unreachable(value: never): never {
  throw new Error(`unexpected value: ${JSON.stringify(value)}`);
}

/** `runs/<runId>/<region>/<taskId>/status.json`: the last file a task writes, read by the fan-out runner. */
export const taskStatusSchema = z.object({
  runId: z.string(),
  region: z.string(),
  taskId: z.string(),
  /** The worker's exit code (EXIT): 0 ok, 1 artillery failed, 2 set-up failed, 3 upload failed. */
  exitCode: z.number().int(),
  /** One line; null on success. */
  reason: z.string().nullable(),
  /** ISO 8601. */
  startedAt: z.string(),
  endedAt: z.string(),
  /** How late Artillery started after the manifest's startAt, in ms (null: no startAt, or never started). */
  startLagMs: z.number().nullable(),
  artilleryExitCode: z.number().nullable(),
  /** Epoch ms (the task's clock) when the ready marker was written; absent without a barrier. */
  readyAt: z.number().nullable().optional(),
  /** Epoch ms (the task's clock) when Artillery was started: the start skew across tasks comes from these. */
  loadStartedAt: z.number().nullable().optional(),
  /** Epoch ms of Artillery's first metric (report.json `aggregate.firstMetricAt`): when load really began. */
  firstMetricAt: z.number().nullable().optional(),
  /** The start time the task waited for (the go marker's, or the manifest's). */
  startAt: z.number().nullable().optional(),
  /** The task's clock error bound, read at its start and at its end; absent from older workers. */
  clock: taskClockSchema.optional(),
  /**
   * How the task ended, as it saw it. Absent from workers before it: the runner then reads the
   * status by its exit codes alone (cable-fanout run/task-end.ts), as it did before.
   */
  end: seenEndSchema.optional(),
});
export type TaskStatus = z.infer<typeof taskStatusSchema>;

export const EXIT = { ok: 0, artillery: 1, setup: 2, upload: 3 } as const;

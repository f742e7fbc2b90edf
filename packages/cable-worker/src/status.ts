import { z } from "zod";

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
});
export type TaskStatus = z.infer<typeof taskStatusSchema>;

export const EXIT = { ok: 0, artillery: 1, setup: 2, upload: 3 } as const;

/** How status.json's reason begins for a task stopped from outside (ECS StopTask): the runner tells the stops it asked for by it. */
export const STOPPED_FROM_OUTSIDE = "the task was stopped";

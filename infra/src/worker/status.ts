/** `runs/<runId>/<region>/<taskId>/status.json`: the last file a task writes, read by the fan-out runner. */
export interface TaskStatus {
  runId: string;
  region: string;
  taskId: string;
  /** The worker's exit code (EXIT): 0 ok, 1 artillery failed, 2 set-up failed, 3 upload failed. */
  exitCode: number;
  /** One line; null on success. */
  reason: string | null;
  /** ISO 8601. */
  startedAt: string;
  endedAt: string;
  /** How late Artillery started after the manifest's startAt, in ms (null: no startAt, or never started). */
  startLagMs: number | null;
  artilleryExitCode: number | null;
  /** Epoch ms (the task's clock) when the ready marker was written; absent without a barrier. */
  readyAt?: number | null;
  /** Epoch ms (the task's clock) when Artillery was started: the start skew across tasks comes from these. */
  loadStartedAt?: number | null;
  /** Epoch ms of Artillery's first metric (report.json `aggregate.firstMetricAt`): when load really began. */
  firstMetricAt?: number | null;
  /** The start time the task waited for (the go marker's, or the manifest's). */
  startAt?: number | null;
}

export const EXIT = { ok: 0, artillery: 1, setup: 2, upload: 3 } as const;

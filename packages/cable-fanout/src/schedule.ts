// Pure scheduling arithmetic: how tasks are split into RunTask calls and how long to wait between tries.

/** ECS RunTask starts at most 10 tasks per call. */
export const RUN_TASK_MAX_COUNT = 10;

/** Splits `count` tasks into RunTask calls of at most `size`: 23 → [10, 10, 3]. */
export function batches(count: number, size: number = RUN_TASK_MAX_COUNT): number[] {
  if (!Number.isInteger(count) || count < 0) throw new RangeError(`task count must be a whole number ≥ 0, not ${count}`);
  if (!Number.isInteger(size) || size < 1) throw new RangeError(`batch size must be a whole number ≥ 1, not ${size}`);
  const out: number[] = [];
  for (let left = count; left > 0; left -= size) out.push(Math.min(size, left));
  return out;
}

export interface Backoff {
  /** Delay before the first retry. */
  baseMs: number;
  /** No delay grows beyond this. */
  maxMs: number;
  /** Tries in all, the first included. */
  attempts: number;
}

/** Delay before retry number `retry` (1 = the first retry): base · 2^(retry−1), capped. */
export function backoffDelay(retry: number, backoff: Backoff): number {
  return Math.min(backoff.maxMs, backoff.baseMs * 2 ** Math.max(0, retry - 1));
}

/** Every delay of a schedule, for logs and tests: attempts − 1 of them. */
export function backoffSchedule(backoff: Backoff): number[] {
  return Array.from({ length: Math.max(0, backoff.attempts - 1) }, (_, i) => backoffDelay(i + 1, backoff));
}

/** RunTask: Artillery's run-fargate waits 10 s before retrying capacity failures. */
export const RUN_TASK_BACKOFF: Backoff = { baseMs: 2_000, maxMs: 30_000, attempts: 6 };

/** Spot with a fallback: a few quick tries (about 6 s), then the rest go to FARGATE rather than wait a minute. */
export const SPOT_BACKOFF: Backoff = { baseMs: 2_000, maxMs: 4_000, attempts: 3 };

/** StopTask under throttling: a stop must get through, so it keeps trying for about a minute per call. */
export const STOP_TASK_BACKOFF: Backoff = { baseMs: 1_000, maxMs: 16_000, attempts: 7 };

/** Re-sending StopTask to tasks that still run after it: every 5, 10, 20, 30, 30… s until DescribeTasks says STOPPED. */
export const RESTOP_BACKOFF: Backoff = { baseMs: 5_000, maxMs: 30_000, attempts: Number.MAX_SAFE_INTEGER };

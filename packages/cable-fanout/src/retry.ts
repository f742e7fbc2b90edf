// Starting a region's tasks: RunTask calls of at most 10, each retried with backoff on throttling and
// on capacity failures. The ECS call is a parameter, so the loop is tested without the SDK.
import { backoffDelay, batches, type Backoff, RUN_TASK_BACKOFF } from "./schedule.js";

export interface BatchResult<T> {
  started: T[];
  /** ECS `failures[].reason` (and detail), one per task it could not place. */
  failures: string[];
}

export interface StartResult<T> extends BatchResult<T> {
  /** The distinct reasons behind `failures`, as ECS or the SDK gave them (what a fallback decides on). */
  reasons: string[];
}

export interface RetryDeps {
  sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  log: (line: string) => void;
  abort: AbortSignal;
  backoff?: Backoff;
}

/** Names AWS gives throttling, in SDK v3 errors. */
const THROTTLING_NAMES = new Set(["ThrottlingException", "Throttling", "TooManyRequestsException", "RequestLimitExceeded", "ProvisionedThroughputExceededException"]);

export function isThrottling(err: unknown): boolean {
  const e = err as { name?: string; message?: string; $metadata?: { httpStatusCode?: number } };
  return THROTTLING_NAMES.has(e?.name ?? "") || e?.$metadata?.httpStatusCode === 429 || /rate exceeded/i.test(e?.message ?? "");
}

/**
 * RunTask placement failures worth waiting out: no Fargate (Spot) capacity right now, or throttling.
 * Anything else (bad subnet, missing task definition, the account's task quota) will not go away.
 */
export function isRetryableFailure(reason: string): boolean {
  return /capacity|RESOURCE:|throttl|rate exceeded/i.test(reason);
}

/** ECS's answer when Fargate (Spot) has no capacity for the task now: RunTask succeeds with a failure per task. */
export function isCapacityFailure(reason: string): boolean {
  return /capacity/i.test(reason);
}

/** Starts `count` tasks through `runBatch(n)` (n ≤ 10), batch after batch; returns what started and why the rest did not. */
export async function startInBatches<T>(count: number, runBatch: (n: number) => Promise<BatchResult<T>>, deps: RetryDeps): Promise<StartResult<T>> {
  const backoff = deps.backoff ?? RUN_TASK_BACKOFF;
  const started: T[] = [];
  const failures: string[] = [];
  const lasting = new Set<string>();
  for (const size of batches(count)) {
    let remaining = size;
    for (let attempt = 1; remaining > 0; attempt++) {
      if (deps.abort.aborted) {
        failures.push(`${remaining} task(s) not started: the run was stopped`);
        lasting.add("the run was stopped");
        break;
      }
      let reasons: string[];
      let retryable: boolean;
      try {
        const result = await runBatch(remaining);
        started.push(...result.started);
        remaining -= result.started.length;
        if (remaining <= 0) break;
        reasons = result.failures.length > 0 ? [...new Set(result.failures)] : ["RunTask started fewer tasks than asked, without a reason"];
        retryable = result.failures.length > 0 && result.failures.every(isRetryableFailure);
      } catch (err) {
        const e = err as Error;
        reasons = [`${e.name}: ${e.message}`];
        retryable = isThrottling(err);
      }
      if (!retryable || attempt >= backoff.attempts) {
        failures.push(`${remaining} task(s) not started after ${attempt} ${attempt === 1 ? "try" : "tries"}: ${reasons.join("; ")}`);
        for (const r of reasons) lasting.add(r);
        break;
      }
      const delay = backoffDelay(attempt, backoff);
      deps.log(`${remaining} task(s) not started (${reasons.join("; ")}); retrying in ${Math.round(delay / 1000)} s`);
      await deps.sleep(delay, deps.abort);
    }
  }
  return { started, failures, reasons: [...lasting] };
}

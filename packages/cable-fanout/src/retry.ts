// Starting a region's tasks: RunTask calls of at most 10 tasks, tried in rounds, each round's
// leftovers again after a backoff on throttling and on capacity failures. The ECS call is a
// parameter, so the loop is tested without the SDK.
import { backoffDelay, batches, type Backoff, RUN_TASK_BACKOFF } from "./schedule.js";

export interface BatchResult<T> {
  started: T[];
  /** ECS `failures[].reason` (and detail), one per task it could not place. */
  failures: string[];
}

export interface StartResult<T> extends BatchResult<T> {
  /** The distinct reasons behind `failures`, as ECS or the SDK gave them (what a fallback decides on). */
  reasons: string[];
  /** The tasks not started, by their number in the region (what a fallback starts elsewhere). */
  unstarted: number[];
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

/**
 * Starts the tasks `slots` (their numbers in the region) in calls of at most `batchSize` through
 * `runBatch`; a call that starts fewer than asked leaves its last tasks to the next round. Every
 * round tries each call still short once, so one call's backoff does not hold the others up (a
 * run whose tasks start one per call would otherwise wait out Spot task by task).
 */
export async function startInBatches<T>(slots: readonly number[], batchSize: number, runBatch: (slots: number[]) => Promise<BatchResult<T>>, deps: RetryDeps): Promise<StartResult<T>> {
  const backoff = deps.backoff ?? RUN_TASK_BACKOFF;
  const started: T[] = [];
  const unstarted: number[] = [];
  // "not started after 2 tries: <reasons>" → how many tasks, so that calls failing alike make one line.
  const failures = new Map<string, number>();
  const lasting = new Set<string>();
  const giveUp = (left: number[], why: string, reasons: string[]) => {
    unstarted.push(...left);
    failures.set(why, (failures.get(why) ?? 0) + left.length);
    for (const r of reasons) lasting.add(r);
  };
  let offset = 0;
  let pending = batches(slots.length, batchSize).map((size) => slots.slice(offset, (offset += size)));
  for (let attempt = 1; pending.length > 0; attempt++) {
    const retry: number[][] = [];
    const retryReasons = new Set<string>();
    for (const call of pending) {
      if (deps.abort.aborted) {
        giveUp(call, "not started: the run was stopped", ["the run was stopped"]);
        continue;
      }
      let left = call;
      let reasons: string[];
      let retryable: boolean;
      try {
        const result = await runBatch(call);
        started.push(...result.started);
        left = call.slice(result.started.length);
        if (left.length === 0) continue;
        reasons = result.failures.length > 0 ? [...new Set(result.failures)] : ["RunTask started fewer tasks than asked, without a reason"];
        retryable = result.failures.length > 0 && result.failures.every(isRetryableFailure);
      } catch (err) {
        const e = err as Error;
        reasons = [`${e.name}: ${e.message}`];
        retryable = isThrottling(err);
      }
      if (!retryable || attempt >= backoff.attempts) {
        giveUp(left, `not started after ${attempt} ${attempt === 1 ? "try" : "tries"}: ${reasons.join("; ")}`, reasons);
        continue;
      }
      retry.push(left);
      for (const r of reasons) retryReasons.add(r);
    }
    pending = retry;
    if (pending.length === 0) break;
    const delay = backoffDelay(attempt, backoff);
    deps.log(`${pending.flat().length} task(s) not started (${[...retryReasons].join("; ")}); retrying in ${Math.round(delay / 1000)} s`);
    await deps.sleep(delay, deps.abort);
  }
  return { started, failures: [...failures].map(([why, tasks]) => `${tasks} task(s) ${why}`), reasons: [...lasting], unstarted };
}

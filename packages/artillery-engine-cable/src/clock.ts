import { performance } from "node:perf_hooks";

// Epoch milliseconds that never step backwards within a process: a stamp written and read by two
// VUs of the same process measures with the monotonic clock, and still compares with other
// processes' wall clocks.
const origin = performance.timeOrigin;

export function nowMs(): number {
  return origin + performance.now();
}

/** A timer handle, whatever the clock's timers are. */
export type TimerHandle = { readonly __timer?: never } | NodeJS.Timeout;

/**
 * Time as a connection sees it: injected, so that tests drive keepalives, staleness and timeouts
 * with a fake clock instead of waiting for real seconds.
 */
export interface Clock {
  now(): number;
  setTimeout(fn: () => void, ms: number): TimerHandle;
  clearTimeout(timer: TimerHandle): void;
}

export const systemClock: Clock = {
  now: nowMs,
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (timer) => clearTimeout(timer as NodeJS.Timeout),
};

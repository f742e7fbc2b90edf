import { performance } from "node:perf_hooks";

// Epoch milliseconds that never step backwards within a process: a stamp written and read by two
// VUs of the same process measures with the monotonic clock, and still compares with other
// processes' wall clocks.
const origin = performance.timeOrigin;

export function nowMs(): number {
  return origin + performance.now();
}

// An `ensure` check on a count that could not have moved passes without having tested anything:
// `cable.failed_subscriptions == 0` holds when every user failed at the handshake, since no user
// got as far as subscribing (issue 51). Such a check is "not evaluated", never "passed". Pure.
import { METRICS } from "artillery-engine-cable/metrics";

type Counters = Record<string, number>;

interface Coverage {
  /** The metric a check names. */
  metric: string;
  /** How many times what it counts was tried; 0 means the check could not fail. */
  attempts: (counters: Counters) => number;
  /** Why it was not evaluated, for the report and the console. */
  why: string;
}

const count = (counters: Counters, name: string) => counters[name] ?? 0;

// Only counts the engine records as 0 for users that never tried: the others are absent then, and
// Artillery's ensure already fails a check on an absent metric.
const COVERAGE: Coverage[] = [
  {
    metric: METRICS.failedSubscriptions,
    // `cable.subscriptions` counts confirmed ones, `cable.failed_subscriptions` the users whose subscription failed.
    attempts: (c) => count(c, METRICS.subscriptions) + count(c, METRICS.failedSubscriptions),
    why: "no subscription was attempted",
  },
];

/** Whether the check's text names the metric (not a longer one that starts with it). */
function names(check: string, metric: string): boolean {
  let at = check.indexOf(metric);
  while (at >= 0) {
    const after = check[at + metric.length];
    const before = at === 0 ? "" : check[at - 1];
    if (!/[\w.]/.test(before) && (after === undefined || !/[\w]/.test(after))) return true;
    at = check.indexOf(metric, at + 1);
  }
  return false;
}

/** Why `check` tested nothing on these counters, or null when it did. */
export function notEvaluated(check: string, counters: Counters): string | null {
  if (count(counters, "vusers.created") === 0) return "no virtual user was created";
  for (const c of COVERAGE) {
    if (names(check, c.metric) && c.attempts(counters) === 0) return c.why;
  }
  return null;
}

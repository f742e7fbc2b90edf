// The default failure line (`config.cable.maxFailedUsers`): how many virtual users may fail before
// a run stops being a pass. A first run has no baseline and often no `ensure`; without this line a
// run in which every user failed exited 0 and looked green (issue 51). Pure, shared by the engine
// (each worker thread), the report plugin (the main thread's totals) and the fan-out (the merged
// run), so the three judge alike.

/** `config.cable.maxFailedUsers` as read: a count, a share of the users created ("5%"), or off. */
export type MaxFailedUsers = number | `${number}%` | false;

/** No user may fail: the line a run gets unless its scenario says otherwise. */
export const DEFAULT_MAX_FAILED_USERS: MaxFailedUsers = 0;

/**
 * The fan-out judges its merged run once; a task's Artillery must not also exit 1 for its own share
 * (the runner would read that as a failed task). The worker sets this variable for its Artillery.
 */
export const JUDGED_BY_RUNNER_ENV = "CABLE_FAILED_USERS_JUDGED_BY_RUNNER";

export const PERCENT = /^(\d+(?:\.\d+)?)%$/;

export interface FailedUsersVerdict {
  /** More users failed than the line allows. */
  over: boolean;
  failed: number;
  created: number;
  /** The line as the scenario wrote it: "0", "5%", "off". */
  line: string;
}

export function describeLine(max: MaxFailedUsers): string {
  return max === false ? "off" : String(max);
}

/** The most users that may fail out of `created`; Infinity when the line is off. */
export function allowedFailures(max: MaxFailedUsers, created: number): number {
  if (max === false) return Infinity;
  if (typeof max === "number") return max;
  const share = Number(PERCENT.exec(max)?.[1] ?? 0);
  return (share / 100) * created;
}

export function judgeFailedUsers(max: MaxFailedUsers, counts: { created: number; failed: number }): FailedUsersVerdict {
  return { over: counts.failed > allowedFailures(max, counts.created), failed: counts.failed, created: counts.created, line: describeLine(max) };
}

/**
 * What a worker thread can decide alone: its own failures over a count mean the whole run's are
 * too. A share needs every thread's users, so the main thread's plugin judges it.
 */
export function workerCanJudge(max: MaxFailedUsers): max is number {
  return typeof max === "number";
}

/** The console line of a run over its line, the same words in `artillery run` and `cable-fanout`. */
export function overLineMessage(v: FailedUsersVerdict, exit: string): string {
  const of = v.created > 0 ? ` of ${v.created.toLocaleString("en-US")}` : "";
  return (
    `${v.failed.toLocaleString("en-US")}${of} virtual user${v.failed === 1 && !of ? "" : "s"} failed, more than config.cable.maxFailedUsers (${v.line}): ${exit}. ` +
    `Set maxFailedUsers to a count, a share ("5%") or false to change this.`
  );
}

/** The line as written in `config.cable.maxFailedUsers`, for readers outside the engine's schema; anything unreadable is the default (the engine's preflight names it). */
export function readMaxFailedUsers(raw: unknown): MaxFailedUsers {
  if (raw === false) return false;
  if (typeof raw === "number" && Number.isInteger(raw) && raw >= 0) return raw;
  if (typeof raw === "string" && PERCENT.test(raw)) return raw as `${number}%`;
  return DEFAULT_MAX_FAILED_USERS;
}

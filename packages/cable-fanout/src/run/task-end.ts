// How each task ended, as the report says it: from what the task wrote (status.json's `end`), what
// the runner decided (fanout.json's `stops`, the barrier's missed tasks) and what the backend saw
// (stop codes, exit codes). One TaskEnd per task, then one outcome per TaskEnd.
import { EXIT, type RunnerStop, type TaskEnd, type TaskStatus, unreachable } from "cable-worker/contract";
import type { TaskSnapshot } from "../backend.js";
import type { TaskOutcome } from "./record.js";

export interface TaskFacts {
  /** status.json, when the task wrote one. */
  status?: TaskStatus;
  /** Why the runner stopped it, from its record; undefined when it did not. */
  stop?: RunnerStop;
  /** What the backend last saw of it; absent for `collect <runId>`. */
  snapshot?: TaskSnapshot;
  /** Whether its report's ensure checks failed: read only when Artillery exited 1. */
  checksFailed: () => boolean;
}

const NO_STATUS = "the worker wrote no status.json";

/**
 * The one end a task's outcome is judged on. The runner's missed barrier counts whatever the task
 * saw of it (a stop, a cancelled go) unless the task ended ok. A stop signal is the runner's stop
 * when the runner asked for one: the task cannot know why it was stopped, the runner does. A task
 * with no status, or one from a worker before `end` that did not end ok, is known by the runner's
 * stop if there was one, else by its exit codes.
 */
export function endOf(status: TaskStatus | undefined, stop: RunnerStop | undefined): TaskEnd {
  if (stop?.by === "barrier-missed" && status?.exitCode !== EXIT.ok) return stop;
  const own = status?.end ?? (status?.exitCode === EXIT.ok ? { by: "phases-done" as const } : undefined);
  if (own !== undefined && own.by !== "stop-signal") return own;
  return stop ?? own ?? (status ? byExitCodes(status) : { by: "crash", reason: NO_STATUS });
}

/** A status from a worker before `end`: Artillery's exit code if it ran, else a crash in the status's words. */
function byExitCodes(status: TaskStatus): TaskEnd {
  if (status.artilleryExitCode !== null && status.artilleryExitCode !== 0) return { by: "artillery-failed", exitCode: status.artilleryExitCode, signal: null };
  return { by: "crash", reason: status.reason ?? "failed" };
}

/**
 * The outcome of one task. "ensure-failed": Artillery exited 1 because `ensure` checks failed; its
 * numbers count, the run still fails. "aborted": stopped by --abort-on after its load began; its
 * figures up to then count, from its live periods when it was killed before it wrote its status.
 */
export function outcomeOf(facts: TaskFacts): Pick<TaskOutcome, "state" | "reason"> {
  const { status, snapshot } = facts;
  const end = endOf(status, facts.stop);
  // ECS stopped it for a reason of its own (Spot, a failed start) even if the worker said all was well.
  const stopFailure = snapshot?.phase === "stopped" && Boolean(snapshot.stopCode) && snapshot.stopCode !== "EssentialContainerExited";
  const failed = () => ({ state: "failed" as const, reason: failureReason(status, snapshot) });
  switch (end.by) {
    case "phases-done":
      return status?.exitCode === EXIT.ok && !stopFailure ? { state: "ok", reason: null } : failed();
    case "artillery-failed":
      return end.exitCode === 1 && !stopFailure && facts.checksFailed() ? { state: "ensure-failed", reason: status?.reason ?? null } : failed();
    case "barrier-missed":
      return { state: "missed-barrier", reason: "not ready when the run started" };
    case "abort":
      // The runner stops for --abort-on only once load has begun: a task killed without a status had begun it too.
      if (!status) return { state: "aborted", reason: "stopped by --abort-on before it wrote its status.json; its live periods count" };
      return status.loadStartedAt !== null ? { state: "aborted", reason: status.reason } : failed();
    case "stop-signal":
    case "max-duration":
    case "heartbeat":
    case "go-cancelled":
    case "crash":
    case "interrupt":
    case "barrier-failed":
    case "capacity-stop":
    case "start-timeout":
    case "watch-lost":
      return failed();
    default:
      return unreachable(end);
  }
}

/** Everything said about a failed task, by ECS and by the worker, each once. */
function failureReason(status: TaskStatus | undefined, snapshot: TaskSnapshot | undefined): string {
  const reasons = [
    snapshot?.stopCode && snapshot.stopCode !== "EssentialContainerExited" ? snapshot.stopCode : undefined,
    snapshot?.stoppedReason,
    status?.reason ?? undefined,
    snapshot?.exitCode !== undefined && snapshot.exitCode !== null && snapshot.exitCode !== 0 ? `exit code ${snapshot.exitCode}` : undefined,
  ].filter((r): r is string => Boolean(r));
  if (!status) reasons.push(NO_STATUS);
  return [...new Set(reasons)].join("; ");
}

import { describe, expect, it } from "vitest";
import { EXIT, type RunnerStop, type SeenEnd, type TaskEnd, type TaskStatus } from "cable-worker/contract";
import type { TaskSnapshot } from "../src/backend";
import { endOf, outcomeOf } from "../src/run/task-end";

const STARTED = { loadStartedAt: 1_000, artilleryExitCode: 143 };

function status(end: SeenEnd | undefined, fields: Partial<TaskStatus> = {}): TaskStatus {
  const base: TaskStatus = { runId: "r", region: "local-a", taskId: "task-1", exitCode: EXIT.artillery, reason: "why", startedAt: "", endedAt: "", startLagMs: null, artilleryExitCode: null, readyAt: null, loadStartedAt: null, firstMetricAt: null, startAt: null, ...fields };
  return end ? { ...base, end } : base;
}

const snapshot = (fields: Partial<TaskSnapshot> = {}): TaskSnapshot => ({ ref: "local-a/task-1", taskId: "task-1", phase: "stopped", exitCode: 1, stopCode: "EssentialContainerExited", ...fields });

describe("a task's end → its outcome", () => {
  // Every member of TaskEnd, as the task or the runner says it, and the outcome the report shows.
  const table: Array<[string, { status?: TaskStatus; stop?: RunnerStop; snapshot?: TaskSnapshot; checks?: boolean }, TaskEnd["by"], string, string | null]> = [
    ["phases-done", { status: status({ by: "phases-done" }, { exitCode: EXIT.ok, reason: null, artilleryExitCode: 0 }), snapshot: snapshot({ exitCode: 0 }) }, "phases-done", "ok", null],
    ["phases-done, upload failed", { status: status({ by: "phases-done" }, { exitCode: EXIT.upload, reason: "uploading results failed: x" }) }, "phases-done", "failed", "uploading results failed: x; exit code 1"],
    ["phases-done, but ECS stopped it (Spot)", { status: status({ by: "phases-done" }, { exitCode: EXIT.ok, reason: null }), snapshot: snapshot({ exitCode: 0, stopCode: "SpotInterruption" }) }, "phases-done", "failed", "SpotInterruption"],
    ["artillery-failed: ensure checks", { status: status({ by: "artillery-failed", exitCode: 1, signal: null }, { reason: "artillery exited with code 1" }), checks: true }, "artillery-failed", "ensure-failed", "artillery exited with code 1"],
    ["artillery-failed: no failed check", { status: status({ by: "artillery-failed", exitCode: 1, signal: null }, { reason: "artillery exited with code 1" }) }, "artillery-failed", "failed", "artillery exited with code 1; exit code 1"],
    ["artillery-failed: killed", { status: status({ by: "artillery-failed", exitCode: null, signal: "SIGKILL" }, { reason: "artillery was stopped by SIGKILL" }), checks: true }, "artillery-failed", "failed", "artillery was stopped by SIGKILL; exit code 1"],
    ["stop-signal nobody here asked for (`stop <runId>`)", { status: status({ by: "stop-signal", signal: "SIGTERM" }, { ...STARTED, reason: "the task was stopped (SIGTERM) before artillery finished" }) }, "stop-signal", "failed", "the task was stopped (SIGTERM) before artillery finished; exit code 1"],
    ["max-duration (the task's)", { status: status({ by: "max-duration", limitMs: 8_000 }, { reason: "the run's --max-duration (8 s) passed before artillery finished" }) }, "max-duration", "failed", "the run's --max-duration (8 s) passed before artillery finished; exit code 1"],
    ["max-duration (the runner's)", { status: status({ by: "stop-signal", signal: "SIGTERM" }, { ...STARTED, reason: "stopped" }), stop: { by: "max-duration", limitMs: 60_000 } }, "max-duration", "failed", "stopped; exit code 1"],
    ["heartbeat", { status: status({ by: "heartbeat", silentMs: 90_000 }, { reason: "gone" }) }, "heartbeat", "failed", "gone; exit code 1"],
    ["go-cancelled", { status: status({ by: "go-cancelled", reason: "interrupted (signal)" }, { exitCode: EXIT.setup, reason: "the run was called off before the start: interrupted (signal)" }), snapshot: snapshot({ exitCode: 2 }) }, "go-cancelled", "failed", "the run was called off before the start: interrupted (signal); exit code 2"],
    ["barrier-missed (the task's)", { status: status({ by: "barrier-missed" }, { exitCode: EXIT.setup }), stop: { by: "barrier-missed" } }, "barrier-missed", "missed-barrier", "not ready when the run started"],
    ["barrier-missed (the runner's), stopped before its go", { status: status({ by: "stop-signal", signal: "SIGTERM" }), stop: { by: "barrier-missed" } }, "barrier-missed", "missed-barrier", "not ready when the run started"],
    ["barrier-missed, killed without a status", { stop: { by: "barrier-missed" }, snapshot: snapshot({ exitCode: null, stopCode: "UserInitiated" }) }, "barrier-missed", "missed-barrier", "not ready when the run started"],
    ["crash", { status: status({ by: "crash", reason: "no bundle at s3://b/" }, { exitCode: EXIT.setup, reason: "no bundle at s3://b/" }) }, "crash", "failed", "no bundle at s3://b/; exit code 1"],
    ["crash: no status, nothing asked", { snapshot: snapshot({ exitCode: null, stopCode: "TaskFailedToStart", stoppedReason: "CannotPullContainerError" }) }, "crash", "failed", "TaskFailedToStart; CannotPullContainerError; the worker wrote no status.json"],
    ["abort, after load began", { status: status({ by: "stop-signal", signal: "SIGTERM" }, { ...STARTED, reason: "the task was stopped (SIGTERM) before artillery finished" }), stop: { by: "abort" } }, "abort", "aborted", "the task was stopped (SIGTERM) before artillery finished"],
    ["abort, before load began", { status: status({ by: "stop-signal", signal: "SIGTERM" }, { reason: "the task was stopped (SIGTERM) before artillery started" }), stop: { by: "abort" } }, "abort", "failed", "the task was stopped (SIGTERM) before artillery started; exit code 1"],
    ["abort, killed before its status", { stop: { by: "abort" }, snapshot: snapshot({ exitCode: null, stopCode: "UserInitiated" }) }, "abort", "aborted", "stopped by --abort-on before it wrote its status.json; its live periods count"],
    ["abort, but it had ended by itself", { status: status({ by: "phases-done" }, { exitCode: EXIT.ok, reason: null }), stop: { by: "abort" } }, "phases-done", "ok", null],
    ["interrupt (Ctrl-C)", { status: status({ by: "stop-signal", signal: "SIGTERM" }, { ...STARTED, reason: "stopped" }), stop: { by: "interrupt" } }, "interrupt", "failed", "stopped; exit code 1"],
    ["barrier-failed", { stop: { by: "barrier-failed" }, snapshot: snapshot({ exitCode: null, stopCode: "UserInitiated", stoppedReason: "cable-fanout: ready barrier: too few" }) }, "barrier-failed", "failed", "UserInitiated; cable-fanout: ready barrier: too few; the worker wrote no status.json"],
    ["capacity-stop", { status: status({ by: "stop-signal", signal: "SIGTERM" }, { ...STARTED, reason: "stopped" }), stop: { by: "capacity-stop" } }, "capacity-stop", "failed", "stopped; exit code 1"],
    ["start-timeout", { stop: { by: "start-timeout" }, snapshot: snapshot({ exitCode: null, stopCode: "UserInitiated" }) }, "start-timeout", "failed", "UserInitiated; the worker wrote no status.json"],
    ["watch-lost", { stop: { by: "watch-lost" } }, "watch-lost", "failed", "exit code 1; the worker wrote no status.json"],
  ];

  it.each(table)("%s", (_name, facts, by, state, reason) => {
    const withSnapshot = { snapshot: snapshot(), ...facts };
    expect(endOf(withSnapshot.status, withSnapshot.stop).by).toBe(by);
    expect(outcomeOf({ ...withSnapshot, checksFailed: () => facts.checks === true })).toEqual({ state, reason });
  });

  it("covers every member of the union", () => {
    const members: Record<TaskEnd["by"], true> = {
      "phases-done": true,
      "artillery-failed": true,
      "stop-signal": true,
      "max-duration": true,
      heartbeat: true,
      "go-cancelled": true,
      "barrier-missed": true,
      crash: true,
      abort: true,
      interrupt: true,
      "barrier-failed": true,
      "capacity-stop": true,
      "start-timeout": true,
      "watch-lost": true,
    };
    expect(new Set(table.map((row) => row[2]))).toEqual(new Set(Object.keys(members)));
  });

  it("reads a status from a worker before `end` by its exit codes, or by the runner's stop", () => {
    const old = (fields: Partial<TaskStatus>) => status(undefined, fields);
    expect(endOf(old({ exitCode: EXIT.ok, reason: null }), { by: "abort" })).toEqual({ by: "phases-done" });
    expect(endOf(old({ ...STARTED, reason: "the task was stopped (SIGTERM) before artillery finished" }), { by: "abort" })).toEqual({ by: "abort" });
    expect(endOf(old({ artilleryExitCode: 1 }), undefined)).toEqual({ by: "artillery-failed", exitCode: 1, signal: null });
    expect(endOf(old({ exitCode: EXIT.setup, reason: "no bundle" }), undefined)).toEqual({ by: "crash", reason: "no bundle" });
    expect(outcomeOf({ status: old({ artilleryExitCode: 1, reason: "artillery exited with code 1" }), checksFailed: () => true })).toEqual({ state: "ensure-failed", reason: "artillery exited with code 1" });
  });
});

import { describe, expect, it } from "vitest";
import { describeStop, runnerStopSchema, taskStatusSchema } from "../src/contract";

// status.json as a worker before `end` wrote it (a task stopped by StopTask).
const OLDER = {
  runId: "20250101-120000-a1b2c3",
  region: "eu-west-2",
  taskId: "t1",
  exitCode: 1,
  reason: "the task was stopped (SIGTERM) before artillery finished (artillery exit code 143)",
  startedAt: "2025-01-01T12:00:00.000Z",
  endedAt: "2025-01-01T12:01:00.000Z",
  startLagMs: 3,
  artilleryExitCode: 143,
  readyAt: null,
  loadStartedAt: 1735732805000,
  firstMetricAt: null,
  startAt: 1735732805000,
};

describe("status.json's end", () => {
  it("reads a status without `end` (an older worker) as it was", () => {
    const parsed = taskStatusSchema.parse(OLDER);
    expect(parsed).toEqual(OLDER);
    expect(parsed.end).toBeUndefined();
  });

  it("reads every end a task writes", () => {
    for (const end of [
      { by: "phases-done" },
      { by: "artillery-failed", exitCode: 1, signal: null },
      { by: "artillery-failed", exitCode: null, signal: "SIGKILL" },
      { by: "stop-signal", signal: "SIGTERM" },
      { by: "max-duration", limitMs: 8000 },
      { by: "heartbeat", silentMs: 90000 },
      { by: "go-cancelled", reason: "interrupted (signal)" },
      { by: "barrier-missed" },
      { by: "crash", reason: "no bundle at s3://b/runs/r/bundle/" },
    ]) {
      expect(taskStatusSchema.parse({ ...OLDER, end }).end).toEqual(end);
      // Through JSON, as the runner reads it from the store.
      expect(taskStatusSchema.parse(JSON.parse(JSON.stringify({ ...OLDER, end }))).end).toEqual(end);
    }
  });

  it("refuses an end the task cannot see, or one missing what it carries", () => {
    for (const end of [{ by: "abort" }, { by: "capacity-stop" }, { by: "stop-signal" }, { by: "crash" }, { by: "gone" }, "phases-done"]) {
      expect(taskStatusSchema.safeParse({ ...OLDER, end }).success, JSON.stringify(end)).toBe(false);
    }
  });

  it("keeps the runner's stops apart from the task's own ends", () => {
    expect(runnerStopSchema.parse({ by: "abort" })).toEqual({ by: "abort" });
    expect(runnerStopSchema.parse({ by: "max-duration", limitMs: 60000 })).toEqual({ by: "max-duration", limitMs: 60000 });
    expect(runnerStopSchema.safeParse({ by: "stop-signal", signal: "SIGTERM" }).success).toBe(false);
  });

  it("words a stop as status.json's reason begins", () => {
    expect(describeStop({ by: "stop-signal", signal: "SIGTERM" })).toBe("the task was stopped (SIGTERM)");
    expect(describeStop({ by: "max-duration", limitMs: 8000 })).toBe("the run's --max-duration (8 s) passed");
    expect(describeStop({ by: "heartbeat", silentMs: 61_400 })).toBe("the runner's heartbeat has not changed for 61 s (runner gone?)");
  });
});

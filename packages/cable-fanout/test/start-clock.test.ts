// The tasks' clocks in the Start section: per region the largest clock error bound of its tasks,
// and the run's bound on cross-task latencies (the two largest bounds summed), from status.json.
import type { TaskClock, TaskStatus } from "cable-worker/contract";
import { describe, expect, it } from "vitest";
import { crossTaskClockBound, renderClockLine, renderStartSection, summarizeStart } from "../src/run/start-report";

const status = (region: string, taskId: string, clock: TaskClock | undefined, started = true): TaskStatus => ({
  runId: "r",
  region,
  taskId,
  exitCode: 0,
  reason: null,
  startedAt: "",
  endedAt: "",
  startLagMs: 0,
  artilleryExitCode: 0,
  firstMetricAt: started ? 10_050 : null,
  loadStartedAt: started ? 10_010 : null,
  ...(clock ? { clock } : {}),
});
const fargate = (errorBoundMs: number | null, synchronized = true): TaskClock => ({ errorBoundMs, source: "fargate", synchronized });
const unknown: TaskClock = { errorBoundMs: null, source: "unknown" };

const summarize = (byRegion: Record<string, TaskStatus[]>) =>
  summarizeStart({ startAt: 10_000, count: 2, regions: Object.keys(byRegion), statuses: new Map(Object.entries(byRegion)) });

describe("crossTaskClockBound", () => {
  it("sums the two largest bounds of the tasks that started load: the most two of their clocks can disagree", () => {
    const statuses = [status("a", "1", fargate(0.5)), status("a", "2", fargate(1.2)), status("b", "3", fargate(0.9)), status("b", "4", fargate(40), false)];
    expect(crossTaskClockBound(statuses)).toBeCloseTo(2.1, 10);
  });

  it("is 0 for a single task (one clock), and null when a bound is unknown, a worker did not say, or nothing started", () => {
    expect(crossTaskClockBound([status("a", "1", fargate(0.5))])).toBe(0);
    expect(crossTaskClockBound([status("a", "1", fargate(0.5)), status("a", "2", unknown)])).toBeNull();
    expect(crossTaskClockBound([status("a", "1", fargate(0.5)), status("a", "2", undefined)])).toBeNull();
    expect(crossTaskClockBound([status("a", "1", fargate(0.5), false)])).toBeNull();
    expect(crossTaskClockBound([])).toBeNull();
  });
});

describe("the Start section's clocks", () => {
  it("gives each region's largest bound and the run's cross-task bound, with the source", () => {
    const summary = summarize({
      "eu-west-2": [status("eu-west-2", "a", fargate(0.55)), status("eu-west-2", "b", fargate(0.4))],
      "us-east-1": [status("us-east-1", "c", fargate(1.2)), status("us-east-1", "d", fargate(0.7))],
    });
    expect(summary.regions.map((r) => [r.region, r.clockBoundMs])).toEqual([
      ["eu-west-2", 0.55],
      ["us-east-1", 1.2],
    ]);
    expect(summary.clock).toEqual({ crossTaskBoundMs: 1.9, largestBoundMs: 1.2, sources: ["fargate"], tasks: 4, unknown: 0, unsynchronized: 0 });
    const text = renderStartSection(summary);
    expect(text).toContain("Clock error bound: ≤ 1.2 ms (Fargate, Amazon Time Sync); cross-task latencies carry up to ±1.9 ms.");
    expect(text).toContain("| Region | Tasks started | First start | Last start | Skew | Missed the barrier | Clock error bound |");
    expect(text).toContain("| eu-west-2 | 2/2 | +50 ms | +50 ms | 0 ms | – | ≤ 0.55 ms |");
    expect(text).toContain("| us-east-1 | 2/2 | +50 ms | +50 ms | 0 ms | – | ≤ 1.2 ms |");
  });

  it("says unknown plainly: everywhere, or for some tasks; and counts unsynchronized clocks", () => {
    const local = summarize({ "local-a": [status("local-a", "a", unknown), status("local-a", "b", unknown)] });
    expect(renderClockLine(local.clock!)).toBe("Clock error bound: unknown here (no Fargate metadata, no chrony, no synchronized kernel clock): cross-task latencies are only as good as the machines' clocks.");
    expect(renderStartSection(local)).toContain("| local-a | 2/2 | +50 ms | +50 ms | 0 ms | – | unknown |");

    const mixed = summarize({ "eu-west-2": [status("eu-west-2", "a", fargate(0.5, false))], "us-east-1": [status("us-east-1", "b", undefined)] });
    expect(mixed.regions.map((r) => r.clockBoundMs)).toEqual([0.5, null]);
    expect(renderClockLine(mixed.clock!)).toBe(
      "Clock error bound: unknown for 1 of 2 task(s) (no Fargate metadata, no chrony, no synchronized kernel clock): cross-task latencies are only as good as the machines' clocks. 1 task(s) reported their clock not synchronized.",
    );
  });

  it("with one task, says its latencies are measured on one clock; with chrony, names it", () => {
    const one = summarize({ "local-a": [status("local-a", "a", { errorBoundMs: 0.462, source: "chrony", synchronized: true })] });
    expect(renderClockLine(one.clock!)).toBe("Clock error bound: ≤ 0.46 ms (chrony); one task: its latencies are measured on one clock.");
  });

  it("names the kernel's NTP state where it gave the bound, and an unsynchronized kernel clock as unknown", () => {
    const kernel = (errorBoundMs: number | null): TaskClock => ({ errorBoundMs, source: "kernel", synchronized: errorBoundMs !== null });
    const synced = summarize({ "local-a": [status("local-a", "a", kernel(15.25)), status("local-a", "b", kernel(3))] });
    expect(renderClockLine(synced.clock!)).toBe("Clock error bound: ≤ 15 ms (the kernel's NTP state); cross-task latencies carry up to ±18 ms.");
    const unsynced = summarize({ "local-a": [status("local-a", "a", kernel(null)), status("local-a", "b", kernel(null))] });
    expect(renderClockLine(unsynced.clock!)).toBe(
      "Clock error bound: unknown here (no Fargate metadata, no chrony, no synchronized kernel clock): cross-task latencies are only as good as the machines' clocks. 2 task(s) reported their clock not synchronized.",
    );
  });
});

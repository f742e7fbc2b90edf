import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { PERIOD_MS } from "artillery-plugin-cable-report";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EXIT } from "../src/run/collect";
import { SimClock } from "./sim-fleet/sim-clock";
import { SimFleet } from "./sim-fleet/sim-backend";
import { lateness, runOnFleet } from "./sim-fleet/run-on-fleet";

// The runner end to end on a simulated fleet (test/sim-fleet/: timers for tasks, writing the
// contract's files through a store 20 ms away), with time ten times compressed: a 10 s period
// lasts 1 s. A small version of bench/sim-fleet.mjs's 3 regions × 500 tasks.
const REGIONS = ["eu-west-2", "us-east-1"];
const LOAD_MS = 60_000;

describe("cable-fanout run on a simulated fleet", () => {
  let work: string;
  beforeAll(() => {
    work = mkdtempSync(path.join(os.tmpdir(), "cable-sim-fleet-"));
  });
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  const fleetOf = (dir: string, extra: Partial<ConstructorParameters<typeof SimFleet>[0]> = {}) => {
    const clock = new SimClock(1_000);
    const fleet = new SimFleet({ dir: path.join(work, dir), clock, storeLatencyMs: 20, loadMs: LOAD_MS, load: (i) => ({ arrivalRate: 2, samplesPerPeriod: 100, latencyMs: 20 + 15 * i }), ...extra });
    return { clock, fleet };
  };
  const json = (file: string) => JSON.parse(readFileSync(file, "utf8"));

  it("merges every task of 2 regions × 20, with a live line per region and period", async () => {
    const { clock, fleet } = fleetOf("whole");
    const run = await runOnFleet(fleet, clock, { regions: REGIONS, count: 20, outDir: path.join(work, "whole-results"), loadMs: LOAD_MS });
    await fleet.settled();
    expect(run.result.exitCode, run.lines.map((l) => l.line).join("\n")).toBe(EXIT.ok);
    const merged = json(path.join(run.result.runDir, "merged.json"));
    expect(merged.regions.map((r: { name: string; tasks: number }) => [r.name, r.tasks])).toEqual([
      ["eu-west-2", 20],
      ["us-east-1", 20],
    ]);
    expect(merged.all.counters["vusers.created"]).toBe(40 * (LOAD_MS / PERIOD_MS + 1) * 20);
    // 60 s of load from a start off the 10 s grid: 7 periods, each printed once per region.
    for (const region of REGIONS) {
      const periods = run.live.filter((l) => l.region === region).map((l) => l.period);
      expect(periods.length).toBe(LOAD_MS / PERIOD_MS + 1);
      expect(new Set(periods).size).toBe(periods.length);
      expect(periods.every((p) => p % PERIOD_MS === 0)).toBe(true);
    }
    // Each line once every task has sent its period (a few seconds after its end), well before a task idle in it would be waited out.
    expect(Math.max(...run.live.map(lateness))).toBeLessThan(20_000);
    expect(fleet.storeCalls().runner).toBeGreaterThan(0);
  });

  it("starts 2 regions × 30 without the one task that never started (--min-ready 98%), and names it", async () => {
    const { clock, fleet } = fleetOf("one-lost", { failedStarts: { "eu-west-2": 1 }, loadMs: 20_000 });
    const run = await runOnFleet(fleet, clock, { regions: REGIONS, count: 30, outDir: path.join(work, "one-lost-results"), loadMs: 20_000 });
    await fleet.settled();
    const record = json(path.join(run.result.runDir, "fanout.json"));
    expect(record.barrier).toMatchObject({ outcome: "go", expected: 60, ready: 59, minReadyPct: 98 });
    const notOk = record.tasks.filter((t: { state: string }) => t.state !== "ok");
    expect(notOk.map((t: { region: string; taskId: string; state: string; reason: string }) => `${t.region}/${t.taskId} ${t.state}: ${t.reason}`)).toEqual(["eu-west-2/task-30 missed-barrier: not ready when the run started"]);
    expect(run.lines.map((l) => l.line)).toContain("eu-west-2: task task-30 stopped: TaskFailedToStart; CannotPullContainerError: simulated pull failure; exit code null (log: simulated task eu-west-2/task-30)");
    expect(json(path.join(run.result.runDir, "merged.json")).all.tasks).toBe(59);
    // The task that missed the barrier sends nothing, and holds no line of its region back.
    const eu = run.live.filter((l) => l.region === "eu-west-2");
    expect(eu.length).toBeGreaterThan(0);
    expect(Math.max(...eu.map(lateness))).toBeLessThan(20_000);
  });

  it("stops every task within two periods of the one that trips --abort-on, and exits 7", async () => {
    const failing = { fromPeriod: 2, usersPerPeriod: 5 };
    const { clock, fleet } = fleetOf("abort", { load: (i) => ({ arrivalRate: 2, samplesPerPeriod: 100, latencyMs: 20 + 15 * i, failing }), loadMs: 120_000 });
    const run = await runOnFleet(fleet, clock, { regions: REGIONS, count: 20, outDir: path.join(work, "abort-results"), loadMs: 120_000, abortOn: ["vusers.failed>100"] });
    await fleet.settled();
    const record = json(path.join(run.result.runDir, "fanout.json"));
    // 40 tasks × 5 failed users from the third period on: that period trips it.
    expect(record.aborted).toMatchObject({ condition: "vusers.failed>100" });
    const firstLine = Math.min(...run.live.map((l) => l.period));
    expect(record.aborted.at).toBe(firstLine + (failing.fromPeriod + 1) * PERIOD_MS);
    expect(run.abortedAt! - record.aborted.at).toBeLessThanOrEqual(2 * PERIOD_MS);
    // No task sent a period that began after the stop.
    expect(Math.max(...run.live.map((l) => l.period))).toBeLessThanOrEqual(run.abortedAt!);
    expect(run.result.exitCode).toBe(EXIT.aborted);
    expect(json(path.join(run.result.runDir, "merged.json")).all.tasks).toBe(40);
    // 40 tasks stopped alike: a few lines on the console, not one per task.
    expect(run.lines.filter((l) => /task \S+ stopped: /.test(l.line)).length, run.lines.map((l) => l.line).join("\n")).toBeLessThanOrEqual(2 * 5);
  });
});

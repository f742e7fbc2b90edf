// The capacity search's pure parts for the second axis (messages a second) and for the generator
// verdict shared with the PR report (cable-report's detectSaturation: lag, and CPU over 90 %).
import { SATURATION_THRESHOLDS } from "artillery-plugin-cable-report";
import { describe, expect, test } from "vitest";
import { encoded } from "cable-test-servers";
import type { LivePeriod } from "../src/live/feed";
import { regionOf, type TaskFiles } from "./live-fixtures";
import { measureRegion, stepHealth } from "../src/capacity/measure";
import { checkStair, planRateLevel } from "../src/capacity/plan";
import { renderCapacityMarkdown } from "../src/capacity/report";
import { buildAnswer, headline, judgeStep, SEND_RATE_FLOOR } from "../src/capacity/search";
import { parseSlo } from "../src/slo";
import { segmentOverrides } from "../src/capacity/segment-run";

const T0 = 1_000_000_000_000;
const w = { climbStart: T0 + 3_000, holdStart: T0 + 8_000, holdEnd: T0 + 38_000 };
const step = { level: 40, perTask: 10, climbIndex: 0, holdIndex: 1, climbS: 5 };
const calmLag = encoded([5, 6, 5, 6, 5, 6, 5, 6, 5, 6]);

/** A task whose climb period is at T0 and whose hold holds the periods at T0+10 s and T0+20 s. */
function task(taskId: string, cpu: { climb?: number; hold?: [number?, number?] } = {}, counters: Record<string, number> = {}): TaskFiles {
  const p = (t: number, cpuPercent: number | undefined, extra: Partial<LivePeriod> = {}): LivePeriod => ({
    period: T0 + t,
    counters: {},
    rates: {},
    histograms: { "cable.event_loop_lag": calmLag, "cable.broadcast_latency": encoded([10, 12]) },
    ...(cpuPercent === undefined ? {} : { cpuPercent }),
    ...extra,
  });
  return {
    region: "eu",
    taskId,
    phases: [
      { index: 0, name: "capacity 40 msg/s climb", startTime: w.climbStart },
      { index: 1, name: "capacity 40 msg/s hold", startTime: w.holdStart },
    ],
    periods: [p(0, cpu.climb, { counters: { "cable.messages_sent": 1000 } }), p(10_000, cpu.hold?.[0], { counters }), p(20_000, cpu.hold?.[1], { counters })],
  };
}

describe("the generator verdict: cable-report's thresholds, lag p90 over the step and CPU over the hold", () => {
  test("the thresholds are the report's", () => {
    expect(SATURATION_THRESHOLDS).toEqual({ lagP99Ms: 100, cpuPercent: 90, busyCpuPercent: 50 });
    expect(stepHealth(101, null)).toEqual({ saturated: true, starved: false, reasons: ["event-loop lag p90 101 ms > 100 ms"] });
    expect(stepHealth(100, 90)).toEqual({ saturated: false, starved: false, reasons: [] });
    expect(stepHealth(20, 90.4)).toEqual({ saturated: true, starved: false, reasons: ["CPU 90% > 90%"] });
    expect(stepHealth(150, 97, "held up").reasons).toEqual(["event-loop lag p90 150 ms > 100 ms", "CPU 97% > 90%", "held up"]);
    // Late with little CPU of its own, its late seconds spent waiting: starved, with its figures; the CPU over the whole step counts.
    expect(stepHealth(150, 3, undefined, { cpuPeak: 8, late: { saturated: 0, starved: 6 } })).toEqual({
      saturated: false,
      starved: true,
      reasons: ["event-loop lag p90 150 ms > 100 ms", "the generator used 8% CPU; 6 of 6 late seconds waiting for a CPU"],
    });
    expect(stepHealth(150, 3, undefined, { cpuPeak: 55, late: { saturated: 0, starved: 6 } })).toMatchObject({ saturated: true, starved: false });
  });

  test("a hold period with CPU over 90 % makes the step generator-bound, whatever the lag reads", () => {
    const r = measureRegion(regionOf([task("t1", { hold: [60, 96] }), task("t2", { hold: [40, 45] })]), step, 30, 20);
    expect(r.health.map((h) => [h.taskId, h.cpuPeak, h.saturated])).toEqual([
      ["t1", 96, true],
      ["t2", 45, false],
    ]);
    expect(r.health[0].reasons).toEqual(["CPU 96% > 90%"]);
    expect(r.health[0].lagP90).toBeLessThan(10);
    const judged = judgeStep(40, "stair", "r", { eu: r }, [parseSlo("cable.broadcast_latency.p95<250")]);
    expect(judged.verdict).toBe("generator-bound");
    expect(judged.regions.eu.cpuPeak).toBe(96);
    expect(judged.regions.eu.saturated).toEqual(["t1: CPU 96% > 90%"]);
  });

  test("a busy climb is not a saturated hold; periods without the figure are no evidence either way", () => {
    const climbOnly = measureRegion(regionOf([task("t1", { climb: 99, hold: [50, 55] })]), step, 30, 20);
    expect(climbOnly.health[0]).toMatchObject({ cpuPeak: 55, saturated: false });
    const unmeasured = measureRegion(regionOf([task("t1")]), step, 30, 20);
    expect(unmeasured.health[0]).toMatchObject({ cpuPeak: null, saturated: false, reasons: [] });
    const partly = measureRegion(regionOf([task("t1", { hold: [undefined, 93] })]), step, 30, 20);
    expect(partly.health[0]).toMatchObject({ cpuPeak: 93, saturated: true });
    // Judged before any rounding, as the report judges it.
    expect(measureRegion(regionOf([task("t1", { hold: [90.04, 90.4] })]), step, 30, 20).health[0]).toMatchObject({ cpuPeak: 90.4, saturated: true });
    expect(measureRegion(regionOf([task("t1", { hold: [90, 89.9] })]), step, 30, 20).health[0]).toMatchObject({ cpuPeak: 90, saturated: false });
  });
});

describe("by message rate", () => {
  test("a level is a run of its own: the users arrive, then hold while sending the level's rate", () => {
    const plan = planRateLevel(30, 20, { holdS: 20, climbS: 2 }, 2);
    expect(plan.phases).toEqual([
      { name: "capacity 30 msg/s climb", duration: 2, arrivalCount: 10 },
      { name: "capacity 30 msg/s hold", pause: 20 },
    ]);
    expect(plan.steps).toEqual([{ level: 30, perTask: 10, climbIndex: 0, holdIndex: 1, climbS: 2 }]);
    expect(plan.variables).toEqual({ capacity_users: 20, capacity_rate: 30 });
    expect(plan.totalS).toBe(22);
    const o = segmentOverrides({ config: { variables: { rooms: 2, capacity_rate: 999 } } }, plan.phases, plan.totalS, plan.variables);
    expect((o.config as Record<string, unknown>).variables).toEqual({ rooms: 2, capacity_users: 20, capacity_rate: 30, capacity_max_s: 142 });
  });

  test("the users split evenly over the tasks; the rates need not", () => {
    const stair = { start: 5, step: 5, max: 25, holdS: 20, climbS: 2 };
    expect(() => checkStair(stair, 2, 20)).not.toThrow();
    expect(() => checkStair(stair, 2)).toThrow(/--start 5 does not split evenly over 2 task/);
    expect(() => checkStair(stair, 3, 20)).toThrow(/--users 20 does not split evenly over 3 task/);
  });

  test("each region's sent and received messages a second over the hold's whole periods, summed over its tasks", () => {
    // 10 s periods: 150 sent and 300 received in each of two hold periods is 15 and 30 a second per task.
    const tasks = [task("t1", {}, { "cable.messages_sent": 150, "cable.messages_received": 300 }), task("t2", {}, { "cable.messages_sent": 50, "cable.messages_received": 100 })];
    const r = measureRegion(regionOf(tasks), step, 30, 10);
    // The climb's 1,000 sends are left out.
    expect(r.rates).toEqual({ sent: 20, received: 40 });
    expect(r.figures.users).toBe(10);
  });

  test("a hold counts only when the region sent at least 90 % of its share of the level", () => {
    const slos = [parseSlo("cable.broadcast_latency.p95<250")];
    const region = (perPeriod: number) => measureRegion(regionOf([task("t1", {}, { "cable.messages_sent": perPeriod })]), step, 30, 10);
    expect(SEND_RATE_FLOOR).toBe(0.9);
    // Share 20 msg/s: 18 a second is enough, 15 is not.
    const enough = judgeStep(40, "stair", "r", { eu: region(180) }, slos, 20);
    expect(enough.verdict).toBe("held");
    expect(enough.regions.eu.sendCheck).toMatchObject({ slo: "sent msg/s>=18", value: 18, passed: true });
    const short = judgeStep(40, "stair", "r", { eu: region(150) }, slos, 20);
    expect(short.verdict).toBe("breached");
    expect(short.regions.eu).toMatchObject({ passed: false, sendRate: 15, sendCheck: { passed: false, excess: -3 } });
    // By users there is no such check.
    expect(judgeStep(40, "stair", "r", { eu: region(150) }, slos).regions.eu.sendCheck).toBeUndefined();

    const answer = buildAnswer([enough, short, { ...short, attempt: "repeat" }], 100, "add tasks", "rate");
    expect(answer).toMatchObject({ vary: "rate", held: null, firstFailing: 40 });
    expect(answer.breached).toEqual([{ region: "eu", slo: "sent msg/s>=18", value: 15, excess: -3 }]);
    expect(headline(answer)).toBe("held none of the levels; 40 msg/s breached twice: eu sent msg/s>=18 was 15 (-3)");
  });

  test("the answer and capacity.md speak in messages a second", () => {
    const slos = [parseSlo("cable.broadcast_latency.p95<250"), parseSlo("errors<1%")];
    const region = (sentPerPeriod: number, latency: number[]) => {
      const t = task("t1", { hold: [40, 50] }, { "cable.messages_sent": sentPerPeriod, "cable.messages_received": 2 * sentPerPeriod });
      for (const p of t.periods) p.histograms["cable.broadcast_latency"] = encoded(latency);
      return measureRegion(regionOf([t]), step, 30, 20);
    };
    const at = (level: number, attempt: "stair" | "repeat", latency: number[]) => judgeStep(level, attempt, "r", { eu: region(level * 10, latency) }, slos, level);
    const answer = buildAnswer([at(10, "stair", [5]), at(20, "stair", [8]), at(30, "stair", [900]), at(30, "repeat", [950])], 60, "add tasks", "rate");
    expect(answer).toMatchObject({ vary: "rate", held: 20, firstFailing: 30 });
    expect(answer.regions.eu.steps.map((s) => [s.level, s.users, s.sendRate, s.receiveRate, s.cpuPeak])).toEqual([
      [10, 20, 10, 20, 50],
      [20, 20, 20, 40, 50],
      [30, 20, 30, 60, 50],
      [30, 20, 30, 60, 50],
    ]);
    expect(headline(answer)).toMatch(/^held 20 msg\/s; 30 msg\/s breached twice: eu cable.broadcast_latency.p95<250 was \d+/);
    expect(headline(buildAnswer([at(10, "stair", [5]), at(20, "stair", [8])], 20, "", "rate"))).toBe("held 20 msg/s, the most tried");

    const md = renderCapacityMarkdown(answer, { slos, scenario: "scenarios/capacity-anycable.yml", stair: { start: 10, step: 10, max: 60, holdS: 20, climbS: 2 }, regions: ["eu"], vary: "rate", users: 20 });
    expect(md).toContain("**held 20 msg/s; 30 msg/s breached twice");
    expect(md).toContain("stair 10 → 60 msg/s by 10, sent by 20 users");
    expect(md).toContain("| msg/s (all regions) | users here | attempt | verdict | `cable.broadcast_latency.p95<250` | `errors<1%` | sent msg/s here | received msg/s here | generator lag p90 | generator CPU |");
    expect(md).toMatch(/\| 30 \| 20 \| repeat \| \*\*breached\*\* \| [\d.]+ ✗ \| 0 ✓ \| 30 ✓ \| 60 \| \d+ ms \| 50 % \|/);
    expect(md).toContain('x-axis "messages per second" [10, 20, 30]');
    expect(md).toContain('title "cable.broadcast_latency.p95 by messages per second (SLO: below 250)"');

    const bound = buildAnswer([at(10, "stair", [5]), { ...at(20, "stair", [8]), verdict: "generator-bound" as const }], 60, "add tasks", "rate");
    const boundMd = renderCapacityMarkdown(bound, { slos, scenario: "s.yml", stair: { start: 10, step: 10, max: 60, holdS: 20, climbS: 2 }, regions: ["eu"], vary: "rate", users: 20 });
    expect(boundMd).toContain("> **Generator-bound** at 20 msg/s:");
    expect(boundMd).toContain("it holds **at least 10 msg/s**");
  });
});

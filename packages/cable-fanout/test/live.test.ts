// The live view and --abort-on, pure: constructed live periods in, lines and verdicts out.
import { describe, expect, it } from "vitest";
import { encoded } from "cable-test-servers";
import { judgeAbort, parseAbortOn } from "../src/live/abort";
import type { LivePeriod } from "../src/live/feed";
import { liveOf, regionOf, type TaskFiles } from "./live-fixtures";
import { formatFinal, LATE_MS, LiveView, periodComplete } from "../src/live/view";

const T0 = 1_700_000_000_000;

/** A period of one task: `latency` ms broadcasts, `created` users arriving, `errors` timeouts. */
const period = (i: number, latency: number, extra: Partial<{ created: number; completed: number; errors: number; failed: number }> = {}): LivePeriod => ({
  period: T0 + i * 10_000,
  counters: {
    "vusers.created": extra.created ?? 10,
    "vusers.completed": extra.completed ?? 10,
    "cable.messages_received": 100,
    "cable.connections_open_period_peak": 10,
    ...(extra.errors ? { "errors.cable.timeout": extra.errors } : {}),
    ...(extra.failed ? { "vusers.failed": extra.failed } : {}),
  },
  rates: {},
  histograms: { "cable.broadcast_latency": encoded(Array.from({ length: 20 }, () => latency)), "cable.event_loop_lag": encoded([2, 3]) },
  cpuPercent: 12,
});
const task = (region: string, taskId: string, periods: LivePeriod[]): TaskFiles => ({ region, taskId, periods, phases: [] });

describe("--abort-on conditions", () => {
  it("parse the SLO syntax with an optional stretch", () => {
    expect(parseAbortOn("cable.broadcast_latency.p95>2000 for 30s")).toMatchObject({ forMs: 30_000, slo: { kind: "histogram", metric: "cable.broadcast_latency", stat: "p95", op: ">", bound: 2000 } });
    expect(parseAbortOn("errors>5%")).toMatchObject({ forMs: 10_000, slo: { kind: "counter", metric: "errors", perUser: true } });
    expect(() => parseAbortOn("cable.broadcast_latency>2000")).toThrow(/--abort-on "cable.broadcast_latency>2000": cable.broadcast_latency is a histogram; say which figure/);
    expect(() => parseAbortOn("p95 is high")).toThrow(/--abort-on "p95 is high": write <metric><op><bound> \[for <duration>\]/);
    expect(() => parseAbortOn("errors>5 for 5s")).toThrow(/shorter than one 10 s metrics period/);
  });

  it("hold only over an unbroken stretch of whole periods, merged over every task of every region", () => {
    const slowFrom = (from: number) => Array.from({ length: 6 }, (_, i) => period(i, i >= from ? 3_000 : 10));
    // Region a is slow from period 2 on, region b never: the merged p95 of 20 + 20 samples is slow.
    const tasks = [task("a", "t1", slowFrom(2)), task("b", "t1", slowFrom(99))];
    const condition = parseAbortOn("cable.broadcast_latency.p95>2000 for 30s");
    const verdict = judgeAbort([condition], liveOf(tasks), 1, T0 + 60_000, T0);
    expect(verdict).toEqual({ condition: "cable.broadcast_latency.p95>2000 for 30s", at: T0 + 50_000, figure: "cable.broadcast_latency.p95 3,000 ms > 2000 in 3 periods (0:20–0:50)" });
    // Two slow periods are not 30 s.
    expect(judgeAbort([condition], liveOf([task("a", "t1", slowFrom(4)), task("b", "t1", slowFrom(4))]), 1, T0 + 60_000, T0)).toBeNull();
    // The median is still fast: half the samples are.
    expect(judgeAbort([parseAbortOn("cable.broadcast_latency.p50>2000")], liveOf(tasks), 1, T0 + 60_000, T0)).toBeNull();
  });

  it("wait for every task's period before judging it (or until it is late)", () => {
    const slow = [task("a", "t1", [period(0, 3_000)]), task("b", "t1", [])];
    const condition = parseAbortOn("cable.broadcast_latency.p95>2000");
    expect(judgeAbort([condition], liveOf(slow), 1, T0 + 12_000, T0)).toBeNull();
    expect(judgeAbort([condition], liveOf(slow), 1, T0 + 10_000 + LATE_MS + 1, T0)?.at).toBe(T0 + 10_000);
  });

  it("count errors per user active in the period", () => {
    // 10 users arrive each period and complete; in period 1 there are 10 errors for 10 users.
    const tasks = [task("a", "t1", [period(0, 10), period(1, 10, { errors: 1 }), period(2, 10, { errors: 10 })])];
    expect(judgeAbort([parseAbortOn("errors>50%")], liveOf(tasks), 1, T0 + 40_000, T0)?.figure).toBe("errors 100% of users > 50 in 1 period (0:20–0:30)");
    expect(judgeAbort([parseAbortOn("errors>100%")], liveOf(tasks), 1, T0 + 40_000, T0)).toBeNull();
  });
});

describe("the live view", () => {
  it("prints each region's period once every task sent it, with the figures of the report's series", () => {
    const view = new LiveView(2);
    const a1 = task("local-a", "t1", [period(0, 10)]);
    const a2 = task("local-a", "t2", []);
    expect(view.lines(liveOf([a1, a2]), T0 + 12_000)).toEqual([]);
    a2.periods.push(period(0, 30, { created: 5, completed: 0 }));
    const [line] = view.lines(liveOf([a1, a2]), T0 + 12_000);
    expect(line).toBe("local-a 22:13:20 · 5 users active · 20 connections · 20 msg/s received · broadcast_latency p95 30 ms · 0 errors · generator lag 2 ms, CPU 12%");
    // Printed once.
    expect(view.lines(liveOf([a1, a2]), T0 + 13_000)).toEqual([]);
  });

  it("says failed users in the period's line, and never ends a region green with one", () => {
    const view = new LiveView(1);
    const failing = task("local-a", "t1", [period(0, 10, { created: 10, completed: 6, failed: 4, errors: 4 })]);
    const [line] = view.lines(liveOf([failing]), T0 + 12_000);
    expect(line).toContain(" · 4 errors · ❌ 4 users failed · generator lag");
    expect(formatFinal(regionOf([failing]))).toMatch(/^❌ local-a ended · 10 users \(6 completed, 4 failed\)/);
    expect(formatFinal(regionOf([task("local-a", "t1", [period(0, 10, { errors: 2 })])]))).toMatch(/^⚠️ local-a ended · 10 users \(10 completed, 0 failed\)/);
    expect(formatFinal(regionOf([task("local-a", "t1", [period(0, 10)])]))).toMatch(/^✅ local-a ended · /);
  });

  it("marks a late generator in the period's line as the report reads it: starved (its machine busy) or saturated, never the one for the other", () => {
    const late = (cpu: number, counters: Record<string, number>): LivePeriod => {
      const p = period(0, 10);
      return { ...p, counters: { ...p.counters, ...counters }, histograms: { ...p.histograms, "cable.event_loop_lag": encoded([133, 140, 150]) }, cpuPercent: cpu };
    };
    const line = (p: LivePeriod) => new LiveView(1).lines(liveOf([task("local-a", "t1", [p])]), T0 + 12_000)[0];
    expect(line(late(4.6, { "cable.event_loop_late_starved": 3 }))).toMatch(/ · generator lag 1\d\d ms, CPU 5% \(starved: the machine is busy with other work\)$/);
    expect(line(late(97, { "cable.event_loop_late_starved": 3 }))).toMatch(/ · generator lag 1\d\d ms, CPU 97% \(saturated\)$/);
    expect(line(late(4.6, { "cable.event_loop_late_saturated": 3 }))).toMatch(/ \(saturated\)$/);
    expect(line(period(0, 10))).toMatch(/generator lag \d ms, CPU 12%$/);
  });

  it("lets a task idle in a period hold its line back only until it is late", () => {
    const tasks = [task("r", "t1", [period(0, 10)]), task("r", "t2", [])];
    expect(periodComplete(regionOf(tasks), 2, T0, T0 + 15_000)).toBe(false);
    expect(periodComplete(regionOf(tasks), 2, T0, T0 + 10_000 + LATE_MS + 1)).toBe(true);
    expect(new LiveView(2).lines(liveOf(tasks), Infinity)[0]).toMatch(/^r 22:13:20 \(1 of 2 tasks\) · /);
  });
});

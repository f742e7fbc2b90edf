// The capacity search's pure parts: SLO expressions, the stair's phases, which periods a step is
// judged on, verdicts, the search's decisions, the answer and capacity.md.
import { describe, expect, test } from "vitest";
import { encoded, sketchOf } from "cable-test-servers";
import { FanoutInputError } from "../src/errors";
import type { LivePeriod } from "../src/live/feed";
import { regionOf, type TaskFiles } from "./live-fixtures";
import { measureRegion, splitPeriods } from "../src/capacity/measure";
import { checkRefine, checkStair, levels, planSegment } from "../src/capacity/plan";
import { renderCapacityMarkdown } from "../src/capacity/report";
import { buildAnswer, decideNext, headline, judgeStep, markUnrecovered, refineLevel, type StepResult } from "../src/capacity/search";
import { evaluateSlo, parseSlo, type StepFigures } from "../src/slo";
import { usersOf } from "../src/capacity/controller";
import { segmentOverrides } from "../src/capacity/segment-run";
import type { MergedResults } from "artillery-plugin-cable-report";

const figures = (over: Partial<StepFigures> = {}): StepFigures => ({ users: 100, hold: {}, climb: {}, counters: {}, ...over });

describe("SLO expressions", () => {
  test("histogram, counter and per-user forms", () => {
    expect(parseSlo("cable.broadcast_latency.p95<250")).toMatchObject({ kind: "histogram", metric: "cable.broadcast_latency", stat: "p95", op: "<", bound: 250 });
    expect(parseSlo("cable.handshake_latency.p99 <= 1000")).toMatchObject({ kind: "histogram", stat: "p99", op: "<=", bound: 1000 });
    expect(parseSlo("errors<1%")).toMatchObject({ kind: "counter", metric: "errors", perUser: true, bound: 1 });
    expect(parseSlo("vusers.failed=0")).toMatchObject({ kind: "counter", metric: "vusers.failed", op: "=", perUser: false, bound: 0 });
    expect(parseSlo("vusers.failed==0")).toMatchObject({ op: "=" });
  });

  test("mistakes are named", () => {
    expect(() => parseSlo("latency 250")).toThrow(FanoutInputError);
    expect(() => parseSlo("cable.broadcast_latency.p95<25%")).toThrow(/percentage applies to counters/);
    expect(() => parseSlo("cable.broadcast_latency.p97<250")).toThrow(/p97 is not a percentile/);
    expect(() => parseSlo("cable.broadcast_latency<250")).toThrow(/say which figure, e.g. cable.broadcast_latency.p95<250/);
    expect(() => parseSlo("errors<")).toThrow(/write <metric><op><bound>/);
  });

  test("latencies are judged on the hold; handshakes, seen only while users arrive, on the climb", () => {
    const hold = { "cable.broadcast_latency": sketchOf([10, 20, 30, 400]) };
    const climb = { "cable.broadcast_latency": sketchOf([5000]), "cable.handshake_latency": sketchOf([5, 7, 9]) };
    const f = figures({ hold, climb });
    const broadcast = evaluateSlo(parseSlo("cable.broadcast_latency.max<250"), f);
    expect(broadcast).toMatchObject({ window: "hold", passed: false });
    expect(broadcast.value).toBeCloseTo(400, -1);
    expect(broadcast.excess).toBeCloseTo(150, -1);
    expect(evaluateSlo(parseSlo("cable.broadcast_latency.p50<250"), f)).toMatchObject({ window: "hold", passed: true });
    expect(evaluateSlo(parseSlo("cable.handshake_latency.p99<1000"), f)).toMatchObject({ window: "climb", passed: true });
    expect(evaluateSlo(parseSlo("cable.rtt.p95<100"), f)).toMatchObject({ value: null, passed: null });
  });

  test("errors per user and plain counters over the step", () => {
    const f = figures({ users: 200, counters: { "errors.cable.receive_timeout": 2, "errors.ECONNREFUSED": 1, "vusers.failed": 3 } });
    expect(evaluateSlo(parseSlo("errors<1%"), f)).toMatchObject({ value: 1.5, passed: false, excess: 0.5 });
    expect(evaluateSlo(parseSlo("errors<2%"), f)).toMatchObject({ passed: true });
    expect(evaluateSlo(parseSlo("vusers.failed=0"), f)).toMatchObject({ value: 3, passed: false });
    expect(evaluateSlo(parseSlo("vusers.failed=0"), figures())).toMatchObject({ value: 0, passed: true });
  });
});

describe("the stair's phases", () => {
  test("a climb per level at the stair's rate, then a hold; a segment climbs straight to its first level", () => {
    expect(levels({ start: 100, step: 100, max: 450 })).toEqual([100, 200, 300, 400]);
    const plan = planSegment([300, 400], { step: 100, holdS: 30, climbS: 10 }, 4);
    expect(plan.phases).toEqual([
      { name: "capacity 300 climb", duration: 30, arrivalCount: 75 },
      { name: "capacity 300 hold", pause: 30 },
      { name: "capacity 400 climb", duration: 10, arrivalCount: 25 },
      { name: "capacity 400 hold", pause: 30 },
    ]);
    expect(plan.steps.map((s) => [s.level, s.climbIndex, s.holdIndex])).toEqual([
      [300, 0, 1],
      [400, 2, 3],
    ]);
    expect(plan.totalS).toBe(100);
  });

  test("bad stairs are refused before any load", () => {
    const ok = { start: 20, step: 20, max: 100, holdS: 20, climbS: 5 };
    expect(() => checkStair(ok, 2)).not.toThrow();
    expect(() => checkStair({ ...ok, step: 25 }, 2)).toThrow(/--step 25 does not split evenly over 2 task/);
    expect(() => checkStair({ ...ok, holdS: 10 }, 1)).toThrow(/hold at least 20 s/);
    expect(() => checkStair({ ...ok, start: 200 }, 1)).toThrow(/--start 200 is above --max 100/);
  });

  test("the segment's overrides keep the user's, replace the phases and add the probe", () => {
    const o = segmentOverrides({ config: { plugins: { "cable-report": {} }, variables: { rooms: 3 }, http: { timeout: 5 } } }, [{ pause: 1 }], 50);
    const config = o.config as Record<string, any>;
    expect(config.phases).toEqual([{ pause: 1 }]);
    expect(config.http).toEqual({ timeout: 5 });
    expect(config.variables).toEqual({ rooms: 3, capacity_max_s: 170 });
    expect(Object.keys(config.plugins)).toEqual(["cable-report", "cable-capacity-probe"]);
    // By name only: the worker finds the probe in its own directory; no path of this machine goes to a task.
    expect(config.plugins["cable-capacity-probe"]).toEqual({ endAfterS: 50 });
  });
});

const period = (t: number, over: Partial<LivePeriod> = {}): LivePeriod => ({ period: t, counters: {}, rates: {}, histograms: {}, ...over });

describe("which periods a step is judged on", () => {
  const w = { climbStart: 1_000_003_000, holdStart: 1_000_008_000, holdEnd: 1_000_038_000 };
  const periods = [0, 10, 20, 30, 40].map((s) => period(1_000_000_000 + s * 1000));

  test("the hold takes whole periods inside it only; every period belongs to one step", () => {
    const parts = splitPeriods(periods, w);
    expect(parts.hold.map((p) => p.period - 1_000_000_000)).toEqual([10_000, 20_000]);
    expect(parts.climb.map((p) => p.period - 1_000_000_000)).toEqual([0]);
    expect(parts.step.map((p) => p.period - 1_000_000_000)).toEqual([0, 10_000, 20_000]);
  });

  test("a region's step: the hold's sketches, the step's counters, each task's lag", () => {
    const task = (taskId: string, lag: number[]): TaskFiles => ({
      region: "eu",
      taskId,
      phases: [
        { index: 0, name: "capacity 20 climb", startTime: w.climbStart },
        { index: 1, name: "capacity 20 hold", startTime: w.holdStart },
      ],
      periods: [
        period(1_000_000_000, { counters: { "errors.x": 1 }, histograms: { "cable.broadcast_latency": encoded([900]) } }),
        period(1_000_010_000, { counters: { "errors.x": 1 }, histograms: { "cable.broadcast_latency": encoded([10, 20]), "cable.event_loop_lag": encoded(lag) } }),
        period(1_000_020_000, { histograms: { "cable.broadcast_latency": encoded([30]) } }),
      ],
    });
    const step = { level: 20, perTask: 10, climbIndex: 0, holdIndex: 1, climbS: 5 };
    const r = measureRegion(regionOf([task("t1", [5, 6, 5, 6, 5, 6, 5, 6, 5, 6]), task("t2", [300, 400, 300, 400, 300, 400, 300, 400, 300, 400])]), step, 30, 20);
    expect(r.figures.hold["cable.broadcast_latency"].count).toBe(6);
    expect(r.figures.climb["cable.broadcast_latency"].count).toBe(2);
    expect(r.figures.counters["errors.x"]).toBe(4);
    expect(r.health.map((h) => h.saturated)).toEqual([false, true]);
    expect(r.health[1].reasons[0]).toMatch(/event-loop lag p90 \d+ ms > 100 ms/);
    expect(r.missing).toEqual([]);
    expect(measureRegion(regionOf([{ ...task("t3", []), phases: [] }]), step, 30, 20).missing).toEqual(["t3"]);
    // A held-up loop samples its lag rarely, and the few samples can read low: 2 in a whole period is
    // saturation when nothing says the generator was kept from the CPU instead.
    const heldUp = measureRegion(regionOf([task("t4", [0, 0])]), step, 30, 20).health[0];
    expect(heldUp).toMatchObject({ lagP90: 0, saturated: true, starved: false });
    expect(heldUp.reasons).toEqual(["event-loop lag sampled 2 time(s) in a 10 s period (its loop was held up)"]);
    expect(measureRegion(regionOf([task("t5", [1, 2, 3, 4, 5, 6, 7, 8, 9, 10])]), step, 30, 20).health[0].saturated).toBe(false);
  });

  test("a late generator whose own CPU stayed low, its late seconds spent waiting, is starved, not saturated; busy, it is saturated", () => {
    const late = (taskId: string, cpu: number, counters: Record<string, number>): TaskFiles => ({
      region: "eu",
      taskId,
      phases: [
        { index: 0, name: "capacity 20 climb", startTime: w.climbStart },
        { index: 1, name: "capacity 20 hold", startTime: w.holdStart },
      ],
      periods: [
        period(1_000_000_000, { cpuPercent: cpu }),
        period(1_000_010_000, { counters, cpuPercent: cpu, histograms: { "cable.event_loop_lag": encoded([300, 400, 300, 400, 300, 400, 300, 400, 300, 400]) } }),
        period(1_000_020_000, { cpuPercent: cpu }),
      ],
    });
    const step = { level: 20, perTask: 10, climbIndex: 0, holdIndex: 1, climbS: 5 };
    const health = (t: TaskFiles) => measureRegion(regionOf([t]), step, 30, 20).health[0];
    const starved = health(late("t1", 4.6, { "cable.event_loop_late_starved": 10 }));
    expect(starved).toMatchObject({ saturated: false, starved: true });
    expect(starved.reasons).toEqual([expect.stringMatching(/^event-loop lag p90 \d+ ms > 100 ms$/), "the generator used 4.6% CPU; 10 of 10 late seconds waiting for a CPU"]);
    expect(health(late("t2", 60, { "cable.event_loop_late_starved": 10 }))).toMatchObject({ saturated: true, starved: false });
    expect(health(late("t3", 4.6, { "cable.event_loop_late_saturated": 10 }))).toMatchObject({ saturated: true, starved: false });
  });
});

describe("verdicts, decisions and the answer", () => {
  const slos = [parseSlo("cable.broadcast_latency.p95<250"), parseSlo("errors<1%")];
  const region = (latency: number[], lagP90 = 5, users = 50) => ({
    figures: figures({ users, hold: { "cable.broadcast_latency": sketchOf(latency) } }),
    health: [{ taskId: "task-1", region: "r", lagP90, cpuPeak: null, saturated: lagP90 > 100, starved: false, reasons: lagP90 > 100 ? [`event-loop lag p90 ${lagP90} ms > 100 ms`] : [] }],
    missing: [],
    rates: { sent: null, received: null },
  });
  const all = [20, 40, 60, 80];

  test("a step holds only when every region meets every SLO; a saturated generator is no verdict", () => {
    expect(judgeStep(40, "stair", "r1", { eu: region([10]), us: region([20]) }, slos).verdict).toBe("held");
    const breached = judgeStep(40, "stair", "r1", { eu: region([10]), us: region([900]) }, slos);
    expect(breached.verdict).toBe("breached");
    expect(breached.regions.eu.passed).toBe(true);
    expect(judgeStep(40, "stair", "r1", { eu: region([900], 400), us: region([10]) }, slos).verdict).toBe("generator-bound");
    expect(judgeStep(40, "stair", "r1", { eu: region([]) }, slos).verdict).toBe("breached");
    // Starved: no verdict either, said as starved; saturated anywhere wins.
    const starvedRegion = () => ({ ...region([900]), health: [{ ...region([900]).health[0], lagP90: 300, starved: true, reasons: ["event-loop lag p90 300 ms > 100 ms", "the generator used 3% CPU"] }] });
    const starved = judgeStep(40, "stair", "r1", { eu: starvedRegion(), us: region([10]) }, slos);
    expect(starved.verdict).toBe("generator-starved");
    expect(starved.regions.eu.starved).toEqual(["task-1: event-loop lag p90 300 ms > 100 ms, the generator used 3% CPU"]);
    expect(starved.regions.eu.saturated).toEqual([]);
    expect(judgeStep(40, "stair", "r1", { eu: starvedRegion(), us: region([900], 400) }, slos).verdict).toBe("generator-bound");
  });

  test("climb on; repeat a breach or a hold without data; a confirmed breach or a saturated generator ends the search; a repeat that holds resumes above", () => {
    const at = (level: number, verdict: StepResult["verdict"], attempt: StepResult["attempt"] = "stair") => ({ level, attempt, runId: "r", verdict, regions: {} }) as StepResult;
    expect(decideNext(at(20, "held"), [], all)).toEqual({ kind: "continue" });
    expect(decideNext(at(80, "held"), [], all)).toEqual({ kind: "done" });
    expect(decideNext(at(60, "breached"), [], all)).toEqual({ kind: "repeat", level: 60 });
    expect(decideNext(at(60, "breached", "repeat"), [at(60, "breached")], all)).toEqual({ kind: "done" });
    expect(decideNext(at(60, "held", "repeat"), [at(60, "breached")], all)).toEqual({ kind: "resume", levels: [80] });
    expect(decideNext(at(40, "generator-bound"), [], all)).toEqual({ kind: "done" });
    // A starved generator's machine may be quiet on the next run: the level is run again, once.
    expect(decideNext(at(40, "generator-starved"), [], all)).toEqual({ kind: "repeat", level: 40 });
    expect(decideNext(at(40, "generator-starved", "repeat"), [at(40, "generator-starved")], all)).toEqual({ kind: "done" });
    expect(decideNext(at(40, "held", "repeat"), [at(40, "generator-starved")], all)).toEqual({ kind: "resume", levels: [60, 80] });
    // Artillery drops a period now and then: a hold without a whole one is run again, once.
    expect(decideNext(at(40, "incomplete"), [], all)).toEqual({ kind: "repeat", level: 40 });
    expect(decideNext(at(40, "incomplete", "repeat"), [at(40, "incomplete")], all)).toEqual({ kind: "done" });
    expect(decideNext(at(40, "breached", "repeat"), [at(40, "incomplete")], all)).toEqual({ kind: "repeat", level: 40 });
    expect(decideNext(at(40, "incomplete", "repeat"), [at(40, "incomplete"), at(40, "breached")].slice(1), all)).toEqual({ kind: "repeat", level: 40 });
    expect(decideNext(at(40, "breached", "repeat"), [at(40, "incomplete"), at(40, "incomplete")], all)).toEqual({ kind: "done" });
  });

  test("the answer: held, first failing and why; the most tried; generator-bound", () => {
    const step = (level: number, attempt: StepResult["attempt"], eu: number[], us: number[], lag = 5) => judgeStep(level, attempt, "r", { eu: region(eu, lag, level / 2), us: region(us, 5, level / 2) }, slos);
    // 60 breaches once (noise), holds on its repeat, the stair goes on; 80 breaches twice in us only.
    const steps = [step(20, "stair", [5], [6]), step(40, "stair", [5], [6]), step(60, "stair", [5], [600]), step(60, "repeat", [5], [7]), step(80, "stair", [5], [700]), step(80, "repeat", [5], [800])];
    const answer = buildAnswer(steps, 100, "add tasks");
    expect(answer).toMatchObject({ held: 60, firstFailing: 80, mostTried: false, generatorBound: null });
    expect(answer.breached).toEqual([expect.objectContaining({ region: "us", slo: "cable.broadcast_latency.p95<250" })]);
    expect(answer.regions.eu).toMatchObject({ held: 80, firstFailing: null });
    expect(answer.regions.us).toMatchObject({ held: 60, firstFailing: 80 });
    expect(answer.regions.us.steps.map((s) => s.users)).toEqual([10, 20, 30, 30, 40, 40]);
    expect(headline(answer)).toMatch(/^held 60; 80 breached twice: us cable.broadcast_latency.p95<250 was \d+/);

    const most = buildAnswer([step(20, "stair", [5], [6]), step(40, "stair", [5], [6])], 40, "add tasks");
    expect(most).toMatchObject({ held: 40, mostTried: true });
    expect(headline(most)).toBe("held 40, the most tried");

    const bound = buildAnswer([step(20, "stair", [5], [6]), step(40, "stair", [900], [6], 300)], 100, "add tasks (--count 2)");
    expect(bound).toMatchObject({ held: 20, firstFailing: null, generatorBound: { at: 40, atLeast: 20 } });
    expect(headline(bound)).toBe("at least 20, generator-bound at 40: add tasks (--count 2)");
    expect(bound.regions.eu.generatorBound).toBe(true);
    expect(bound.regions.us.generatorBound).toBe(false);
    expect(bound.generatorStarved).toBeNull();

    // Starved twice at 40: a floor, said as starved, with no advice to add tasks.
    const starvedStep = (attempt: StepResult["attempt"]) => {
      const r = step(40, attempt, [900], [6]);
      return { ...r, verdict: "generator-starved" as const, regions: { ...r.regions, eu: { ...r.regions.eu, starved: ["task-1: event-loop lag p90 300 ms > 100 ms, the generator used 3% CPU"] } } };
    };
    const starved = buildAnswer([step(20, "stair", [5], [6]), starvedStep("stair"), starvedStep("repeat")], 100, "add tasks (--count 2)");
    expect(starved).toMatchObject({ held: 20, firstFailing: null, generatorBound: null, generatorStarved: { at: 40, atLeast: 20, tasks: ["task-1: event-loop lag p90 300 ms > 100 ms, the generator used 3% CPU"] } });
    expect(headline(starved)).toBe(
      "at least 20, starved at 40: the generator's machine was busy with other work, so its latencies there include that wait, not the server's; run the search where nothing else competes for the generator's cores",
    );
    expect(headline(starved)).not.toMatch(/add tasks|generator-bound/);
    expect(starved.regions.eu.generatorStarved).toBe(true);
    expect(starved.regions.us.generatorStarved).toBe(false);
    const md = renderCapacityMarkdown(starved, { slos, scenario: "s.yml", stair: { start: 20, step: 20, max: 100, holdS: 30, climbS: 5 }, regions: ["eu", "us"] });
    expect(md).toContain("> **Starved** at 40 users: task-1: event-loop lag p90 300 ms > 100 ms, the generator used 3% CPU. This machine was busy with other work");
    expect(md).toContain("| eu | 20 | – | – | no: starved |");
    expect(md).not.toContain("Generator-bound");

    // An incomplete hold that a repeat judged does not end the search.
    const incomplete = judgeStep(40, "stair", "r", { eu: { ...region([5]), missing: ["task-1"] }, us: region([6]) }, slos);
    expect(incomplete.verdict).toBe("incomplete");
    expect(buildAnswer([step(20, "stair", [5], [6]), incomplete, step(40, "repeat", [5], [6])], 40, "")).toMatchObject({ held: 40, incomplete: null, mostTried: true });
    expect(buildAnswer([step(20, "stair", [5], [6]), incomplete], 40, "")).toMatchObject({ held: 20, incomplete: { at: 40, tasks: ["eu/task-1"] } });

    const firstBreaks = buildAnswer([step(20, "stair", [900], [6]), step(20, "repeat", [900], [6])], 100, "");
    expect(firstBreaks).toMatchObject({ held: null, firstFailing: 20 });
    expect(headline(firstBreaks)).toMatch(/^held none of the levels; 20 breached twice/);
  });

  test("--refine: the middle level on the resolution's grid between the last held and the first breach; the answer is the lowest confirmed breach", () => {
    expect(refineLevel(1000, 1100, 25)).toBe(1050);
    expect(refineLevel(1000, 1050, 25)).toBe(1025);
    expect(refineLevel(1025, 1050, 25)).toBeNull();
    expect(refineLevel(20, 30, 5)).toBe(25);
    // Off the grid: levels stay on the held level's grid, strictly below the breach.
    expect(refineLevel(20, 30, 4)).toBe(24);
    expect(refineLevel(24, 30, 4)).toBe(28);
    expect(refineLevel(28, 30, 4)).toBeNull();

    const step = (level: number, attempt: StepResult["attempt"], latency: number) => judgeStep(level, attempt, "r", { eu: region([latency], 5, level) }, slos);
    // The stair: 1000 held, 1100 breached twice; refining: 1050 breached twice, 1025 held.
    const steps = [step(1000, "stair", 10), step(1100, "stair", 900), step(1100, "repeat", 900), step(1050, "refine", 800), step(1050, "repeat", 700), step(1025, "refine", 50)];
    const answer = buildAnswer(steps, 2000, "");
    expect(answer).toMatchObject({ held: 1025, firstFailing: 1050 });
    expect(headline(answer)).toMatch(/^held 1,025; 1,050 breached twice/);
    expect(refineLevel(answer.held!, answer.firstFailing!, 25)).toBeNull();

    expect(() => checkRefine(25, { step: 100 }, 1, false)).not.toThrow();
    expect(() => checkRefine(100, { step: 100 }, 1, false)).toThrow(/--refine 100 is not finer than --step 100: .* e.g. --refine 25/);
    expect(() => checkRefine(25, { step: 100 }, 2, false)).toThrow(/--refine 25 does not split evenly over 2 task/);
    expect(() => checkRefine(5, { step: 10 }, 2, true)).not.toThrow();
  });

  test("--refine: a refining run in which no user completed (a server the breach above left wedged) is no verdict, and ends the refining", () => {
    const step = (level: number, attempt: StepResult["attempt"], latency: number, runId: string) => judgeStep(level, attempt, runId, { eu: region([latency], 5, level) }, slos);
    // The stair: 160 held, 180 breached twice (slow, not dead); then puma answered no handshake at 170.
    const steps = [step(160, "stair", 40, "a"), step(180, "stair", 2300, "a"), step(180, "repeat", 2600, "b"), step(170, "refine", 900, "c")];
    expect(markUnrecovered(steps, "c", { created: 200, completed: 3 }, 180)).toBe(false);
    expect(steps[3].verdict).toBe("breached");
    expect(markUnrecovered(steps, "c", { created: 200, completed: 0 }, 180)).toBe(true);
    expect(steps[3].verdict).toBe("incomplete");
    expect(steps[3].regions.eu.missing).toEqual(["no user completed: the server had not recovered from the breach at 180"]);
    // The stair's confirmed breach stands; the refining level is not read as one below it.
    expect(buildAnswer(steps, 400, "")).toMatchObject({ held: 160, firstFailing: 180, incomplete: null });
    // No record of the users (a task left no ended marker): nothing to conclude from.
    expect(markUnrecovered(steps, "b", null, 180)).toBe(false);
  });

  test("a run's users come from its tasks' final reports, only when every task left one", () => {
    const merged = (tasks: number[], counters: Record<string, number>) =>
      ({ regions: tasks.map((n, i) => ({ name: `r${i}`, tasks: n, expectedTasks: 2 })), all: { counters } }) as unknown as MergedResults;
    expect(usersOf(merged([2, 2], { "vusers.created": 60, "vusers.completed": 58, "vusers.failed": 2 }))).toEqual({ created: 60, completed: 58, failed: 2 });
    expect(usersOf(merged([2, 2], { "vusers.created": 4 }))).toEqual({ created: 4, completed: 0, failed: 0 });
    // A task without a report: its users are unknown, so is the whole run's count (ended.live decides).
    expect(usersOf(merged([2, 1], { "vusers.created": 60, "vusers.completed": 60 }))).toBeNull();
    expect(usersOf(merged([], {}))).toBeNull();
    expect(usersOf(undefined)).toBeNull();
  });

  test("capacity.md: the answer, a table per region, a chart from 0 with the bound as a line", () => {
    const step = (level: number, attempt: StepResult["attempt"], eu: number, us: number) => judgeStep(level, attempt, "r", { eu: region([eu], 5, level / 2), us: region([us], 5, level / 2) }, slos);
    const answer = buildAnswer([step(20, "stair", 40, 210), step(40, "stair", 50, 600), step(40, "repeat", 60, 700)], 100, "");
    const md = renderCapacityMarkdown(answer, { slos, scenario: "scenarios/capacity-rails.yml", stair: { start: 20, step: 20, max: 100, holdS: 30, climbS: 10 }, regions: ["eu", "us"] });
    expect(md).toContain("**held 20; 40 breached twice");
    expect(md).toContain("### eu");
    expect(md).toContain("### us");
    expect(md).toMatch(/\| 40 \| 20 \| repeat \| \*\*breached\*\* \|/);
    expect(md).toContain("held here, breached elsewhere");
    expect(md).toContain('x-axis "users" [20, 40]');
    expect(md).toMatch(/y-axis "cable.broadcast_latency.p95" 0 --> \d+/);
    expect(md).toContain("line [250, 250]");
    expect(md).toContain('title "cable.broadcast_latency.p95 by concurrent users (SLO: below 250)"');
    expect(md).toContain('"plotColorPalette":"#1f77b4, #d62728, #7f7f7f"');
    // At 40 the chart shows the repeat's figure, the one the verdict rests on.
    expect(md).toMatch(/line \[40(\.\d+)?, 60(\.\d+)?\]/);
  });
});

// The arrival timer that replaces Artillery's spinning one (src/arrivals.ts): the same arrivals at
// the same times, on a fake clock (no test waits on real time), and through the real CLI.
import { EventEmitter } from "node:events";
import { counter, runArtillery } from "cable-test-servers";
import { startTarget, type LocalTarget } from "cable-local-target";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { ARRIVAL_BATCH_MS, TIMER_SLACK_MS, installArrivals, PINNED_ARRIVALS, PoissonArrivals, resetArrivalsForTest, UniformArrivals, type ArrivalsModule, type Timers } from "../src/arrivals.js";

/** A manual clock: `advance` runs due timers in time order, each seeing its own firing time plus `late`. */
class FakeTimers implements Timers {
  time = 0;
  late = 0;
  private queue: { at: number; fn: () => void; id: number }[] = [];
  private ids = 0;
  now = () => this.time;
  setTimeout = (fn: () => void, ms: number) => {
    const id = ++this.ids;
    this.queue.push({ at: this.time + ms, fn, id });
    return id;
  };
  clearTimeout = (id: unknown) => {
    this.queue = this.queue.filter((t) => t.id !== id);
  };
  advance(until: number): void {
    for (let guard = 0; guard < 1_000_000; guard++) {
      this.queue.sort((a, b) => a.at - b.at);
      const next = this.queue[0];
      if (!next || next.at > until) break;
      this.queue.shift();
      this.time = Math.max(this.time, next.at + this.late);
      next.fn();
    }
    this.time = Math.max(this.time, until);
  }
}

function record(process: EventEmitter, timers: FakeTimers) {
  const at: number[] = [];
  let finished = 0;
  process.on("arrival", () => at.push(timers.now()));
  process.on("finished", () => finished++);
  return { at, finished: () => finished };
}

describe("UniformArrivals", () => {
  test("fires floor(duration / tick) arrivals, each at start + i × tick, then finishes once", () => {
    const timers = new FakeTimers();
    const p = new UniformArrivals(10, 1000, timers);
    const r = record(p, timers);
    p.start();
    timers.advance(5000);
    expect(r.at).toHaveLength(100);
    expect(r.at.every((t, i) => t === (i + 1) * 10)).toBe(true);
    expect(r.finished()).toBe(1);
  });

  test("a timer that fires a fraction of a millisecond early (libuv's whole-ms clock) still emits its arrival: one wake-up per arrival", () => {
    const timers = new FakeTimers();
    timers.late = -0.7;
    let wakeUps = 0;
    const setTimeout = timers.setTimeout;
    timers.setTimeout = (fn, ms) => (wakeUps++, setTimeout(fn, ms));
    const p = new UniformArrivals(10, 1000, timers); // 100/s
    const r = record(p, timers);
    p.start();
    timers.advance(5000);
    expect(r.at).toHaveLength(100);
    expect(wakeUps).toBe(100);
    // Never later than the schedule, and never more than the slack early.
    expect(r.at.every((t, i) => t <= (i + 1) * 10 && t >= (i + 1) * 10 - TIMER_SLACK_MS)).toBe(true);
  });

  test("a timer that fires late emits every arrival due at once: lateness never accumulates", () => {
    const timers = new FakeTimers();
    timers.late = 7; // every timer fires 7 ms late
    const p = new UniformArrivals(1, 200, timers); // 1,000/s
    const r = record(p, timers);
    p.start();
    timers.advance(1000);
    expect(r.at).toHaveLength(200);
    // No arrival is more than one late timer (and half a batch) behind its schedule.
    expect(Math.max(...r.at.map((t, i) => t - (i + 1)))).toBeLessThanOrEqual(7 + ARRIVAL_BATCH_MS / 2);
    expect(r.finished()).toBe(1);
  });

  test("a fast phase wakes once per batch, every arrival within half a batch of its schedule", () => {
    const timers = new FakeTimers();
    let wakeUps = 0;
    const setTimeout = timers.setTimeout;
    timers.setTimeout = (fn, ms) => (wakeUps++, setTimeout(fn, ms));
    const p = new UniformArrivals(1, 1000, timers); // 1,000/s for 1 s
    const r = record(p, timers);
    p.start();
    timers.advance(2000);
    expect(r.at).toHaveLength(1000);
    const errors = r.at.map((t, i) => t - (i + 1));
    expect(Math.max(...errors.map(Math.abs))).toBeLessThanOrEqual(ARRIVAL_BATCH_MS / 2);
    expect(wakeUps).toBeLessThanOrEqual(1000 / ARRIVAL_BATCH_MS + 1);
    expect(r.finished()).toBe(1);
  });

  test("stop ends the arrivals and finishes once", () => {
    const timers = new FakeTimers();
    const p = new UniformArrivals(10, 1000, timers);
    const r = record(p, timers);
    p.start();
    timers.advance(55);
    p.stop();
    p.stop();
    timers.advance(2000);
    expect(r.at).toHaveLength(5);
    expect(r.finished()).toBe(1);
  });

  test("a fractional tick counts as arrivals does (whole microseconds)", () => {
    const timers = new FakeTimers();
    const p = new UniformArrivals(1000 / 3, 2000, timers); // arrivalRate 3 for 2 s
    const r = record(p, timers);
    p.start();
    timers.advance(3000);
    expect(r.at).toHaveLength(6);
  });
});

describe("PoissonArrivals", () => {
  test("exponential gaps of the given mean until the duration has passed", () => {
    const timers = new FakeTimers();
    let seed = 1;
    const random = () => ((seed = (seed * 16807) % 2147483647) / 2147483647);
    const p = new PoissonArrivals(10, 10_000, timers, random);
    const r = record(p, timers);
    p.start();
    timers.advance(20_000);
    expect(r.finished()).toBe(1);
    expect(r.at.every((t) => t < 10_000)).toBe(true);
    // 1,000 expected; a 5-sigma band.
    expect(r.at.length).toBeGreaterThan(850);
    expect(r.at.length).toBeLessThan(1150);
  });
});

describe("PoissonArrivals, fast", () => {
  test("a mean gap under a batch shares wake-ups, never more than half a batch early, and ends at the duration", () => {
    const timers = new FakeTimers();
    let wakeUps = 0;
    const setTimeout = timers.setTimeout;
    timers.setTimeout = (fn, ms) => (wakeUps++, setTimeout(fn, ms));
    let seed = 7;
    const random = () => ((seed = (seed * 16807) % 2147483647) / 2147483647);
    // The same draws give the schedule: each arrival's due time.
    let check = 7;
    const draw = () => ((check = (check * 16807) % 2147483647) / 2147483647);
    const p = new PoissonArrivals(1, 2_000, timers, random);
    const r = record(p, timers);
    p.start();
    timers.advance(5_000);
    expect(r.finished()).toBe(1);
    let due = 0;
    const errors = r.at.map((t) => ((due += -Math.log(1 - draw()) * 1), t - due));
    expect(Math.max(...errors.map(Math.abs))).toBeLessThanOrEqual(ARRIVAL_BATCH_MS / 2);
    expect(due).toBeLessThan(2_000);
    expect(r.at.length).toBeGreaterThan(1_800);
    expect(r.at.length).toBeLessThan(2_200);
    expect(wakeUps).toBeLessThanOrEqual(2_000 / ARRIVAL_BATCH_MS + 2);
  });
});

describe("installArrivals", () => {
  const fakeModule = (): ArrivalsModule => ({
    uniform: { process: () => new EventEmitter() },
    poisson: { process: () => new EventEmitter() },
  });

  test("replaces both factories of the pinned version, once", () => {
    resetArrivalsForTest();
    const m = fakeModule();
    expect(installArrivals(false, () => {}, () => ({ module: m, version: PINNED_ARRIVALS }))).toBe("replaced");
    expect(m.uniform.process(10, 100)).toBeInstanceOf(UniformArrivals);
    expect(m.poisson.process(10, 100)).toBeInstanceOf(PoissonArrivals);
    resetArrivalsForTest();
  });

  test("leaves another version alone and warns", () => {
    resetArrivalsForTest();
    const m = fakeModule();
    const original = m.uniform.process;
    const warnings: string[] = [];
    expect(installArrivals(false, (w) => warnings.push(w), () => ({ module: m, version: "3.0.0" }))).toBe("kept");
    expect(m.uniform.process).toBe(original);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain("3.0.0");
    resetArrivalsForTest();
  });

  test("preciseArrivals keeps Artillery's timer", () => {
    resetArrivalsForTest();
    const m = fakeModule();
    const original = m.uniform.process;
    expect(installArrivals(true, () => {}, () => ({ module: m, version: PINNED_ARRIVALS }))).toBe("kept");
    expect(m.uniform.process).toBe(original);
    resetArrivalsForTest();
  });

  test("the arrivals Artillery installs here is the pinned version", async () => {
    const { createRequire } = await import("node:module");
    const path = await import("node:path");
    const req = createRequire(__filename);
    const artillery = path.dirname(req.resolve("artillery/package.json"));
    expect(createRequire(path.join(artillery, "package.json"))("arrivals/package.json").version).toBe(PINNED_ARRIVALS);
  });
});

describe("through the real CLI", () => {
  let target: LocalTarget;
  beforeAll(async () => {
    target = await startTarget({ port: 0 });
  });
  afterAll(() => target?.close());

  // arrivalRate (uniform), arrivalCount and a poisson phase: the counts Artillery promises, with
  // the replacement (default) and with Artillery's own timer (preciseArrivals).
  test.concurrent.each([false, true])("preciseArrivals: %s starts every VU the phases ask for", async (precise) => {
    const run = await runArtillery({
      script: {
        config: {
          target: target.cableUrl,
          engines: { cable: {} },
          cable: { preciseArrivals: precise },
          phases: [{ duration: 2, arrivalRate: 40 }, { duration: 1, arrivalCount: 25 }],
        },
        scenarios: [{ engine: "cable", flow: [{ connect: { cookies: { uid: "a-{{ $uuid }}" } } }, { disconnect: null }] }],
      },
      // NODE_DEBUG=cable: the engine says, from the worker thread that runs the phases, which timer it left.
      env: { NODE_DEBUG: "cable" },
      timeoutMs: 60_000,
    });
    expect(run.code, run.output).toBe(0);
    expect(run.output).toContain(`arrival timer: ${precise ? "kept" : "replaced"}`);
    expect(counter(run.report!, "vusers.created")).toBe(105);
    expect(counter(run.report!, "vusers.completed")).toBe(105);
  });
});

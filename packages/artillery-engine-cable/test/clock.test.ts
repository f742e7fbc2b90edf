// A thread's clock, driven by a fake monotonic clock and a fake wall clock: it follows the wall
// clock's steps (forward at once, backward by slewing), never decreases, and reads the wall clock
// about once a minute, not per read.
import { describe, expect, it } from "vitest";
import { AnchoredClock, REANCHOR_EVERY_MS, SLEW_RATE, type TimeSource } from "../src/clock.js";

const EPOCH = Date.UTC(2026, 10, 24, 12, 0, 0);

/** A monotonic clock that moves a µs per read (so that a spin for Date.now()'s tick ends), and a wall clock `wallAhead` ms from it. */
class FakeTime implements TimeSource {
  mono = 1_000;
  /** Wall epoch ms minus monotonic ms: a step of the wall clock changes it. */
  wallAhead = EPOCH;
  wallReads = 0;
  frozenWall: number | undefined;
  monotonic = (): number => (this.mono += 0.001);
  wall = (): number => {
    this.wallReads++;
    return this.frozenWall ?? Math.floor(this.mono + this.wallAhead);
  };
  /** The true wall time now, unrounded. */
  trueWall(): number {
    return this.mono + this.wallAhead;
  }
}

/** Reads the clock every `stepMs` for `forMs`, checking it never decreases; the reads. */
function readFor(clock: AnchoredClock, time: FakeTime, forMs: number, stepMs: number): number[] {
  const reads: number[] = [];
  const until = time.mono + forMs;
  while (time.mono < until) {
    const t = clock.now();
    if (reads.length > 0) expect(t).toBeGreaterThanOrEqual(reads[reads.length - 1]);
    reads.push(t);
    time.mono += stepMs;
  }
  return reads;
}

describe("AnchoredClock", () => {
  it("is the monotonic clock plus its origin while the wall clock agrees, and reads the wall clock once a minute", () => {
    const time = new FakeTime();
    const clock = new AnchoredClock(time, EPOCH);
    const reads = readFor(clock, time, 10 * 60_000, 100);
    expect(reads.length).toBeGreaterThan(5_000);
    expect(Math.abs(clock.now() - time.trueWall())).toBeLessThan(0.01);
    expect(clock.corrections).toBe(0);
    // Once at the first read, then once per minute: 11 for 10 minutes, against 6,000 reads.
    expect(time.wallReads).toBeLessThanOrEqual(12);
  });

  it("leaves a disagreement within Date.now()'s rounding alone", () => {
    const time = new FakeTime();
    const clock = new AnchoredClock(time, EPOCH + 0.4);
    readFor(clock, time, 5 * 60_000, 100);
    expect(clock.corrections).toBe(0);
  });

  it("jumps forward to a wall clock that stepped ahead, at the next comparison, to well below a ms", () => {
    const time = new FakeTime();
    const clock = new AnchoredClock(time, EPOCH);
    readFor(clock, time, 1_000, 10);
    time.wallAhead += 5_000;
    const before = readFor(clock, time, REANCHOR_EVERY_MS - 2_000, 10);
    // Not yet compared: still the old anchor.
    expect(time.trueWall() - before[before.length - 1]).toBeGreaterThan(4_990);
    readFor(clock, time, 3_000, 10);
    expect(clock.corrections).toBe(1);
    expect(Math.abs(clock.now() - time.trueWall())).toBeLessThan(0.01);
  });

  it("slews back to a wall clock that stepped behind: never decreasing, never stopped, at (1 − SLEW_RATE) of real time until caught up", () => {
    const time = new FakeTime();
    const clock = new AnchoredClock(time, EPOCH);
    readFor(clock, time, REANCHOR_EVERY_MS - 1, 10);
    time.wallAhead -= 1_000;
    // The next read compares and starts the slew; every read during it keeps moving forward.
    const slew = readFor(clock, time, 1_000 / SLEW_RATE + 100, 1);
    for (let i = 1; i < slew.length; i++) expect(slew[i]).toBeGreaterThan(slew[i - 1]);
    // During the slew: 1 ms of real time is (1 − SLEW_RATE) ms of this clock (each fake read takes a µs too).
    expect(Math.abs(slew[101] - slew[1] - 100 * (1 - SLEW_RATE))).toBeLessThan(0.2);
    expect(clock.corrections).toBe(1);
    // Caught up: the wall clock again, and at full speed.
    expect(Math.abs(clock.now() - time.trueWall())).toBeLessThan(0.01);
    const after = readFor(clock, time, 1_000, 10);
    expect(Math.abs(after[after.length - 1] - after[0] - (after.length - 1) * 10)).toBeLessThan(0.2);
  });

  it("follows a wall clock that drifts slowly, a ms or so each minute, within the tolerance", () => {
    const time = new FakeTime();
    const clock = new AnchoredClock(time, EPOCH);
    for (let minute = 0; minute < 30; minute++) {
      readFor(clock, time, 60_000, 500);
      time.wallAhead += minute % 2 === 0 ? 0.8 : -0.3;
    }
    readFor(clock, time, 61_000, 500);
    expect(Math.abs(clock.now() - time.trueWall())).toBeLessThanOrEqual(1.6);
    expect(clock.corrections).toBeGreaterThan(0);
  });

  it("does not hang on a wall clock that never ticks: it takes the middle of its ms", () => {
    const time = new FakeTime();
    const clock = new AnchoredClock(time, EPOCH);
    time.frozenWall = EPOCH + 10_000;
    const first = clock.now();
    // The spin for a tick gave up after 2 ms: the frozen wall clock's middle of its ms is now.
    expect(clock.now()).toBeCloseTo(EPOCH + 10_000.5, 1);
    expect(first).toBeLessThan(EPOCH + 10_000.5);
  });
});

import { performance } from "node:perf_hooks";

// Epoch milliseconds that never step backwards within a thread: a stamp written and read by two VUs
// of the same thread measures with the monotonic clock, and still compares with other processes'
// wall clocks, since the thread's clock is anchored to wall time and re-anchored to it every minute.
//
// Why re-anchor: the monotonic clock never follows a step of the wall clock (chrony's or NTP's
// `makestep`, a VM resumed, an operator's `date -s`), so a thread anchored only at its start
// (`performance.timeOrigin`) keeps the old offset for the rest of the run, and every cross-task
// broadcast latency it measures carries the step. Re-anchoring bounds that error to one minute.
//
// How, never backwards:
// - the wall clock is ahead of this clock: jump forward to it at once (a duration measured across
//   the jump, within this thread, gains the jump: rare, and a step of the machine's clock anyway);
// - it is behind: slew. This clock runs at (1 − SLEW_RATE) of real time until it has caught up,
//   never stops and never steps back (a duration measured across the slew is up to 10 % short;
//   a 1 ms correction takes 10 ms, a 1 s step 10 s).
// A disagreement within Date.now()'s resolution (whole ms) is none: left alone, so that the clock
// does not jitter by the rounding of Date.now().
//
// Cost per read: performance.now() and one comparison. Date.now() is read once a minute (and, only
// when the two clocks disagree, for up to 2 ms to find its next tick, which pins the correction to a
// few µs instead of Date.now()'s whole ms); while slewing, a read also does a little arithmetic.

/** How often a thread's clock is compared with the wall clock, in ms of its monotonic clock. */
export const REANCHOR_EVERY_MS = 60_000;
/** While the wall clock is behind: how much slower than real time this clock runs until it is caught up. */
export const SLEW_RATE = 0.1;
/** A disagreement larger than this (beyond Date.now()'s ±0.5 ms of rounding) is corrected. */
export const TOLERANCE_MS = 1;
/** The longest wait for Date.now() to tick, to pin the wall time below its whole-ms resolution. */
const EDGE_WAIT_MS = 2;

/** Where an AnchoredClock reads time: injected so that tests drive it with fake clocks. */
export interface TimeSource {
  /** Monotonic ms from an arbitrary origin (performance.now()). */
  monotonic(): number;
  /** Wall-clock epoch ms, rounded down to a whole ms as Date.now() is. */
  wall(): number;
}

export const systemTimeSource: TimeSource = {
  monotonic: () => performance.now(),
  wall: () => Date.now(),
};

/** Epoch ms from a monotonic clock, anchored to the wall clock and re-anchored to it periodically; never decreasing. */
export class AnchoredClock {
  /** Epoch ms at monotonic 0. */
  private offset: number;
  /** When (monotonic ms) the next read leaves the fast path: the next comparison with the wall clock, or every read while slewing. */
  private due = 0;
  private slewing = false;
  private slewFrom = 0;
  private slewStart = 0;
  private slewTo = 0;
  /** The last value returned while slewing: rounding never makes it step back. */
  private last = -Infinity;
  /** How many times the clock was corrected (jumped or slewed): for tests and traces. */
  corrections = 0;

  /** `origin`: epoch ms at the source's monotonic 0 (performance.timeOrigin for performance.now()). */
  constructor(
    private readonly source: TimeSource = systemTimeSource,
    origin: number = performance.timeOrigin,
    private readonly everyMs: number = REANCHOR_EVERY_MS,
  ) {
    this.offset = origin;
  }

  now(): number {
    const m = this.source.monotonic();
    if (m < this.due) return m + this.offset;
    return this.slow(m);
  }

  private slow(m: number): number {
    if (!this.slewing) this.compare(m);
    if (!this.slewing) return m + this.offset;
    const offset = Math.max(this.slewTo, this.slewFrom - (m - this.slewStart) * SLEW_RATE);
    this.offset = offset;
    if (offset === this.slewTo) {
      this.slewing = false;
      this.due = m + this.everyMs;
    } else this.due = m;
    const t = Math.max(m + offset, this.last);
    this.last = t;
    return t;
  }

  /** Compares with the wall clock: within tolerance, nothing; ahead, jumps; behind, starts a slew. */
  private compare(m: number): void {
    this.due = m + this.everyMs;
    // Date.now() is rounded down: the wall time is in [wall, wall + 1), its middle wall + 0.5.
    const disagreement = this.source.wall() + 0.5 - (m + this.offset);
    if (Math.abs(disagreement) <= TOLERANCE_MS) return;
    const target = this.wallOffset();
    if (target === this.offset) return;
    this.corrections++;
    if (target > this.offset) {
      this.offset = target;
      return;
    }
    this.slewing = true;
    this.slewFrom = this.offset;
    this.slewStart = m;
    this.slewTo = target;
    this.last = m + this.offset;
  }

  /**
   * The wall clock's epoch ms at monotonic 0, to well below a ms: Date.now() read until it ticks,
   * when the wall time is the new whole ms. Without a tick within EDGE_WAIT_MS (a coarse or stopped
   * source), the middle of its ms.
   */
  private wallOffset(): number {
    const start = this.source.monotonic();
    const first = this.source.wall();
    for (;;) {
      const m = this.source.monotonic();
      const w = this.source.wall();
      if (w !== first) return w - m;
      if (m - start > EDGE_WAIT_MS) return w + 0.5 - m;
    }
  }
}

/** This thread's clock (each worker thread has its own module instance, so its own). */
const threadClock = new AnchoredClock();

/** Epoch ms, monotonic within this thread, re-anchored to the wall clock every minute. */
export function nowMs(): number {
  return threadClock.now();
}

/** A timer handle, whatever the clock's timers are. */
export type TimerHandle = { readonly __timer?: never } | NodeJS.Timeout;

/**
 * Time as a connection sees it: injected, so that tests drive keepalives, staleness and timeouts
 * with a fake clock instead of waiting for real seconds.
 */
export interface Clock {
  now(): number;
  setTimeout(fn: () => void, ms: number): TimerHandle;
  clearTimeout(timer: TimerHandle): void;
}

export const systemClock: Clock = {
  now: nowMs,
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (timer) => clearTimeout(timer as NodeJS.Timeout),
};

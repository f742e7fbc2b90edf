import { EventEmitter } from "node:events";
import { createRequire } from "node:module";
import path from "node:path";

// Arrivals that cost nothing while waiting.
//
// Artillery 2.0.34 starts the VUs of `arrivalRate` and `arrivalCount` phases from the `arrivals`
// package (lib/core/phases.ts: `arrivals.uniform.process`, `arrivals.poisson.process`), which
// times them with `nanotimer`: for the last 25 ms before every arrival it re-schedules itself with
// setImmediate, so the event loop never sleeps. Above ~20 arrivals/s that keeps a core busy for the
// whole phase, whatever the VUs do (docs/benchmarks.md: 1.92 CPU-s for 200 VUs over 2 s, against
// 0.17 CPU-s without the spin) — on a 2-core generator, a core taken from the VUs, which shows as
// event-loop lag in every latency. `rampTo` phases use `driftless` (setTimeout), which does not spin.
//
// Here the two process factories are replaced by ones with the same contract (an EventEmitter with
// start/stop, 'arrival' events, 'finished' at the end, the same arrival counts) driven by one
// setTimeout to the next due arrival on an absolute schedule: when the timer fires late, every
// arrival already due is emitted at once, so lateness never accumulates (bench: p99 within a few ms
// of schedule at 100/s and 1,000/s).
//
// Arrivals closer together than ARRIVAL_BATCH_MS share one wake-up, each within half of it of its
// schedule (early or late). Waking the worker for every arrival was a third of a VU's connect
// cost: at 1,000/s, 0.63 ms of CPU per connect + subscribe with a wake-up per arrival, 0.46 ms with
// one per 5 ms (docs/benchmarks.md, "Connect cost"); the bench's bare ws client connects in 10 ms
// ticks. Slower phases (an arrival every 5 ms or more) are unchanged: every arrival on its own
// timer, at most TIMER_SLACK_MS early.
//
// Where: phases run in the worker thread that runs the VUs (runner.ts creates the phaser in `run`),
// and each worker thread has its own module registry; the engine is constructed in that same
// thread before `run`, so installing from the constructor patches the `arrivals` module that the
// thread's phases use. It is version-checked: with any other `arrivals` than the one Artillery
// 2.0.34 pins, nothing is replaced and a warning says so. `config.cable.preciseArrivals: true`
// keeps Artillery's timer.

/** The `arrivals` version Artillery 2.0.34 pins, whose contract this module reproduces. */
export const PINNED_ARRIVALS = "2.1.2";

/** The shortest time between two wake-ups of a fast phase; its arrivals land within half of it. */
export const ARRIVAL_BATCH_MS = 5;
/**
 * How early a timer may fire against `performance.now()`: Node times a setTimeout on libuv's clock,
 * whole milliseconds cached once per loop iteration, so a timer for 9.7 ms can run a fraction of a
 * millisecond before the arrival it is for. Without this slack such a wake-up emits nothing and
 * sets a second timer for the rest: 1,835 wake-ups for 1,000 arrivals at 100/s, each as dear as an
 * arrival on a virtual machine (docs/benchmarks.md, "The arrival timer on a real server's terms").
 */
export const TIMER_SLACK_MS = 1;
/** Most arrivals one wake-up emits: a bound far above what a batch of a real phase holds. */
const MAX_PER_WAKE = 100_000;

/** How early an arrival of a phase with arrivals every `gapMs` (on average) may come: half a batch, if they share batches. */
function leadFor(gapMs: number): number {
  return gapMs < ARRIVAL_BATCH_MS ? ARRIVAL_BATCH_MS / 2 : 0;
}

export interface ArrivalsModule {
  uniform: { process(tickIntervalMs: number, durationMs: number): EventEmitter };
  poisson: { process(meanMs: number, durationMs: number): EventEmitter };
}

/** A clock and timer, injectable so that the schedule is tested without real time. */
export interface Timers {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

const realTimers: Timers = {
  now: () => performance.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

/**
 * What both processes share: one timer to the next wake-up, on an absolute schedule from `start`,
 * and `finished` once, after the last arrival or on stop.
 */
abstract class ScheduledArrivals extends EventEmitter {
  protected startedAt = 0;
  protected stopped = false;
  private wokeAt = -Infinity;
  private timer: unknown;

  constructor(
    /** How early an arrival may come (leadFor). */
    protected readonly leadMs: number,
    protected readonly timers: Timers,
  ) {
    super();
  }

  start(): this {
    this.startedAt = this.timers.now();
    this.begin();
    this.schedule();
    return this;
  }

  stop(): this {
    if (this.stopped) return this;
    this.stopped = true;
    if (this.timer !== undefined) this.timers.clearTimeout(this.timer);
    this.timer = undefined;
    this.emit("finished");
    return this;
  }

  /** Called at start, before the first wake-up is scheduled. */
  protected begin(): void {}

  /** When the next arrival is due, on `timers`' clock. */
  protected abstract nextDue(): number;

  /** Emits every arrival due by `until` (bounded), stopping when the phase is over. */
  protected abstract emitDue(until: number): void;

  private schedule(): void {
    if (this.stopped) return;
    const due = this.nextDue();
    const wakeAt = this.leadMs ? Math.max(due - this.leadMs, this.wokeAt + ARRIVAL_BATCH_MS) : due;
    this.timer = this.timers.setTimeout(() => this.fire(), Math.max(0, wakeAt - this.timers.now()));
  }

  private fire(): void {
    this.timer = undefined;
    const now = (this.wokeAt = this.timers.now());
    this.emitDue(now + Math.max(this.leadMs, TIMER_SLACK_MS));
    this.schedule();
  }
}

/**
 * Arrivals at `start + i × tick` for i = 1..max (arrivals' UniformProcess: the first after one
 * tick, `floor(duration / tick)` of them, `finished` after the last or on stop).
 */
export class UniformArrivals extends ScheduledArrivals {
  private readonly tickMs: number;
  private readonly max: number;
  private emitted = 0;

  constructor(tickIntervalMs: number, durationMs: number, timers: Timers = realTimers) {
    // As arrivals does: the tick in whole microseconds, the count from the duration.
    const tickMicros = Math.floor(tickIntervalMs * 1000);
    super(leadFor(tickMicros / 1000), timers);
    this.tickMs = tickMicros / 1000;
    this.max = durationMs ? Math.floor((durationMs * 1000) / tickMicros) : Infinity;
  }

  protected override nextDue(): number {
    return this.startedAt + (this.emitted + 1) * this.tickMs;
  }

  protected override emitDue(until: number): void {
    const due = Math.min(this.max, Math.floor((until - this.startedAt) / this.tickMs + 1e-9));
    // Bounded: at most the arrivals due now, and never past the phase's count.
    while (!this.stopped && this.emitted < due) {
      this.emitted++;
      this.emit("arrival");
      if (this.emitted === this.max) return void this.stop();
    }
  }
}

/** Arrivals with exponential gaps of mean `meanMs` until `durationMs` has passed (arrivals' PoissonProcess). */
export class PoissonArrivals extends ScheduledArrivals {
  /** When the next arrival is due. */
  private nextAt = 0;

  constructor(
    private readonly meanMs: number,
    private readonly durationMs: number,
    timers: Timers = realTimers,
    private readonly random: () => number = Math.random,
  ) {
    super(leadFor(meanMs), timers);
  }

  protected override begin(): void {
    this.nextAt = this.startedAt + this.gap();
  }

  protected override nextDue(): number {
    return this.nextAt;
  }

  protected override emitDue(until: number): void {
    for (let n = 0; n < MAX_PER_WAKE && !this.stopped && this.nextAt <= until; n++) {
      // As arrivals does: the arrival that lands past the duration ends the phase instead.
      if (this.durationMs && this.nextAt - this.startedAt >= this.durationMs) return void this.stop();
      this.emit("arrival");
      this.nextAt += this.gap();
    }
  }

  private gap(): number {
    return -Math.log(1 - this.random()) * this.meanMs;
  }
}

let installed: "replaced" | "kept" | undefined;

/** Tests only: forget what this thread installed. */
export function resetArrivalsForTest(): void {
  installed = undefined;
}

/**
 * Replaces Artillery's spinning arrival timer in this thread, once. Returns what happened:
 * "replaced", "kept" (preciseArrivals, or an `arrivals` this module does not know), or "absent".
 */
export function installArrivals(
  precise: boolean,
  warn: (message: string) => void = (m) => console.warn(m),
  load: () => { module: ArrivalsModule; version: string } | undefined = loadArrivals,
): "replaced" | "kept" | "absent" {
  if (installed) return installed;
  if (precise) return (installed = "kept");
  const found = load();
  if (!found) return "absent";
  if (found.version !== PINNED_ARRIVALS) {
    warn(
      `artillery-engine-cable: Artillery's "arrivals" is ${found.version}, not ${PINNED_ARRIVALS} (Artillery 2.0.34): ` +
        "its arrival timer is left as it is, and it spins a core for the last 25 ms before each arrival.",
    );
    return (installed = "kept");
  }
  found.module.uniform.process = (tick, duration) => new UniformArrivals(tick, duration);
  found.module.poisson.process = (mean, duration) => new PoissonArrivals(mean, duration);
  return (installed = "replaced");
}

/** The `arrivals` module instance Artillery's phases use in this thread, resolved from Artillery itself. */
function loadArrivals(): { module: ArrivalsModule; version: string } | undefined {
  try {
    const req = createRequire(__filename);
    const artilleryDir = path.dirname(req.resolve("artillery/package.json", { paths: [process.cwd(), __dirname] }));
    const fromArtillery = createRequire(path.join(artilleryDir, "package.json"));
    const pkg = fromArtillery.resolve("arrivals/package.json");
    const version = (fromArtillery(pkg) as { version: string }).version;
    return { module: fromArtillery("arrivals") as ArrivalsModule, version };
  } catch {
    return undefined;
  }
}

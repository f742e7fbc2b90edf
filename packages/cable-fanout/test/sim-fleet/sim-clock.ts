// The simulated fleet's time, shared by the runner (its `now` and `sleep`) and every simulated task:
// a period file every 10 s of this clock, however fast it runs. The runner, its live feed and
// --abort-on judge periods against the same clock, so compressed time keeps them consistent.
import { PERIOD_MS } from "artillery-plugin-cable-report";

const DAY_MS = 86_400_000;

export class SimClock {
  /** Simulated ms per real ms. */
  readonly speed: number;
  private readonly realStart = performance.now();
  private readonly simStart: number;

  /** `periodMs`: how long one 10 s metrics period lasts in real time (10_000: real time). */
  constructor(readonly periodMs: number = PERIOD_MS) {
    if (!(periodMs > 0)) throw new RangeError(`periodMs must be above 0, not ${periodMs}`);
    this.speed = PERIOD_MS / periodMs;
    // Compressed time runs ahead of the real clock; started a day back, it stays behind it, where the
    // merge wants a task's metrics (it refuses periods in its own future).
    this.simStart = Date.now() - (this.speed > 1 ? DAY_MS : 0);
  }

  now = (): number => Math.round(this.simStart + (performance.now() - this.realStart) * this.speed);

  /** Resolves after `ms` of simulated time, or early (never rejecting) when `signal` aborts. */
  sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
    new Promise((resolve) => {
      if (signal?.aborted) return resolve();
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", done);
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, ms) / this.speed);
      signal?.addEventListener("abort", done, { once: true });
    });

  /** How long `simMs` of this clock takes in real time. */
  realMs(simMs: number): number {
    return simMs / this.speed;
  }
}

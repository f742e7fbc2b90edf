import { monitorEventLoopDelay, type IntervalHistogram } from "node:perf_hooks";
import { METRICS, type Events } from "./metrics.js";

/**
 * The generator's own saturation, so that it is not mistaken for the server's latency: every
 * second, the worst event-loop delay of that second becomes a `cable.event_loop_lag` sample (ms),
 * and a delay past the threshold prints a warning, at most once per 10 s.
 *
 * Two measures, because neither sees every block alone. Node's delay histogram records a block
 * only at its own timer's next tick, measured from its previous tick; it has none after `enable()`
 * or `reset()`, so a block that starts right after either is not recorded at all (a VU that blocks
 * as soon as it connects, or back-to-back blocks between samples). The sample's own lateness is a
 * lower bound of the worst delay that needs no tick.
 */
export class LagMonitor {
  private readonly histogram: IntervalHistogram = monitorEventLoopDelay({ resolution: 10 });
  private lastWarnedAt = 0;
  private running = false;
  /** When the last sample ran (or the monitor started), to measure how late the next one is. */
  private lastSampleAt = 0;

  constructor(
    private readonly warnAtMs: number,
    private readonly intervalMs: number,
  ) {}

  /** `now` as `sample()` takes it: the first sample is due `intervalMs` after it. */
  start(now: number): void {
    if (this.running) return;
    this.running = true;
    this.lastSampleAt = now;
    this.histogram.reset();
    this.histogram.enable();
  }

  stop(): void {
    if (!this.running) return;
    this.running = false;
    this.histogram.disable();
  }

  /** Called every `intervalMs` while connections are open; `now` in ms on a monotonic clock. */
  sample(events: Events, now: number): void {
    if (!this.running) return;
    // The histogram is in ns, and its resolution (10 ms) is part of every sample: take it off.
    const recorded = this.histogram.max / 1e6 - 10;
    const late = now - this.lastSampleAt - this.intervalMs;
    this.lastSampleAt = now;
    this.histogram.reset();
    const worstMs = Math.max(0, recorded, late);
    events.emit("histogram", METRICS.eventLoopLag, worstMs);
    if (worstMs > this.warnAtMs && now - this.lastWarnedAt > 10_000) {
      this.lastWarnedAt = now;
      console.warn(
        `artillery-engine-cable: the event loop was ${Math.round(worstMs)} ms late: this load generator is saturated, ` +
          "so latencies include its own delay. Add workers or machines, or lower the load per process.",
      );
    }
  }
}

import { monitorEventLoopDelay, type IntervalHistogram } from "node:perf_hooks";
import type { Events } from "./metrics.js";

export const EVENT_LOOP_LAG = "cable.event_loop_lag";

/**
 * The generator's own saturation, so that it is not mistaken for the server's latency: every
 * second, the worst event-loop delay of that second becomes a `cable.event_loop_lag` sample (ms),
 * and a delay past the threshold prints a warning, at most once per 10 s.
 */
export class LagMonitor {
  private readonly histogram: IntervalHistogram = monitorEventLoopDelay({ resolution: 10 });
  private lastWarnedAt = 0;
  private running = false;

  constructor(private readonly warnAtMs: number) {}

  start(): void {
    if (this.running) return;
    this.running = true;
    this.histogram.reset();
    this.histogram.enable();
  }

  stop(): void {
    if (!this.running) return;
    this.running = false;
    this.histogram.disable();
  }

  /** Called once a second while connections are open. */
  sample(events: Events, now: number): void {
    if (!this.running) return;
    // The histogram is in ns, and its resolution (10 ms) is part of every sample: take it off.
    const worstMs = Math.max(0, this.histogram.max / 1e6 - 10);
    this.histogram.reset();
    events.emit("histogram", EVENT_LOOP_LAG, worstMs);
    if (worstMs > this.warnAtMs && now - this.lastWarnedAt > 10_000) {
      this.lastWarnedAt = now;
      console.warn(
        `artillery-engine-cable: the event loop was ${Math.round(worstMs)} ms late: this load generator is saturated, ` +
          "so latencies include its own delay. Add workers or machines, or lower the load per process.",
      );
    }
  }
}

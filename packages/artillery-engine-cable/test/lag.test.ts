// The lag sample sees blocks that perf_hooks' delay histogram misses: one that starts right after
// the monitor starts (a VU that blocks as soon as it connects) or right after a sample (back-to-back
// blocks), when the histogram has no tick to measure from. That made a blocked run read lag 0 in CI.
import { EventEmitter } from "node:events";
import { describe, expect, it } from "vitest";
import { nowMs } from "../src/clock.js";
import { LagMonitor } from "../src/lag.js";
import { METRICS } from "../src/metrics.js";

function block(ms: number): void {
  const end = Date.now() + ms;
  while (Date.now() < end);
}

function recorder(): { events: EventEmitter; samples: number[] } {
  const events = new EventEmitter();
  const samples: number[] = [];
  events.on("histogram", (name: string, value: number) => name === METRICS.eventLoopLag && samples.push(value));
  return { events, samples };
}

describe("LagMonitor", () => {
  it("counts blocks that start right after the monitor starts and right after a sample", async () => {
    const { events, samples } = recorder();
    const monitor = new LagMonitor(10_000, 100);
    monitor.start(nowMs());
    const interval = setInterval(() => {
      monitor.sample(events, nowMs());
      if (samples.length === 1) block(300);
    }, 100);
    block(300);
    await new Promise((resolve) => setTimeout(resolve, 500));
    clearInterval(interval);
    monitor.stop();
    expect(samples.length).toBeGreaterThanOrEqual(2);
    expect(samples[0]).toBeGreaterThan(150);
    expect(samples[1]).toBeGreaterThan(150);
  });

  it("reads an idle loop as near zero", async () => {
    const { events, samples } = recorder();
    const monitor = new LagMonitor(10_000, 100);
    monitor.start(nowMs());
    const interval = setInterval(() => monitor.sample(events, nowMs()), 100);
    await new Promise((resolve) => setTimeout(resolve, 450));
    clearInterval(interval);
    monitor.stop();
    expect(samples.length).toBeGreaterThanOrEqual(3);
    expect(Math.max(...samples)).toBeLessThan(60);
  });
});

import { createRequire } from "node:module";
import path from "node:path";
import { describe, expect, test } from "vitest";
import { PeriodAggregates, patchSsms, periodAggregates, PINNED_ARTILLERY, type SketchClass, type SsmsAggregates } from "../src/period-metrics.js";

// Artillery's own metric store, loaded as the engine loads it: the figures must be the ones
// Artillery computes from one event per frame.
const fromArtillery = createRequire(require.resolve("artillery/package.json"));
const artilleryDir = path.dirname(require.resolve("artillery/package.json"));
const { SSMS } = fromArtillery(path.join(artilleryDir, "dist", "lib", "core", "ssms.js")) as {
  SSMS: (new (options?: { pullOnly?: boolean }) => Ssms) & { summarizeHistogram(h: unknown): Record<string, number> };
};
const { DDSketch } = fromArtillery("@artilleryio/sketches-js") as { DDSketch: SketchClass };

interface Ssms extends SsmsAggregates {
  histogram(name: string, value: number, t?: number): void;
  rate(name: string, t?: number): void;
  aggregate(forceAll?: boolean): void;
  getMetrics(period: string): { histograms?: Record<string, unknown>; rates?: Record<string, number>; firstHistogramAt?: number; lastHistogramAt?: number };
  getBucketIds(): string[];
  stop(): Ssms;
}

/** Frames over 25 s (four periods), some stamped, with latencies of a wide spread. */
function frames(): Array<{ at: number; latency?: number }> {
  const start = Date.UTC(2026, 10, 24, 12, 0, 7, 500);
  let seed = 7;
  const random = () => ((seed = (seed * 48271) % 2147483647) / 2147483647);
  return Array.from({ length: 20_000 }, (_, i) => ({ at: start + Math.floor(i * 1.25), latency: i % 5 === 0 ? undefined : Math.round(random() ** 3 * 2_000 * 10) / 10 }));
}

function summaries(ssms: Ssms) {
  return ssms
    .getBucketIds()
    .sort()
    .map((period) => {
      const m = ssms.getMetrics(period);
      return {
        period,
        rates: m.rates,
        firstHistogramAt: m.firstHistogramAt,
        lastHistogramAt: m.lastHistogramAt,
        histograms: Object.fromEntries(Object.entries(m.histograms ?? {}).map(([name, h]) => [name, SSMS.summarizeHistogram(h)])),
      };
    });
}

describe("per-frame metrics a period at a time", () => {
  test("Artillery's periods come out the same as from one event per frame: sketches, rates, first and last times", () => {
    const perEvent = new SSMS({ pullOnly: true }).stop();
    const batched = new SSMS({ pullOnly: true }).stop();
    const aggregates = new PeriodAggregates(DDSketch);
    // Artillery's other histograms of the same periods stay as they are.
    perEvent.histogram("cable.handshake_latency", 3, Date.UTC(2026, 10, 24, 12, 0, 7));
    batched.histogram("cable.handshake_latency", 3, Date.UTC(2026, 10, 24, 12, 0, 7));
    for (const f of frames()) {
      perEvent.rate("cable.receive_rate", f.at);
      aggregates.rate("cable.receive_rate", f.at);
      if (f.latency !== undefined) {
        perEvent.histogram("cable.broadcast_latency", f.latency, f.at);
        aggregates.histogram("cable.broadcast_latency", f.latency, f.at);
      }
    }
    perEvent.aggregate(true);
    batched.aggregate(true);
    const upTo = Date.UTC(2026, 10, 24, 12, 1, 0);
    aggregates.drainHistograms(batched, upTo);
    aggregates.drainRates(batched, upTo);

    const expected = summaries(perEvent);
    expect(expected.map((p) => p.period)).toHaveLength(4);
    expect(expected[1].rates!["cable.receive_rate"]).toBe(800);
    expect(summaries(batched)).toEqual(expected);
  });

  test("only periods Artillery is aggregating are handed over; the current one waits", () => {
    const ssms = new SSMS({ pullOnly: true }).stop();
    const aggregates = new PeriodAggregates(DDSketch);
    const t0 = Date.UTC(2026, 10, 24, 12, 0, 5);
    aggregates.histogram("cable.broadcast_latency", 10, t0);
    aggregates.histogram("cable.broadcast_latency", 20, t0 + 6_000);
    aggregates.drainHistograms(ssms, Date.UTC(2026, 10, 24, 12, 0, 10));
    expect(Object.keys(ssms._aggregatedHistograms)).toEqual([String(Date.UTC(2026, 10, 24, 12, 0, 0))]);
    aggregates.drainHistograms(ssms, Date.UTC(2026, 10, 24, 12, 0, 20));
    expect(Object.keys(ssms._aggregatedHistograms).sort()).toEqual([String(Date.UTC(2026, 10, 24, 12, 0, 0)), String(Date.UTC(2026, 10, 24, 12, 0, 10))]);
    // Drained once: nothing is handed over twice.
    aggregates.drainHistograms(ssms, Date.UTC(2026, 10, 24, 12, 0, 30));
    expect(SSMS.summarizeHistogram(ssms._aggregatedHistograms[String(Date.UTC(2026, 10, 24, 12, 0, 0))]["cable.broadcast_latency"]).count).toBe(1);
  });

  test("with the pinned Artillery the thread's aggregates go live only once its SSMS has aggregated", () => {
    expect((fromArtillery("./package.json") as { version: string }).version).toBe(PINNED_ARTILLERY);
    const aggregates = periodAggregates();
    expect(aggregates).toBeDefined();
    expect(aggregates!.live).toBe(false);
    const ssms = new SSMS({ pullOnly: true }).stop();
    ssms.aggregate(false);
    expect(aggregates!.live).toBe(true);
  });

  test("batching starts at the period after the patch went live, so that no period's rate mixes the two ways", () => {
    const aggregates = new PeriodAggregates(DDSketch);
    const t = Date.UTC(2026, 10, 24, 12, 0, 4, 200);
    expect(aggregates.takes(t)).toBe(false);
    expect(aggregates.wentLive(t)).toBe(true);
    expect(aggregates.wentLive(t + 1)).toBe(false);
    expect(aggregates.takes(Date.UTC(2026, 10, 24, 12, 0, 9, 999))).toBe(false);
    expect(aggregates.takes(Date.UTC(2026, 10, 24, 12, 0, 10))).toBe(true);
  });

  test("another Artillery, or other internals: no aggregates, the engine emits every event", () => {
    const noop = () => {};
    expect(patchSsms({ SSMS: { prototype: { _aggregateHistograms: noop, _aggregateRates: noop } }, DDSketch, version: "2.0.35" })).toBeUndefined();
    expect(patchSsms({ SSMS: { prototype: { _aggregateHistograms: noop } }, DDSketch, version: PINNED_ARTILLERY })).toBeUndefined();
  });
});

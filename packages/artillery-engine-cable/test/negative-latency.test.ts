// A broadcast latency below zero (the sender's clock ahead of the receiver's by more than the
// latency) is no sample of cable.broadcast_latency: it is counted in
// cable.broadcast_latency_negative instead, on the per-event path and the per-period path alike.
import { describe, expect, it } from "vitest";
import { METRICS } from "../src/metrics.js";
import { OpenConnections, type Tracked } from "../src/open-connections.js";
import { PeriodAggregates, type Sketch, type SsmsAggregates } from "../src/period-metrics.js";

type Emitted = [string, ...unknown[]];

function recorder() {
  const emitted: Emitted[] = [];
  const events = { emit: (...args: Emitted) => (emitted.push(args), true) };
  const of = (kind: string, name: string) => emitted.filter(([k, n]) => k === kind && n === name).map((e) => e[2]);
  return { emitted, events, of };
}

/** A sketch that keeps its values, standing in for Artillery's DDSketch. */
class ListSketch implements Sketch {
  readonly values: number[] = [];
  accept(value: number): void {
    this.values.push(value);
  }
  merge(other: Sketch): void {
    this.values.push(...(other as ListSketch).values);
  }
}

const conn: Tracked = { tick: () => undefined };

describe("negative broadcast latencies", () => {
  it("per event: recorded only when ≥ 0; the negative ones counted, in one batch at the flush", () => {
    const r = recorder();
    const tracker = new OpenConnections(undefined);
    tracker.add(conn, r.events);
    for (const latency of [12, -3, 0, -0.5, 7, undefined]) tracker.received(r.events, latency);
    tracker.delete(conn);
    expect(r.of("histogram", METRICS.broadcastLatency)).toEqual([12, 0, 7]);
    expect(r.of("counter", METRICS.broadcastLatencyNegative)).toEqual([2]);
    expect(r.of("counter", METRICS.messagesReceived)).toEqual([6]);
    expect(r.of("rate", METRICS.receiveRate)).toHaveLength(6);
  });

  it("per period: the period's sketch holds only the latencies ≥ 0, and the negative ones are counted the same", () => {
    const r = recorder();
    const periods = new PeriodAggregates(ListSketch);
    periods.wentLive(Date.now() - 20_000);
    const tracker = new OpenConnections(periods);
    tracker.add(conn, r.events);
    for (const latency of [5, -1, -2, 9]) tracker.received(r.events, latency);
    tracker.delete(conn);
    expect(r.of("histogram", METRICS.broadcastLatency)).toEqual([]);
    expect(r.of("counter", METRICS.broadcastLatencyNegative)).toEqual([2]);
    const ssms: SsmsAggregates = { _aggregatedHistograms: {}, _histogramEarliestMeasurementByPeriod: {}, _histogramLastMeasurementByPeriod: {}, _aggregatedRates: {} };
    periods.drainHistograms(ssms, Date.now() + 20_000);
    const sketches = Object.values(ssms._aggregatedHistograms).map((h) => (h[METRICS.broadcastLatency] as ListSketch).values);
    expect(sketches.flat().sort()).toEqual([5, 9]);
  });

  it("says 0 once where stamped broadcasts came and none was negative (an ensure condition on it holds), and nothing without stamps", () => {
    const stamped = recorder();
    const tracker = new OpenConnections(undefined);
    tracker.add(conn, stamped.events);
    tracker.received(stamped.events, 4);
    tracker.delete(conn);
    tracker.add(conn, stamped.events);
    tracker.received(stamped.events, 6);
    tracker.delete(conn);
    expect(stamped.of("counter", METRICS.broadcastLatencyNegative)).toEqual([0]);

    const unstamped = recorder();
    const other = new OpenConnections(undefined);
    other.add(conn, unstamped.events);
    other.received(unstamped.events, undefined);
    other.delete(conn);
    expect(unstamped.of("counter", METRICS.broadcastLatencyNegative)).toEqual([]);
  });
});

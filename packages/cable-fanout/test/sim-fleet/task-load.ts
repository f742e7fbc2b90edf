// What one simulated task measures, period by period, in the shapes the worker's plugins write:
// each period as cable-report's period record (real DDSketches, encoded by its own codec), and at
// the end Artillery's report.json and cable-report's sidecar, built from the same sketches. The
// sidecar is checked against cable-report's schema before it is written, so a change of shape
// fails the simulation, not a merge later.
import { DDSketch } from "@artilleryio/sketches-js";
import { EVENT_LOOP_LAG, PERIOD_MS, type PeriodRecord, type PhaseStart, recordPeriod, sidecarSchema, summarizeSketch } from "artillery-plugin-cable-report";
import { livePeriodSchema } from "cable-worker/contract";

const RELATIVE_ACCURACY = sidecarSchema.shape.relativeAccuracy.value;
const SIDECAR_FORMAT = sidecarSchema.shape.format.value;
const SIDECAR_VERSION = Math.max(...sidecarSchema.shape.version.options.map((o) => o.value));

export interface LoadShape {
  /** Users each task starts a second. */
  arrivalRate: number;
  /** Broadcast latency samples per task and period: each one a DDSketch sample, as the engine records them. */
  samplesPerPeriod: number;
  /** The region's typical broadcast latency, ms. */
  latencyMs: number;
  /** From this period (0 = the first) on, this many users fail per task and period: what trips an --abort-on. */
  failing?: { fromPeriod: number; usersPerPeriod: number };
}

/** A latency around `median` ms (log-normal-ish), as many samples as asked. */
function sketchAround(median: number, samples: number): DDSketch {
  const sketch = new DDSketch({ relativeAccuracy: RELATIVE_ACCURACY });
  for (let i = 0; i < samples; i++) sketch.accept(median * Math.exp(0.6 * (Math.random() + Math.random() + Math.random() - 1.5)));
  return sketch;
}

type Counters = Record<string, number>;

export class TaskLoad {
  private readonly periods: Array<{ period: number; counters: Counters; histograms: Record<string, DDSketch>; cpuPercent: number }> = [];

  constructor(private readonly shape: LoadShape) {}

  /** The task's next period, starting at `period` (epoch ms on the 10 s grid). */
  next(period: number): PeriodRecord {
    const index = this.periods.length;
    const users = Math.round((this.shape.arrivalRate * PERIOD_MS) / 1000);
    const failed = this.shape.failing && index >= this.shape.failing.fromPeriod ? this.shape.failing.usersPerPeriod : 0;
    const counters: Counters = {
      "vusers.created": users,
      "vusers.created_by_name.chat": users,
      "vusers.completed": index === 0 ? 0 : users - failed,
      "vusers.failed": failed,
      "cable.connections": users,
      "cable.messages_sent": users * 5,
      "cable.messages_received": users * 50,
      "cable.connections_open_period_peak": users * 2,
    };
    if (failed > 0) counters["errors.cable.timeout"] = failed;
    const histograms = {
      "cable.broadcast_latency": sketchAround(this.shape.latencyMs, this.shape.samplesPerPeriod),
      "cable.rtt": sketchAround(this.shape.latencyMs / 2, Math.ceil(this.shape.samplesPerPeriod / 4)),
      [EVENT_LOOP_LAG]: sketchAround(3, 10),
    };
    const cpuPercent = Math.round(30 + 20 * Math.random());
    this.periods.push({ period, counters, histograms, cpuPercent });
    return livePeriodSchema.parse(recordPeriod({ period, counters, rates: { "cable.send_rate": users / 2 }, histograms }, cpuPercent));
  }

  /**
   * report.json and its sidecar, as Artillery and cable-report write them once the run has ended at
   * `endedAt`; `testRunId` is Artillery's own for the run, one per task (the merge counts a task once by it).
   */
  results(test: { name: string; durationS: number; testRunId: string }, phaseStarts: PhaseStart[], endedAt: number): { report: string; sidecar: string } {
    const totals: Counters = {};
    const whole: Record<string, DDSketch> = {};
    for (const p of this.periods) {
      for (const [name, value] of Object.entries(p.counters)) totals[name] = (totals[name] ?? 0) + value;
      for (const [name, sketch] of Object.entries(p.histograms)) (whole[name] ??= new DDSketch({ relativeAccuracy: RELATIVE_ACCURACY })).merge(sketch);
    }
    const summaries = (h: Record<string, DDSketch>) => Object.fromEntries(Object.entries(h).map(([name, s]) => [name, { ...summarizeSketch(s), median: summarizeSketch(s).p50 }]));
    const first = this.periods[0]?.period ?? endedAt;
    const report = {
      aggregate: { period: this.periods.at(-1)?.period ?? first, counters: totals, rates: {}, firstMetricAt: phaseStarts[0]?.startTime ?? first, lastMetricAt: endedAt, summaries: summaries(whole), histograms: summaries(whole) },
      intermediate: this.periods.map((p) => ({ period: String(p.period), counters: p.counters, rates: {}, summaries: summaries(p.histograms), histograms: summaries(p.histograms) })),
    };
    const sidecar = sidecarSchema.parse({
      format: SIDECAR_FORMAT,
      version: SIDECAR_VERSION,
      artilleryVersion: "2.0.34",
      testRunId: test.testRunId,
      test: { name: test.name, scenarios: ["chat"], phases: [{ name: "sim", duration: test.durationS, arrivalRate: this.shape.arrivalRate }] },
      relativeAccuracy: RELATIVE_ACCURACY,
      // The period codec serializes the whole run's sketches as it does a period's.
      aggregate: { counters: totals, rates: {}, histograms: recordPeriod({ period: first, histograms: whole }, null).histograms },
      periods: this.periods.map((p) => recordPeriod({ period: p.period, counters: p.counters, rates: {}, histograms: p.histograms }, p.cpuPercent)),
      phaseStarts,
      checks: null,
      generator: { workers: 1, cpuMean: 40, cpuPeak: 50 },
    });
    return { report: JSON.stringify(report), sidecar: JSON.stringify(sidecar) };
  }
}

// One task's results: its Artillery JSON report (`artillery run -o`) and, if the
// plugin ran, the sketches sidecar beside it.
import { existsSync } from "node:fs";
import type { DDSketch } from "@artilleryio/sketches-js";
import { z } from "zod";
import { parseJsonFile, ResultsInputError } from "./input.js";
import type { PeriodRecord, PhaseStart } from "./period.js";
import { decodeSketch, sidecarPathFor, sidecarSchema, type CheckOutcome, type Sidecar } from "./sidecar.js";

/** Artillery's summary of one histogram (ssms.ts summarizeHistogram), rounded to 0.1. */
const summarySchema = z.object({
  min: z.number(),
  max: z.number(),
  count: z.number(),
  mean: z.number(),
  p50: z.number(),
  median: z.number(),
  p75: z.number(),
  p90: z.number(),
  p95: z.number(),
  p99: z.number(),
  p999: z.number(),
});
export type HistogramSummary = z.infer<typeof summarySchema>;

const numberRecord = z.record(z.string(), z.number());

const periodMetricsSchema = z.object({
  // Artillery writes the period id as a string in intermediates and a number in the aggregate.
  period: z.union([z.number(), z.string().regex(/^\d+$/).transform(Number)]).optional(),
  counters: numberRecord.default({}),
  rates: numberRecord.default({}),
  summaries: z.record(z.string(), summarySchema).default({}),
  firstMetricAt: z.number().optional(),
  lastMetricAt: z.number().optional(),
});

const reportSchema = z.object({
  aggregate: periodMetricsSchema,
  intermediate: z.array(periodMetricsSchema),
});

/** A period of one task: the shared record, plus Artillery's summaries when it came from the report alone (no sketches). */
export type TaskPeriod = PeriodRecord & { summaries?: Record<string, HistogramSummary> };

export interface TaskResult {
  reportFile: string;
  /** Absent when the task ran without the plugin: its percentiles cannot be merged exactly. */
  sidecarFile?: string;
  counters: Record<string, number>;
  summaries: Record<string, HistogramSummary>;
  sketches?: Record<string, DDSketch>;
  periods: TaskPeriod[];
  /** When each phase started, on the task's clock (sidecar version 2, or live files). */
  phaseStarts: PhaseStart[];
  firstMetricAt?: number;
  lastMetricAt?: number;
  /** From the sidecar; reports alone do not name their test. */
  test?: Sidecar["test"];
  /** Scenario names that created virtual users (`vusers.created_by_name.<name>`). */
  scenariosRun: string[];
  /** null when the task recorded no `ensure` outcomes. */
  checks: CheckOutcome[] | null;
  /** Artillery's id of the run, from the sidecar: a task copied twice has the same one. */
  testRunId?: string;
  /** The generator's CPU, from the sidecar (plugin versions that record it). */
  generator?: Sidecar["generator"];
  /** The server's words for refusals, from the sidecar. */
  serverWords?: Sidecar["serverWords"];
  /** Why the sidecar beside the report was not used (corrupt, or not matching the report). */
  sidecarProblem?: string;
  /** Rebuilt from its live periods: stopped before Artillery wrote its report (live-task.ts). */
  partial?: boolean;
}

export function loadTask(reportFile: string): TaskResult {
  const report = parseJsonFile(reportFile, reportSchema, "is not an Artillery JSON report (artillery run -o)");
  const sidecarFile = sidecarPathFor(reportFile);
  const { aggregate } = report;
  const task: TaskResult = {
    reportFile,
    counters: aggregate.counters,
    summaries: aggregate.summaries,
    periods: report.intermediate.flatMap(({ period, counters, rates, summaries }) => (period === undefined ? [] : [{ period, counters, rates, histograms: {}, summaries }])),
    phaseStarts: [],
    firstMetricAt: aggregate.firstMetricAt,
    lastMetricAt: aggregate.lastMetricAt,
    scenariosRun: Object.keys(aggregate.counters)
      .filter((name) => name.startsWith("vusers.created_by_name."))
      .map((name) => name.slice("vusers.created_by_name.".length))
      .sort(),
    checks: null,
  };
  if (!existsSync(sidecarFile)) return task;
  // A bad sidecar costs the task its exact percentiles, not its place in the
  // report: Artillery's own report beside it still holds every count.
  try {
    const sidecar = parseJsonFile(sidecarFile, sidecarSchema, "is not a cable-report sketches sidecar");
    const sketches = decodeSidecarSketches(sidecarFile, sidecar, task);
    Object.assign(task, {
      sidecarFile,
      test: sidecar.test,
      sketches,
      checks: sidecar.checks,
      // Version 1 sidecars kept counters only: the report's summaries still give each period's percentiles.
      periods: sidecar.version === 1 ? sidecar.periods.map((p) => ({ ...p, summaries: task.periods.find((r) => r.period === p.period)?.summaries })) : sidecar.periods,
      phaseStarts: sidecar.phaseStarts,
      testRunId: sidecar.testRunId || undefined,
      generator: sidecar.generator,
      serverWords: sidecar.serverWords,
    });
  } catch (err) {
    if (!(err instanceof ResultsInputError)) throw err;
    task.sidecarProblem = err.message;
  }
  return task;
}

/** Decodes the sketches and checks they describe the same samples as the report. */
function decodeSidecarSketches(file: string, sidecar: Sidecar, task: TaskResult): Record<string, DDSketch> {
  const sketches: Record<string, DDSketch> = {};
  for (const [name, base64] of Object.entries(sidecar.aggregate.histograms)) {
    try {
      sketches[name] = decodeSketch(name, base64);
    } catch (err) {
      throw new ResultsInputError(file, (err as Error).message);
    }
  }
  const mismatch = (what: string) =>
    new ResultsInputError(file, `does not match its report ${task.reportFile}: ${what}`);
  for (const [name, summary] of Object.entries(task.summaries)) {
    const sketch = sketches[name];
    if (!sketch) throw mismatch(`histogram "${name}" is missing`);
    if (sketch.count !== summary.count) {
      throw mismatch(`histogram "${name}" holds ${sketch.count} samples, the report ${summary.count}`);
    }
  }
  for (const [name, value] of Object.entries(task.counters)) {
    if (sidecar.aggregate.counters[name] !== value) {
      throw mismatch(`counter "${name}" is ${sidecar.aggregate.counters[name] ?? "absent"}, the report ${value}`);
    }
  }
  return sketches;
}

// One task's results: its Artillery JSON report (`artillery run -o`) and, if the
// plugin ran, the sketches sidecar beside it.
import { existsSync } from "node:fs";
import type { DDSketch } from "@artilleryio/sketches-js";
import { z } from "zod";
import { parseJsonFile, ResultsInputError } from "./input.js";
import { PERIOD_MS, periodSketchesStrict, type PeriodRecord, type PhaseStart } from "./period.js";
import { decodeSketch, sidecarPathFor, sidecarSchema, type CheckOutcome, type Sidecar } from "./sidecar.js";
import { byName, countRecordSchema, listOf, maxPeriods, namesProblem, quoteName, summaryRecordSchema, taskTimesProblem, timeSchema, type HistogramSummary } from "./task-file.js";

export type { HistogramSummary };

const periodMetricsSchema = z.object({
  // Artillery writes the period id as a string in intermediates and a number in the aggregate.
  period: z.union([timeSchema, z.string().regex(/^\d{1,16}$/).transform(Number).pipe(timeSchema)]).optional(),
  counters: countRecordSchema.default({}),
  rates: countRecordSchema.default({}),
  summaries: summaryRecordSchema.default({}),
  firstMetricAt: timeSchema.optional(),
  lastMetricAt: timeSchema.optional(),
});

/** An Artillery JSON report, bounded as a sidecar is (task-file.ts). */
const reportSchema = z.object({
  aggregate: periodMetricsSchema,
  intermediate: listOf(periodMetricsSchema, maxPeriods(PERIOD_MS)),
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
  /** The server the task loaded (target.ts), from the sidecar: absent before it was recorded. */
  target?: Sidecar["target"];
  /** Why the sidecar beside the report was not used (corrupt, or not matching the report). */
  sidecarProblem?: string;
  /** Rebuilt from its live periods: stopped before Artillery wrote its report (live-task.ts). */
  partial?: boolean;
}

/** `now`: the merge's clock, which no time of a task may be far beyond. */
export function loadTask(reportFile: string, now = Date.now()): TaskResult {
  const report = parseJsonFile(reportFile, reportSchema, "is not an Artillery JSON report (artillery run -o)");
  const sidecarFile = sidecarPathFor(reportFile);
  const { aggregate } = report;
  const reportProblem =
    taskTimesProblem({ ...aggregate, periods: periodTimes(report.intermediate) }, PERIOD_MS, now) ??
    namesProblem([aggregate.counters, aggregate.summaries, ...report.intermediate.flatMap((p) => [p.counters, p.rates, p.summaries])]);
  if (reportProblem) throw new ResultsInputError(reportFile, reportProblem);
  const task: TaskResult = {
    reportFile,
    counters: aggregate.counters,
    summaries: aggregate.summaries,
    periods: report.intermediate.flatMap(({ period, counters, rates, summaries }) => (period === undefined ? [] : [{ period, counters, rates, histograms: byName<string>(), summaries }])),
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
    checkSidecar(sidecarFile, sidecar, task, now);
    const sketches = decodeSidecarSketches(sidecarFile, sidecar, task);
    Object.assign(task, {
      sidecarFile,
      test: sidecar.test,
      sketches,
      checks: sidecar.checks,
      // Version 1 sidecars kept counters only: the report's summaries still give each period's percentiles.
      periods: sidecar.version === 1 ? withReportSummaries(sidecar.periods, task.periods) : sidecar.periods,
      phaseStarts: sidecar.phaseStarts,
      testRunId: sidecar.testRunId || undefined,
      generator: sidecar.generator,
      serverWords: sidecar.serverWords,
      target: sidecar.target,
    });
  } catch (err) {
    if (!(err instanceof ResultsInputError)) throw err;
    task.sidecarProblem = err.message;
  }
  return task;
}

function withReportSummaries(periods: PeriodRecord[], fromReport: TaskPeriod[]): TaskPeriod[] {
  const summaries = new Map(fromReport.map((r) => [r.period, r.summaries]));
  return periods.map((p) => ({ ...p, summaries: summaries.get(p.period) }));
}

function* periodTimes(periods: Array<{ period?: number }>): Iterable<number> {
  for (const p of periods) if (p.period !== undefined) yield p.period;
}

/**
 * The sidecar's own times against its report's, its names, and every period's sketches, decoded
 * here once (series.ts reads them back from period.ts's cache).
 */
function checkSidecar(file: string, sidecar: Sidecar, task: TaskResult, now: number): void {
  const problem =
    taskTimesProblem({ firstMetricAt: task.firstMetricAt, lastMetricAt: task.lastMetricAt, periods: periodTimes(sidecar.periods), phaseStarts: sidecar.phaseStarts.map((p) => p.startTime) }, PERIOD_MS, now) ??
    namesProblem([sidecar.aggregate.counters, sidecar.aggregate.histograms, ...sidecar.periods.flatMap((p) => [p.counters, p.rates, p.histograms])]);
  if (problem) throw new ResultsInputError(file, problem);
  for (const period of sidecar.periods) {
    try {
      periodSketchesStrict(period);
    } catch (err) {
      throw new ResultsInputError(file, `period ${period.period}: ${(err as Error).message}`);
    }
  }
}

/** Decodes the sketches and checks they describe the same samples as the report. */
function decodeSidecarSketches(file: string, sidecar: Sidecar, task: TaskResult): Record<string, DDSketch> {
  const sketches = byName<DDSketch>();
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
    if (!sketch) throw mismatch(`histogram ${quoteName(name)} is missing`);
    if (sketch.count !== summary.count) {
      throw mismatch(`histogram ${quoteName(name)} holds ${sketch.count} samples, the report ${summary.count}`);
    }
  }
  for (const [name, value] of Object.entries(task.counters)) {
    if (sidecar.aggregate.counters[name] !== value) {
      throw mismatch(`counter ${quoteName(name)} is ${sidecar.aggregate.counters[name] ?? "absent"}, the report ${value}`);
    }
  }
  return sketches;
}

// A task stopped before Artillery wrote its report (Ctrl-C, `cable-fanout run --abort-on`, a task
// killed mid-run) still streamed its periods: the fan-out's live plugin writes each one, as the
// period record the sidecar keeps, into `<task>/live/period-<ms>.live`. From them the task's
// figures are rebuilt exactly (counters add, sketches merge), short only of the period it was
// stopped in.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { basename, join } from "node:path";
import type { DDSketch } from "@artilleryio/sketches-js";
import { summarizeSketch, mergeSketches } from "./merge.js";
import { PERIOD_MS, periodRecordSchema, periodSketches, periodSketchesStrict, phaseStartSchema, type PeriodRecord, type PhaseStart } from "./period.js";
import type { TaskResult } from "./task.js";
import { byName, listOf } from "./task-file.js";

// The live files' names are cable-worker/contract's; that package depends on this one, so they are spelled here again.
export const LIVE_DIR = "live";
const PERIOD_FILE = /^period-(\d+)\.live$/;

/** The live period files of a task folder, if it has any. */
export function livePeriodFiles(taskDir: string): string[] {
  const dir = join(taskDir, LIVE_DIR);
  if (!existsSync(dir)) return [];
  return readdirSync(dir).filter((f) => PERIOD_FILE.test(f)).map((f) => join(dir, f));
}

/**
 * Null when no period could be read. A damaged period file is left out (its neighbours still count):
 * one cut short when the task was stopped, one that fails the period record's bounds, one whose
 * sketch cannot be merged, or one whose period is not the one its name says.
 */
export function loadLiveTask(taskDir: string, label: string): TaskResult | null {
  const periods: PeriodRecord[] = [];
  for (const file of livePeriodFiles(taskDir)) {
    try {
      const parsed = periodRecordSchema.safeParse(JSON.parse(readFileSync(file, "utf8")));
      if (!parsed.success || String(parsed.data.period) !== PERIOD_FILE.exec(basename(file))![1]) continue;
      periodSketchesStrict(parsed.data);
      periods.push(parsed.data);
    } catch {
      // left out
    }
  }
  if (periods.length === 0) return null;
  return taskFromPeriods(periods, readPhases(taskDir), label);
}

/**
 * A task's figures from its periods alone: counters added, sketches merged, the whole run's
 * summaries from the merged sketches. Also the live page's one task per region (live.ts), whose
 * periods are the region's merged ones.
 */
export function taskFromPeriods(records: PeriodRecord[], phaseStarts: PhaseStart[], label: string): TaskResult {
  const periods = [...records].sort((a, b) => a.period - b.period);
  const counters = byName<number>();
  const byMetric = new Map<string, DDSketch[]>();
  for (const period of periods) {
    for (const [name, n] of Object.entries(period.counters)) counters[name] = (counters[name] ?? 0) + n;
    for (const [name, sketch] of Object.entries(periodSketches(period))) {
      const list = byMetric.get(name);
      if (list) list.push(sketch);
      else byMetric.set(name, [sketch]);
    }
  }
  const sketches = byName([...byMetric].map(([name, list]) => [name, mergeSketches(list)] as const));
  const cpu = periods.map((p) => p.cpuPercent).filter((c): c is number => c !== undefined);
  return {
    reportFile: label,
    counters,
    summaries: byName(Object.entries(sketches).map(([name, s]) => {
      const summary = summarizeSketch(s);
      return [name, { ...summary, median: summary.p50 }] as const;
    })),
    sketches,
    periods,
    phaseStarts,
    firstMetricAt: periods[0]?.period,
    lastMetricAt: periods.length > 0 ? periods[periods.length - 1].period + PERIOD_MS : undefined,
    scenariosRun: Object.keys(counters)
      .filter((name) => name.startsWith("vusers.created_by_name."))
      .map((name) => name.slice("vusers.created_by_name.".length))
      .sort(),
    checks: null,
    generator: cpu.length > 0 ? { workers: 0, cpuMean: Math.round((cpu.reduce((a, b) => a + b, 0) / cpu.length) * 10) / 10, cpuPeak: cpu.reduce((m, c) => Math.max(m, c), 0) } : undefined,
    testRunId: `live:${label}`,
    partial: true,
  };
}

function readPhases(taskDir: string): PhaseStart[] {
  try {
    const parsed = listOf(phaseStartSchema).safeParse(JSON.parse(readFileSync(join(taskDir, LIVE_DIR, "phases.live"), "utf8")));
    return parsed.success ? parsed.data : [];
  } catch {
    return [];
  }
}

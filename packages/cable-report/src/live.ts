// A run still going, as merged results: what the live page draws (cable-fanout --live, the plugin's
// `live: true`). The live feed already keeps one merged record per region and period (counters
// added, sketches merged across the region's tasks); each region's records become one task here,
// folded by the same code as report.html's tasks, so a period's figures on the live page are the
// ones report.html shows for it at the end (sketches merge exactly, in any order).
//
// What one task per region cannot know is told apart: the region's own task count, and its
// generator as the busiest task of each period (the feed keeps the worst lag and CPU per period).
import type { DDSketch } from "@artilleryio/sketches-js";
import { taskFromPeriods } from "./live-task.js";
import type { MergedResults, ServerSeries, Timeline } from "./model.js";
import { periodOfSketches, type PhaseStart } from "./period.js";
import { mergeRegions } from "./results.js";
import type { Sidecar } from "./sidecar.js";

/** One region's merged period, as the live feed keeps it. */
export interface LivePeriodFold {
  period: number;
  counters: Record<string, number>;
  sketches: Record<string, DDSketch>;
  /** The busiest task's CPU in it. */
  cpuPercent: number | null;
}

export interface LiveRegion {
  name: string;
  periods: LivePeriodFold[];
  /** The tasks that have sent anything so far, and those the region runs. */
  tasks: number;
  expectedTasks: number;
  /** When each phase started (the region's first task to say). */
  phaseStarts: PhaseStart[];
}

export interface LiveRun {
  regions: LiveRegion[];
  test: Sidecar["test"];
  /** When these figures were read (epoch ms). */
  asOf: number;
  aborted?: Timeline["aborted"];
  server?: ServerSeries | null;
  redact?: (text: string) => string;
}

/** The label of a region's generator line: the feed keeps each period's worst task, not every task. */
export const BUSIEST_TASK = "busiest task";

export function liveResults(run: LiveRun): MergedResults {
  const regions = run.regions.map((region) => {
    const records = region.periods.map((p) => periodOfSketches(p.period, p.counters, p.sketches, p.cpuPercent));
    // Not a task cut short: a run under way (its state is "running").
    const task = { ...taskFromPeriods(records, region.phaseStarts, `${region.name}: ${BUSIEST_TASK}`), partial: false, test: run.test };
    return { name: region.name, tasks: records.length > 0 ? [task] : [], files: records.length > 0 ? [task.reportFile] : [] };
  });
  const merged = mergeRegions(regions, { regions: run.regions.map((r) => r.name), server: run.server ?? null, aborted: run.aborted ?? null, redact: run.redact });
  let tasks = 0;
  for (const column of merged.regions) {
    const region = run.regions.find((r) => r.name === column.name);
    column.tasks = region?.tasks ?? 0;
    column.expectedTasks = region?.expectedTasks ?? 0;
    tasks += column.tasks;
  }
  merged.all.tasks = tasks;
  merged.live = { asOf: run.asOf };
  return merged;
}

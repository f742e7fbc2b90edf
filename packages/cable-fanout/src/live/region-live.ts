// What the runner keeps of one region's live files while the load runs: one merged record per
// period (counters added, sketches merged across the region's tasks), updated as each task's file
// for it arrives, and of each task only what is judged per task (its phases, whether it ended, the
// last period it sent, its generator's lag and CPU). A 500-task, 30-minute run kept every task's
// every period and merged them again on every poll: gigabytes, and seconds of CPU each time. The
// live lines, --abort-on and the capacity search all read this state.
import { DDSketch } from "@artilleryio/sketches-js";
import { METRICS } from "artillery-engine-cable/metrics";
import { gridPeriod, mergeSketches, PERIOD_MS, periodSketches, summarizeSketch } from "artillery-plugin-cable-report";
import type { LiveEnded, LivePeriod, LivePhase } from "cable-worker/contract";

/** The engine's late seconds by cause, kept per task beside its lag and CPU. */
const LATE_COUNTERS = [METRICS.eventLoopLateSaturated, METRICS.eventLoopLateStarved];

/** The sketches' accuracy, Artillery's own: merging into a sketch of another accuracy would lose it. */
const RELATIVE_ACCURACY = 0.01;

/** One period of a region: every file of it that arrived, merged. */
export interface PeriodFold {
  /** Its start on the 10 s grid (a task whose clock is off by seconds still lines up). */
  period: number;
  /** The tasks whose file for it is folded in. */
  tasks: Set<string>;
  counters: Record<string, number>;
  /** Each histogram, merged across the tasks. */
  sketches: Record<string, DDSketch>;
  /** The worst task's generator lag p99 and the busiest task's CPU in it: a saturated (or starved) generator shows in one task. */
  lagP99: number | null;
  cpu: number | null;
}

export interface TaskLive {
  region: string;
  taskId: string;
  phases: LivePhase[];
  ended?: LiveEnded;
  /** The last period it sent (on the grid); null before its first. */
  lastPeriod: number | null;
  /**
   * Its periods' generator figures only (the lag histogram, the late seconds by cause and CPU, as
   * period records without the rest): the capacity search judges each task's generator on its own.
   */
  generator: LivePeriod[];
}

/** The runner's state of one region's live files; the feed folds files into it, the view, --abort-on and the capacity search read it. */
/**
 * The tasks each region runs: one number for all, or per region (once the barrier has gone, the
 * tasks that were ready: one that missed it sends nothing, and must not hold a line back).
 */
export type TasksExpected = number | ((region: string) => number);

export const tasksExpected = (expected: TasksExpected, region: string): number => (typeof expected === "number" ? expected : expected(region));

export class RegionLive {
  readonly tasks = new Map<string, TaskLive>();
  private readonly folds = new Map<number, PeriodFold>();
  private sorted: PeriodFold[] | undefined;

  constructor(readonly region: string) {}

  /** The task, known from its first file of any kind. */
  task(taskId: string): TaskLive {
    let task = this.tasks.get(taskId);
    if (!task) this.tasks.set(taskId, (task = { region: this.region, taskId, phases: [], lastPeriod: null, generator: [] }));
    return task;
  }

  /** Folds one task's period in; a file already folded in is not counted twice. */
  addPeriod(taskId: string, record: LivePeriod): void {
    const period = gridPeriod(record.period);
    let fold = this.folds.get(period);
    if (!fold) {
      this.folds.set(period, (fold = { period, tasks: new Set(), counters: {}, sketches: {}, lagP99: null, cpu: null }));
      this.sorted = undefined;
    }
    if (fold.tasks.has(taskId)) return;
    fold.tasks.add(taskId);
    for (const [name, n] of Object.entries(record.counters)) fold.counters[name] = (fold.counters[name] ?? 0) + n;
    const sketches = periodSketches(record);
    for (const [name, sketch] of Object.entries(sketches)) (fold.sketches[name] ??= new DDSketch({ relativeAccuracy: RELATIVE_ACCURACY })).merge(sketch);
    const lag = sketches[METRICS.eventLoopLag];
    if (lag && lag.count > 0) fold.lagP99 = Math.max(fold.lagP99 ?? -Infinity, summarizeSketch(lag).p99);
    if (record.cpuPercent !== undefined) fold.cpu = Math.max(fold.cpu ?? -Infinity, record.cpuPercent);

    const task = this.task(taskId);
    task.lastPeriod = Math.max(task.lastPeriod ?? -Infinity, period);
    const lagRecord = record.histograms[METRICS.eventLoopLag];
    // Its late seconds by cause too: a late generator is judged saturated or starved on them (cable-report's saturation.ts).
    const late = Object.fromEntries(LATE_COUNTERS.filter((name) => record.counters[name] !== undefined).map((name) => [name, record.counters[name]]));
    task.generator.push({ period: record.period, counters: late, rates: {}, histograms: lagRecord ? { [METRICS.eventLoopLag]: lagRecord } : {}, ...(record.cpuPercent !== undefined ? { cpuPercent: record.cpuPercent } : {}) });
    if (task.generator.length > 1 && task.generator[task.generator.length - 2].period > record.period) task.generator.sort((a, b) => a.period - b.period);
  }

  /** Whether the task's file for this period is folded in. */
  has(taskId: string, period: number): boolean {
    return this.folds.get(gridPeriod(period))?.tasks.has(taskId) ?? false;
  }

  /** Every period with at least one task's file, in order. */
  periods(): PeriodFold[] {
    this.sorted ??= [...this.folds.values()].sort((a, b) => a.period - b.period);
    return this.sorted;
  }
}

/** One region's live state per region name: what the feed hands its readers after every poll. */
export type LiveSnapshot = Map<string, RegionLive>;

export function allTasks(snapshot: LiveSnapshot): TaskLive[] {
  return [...snapshot.values()].flatMap((region) => [...region.tasks.values()]);
}

/** One 10 s period of one or more regions together, as the report's series counts it. */
export interface PeriodRow {
  period: number;
  /** One per region that has the period. */
  folds: PeriodFold[];
  /** Added over the regions. */
  counters: Record<string, number>;
  /** Users active at the period's end, and at its start: those who arrived and have not completed or failed. */
  active: number;
  activeBefore: number;
}

/**
 * The regions' periods side by side, every period from the first to the last, as the report's
 * series does: a period no task sent is left out, and the users active carry over it.
 */
export function periodRows(regions: Iterable<RegionLive>): PeriodRow[] {
  const byPeriod = new Map<number, PeriodFold[]>();
  for (const region of regions) for (const fold of region.periods()) byPeriod.set(fold.period, [...(byPeriod.get(fold.period) ?? []), fold]);
  const keys = [...byPeriod.keys()].sort((a, b) => a - b);
  const rows: PeriodRow[] = [];
  let active = 0;
  for (let period = keys[0]; keys.length > 0 && period <= keys[keys.length - 1]; period += PERIOD_MS) {
    const folds = byPeriod.get(period);
    if (!folds) continue;
    const counters = folds.length === 1 ? folds[0].counters : addCounters(folds.map((f) => f.counters));
    const activeBefore = active;
    active = Math.max(0, active + (counters["vusers.created"] ?? 0) - (counters["vusers.completed"] ?? 0) - (counters["vusers.failed"] ?? 0));
    rows.push({ period, folds, counters, active, activeBefore });
  }
  return rows;
}

function addCounters(all: Array<Record<string, number>>): Record<string, number> {
  const sum: Record<string, number> = {};
  for (const counters of all) for (const [name, n] of Object.entries(counters)) sum[name] = (sum[name] ?? 0) + n;
  return sum;
}

/** A histogram of the row, merged over its regions; undefined when none has it. */
export function rowSketch(row: PeriodRow, metric: string): DDSketch | undefined {
  const sketches = row.folds.map((f) => f.sketches[metric]).filter((s) => s !== undefined);
  if (sketches.length <= 1) return sketches[0];
  return mergeSketches(sketches);
}

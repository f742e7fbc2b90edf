// The results directory: one folder per region, each holding the reports (and
// sidecars) of that region's tasks, at any depth.
import { existsSync, readdirSync, statSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { LIVE_DIR, livePeriodFiles, loadLiveTask } from "./live-task.js";
import { ColumnFold, foldTasks, RunFold } from "./fold.js";
import { findSpikes } from "./recovery.js";
import { soakDrift } from "./soak.js";
import { judgeVerdictChecks } from "./verdict-checks.js";
import { judgeConnectStorm, judgeStorm } from "./storms.js";
import { ALL_REGIONS, MERGED_FORMAT, MERGED_VERSION, mergedSchema, serverSeriesSchema, type MergedResults, type RegionColumn, type RejectedFile, type ServerSeries, type ConnectStormColumn, type StormColumn, type Timeline } from "./model.js";
import { PERIOD_MS } from "./period.js";
import { phaseBounds } from "./phases.js";
import { negativeLatencyNote } from "./clocks.js";
import { isSidecarPath, sidecarPathFor } from "./sidecar.js";
import { parseJsonFile, ResultsInputError } from "./input.js";
import { loadTask, type TaskResult } from "./task.js";
import { byName, outsideTheRun, taskTimesProblem } from "./task-file.js";

export interface Expectations {
  /** Regions that should have reported; a region listed here without a folder shows as missing. */
  regions?: string[];
  /** Tasks each region should have run; by default the most any region ran. */
  tasksPerRegion?: number;
  /** The server's own figures over time, charted beside the load. */
  server?: ServerSeries | null;
  /** Applied to every text quoted from a server: the caller's redaction of the run's secrets (cable-fanout knows them with --local). */
  redact?: (text: string) => string;
  /** What stopped the run early (cable-fanout's --abort-on), as the runner recorded it. */
  aborted?: Timeline["aborted"];
}

export interface RegionTasks {
  name: string;
  tasks: TaskResult[];
  /** Report paths relative to the results directory, in the order of `tasks`. */
  files: string[];
  /** Files left out: corrupt or truncated reports, and duplicate copies of a task. */
  rejected?: RejectedFile[];
}

/**
 * The results directory merged as it is read: each task file is folded into its region's column
 * (fold.ts) and dropped, so memory grows with regions × periods, never with tasks. A task that
 * turns out, once every start is known, not to belong to the run costs a second reading.
 */
export function mergeResults(dir: string, expectations: Expectations = {}): MergedResults {
  const fold = (skip: ReadonlyMap<string, string>) => {
    const run = new RunFold(expectations.redact);
    const columns = new Map<string, ColumnFold>();
    const scan = scanResultsDir(dir, skip, (region, task, file) => {
      let column = columns.get(region);
      if (!column) columns.set(region, (column = new ColumnFold()));
      column.add(task, file);
      run.add(task);
    });
    return { scan, run, columns };
  };
  let pass = fold(new Map());
  if (pass.scan.outside.size > 0) pass = fold(pass.scan.outside);
  const { scan, run, columns } = pass;
  const regions = scan.regions.map((r) => ({ name: r.name, fold: columns.get(r.name) ?? new ColumnFold(), rejected: r.rejected }));
  return mergeFolds(regions, run, { server: readServerSeries(dir), ...expectations }, scan.notes);
}

/** The runner's scrape of the server's own metrics (`cable-fanout --server-metrics`), beside the region folders. */
export const SERVER_METRICS_FILE = "server-metrics.json";

export function readServerSeries(dir: string): ServerSeries | null {
  const file = join(dir, SERVER_METRICS_FILE);
  if (!existsSync(file)) return null;
  return parseJsonFile(file, serverSeriesSchema, "is not a server-metrics series (cable-fanout --server-metrics)");
}

/**
 * The run's time axis: elapsed time counts from the load's start (the first phase's, else the first
 * period's), and each phase runs from its earliest start over the tasks for its written duration.
 */
function timelineOf(run: RunFold, periods: number[], server: ServerSeries | null, aborted: Timeline["aborted"]): Timeline {
  const starts = [...run.phaseStarts].map(([index, p]) => ({ index, ...p }));
  const phases = phaseBounds(starts, run.test?.phases ?? [], periods.length > 0 ? periods[periods.length - 1] : null);
  return {
    periodMs: PERIOD_MS,
    start: phases.length > 0 ? Math.min(...phases.map((p) => p.startTime)) : (periods[0] ?? null),
    phases,
    server,
    aborted,
  };
}

/** What a reading of the results directory keeps of each task it took: enough to check the run as a whole. */
type TaskMark = Pick<TaskResult, "reportFile" | "sidecarFile" | "test" | "scenariosRun"> & { file: string; start?: number };

interface ScannedRegion {
  name: string;
  rejected: RejectedFile[];
}

interface Scan {
  regions: ScannedRegion[];
  notes: string[];
  /** Tasks (by file) that did not start with the others, and why: left out by a second reading. */
  outside: Map<string, string>;
}

/**
 * Reads every task of every region folder once, in order, handing each usable one to `visit` (which
 * may keep it or fold it); files in `skip` are marked as not belonging to the run, for its reason. Corrupt
 * files and copies are marked rejected; the tasks taken are then checked as one run.
 */
function scanResultsDir(dir: string, skip: ReadonlyMap<string, string>, visit: (region: string, task: TaskResult, file: string) => void): Scan {
  if (!existsSync(dir) || !statSync(dir).isDirectory()) {
    throw new ResultsInputError(dir, "is not a directory");
  }
  // In the columns' order (mergeFolds), so the run's facts come from the same first task whichever way it is merged.
  const regionNames = visibleEntries(dir)
    .filter((name) => statSync(join(dir, name)).isDirectory())
    .sort((a, b) => a.localeCompare(b));
  if (regionNames.length === 0) {
    throw new ResultsInputError(dir, "holds no region folders (expected <results-dir>/<region>/<report>.json)");
  }
  const notes: string[] = [];
  const seen = new Map<string, string>();
  const marks: TaskMark[] = [];
  const now = Date.now();
  const take = (region: ScannedRegion, task: TaskResult, file: string): boolean => {
    if (skip.has(file)) {
      region.rejected.push({ file, kind: "corrupt", reason: skip.get(file)! });
      return false;
    }
    marks.push({ file, reportFile: task.reportFile, sidecarFile: task.sidecarFile, test: task.test, scenariosRun: task.scenariosRun, start: taskStart(task) });
    visit(region.name, task, file);
    return true;
  };
  const regions = regionNames.map((name): ScannedRegion => {
    const jsonFiles = listJsonFiles(join(dir, name));
    const reports = jsonFiles.filter((f) => !isSidecarPath(f));
    const expectedSidecars = new Set(reports.map(sidecarPathFor));
    for (const sidecar of jsonFiles.filter(isSidecarPath)) {
      if (!expectedSidecars.has(sidecar)) {
        notes.push(`${relative(dir, sidecar)} has no report beside it; that task is not counted.`);
      }
    }
    const region: ScannedRegion = { name, rejected: [] };
    // Task folders without a report whose live periods say what they did before they were stopped.
    const withReport = new Set(reports.map((r) => dirname(r)));
    for (const taskDir of liveTaskDirs(join(dir, name)).filter((d) => !withReport.has(d))) {
      const file = relative(dir, taskDir);
      const task = loadLiveTask(taskDir, join(dir, file));
      if (!task) continue;
      const problem = taskTimesProblem({ ...task, periods: task.periods.map((p) => p.period), phaseStarts: task.phaseStarts.map((p) => p.startTime) }, PERIOD_MS, now);
      if (problem) {
        region.rejected.push({ file, kind: "corrupt", reason: `its live periods: ${problem}` });
        continue;
      }
      if (take(region, task, file)) notes.push(`${file}: stopped before Artillery wrote its report; its figures come from the ${task.periods.length} period(s) it streamed (the one it was stopped in is missing).`);
    }
    for (const report of reports) {
      const file = relative(dir, report);
      let task: TaskResult;
      try {
        task = loadTask(report, now);
      } catch (err) {
        // One bad task file must not cost the other tasks and regions their report.
        if (!(err instanceof ResultsInputError)) throw err;
        region.rejected.push({ file, kind: "corrupt", reason: err.message.slice(report.length + 2) });
        continue;
      }
      const identity = taskIdentity(task);
      const original = seen.get(identity);
      if (original !== undefined) {
        region.rejected.push({ file, kind: "duplicate", reason: `a copy of ${original} (same test run), counted once` });
        continue;
      }
      seen.set(identity, file);
      if (take(region, task, file) && task.sidecarProblem) notes.push(`${file}: its sidecar was not used (${task.sidecarProblem}); percentiles from its report only.`);
    }
    return region;
  });
  // A task that did not start with the others (task-file.ts outsideTheRun) is left out, marked.
  const outsideByIndex = outsideTheRun(marks.map((m) => m.start));
  const outside = new Map([...outsideByIndex].map(([i, why]) => [marks[i].file, why]));
  const kept = marks.filter((_, i) => !outsideByIndex.has(i));
  if (kept.length === 0) {
    const rejected = regions.flatMap((r) => r.rejected);
    const why = rejected.length > 0 ? ` that could be read (${rejected.map((r) => `${r.file}: ${r.reason}`).join("; ")})` : " (*.json)";
    throw new ResultsInputError(dir, `holds no Artillery reports${why} in its region folders`);
  }
  checkSameTest(kept);
  return { regions, notes, outside };
}

/** The results directory's tasks, held in memory (the servers comparison reads them as columns). */
export function loadResultsDir(dir: string): { regions: RegionTasks[]; notes: string[] } {
  const read = (skip: ReadonlyMap<string, string>) => {
    const tasks = new Map<string, RegionTasks>();
    const scan = scanResultsDir(dir, skip, (region, task, file) => {
      let r = tasks.get(region);
      if (!r) tasks.set(region, (r = { name: region, tasks: [], files: [] }));
      r.tasks.push(task);
      r.files.push(file);
    });
    return { scan, tasks };
  };
  let pass = read(new Map());
  if (pass.scan.outside.size > 0) pass = read(pass.scan.outside);
  const { scan, tasks } = pass;
  return { regions: scan.regions.map((r) => ({ name: r.name, tasks: [], files: [], ...tasks.get(r.name), rejected: r.rejected })), notes: scan.notes };
}

function taskStart(task: TaskResult): number | undefined {
  if (task.firstMetricAt !== undefined) return task.firstMetricAt;
  let first: number | undefined;
  for (const p of task.periods) first = first === undefined ? p.period : Math.min(first, p.period);
  return first;
}

/**
 * A task copied twice (a folder synced again, a retried download) must count
 * once. Artillery gives every run its own test run id; a report without a
 * sidecar is identified by its timestamps and counters, which a copy shares.
 */
function taskIdentity(task: TaskResult): string {
  if (task.testRunId) return `run:${task.testRunId}`;
  if (task.firstMetricAt === undefined) return `file:${task.reportFile}`;
  return `report:${task.firstMetricAt}:${task.lastMetricAt}:${JSON.stringify(Object.entries(task.counters).sort())}`;
}

/** A merged JSON (from --json) or a results directory, merged on the spot. */
export function loadBaseline(path: string): MergedResults {
  let isDirectory = false;
  try {
    isDirectory = statSync(path).isDirectory();
  } catch {
    throw new ResultsInputError(path, "baseline not found");
  }
  return isDirectory ? mergeResults(path) : parseJsonFile(path, mergedSchema, "is not a cable-report --json output");
}

/** Pure: tasks grouped by region in, the comparison model out. */
export function mergeRegions(regions: RegionTasks[], expectations: Expectations = {}, notes: string[] = []): MergedResults {
  const run = new RunFold(expectations.redact);
  const folded = [...regions].sort((a, b) => a.name.localeCompare(b.name)).map((r) => {
    for (const task of r.tasks) run.add(task);
    return { name: r.name, fold: foldTasks(r.tasks, r.files), rejected: r.rejected ?? [] };
  });
  return mergeFolds(folded, run, expectations, notes);
}

interface RegionFold {
  name: string;
  fold: ColumnFold;
  rejected: RejectedFile[];
}

/** The regions' folded columns and the run's own facts in, the comparison model out. */
function mergeFolds(regions: RegionFold[], run: RunFold, expectations: Expectations, notes: string[]): MergedResults {
  const regionsByName = new Map(regions.map((r) => [r.name, r]));
  for (const name of expectations.regions ?? []) {
    if (!regionsByName.has(name)) regionsByName.set(name, { name, fold: new ColumnFold(), rejected: [] });
  }
  const ordered = [...regionsByName.values()].sort((a, b) => a.name.localeCompare(b.name));
  // A corrupt task file still stands for a task that ran.
  const corrupt = (r: RegionFold) => r.rejected.filter((f) => f.kind === "corrupt").length;
  const expectedTasks = expectations.tasksPerRegion ?? ordered.reduce((most, r) => Math.max(most, r.fold.tasks + corrupt(r)), 0);

  const columns: RegionColumn[] = ordered.map((r) => ({
    ...r.fold.column(r.name),
    rejected: r.rejected,
    expectedTasks,
    series: r.fold.series(),
  }));
  const allFold = new ColumnFold();
  for (const r of ordered) allFold.absorb(r.fold);
  const all = { ...allFold.column(ALL_REGIONS), rejected: ordered.flatMap((r) => r.rejected), series: allFold.series() };

  const merged: MergedResults = {
    format: MERGED_FORMAT,
    version: MERGED_VERSION,
    test: {
      name: run.test?.name ?? "",
      scenarios: run.test?.scenarios ?? [...run.scenariosRun].sort(),
      phases: run.test?.phases ?? [],
      ...(run.test?.maxFailedUsers !== undefined ? { maxFailedUsers: run.test.maxFailedUsers } : {}),
      ...(run.test?.timeoutMs !== undefined ? { timeoutMs: run.test.timeoutMs } : {}),
    },
    regions: columns,
    all,
    notes: [...notes],
    timeline: timelineOf(run, all.series.periods, expectations.server ?? null, expectations.aborted ?? null),
  };
  const storms = byName<StormColumn>();
  const connects = byName<ConnectStormColumn>();
  for (const column of [...columns, all]) {
    const storm = column.tasks > 0 ? judgeStorm(column) : null;
    if (storm) storms[column.name] = storm;
    const connect = column.tasks > 0 ? judgeConnectStorm(column, merged) : null;
    if (connect) connects[column.name] = connect;
  }
  merged.verdicts = { spikes: findSpikes(merged), storms, connects, drift: soakDrift(merged, run.soakMinimumMs), checks: [] };
  merged.verdicts.checks = judgeVerdictChecks([...run.verdictChecks], merged);
  if (run.serverWords.length > 0) merged.serverWords = run.serverWords;
  // The server loaded, as the tasks named it (target.ts): absent when none did.
  const target = run.target.result();
  if (target) merged.target = target;
  const negative = negativeLatencyNote(all);
  if (negative) merged.notes.push(negative);
  if (run.withoutSidecar > 0) {
    merged.notes.push(
      `${run.withoutSidecar} of ${run.tasks} reports have no sketches sidecar (enable the cable-report plugin); ` +
        "percentiles marked ≈ are interpolated from Artillery's summaries, not merged exactly.",
    );
  }
  return merged;
}

/**
 * Reports of different tests must not be merged. A sidecar names the test and
 * its scenarios; a bare report only shows which scenarios created users, so
 * two bare reports conflict only when they share no scenario at all.
 */
function checkSameTest(tasks: TaskMark[]): void {
  const reference = tasks.find((t) => t.test);
  for (const task of tasks) {
    if (reference?.test && task.test) {
      const a = reference.test;
      const b = task.test;
      if (a.name !== b.name || a.scenarios.join("\n") !== b.scenarios.join("\n")) {
        throw new ResultsInputError(
          task.sidecarFile!,
          `is from test "${b.name}" (scenarios: ${b.scenarios.join(", ")}), but ${reference.sidecarFile} is from ` +
            `"${a.name}" (scenarios: ${a.scenarios.join(", ")}); reports of different tests cannot be merged`,
        );
      }
    }
    const declared = reference?.test?.scenarios;
    if (declared) {
      const unknown = task.scenariosRun.filter((s) => !declared.includes(s));
      if (unknown.length > 0) {
        throw new ResultsInputError(
          task.reportFile,
          `ran scenarios ${unknown.join(", ")} that test "${reference.test!.name}" (${reference.sidecarFile}) does not declare; ` +
            "reports of different tests cannot be merged",
        );
      }
    }
  }
  if (reference) return;
  const withScenarios = tasks.filter((t) => t.scenariosRun.length > 0);
  for (const task of withScenarios) {
    const first = withScenarios[0];
    if (!task.scenariosRun.some((s) => first.scenariosRun.includes(s))) {
      throw new ResultsInputError(
        task.reportFile,
        `ran scenarios ${task.scenariosRun.join(", ")}, but ${first.reportFile} ran ${first.scenariosRun.join(", ")}; ` +
          "reports of different tests cannot be merged",
      );
    }
  }
}

function visibleEntries(dir: string): string[] {
  return readdirSync(dir)
    .filter((name) => !name.startsWith("."))
    .sort();
}

/** Files a task folder holds beside its reports: the worker's `status.json` (cable-worker). */
const TASK_METADATA = new Set(["status.json"]);

/** Folders (at any depth) holding live period files. */
function liveTaskDirs(dir: string): string[] {
  return visibleEntries(dir).flatMap((name) => {
    const path = join(dir, name);
    if (!statSync(path).isDirectory()) return [];
    if (name === LIVE_DIR) return livePeriodFiles(dir).length > 0 ? [dir] : [];
    return liveTaskDirs(path);
  });
}

function listJsonFiles(dir: string): string[] {
  return visibleEntries(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return listJsonFiles(path);
    return name.endsWith(".json") && !TASK_METADATA.has(name) ? [path] : [];
  });
}

// The results directory: one folder per region, each holding the reports (and
// sidecars) of that region's tasks, at any depth.
import { existsSync, readdirSync, statSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { LIVE_DIR, livePeriodFiles, loadLiveTask } from "./live-task.js";
import { mergeColumn } from "./merge.js";
import { findSpikes } from "./recovery.js";
import { soakDrift } from "./soak.js";
import { judgeVerdictChecks } from "./verdict-checks.js";
import { judgeConnectStorm, judgeStorm } from "./storms.js";
import { mergeSeries } from "./series.js";
import { ALL_REGIONS, MERGED_FORMAT, MERGED_VERSION, mergedSchema, serverSeriesSchema, type MergedResults, type RegionColumn, type RejectedFile, type ServerSeries, type ConnectStormColumn, type StormColumn, type Timeline } from "./model.js";
import { PERIOD_MS } from "./period.js";
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
}

export interface RegionTasks {
  name: string;
  tasks: TaskResult[];
  /** Report paths relative to the results directory, in the order of `tasks`. */
  files: string[];
  /** Files left out: corrupt or truncated reports, and duplicate copies of a task. */
  rejected?: RejectedFile[];
}

export function mergeResults(dir: string, expectations: Expectations = {}): MergedResults {
  const { regions, notes } = loadResultsDir(dir);
  return mergeRegions(regions, { server: readServerSeries(dir), ...expectations }, notes);
}

/** The runner's scrape of the server's own metrics (`cable-fanout --server-metrics`), beside the region folders. */
export const SERVER_METRICS_FILE = "server-metrics.json";

export function readServerSeries(dir: string): ServerSeries | null {
  const file = join(dir, SERVER_METRICS_FILE);
  if (!existsSync(file)) return null;
  return parseJsonFile(file, serverSeriesSchema, "is not a server-metrics series (cable-fanout --server-metrics)");
}

/** The run's time axis: its first period, and each phase from its earliest start over the tasks to the next one's. */
export function buildTimeline(tasks: TaskResult[], periods: number[], server: ServerSeries | null): Timeline {
  const starts = new Map<number, { name: string; startTime: number }>();
  for (const task of tasks) {
    for (const p of task.phaseStarts) {
      const known = starts.get(p.index);
      if (!known || p.startTime < known.startTime) starts.set(p.index, { name: p.name, startTime: p.startTime });
    }
  }
  const end = periods.length > 0 ? periods[periods.length - 1] + PERIOD_MS : null;
  const ordered = [...starts].sort(([a], [b]) => a - b);
  return {
    periodMs: PERIOD_MS,
    start: periods[0] ?? null,
    phases: ordered.map(([index, p], i) => ({ index, name: p.name, startTime: p.startTime, endTime: ordered[i + 1]?.[1].startTime ?? end })),
    server,
    aborted: null,
  };
}

export function loadResultsDir(dir: string): { regions: RegionTasks[]; notes: string[] } {
  if (!existsSync(dir) || !statSync(dir).isDirectory()) {
    throw new ResultsInputError(dir, "is not a directory");
  }
  const regionNames = visibleEntries(dir).filter((name) => statSync(join(dir, name)).isDirectory());
  if (regionNames.length === 0) {
    throw new ResultsInputError(dir, "holds no region folders (expected <results-dir>/<region>/<report>.json)");
  }
  const notes: string[] = [];
  const seen = new Map<string, string>();
  const now = Date.now();
  const regions = regionNames.map((name): RegionTasks => {
    const jsonFiles = listJsonFiles(join(dir, name));
    const reports = jsonFiles.filter((f) => !isSidecarPath(f));
    const expectedSidecars = new Set(reports.map(sidecarPathFor));
    for (const sidecar of jsonFiles.filter(isSidecarPath)) {
      if (!expectedSidecars.has(sidecar)) {
        notes.push(`${relative(dir, sidecar)} has no report beside it; that task is not counted.`);
      }
    }
    const region: RegionTasks = { name, tasks: [], files: [], rejected: [] };
    // Task folders without a report whose live periods say what they did before they were stopped.
    const withReport = new Set(reports.map((r) => dirname(r)));
    for (const taskDir of liveTaskDirs(join(dir, name)).filter((d) => !withReport.has(d))) {
      const file = relative(dir, taskDir);
      const task = loadLiveTask(taskDir, join(dir, file));
      if (!task) continue;
      const problem = taskTimesProblem({ ...task, periods: task.periods.map((p) => p.period), phaseStarts: task.phaseStarts.map((p) => p.startTime) }, PERIOD_MS, now);
      if (problem) {
        region.rejected!.push({ file, kind: "corrupt", reason: `its live periods: ${problem}` });
        continue;
      }
      notes.push(`${file}: stopped before Artillery wrote its report; its figures come from the ${task.periods.length} period(s) it streamed (the one it was stopped in is missing).`);
      region.tasks.push(task);
      region.files.push(file);
    }
    for (const report of reports) {
      const file = relative(dir, report);
      let task: TaskResult;
      try {
        task = loadTask(report, now);
      } catch (err) {
        // One bad task file must not cost the other tasks and regions their report.
        if (!(err instanceof ResultsInputError)) throw err;
        region.rejected!.push({ file, kind: "corrupt", reason: err.message.slice(report.length + 2) });
        continue;
      }
      const identity = taskIdentity(task);
      const original = seen.get(identity);
      if (original !== undefined) {
        region.rejected!.push({ file, kind: "duplicate", reason: `a copy of ${original} (same test run), counted once` });
        continue;
      }
      seen.set(identity, file);
      if (task.sidecarProblem) notes.push(`${file}: its sidecar was not used (${task.sidecarProblem}); percentiles from its report only.`);
      region.tasks.push(task);
      region.files.push(file);
    }
    return region;
  });
  leaveOutOtherRuns(regions);
  if (regions.every((r) => r.tasks.length === 0)) {
    const rejected = regions.flatMap((r) => r.rejected ?? []);
    const why = rejected.length > 0 ? ` that could be read (${rejected.map((r) => `${r.file}: ${r.reason}`).join("; ")})` : " (*.json)";
    throw new ResultsInputError(dir, `holds no Artillery reports${why} in its region folders`);
  }
  checkSameTest(regions.flatMap((r) => r.tasks));
  return { regions, notes };
}

/** A task that did not start with the others (task-file.ts outsideTheRun) is left out, marked. */
function leaveOutOtherRuns(regions: RegionTasks[]): void {
  const outside = outsideTheRun(regions.flatMap((r) => r.tasks.map(taskStart)));
  if (outside.size === 0) return;
  let i = 0;
  for (const region of regions) {
    const kept: Pick<RegionTasks, "tasks" | "files"> = { tasks: [], files: [] };
    region.tasks.forEach((task, k) => {
      const why = outside.get(i++);
      if (why) region.rejected!.push({ file: region.files[k], kind: "corrupt", reason: why });
      else {
        kept.tasks.push(task);
        kept.files.push(region.files[k]);
      }
    });
    Object.assign(region, kept);
  }
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
  const regionsByName = new Map(regions.map((r) => [r.name, r]));
  for (const name of expectations.regions ?? []) {
    if (!regionsByName.has(name)) regionsByName.set(name, { name, tasks: [], files: [] });
  }
  const ordered = [...regionsByName.values()].sort((a, b) => a.name.localeCompare(b.name));
  // A corrupt task file still stands for a task that ran.
  const corrupt = (r: RegionTasks) => (r.rejected ?? []).filter((f) => f.kind === "corrupt").length;
  const expectedTasks = expectations.tasksPerRegion ?? ordered.reduce((most, r) => Math.max(most, r.tasks.length + corrupt(r)), 0);

  const columns: RegionColumn[] = ordered.map((r) => ({
    ...mergeColumn(r.name, r.tasks, r.files),
    rejected: r.rejected ?? [],
    expectedTasks,
    series: mergeSeries(r.tasks, r.files),
  }));
  const allTasks = ordered.flatMap((r) => r.tasks);
  const allFiles = ordered.flatMap((r) => r.files);
  const all = { ...mergeColumn(ALL_REGIONS, allTasks, allFiles), rejected: ordered.flatMap((r) => r.rejected ?? []), series: mergeSeries(allTasks, allFiles) };
  const described = allTasks.find((t) => t.test)?.test;

  const merged: MergedResults = {
    format: MERGED_FORMAT,
    version: MERGED_VERSION,
    test: {
      name: described?.name ?? "",
      scenarios: described?.scenarios ?? [...new Set(allTasks.flatMap((t) => t.scenariosRun))].sort(),
      phases: described?.phases ?? [],
    },
    regions: columns,
    all,
    notes: [...notes],
    timeline: buildTimeline(allTasks, all.series?.periods ?? [], expectations.server ?? null),
  };
  const storms = byName<StormColumn>();
  const connects = byName<ConnectStormColumn>();
  for (const column of [...columns, all]) {
    const storm = column.tasks > 0 ? judgeStorm(column) : null;
    if (storm) storms[column.name] = storm;
    const connect = column.tasks > 0 ? judgeConnectStorm(column, merged) : null;
    if (connect) connects[column.name] = connect;
  }
  const soakMinimums = allTasks.flatMap((t) => (t.test?.soakMinimumMs ? [t.test.soakMinimumMs] : []));
  const soakMinimumMs = soakMinimums.length > 0 ? soakMinimums.reduce((a, b) => Math.max(a, b)) : undefined;
  merged.verdicts = { spikes: findSpikes(merged), storms, connects, drift: soakDrift(merged, soakMinimumMs), checks: [] };
  const verdictChecks = [...new Set(allTasks.flatMap((t) => t.test?.verdictChecks ?? []))];
  merged.verdicts.checks = judgeVerdictChecks(verdictChecks, merged);
  const words = mergeServerWords(allTasks.map((t) => (t.serverWords ?? []).map((w) => ({ ...w, text: expectations.redact?.(w.text) ?? w.text }))));
  if (words.length > 0) merged.serverWords = words;
  const withoutSidecar = allTasks.filter((t) => !t.sketches).length;
  if (withoutSidecar > 0) {
    merged.notes.push(
      `${withoutSidecar} of ${allTasks.length} reports have no sketches sidecar (enable the cable-report plugin); ` +
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
function checkSameTest(tasks: TaskResult[]): void {
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

/** Every task's sample of the server's words, each distinct text once, three per error key and cause. */
export function mergeServerWords(perTask: { error: string; cause: string; text: string }[][]): { error: string; cause: string; text: string }[] {
  const out: { error: string; cause: string; text: string }[] = [];
  for (const w of perTask.flat()) {
    const same = out.filter((x) => x.error === w.error && x.cause === w.cause);
    if (same.length < 3 && !same.some((x) => x.text === w.text)) out.push(w);
  }
  return out;
}

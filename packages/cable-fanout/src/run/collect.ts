// After the tasks: download every region's results, decide each task's outcome, merge with
// cable-report and write report.md, merged.json and the run record.
import { existsSync, mkdirSync } from "node:fs";
import path from "node:path";
import { failedUsers, findRegressions, judgeBaseline, loadBaseline, loadTask, mergeResults, overLineMessage, renderMarkdown, renderReportPage, ResultsInputError, SERVER_METRICS_FILE, withBaselineVerdict, writeFileAtomic, type MergedResults, type Regression, type RenderOptions } from "artillery-plugin-cable-report";
import { makeRedactor, type Redact, REPORT_FILE, type RunnerStop, type TaskStatus } from "cable-worker/contract";
import type { Region, TaskSnapshot } from "../backend.js";
import { DownloadProgress } from "../download-progress.js";
import { RECORD_FILE, type RunRecord, type TaskOutcome } from "./record.js";
import { toServerSeries, type ServerSample } from "../server-metrics.js";
import { renderStartSection, type StartSummary, summarizeStart } from "./start-report.js";
import { billedFromSnapshots, renderCostSection } from "../plan/cost-report.js";
import { downloadRegionResults } from "../store.js";
import { outcomeOf } from "./task-end.js";
import { appendRecord, resolveLocation, historyFacts, historyOptionsOf, identityOf, readForRun, type HistoryFacts, type HistoryOptions } from "./history.js";
import { HISTORY_GATE, historyRecord, judgeAgainstHistory, type HistoryStore, type HistoryVerdict } from "artillery-plugin-cable-report";

export const EXIT = { ok: 0, regression: 1, usage: 2, internal: 3, regionFailed: 4, ensureFailed: 5, usersFailed: 6, aborted: 7 } as const;

export interface CollectInput {
  runDir: string;
  record: RunRecord;
  regions: Region[];
  /** What the run loop saw of each region's tasks; empty for `collect <runId>`. */
  snapshots: Map<string, TaskSnapshot[]>;
  /** Region-level failures the run loop saw (tasks not started, start timeout…). */
  regionFailures: Map<string, string[]>;
  /** --server-metrics: the server's scrapes during the run. */
  serverSamples?: ServerSample[];
  baseline?: string;
  regressionThreshold?: number;
  /** --baseline-any: compare with a baseline of another scenario or target anyway. */
  baselineAny?: boolean;
  title?: string;
  /** `collect --history`: keep and judge the run there (default: as it started, fanout.json's). */
  history?: HistoryOptions;
  log: (line: string) => void;
  /** The download's progress, a line every few seconds at most (default: stderr). */
  progress?: (line: string) => void;
}

export interface CollectResult {
  exitCode: number;
  reportFile?: string;
  /** report.html beside it: the tables and interactive charts over time, offline. */
  htmlFile?: string;
  mergedFile?: string;
  merged?: MergedResults;
  tasks: TaskOutcome[];
  failedRegions: string[];
  regressions: Regression[];
  /** Why the gate refused the baseline (another scenario or target, without --baseline-any): nothing was compared. */
  baselineRefused?: string;
  /** More users failed than `config.cable.maxFailedUsers` allows. */
  usersFailed?: boolean;
  /** --history: the run's record beside report.md (history.json), and where the store kept it (undefined: it could not). */
  historyFile?: string;
  historyKept?: string;
}

export async function collectRun(input: CollectInput): Promise<CollectResult> {
  const { runDir, record } = input;
  mkdirSync(runDir, { recursive: true });
  const { tasks, statusesByRegion, regionFailures } = await gatherTasks(input);
  const notes = runNotes(record, regionFailures, tasks);
  const start = summarizeStart({ startAt: record.startAt, count: record.count, regions: record.regions, statuses: statusesByRegion, barrier: record.barrier });
  for (const note of notes) input.log(note);

  const result: CollectResult = { exitCode: EXIT.ok, tasks, failedRegions: [...regionFailures.keys()].sort(), regressions: [] };
  if (input.serverSamples && input.serverSamples.length > 0) writeFileAtomic(path.join(runDir, SERVER_METRICS_FILE), `${JSON.stringify(toServerSeries(input.serverSamples))}\n`);
  const merged = mergeRun(input, tasks);
  let history: RunHistory | undefined;
  const billed = billedFromSnapshots(record, input.snapshots, Date.now()) ?? record.billed;
  if (merged) {
    merged.notes.push(...notes);
    // What every cross-task latency carries: the most two tasks' clocks may disagree (start-report.ts).
    merged.clockBoundMs = start.clock ? start.clock.crossTaskBoundMs : null;
    history = await historyOf(input, merged);
    writeReports(input, merged, `${renderStartSection(start)}${renderCostSection({ ...record, ...(billed ? { billed } : {}) })}`, result, history);
  }

  // The failure line (config.cable.maxFailedUsers) on the merged run: the tasks leave it to the runner.
  const users = merged ? failedUsers(merged) : null;
  if (users?.over) input.log(overLineMessage(users, `cable-fanout exits ${EXIT.usersFailed}`));
  else if (users && users.failed > 0) input.log(`${users.failed} of ${users.created} virtual users failed, within config.cable.maxFailedUsers (${users.line})`);
  result.usersFailed = users?.over ?? false;

  const finished: RunRecord & { start: StartSummary } = { ...record, tasks, regionFailures: Object.fromEntries(regionFailures), start, ...(billed ? { billed } : {}) };
  writeFileAtomic(path.join(runDir, RECORD_FILE), `${JSON.stringify(finished, null, 2)}\n`);
  result.exitCode = exitCodeOf(result, record, merged);
  if (history && merged) {
    const kept = historyRecord({
      identity: history.identity,
      merged,
      usersOverLine: result.usersFailed ?? false,
      checksFailed: ensureFailedOf(result, merged),
      regressions: input.regressionThreshold === undefined ? null : result.regressions.length,
      cost: { estimateUsd: record.estimate?.usd ?? null, billedUsd: billed?.usd ?? null },
    });
    result.historyFile = path.join(runDir, HISTORY_FILE);
    writeFileAtomic(result.historyFile, `${JSON.stringify(kept)}\n`);
    result.historyKept = await appendRecord(history.store, kept, input.log);
  }
  return result;
}

/** The run's own record beside report.md, for whoever keeps the history elsewhere (the Action's history branch). */
export const HISTORY_FILE = "history.json";

interface RunHistory {
  store: HistoryStore;
  identity: ReturnType<typeof identityOf>;
  verdict: HistoryVerdict;
  options: HistoryOptions;
}

/** The history read and the run judged against it; undefined without --history, or when the store cannot be read now (said). */
async function historyOf(input: CollectInput, merged: MergedResults): Promise<RunHistory | undefined> {
  const given = historyOptionsOf(input.record, input.history);
  if (!given) return undefined;
  const options = resolveLocation(given, input.regions);
  const facts = input.record.history ?? factsNow(input.record, input.log);
  if (!facts) return undefined;
  const read = await readForRun(options, input.log);
  if (!read) return undefined;
  const identity = identityOf(input.record, facts, merged, options);
  const verdict = judgeAgainstHistory(merged, identity, read.read, { threshold: input.regressionThreshold, branch: options.branch });
  for (const s of read.read.skipped) input.log(`history: skipped ${s.file}: ${s.reason}`);
  input.log(
    verdict.mode === "band"
      ? `history: judged against the band of the last ${verdict.runs} comparable runs in ${options.location}`
      : `history: ${verdict.runs} comparable run(s) in ${options.location}, ${HISTORY_GATE.minRuns} needed for a band`,
  );
  return { store: read.store, identity, verdict, options };
}

/** A run started without --history, collected with it: what its scenario file says now. */
function factsNow(record: RunRecord, log: (line: string) => void): HistoryFacts | undefined {
  try {
    return historyFacts({ scenarioFile: record.scenario, overrides: undefined, count: record.count });
  } catch (err) {
    log(`history: the run started without --history and its scenario ${record.scenario} cannot be read now (${(err as NodeJS.ErrnoException).code ?? "error"}): not kept`);
    return undefined;
  }
}

/** Every region's results downloaded, and each task's outcome; a region that lost tasks is a failure. */
async function gatherTasks(input: CollectInput): Promise<{ tasks: TaskOutcome[]; statusesByRegion: Map<string, TaskStatus[]>; regionFailures: Map<string, string[]> }> {
  const { runDir, record } = input;
  const tasks: TaskOutcome[] = [];
  const statusesByRegion = new Map<string, TaskStatus[]>();
  const regionFailures = new Map(input.regionFailures);
  const addFailure = (region: string, line: string) => regionFailures.set(region, [...(regionFailures.get(region) ?? []), line]);
  const progress = new DownloadProgress(input.regions.length, input.progress ?? ((line) => process.stderr.write(`${line}\n`)));

  await Promise.all(
    input.regions.map(async (region) => {
      const dir = path.join(runDir, region.name);
      mkdirSync(dir, { recursive: true });
      let statuses: TaskStatus[] = [];
      try {
        ({ statuses } = await downloadRegionResults(region.store, record.runId, region.name, dir, progress));
      } catch (err) {
        addFailure(region.name, `downloading results from ${region.location} failed: ${(err as Error).message}`);
      }
      progress.regionDone();
      statusesByRegion.set(region.name, statuses);
      const outcomes = taskOutcomes(region.name, dir, input.snapshots.get(region.name) ?? [], statuses, (id) => runnerStop(record, region.name, id));
      tasks.push(...outcomes);
      const failed = outcomes.filter((t) => t.state === "failed");
      if (failed.length > 0) addFailure(region.name, `${failed.length} of ${record.count} task(s) failed`);
      const known = outcomes.length;
      if (known < record.count && !regionFailures.has(region.name)) addFailure(region.name, `only ${known} of ${record.count} task(s) left results`);
    }),
  );
  progress.finish();
  tasks.sort((a, b) => a.region.localeCompare(b.region) || a.taskId.localeCompare(b.taskId));
  return { tasks, statusesByRegion, regionFailures };
}

/** What the console and report.md say went wrong or differently: notices, region failures, tasks that were not ok. */
function runNotes(record: RunRecord, regionFailures: Map<string, string[]>, tasks: TaskOutcome[]): string[] {
  return [
    ...Object.entries(record.notices ?? {}).flatMap(([region, lines]) => lines.map((l) => `${region}: ${l}`)),
    ...[...regionFailures].flatMap(([region, lines]) => lines.map((l) => `${region}: ${l}`)),
    ...taskNotes(tasks),
  ];
}

/** The tasks that were not ok, a note each; a region's tasks that ended alike are one note when there are many (an --abort-on of 500 tasks is one line, not 500). */
export function taskNotes(tasks: TaskOutcome[]): string[] {
  const alike = new Map<string, TaskOutcome[]>();
  for (const t of tasks.filter((t) => t.state !== "ok")) {
    const key = `${t.region}\n${taskNote(t)}`;
    const group = alike.get(key);
    if (group) group.push(t);
    else alike.set(key, [t]);
  }
  return [...alike.values()].flatMap((group) => {
    if (group.length <= TASK_NOTES_LISTED) return group.map((t) => `${t.region} ${t.taskId}: ${taskNote(t)}${t.log ? ` (log: ${t.log})` : ""}`);
    const ids = group.slice(0, TASK_NOTES_LISTED).map((t) => t.taskId);
    return [`${group[0].region}: ${group.length} tasks: ${taskNote(group[0])} (${ids.join(", ")}, …; fanout.json lists every task and its log)`];
  });
}

/** Tasks of a region that ended alike and are still listed one by one. */
const TASK_NOTES_LISTED = 5;

function taskNote(t: TaskOutcome): string {
  return t.state === "ensure-failed" ? "ensure checks failed" : t.state === "missed-barrier" ? "missed the ready barrier: ran no load" : t.state === "aborted" ? "stopped by --abort-on" : (t.reason ?? "failed");
}

/** cable-report's merge of every task's results; undefined when there is nothing to merge. */
function mergeRun(input: CollectInput, tasks: TaskOutcome[]): MergedResults | undefined {
  const { record } = input;
  let merged: MergedResults;
  try {
    merged = mergeResults(input.runDir, { regions: record.regions, tasksPerRegion: record.count, redact: heldSecrets(record, process.env), aborted: record.aborted ?? null });
  } catch (err) {
    if (!(err instanceof ResultsInputError)) throw err;
    input.log(`no report: ${err.message}`);
    return undefined;
  }
  if (record.aborted || tasks.some((t) => t.state !== "ok")) {
    // Artillery cannot end a virtual user from outside: those still in their flow at the stop are neither completed nor failed.
    const count = (name: string) => merged.all.counters[name] ?? 0;
    const cutOff = count("vusers.created") - count("vusers.completed") - count("vusers.failed");
    if (cutOff > 0) merged.notes.push(`${cutOff} virtual user(s) were still in their flow when the tasks were stopped: neither completed nor failed.`);
  }
  return merged;
}

/**
 * The second redaction, in the merge of the server's words: with the values of the run's secrets
 * this machine holds, under their names, in its environment (with --local, where `--secret NAME`
 * took $NAME, always). The runner never reads a secret from SSM or Secrets Manager: its operator
 * policy grants no such read (only the tasks' role has one), a CI runner or a laptop would then hold
 * every secret of the run, and the tasks, which must hold them anyway, have redacted everything they
 * uploaded before it left them.
 */
function heldSecrets(record: Pick<RunRecord, "secrets">, env: NodeJS.ProcessEnv): Redact {
  return makeRedactor(record.secrets.flatMap((name) => env[name] ?? []));
}

/** merged.json, report.md (with the fan-out's start section) and report.html; the regressions against a baseline. */
function writeReports(input: CollectInput, merged: MergedResults, startSection: string, result: CollectResult, history?: RunHistory): void {
  const { runDir, record } = input;
  // Too few comparable runs for a band: the newest one is the two-run gate's baseline, unless --baseline gave one.
  const newest = history?.verdict.mode === "two-run" && input.baseline === undefined ? history.verdict.newest : null;
  const baselineLabel = newest ? `the newest comparable run in the history (run ${newest.run.id}, ${new Date(newest.run.at).toISOString().slice(0, 16).replace("T", " ")} UTC)` : input.baseline;
  const given = input.baseline === undefined ? newest?.results : loadBaseline(input.baseline);
  // Of another scenario or target: the gate refuses it (unless --baseline-any), the report says so.
  const verdict = given && judgeBaseline(merged, given, { gate: input.regressionThreshold !== undefined, any: input.baselineAny === true });
  const baseline = verdict?.refused ? undefined : given;
  if (verdict?.refused) {
    result.baselineRefused = verdict.refused;
    input.log(verdict.refused);
  }
  const renderOptions: RenderOptions = {
    title: input.title ?? `${path.basename(record.scenario)} from ${record.regions.join(", ")} (run ${record.runId})`,
    baseline,
    baselineLabel,
    regressionThreshold: input.regressionThreshold,
    ...(history ? { history: { verdict: history.verdict, where: history.options.location, minRuns: HISTORY_GATE.minRuns, branch: history.options.branch, baselineGiven: input.baseline !== undefined } } : {}),
  };
  const rendered = renderMarkdown(merged, renderOptions);
  const markdown = verdict ? withBaselineVerdict(rendered, verdict, baselineLabel!) : rendered;
  // The start and cost sections are the fan-out's own: report.md's tables come from cable-report.
  const page = renderReportPage(merged, renderOptions, startSection);
  result.mergedFile = path.join(runDir, "merged.json");
  result.reportFile = path.join(runDir, "report.md");
  result.htmlFile = path.join(runDir, "report.html");
  writeFileAtomic(result.mergedFile, `${JSON.stringify(merged, null, 2)}\n`);
  writeFileAtomic(result.htmlFile, page);
  writeFileAtomic(result.reportFile, `${markdown.replace(/\n*$/, "\n")}${startSection}`);
  result.merged = merged;
  if (history?.verdict.mode === "band" && input.regressionThreshold !== undefined) {
    result.regressions = history.verdict.regressions;
    for (const r of result.regressions) input.log(`regression: ${r.row} in ${r.column}: ${r.reason}`);
  } else if (baseline && input.regressionThreshold !== undefined) {
    result.regressions = findRegressions(merged, baseline, input.regressionThreshold);
    for (const r of result.regressions) input.log(`regression: ${r.row} in ${r.column}: ${r.baseline} → ${r.current} (${Number.isFinite(r.percent) ? `${r.percent.toFixed(1)}%` : "new"})`);
  }
}

/** The run's exit code: a failed region first, then an abort, failed users over their line, failed ensure checks, a refused baseline, a regression. */
function exitCodeOf(result: CollectResult, record: RunRecord, merged: MergedResults | undefined): number {
  const ensureFailed = ensureFailedOf(result, merged);
  if (result.failedRegions.length > 0 || !merged) return EXIT.regionFailed;
  if (record.aborted) return EXIT.aborted;
  if (result.usersFailed) return EXIT.usersFailed;
  if (ensureFailed) return EXIT.ensureFailed;
  if (result.baselineRefused) return EXIT.usage;
  if (result.regressions.length > 0) return EXIT.regression;
  return EXIT.ok;
}

/** An ensure check failed: in a task, in a region's tally, or among cable-report's own on the merged run. */
function ensureFailedOf(result: CollectResult, merged: MergedResults | undefined): boolean {
  return (
    result.tasks.some((t) => t.state === "ensure-failed") ||
    (merged?.regions ?? []).some((r) => r.checks.some((c) => c.failed > 0)) ||
    (merged?.verdicts?.checks ?? []).some((c) => Object.values(c.columns).some((o) => !o.passed))
  );
}

/**
 * Why the runner stopped a task, from its record: the barrier's missed tasks first (those that had
 * stopped by then are listed there only). A record from before `stops` knows only that the run was
 * aborted: every task of it that did not end by itself reads as stopped for it.
 */
function runnerStop(record: RunRecord, region: string, taskId: string): RunnerStop | undefined {
  if (record.barrier?.missed[region]?.includes(taskId)) return { by: "barrier-missed" };
  if (record.stops === undefined) return record.aborted ? { by: "abort" } : undefined;
  return record.stops[region]?.[taskId];
}

/** One outcome per task, from what the backend saw (snapshots), what the worker wrote (status.json) and what the runner decided. */
function taskOutcomes(region: string, regionDir: string, snapshots: TaskSnapshot[], statuses: TaskStatus[], stopOf: (taskId: string) => RunnerStop | undefined): TaskOutcome[] {
  const byId = new Map<string, { snapshot?: TaskSnapshot; status?: TaskStatus }>();
  for (const s of snapshots) byId.set(s.taskId, { snapshot: s });
  for (const s of statuses) byId.set(s.taskId, { ...byId.get(s.taskId), status: s });
  return [...byId].map(([taskId, { snapshot, status }]) => ({
    region,
    taskId,
    ref: snapshot?.ref,
    log: snapshot?.log,
    startLagMs: status?.startLagMs ?? null,
    ...outcomeOf({ status, snapshot, stop: stopOf(taskId), checksFailed: () => checksFailed(path.join(regionDir, taskId, REPORT_FILE)) }),
  }));
}

function checksFailed(reportFile: string): boolean {
  if (!existsSync(reportFile)) return false;
  try {
    return (loadTask(reportFile).checks ?? []).some((c) => !c.passed);
  } catch {
    return false;
  }
}

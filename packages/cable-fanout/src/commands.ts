// `collect <runId>` and `stop <runId>`: the run record (or flags) says which regions and backend.
import path from "node:path";
import type { Backend } from "./backend.js";
import { collectRun, type CollectResult } from "./run/collect.js";
import type { HistoryOptions } from "./run/history.js";
import { FanoutInputError } from "./errors.js";
import { readRecord, type RunRecord } from "./run/record.js";
import { announce } from "./run/barrier.js";
import { openRegions } from "./run/runner.js";
import { backoffDelay, RESTOP_BACKOFF } from "./schedule.js";
import { findStoredRecord } from "./detach/store-record.js";

/** The report's flags of `run` and `collect`. */
export interface ReportFlags {
  baseline?: string;
  regressionThreshold?: number;
  /** --baseline-any: compare with a baseline of another scenario or target anyway. */
  baselineAny?: boolean;
  title?: string;
  /** --history: kept and judged there (default: as the run started, its record's). */
  history?: HistoryOptions;
}

export interface RunLookup {
  runId: string;
  outDir: string;
  /** Overrides the record's, and stands in for it when there is none (e.g. another machine). */
  regions?: string[];
  count?: number;
}

/**
 * The record of a run: this machine's (results/<runId>/fanout.json), else the one a detached run
 * left in the stores (with --local the store directory; on AWS the regions given), else one built
 * from flags when this machine did not start it.
 */
/** `fromStore`: the record was read from the run's store, not this machine's results directory. */
export async function lookupRun(lookup: RunLookup, backend: Backend): Promise<{ runDir: string; record: RunRecord; fromStore: boolean }> {
  const runDir = path.resolve(lookup.outDir, lookup.runId);
  const local = readRecord(runDir);
  const stored = local ? undefined : await findStoredRecord(backend, lookup.runId, lookup.regions);
  const saved = local ?? stored;
  // --regions found a stored record (one region's store holds the whole run): the record's regions count.
  const regions = stored ? stored.regions : (lookup.regions ?? saved?.regions);
  if (!regions || regions.length === 0) {
    const where = backend.kind === "local" ? "the store directory (a detached run's record is in the --store it was started with; by default <out>/.local-store of its --out)" : "the store";
    throw new FanoutInputError(`no ${path.join(runDir, "fanout.json")} for run ${lookup.runId}, and no record of it in ${where}: say which regions with --regions`);
  }
  if (saved && saved.backend !== backend.kind) throw new FanoutInputError(`run ${lookup.runId} ran on the ${saved.backend} backend (${path.join(runDir, "fanout.json")}); ${saved.backend === "local" ? "add --local" : "drop --local"}`);
  const record: RunRecord = saved
    ? { ...saved, regions, count: lookup.count ?? saved.count }
    : { format: "cable-fanout-run", version: 1, runId: lookup.runId, backend: backend.kind, scenario: "", regions, count: lookup.count ?? 1, secrets: [], startAt: null, started: {}, tasks: [], regionFailures: {}, notices: {} };
  return { runDir, record, fromStore: stored !== undefined };
}

export async function collectCommand(
  lookup: RunLookup,
  backend: Backend,
  report: ReportFlags,
  log: (line: string) => void,
): Promise<CollectResult & { runDir: string }> {
  const { runDir, record } = await lookupRun(lookup, backend);
  const regions = await openRegions(backend, record.regions);
  if (record.detached) {
    // A detached run may still be going: what is collected now is what its tasks have written so far.
    const running = (await Promise.all(regions.map((r) => r.findRunningTasks(record.runId).catch(() => [] as string[])))).flat().length;
    if (running > 0) log(`run ${record.runId} still has ${running} running task(s): the report holds what they have written so far (\`cable-fanout attach ${record.runId}\` waits for their end)`);
  }
  const result = await collectRun({ runDir, record, regions, snapshots: new Map(), regionFailures: new Map(), ...report, log });
  return { ...result, runDir };
}

/**
 * Stops the run's tasks that still run: those the record lists, and those the backend finds by run
 * id. First a cancelling go marker (tasks still waiting at the barrier exit without load), then
 * StopTask, sent again with backoff until DescribeTasks says STOPPED or `waitMs` passes.
 */
export async function stopCommand(
  lookup: RunLookup,
  backend: Backend,
  log: (line: string) => void,
  deps: { now: () => number; sleep: (ms: number) => Promise<void>; waitMs?: number } = { now: Date.now, sleep: (ms) => new Promise((r) => setTimeout(r, ms)) },
): Promise<number> {
  const { record, fromStore } = await lookupRun(lookup, backend);
  const regions = await openRegions(backend, record.regions);
  for (const line of await announce(regions, record.runId, { cancelled: `cable-fanout stop ${record.runId}` })) log(line);
  const detached = record.detached !== undefined;
  const deadline = deps.now() + (deps.waitMs ?? 180_000);
  let stopped = 0;
  let unstopped = 0;
  await Promise.all(
    regions.map(async (region) => {
      // A region whose listing fails still stops the tasks the run record names.
      const found = await region.findRunningTasks(record.runId).catch((err: Error) => {
        log(`${region.name}: could not list the run's tasks (${err.name}: ${err.message}); ${fromStore ? "the store's record alone names none to stop: try again" : "stopping those the run record names"}`);
        return [] as string[];
      });
      // A record read from the store is the store's word: only tasks the backend itself lists under
      // the run's id are stopped, never other tasks a rewritten record might name.
      const listed = fromStore ? (record.started[region.name] ?? []).filter((ref) => found.includes(ref)) : (record.started[region.name] ?? []);
      const candidates = [...new Set([...found, ...listed])];
      let live = candidates.length === 0 ? [] : (await region.describeTasks(candidates)).filter((t) => t.phase !== "stopped");
      if (live.length === 0) {
        log(`${region.name}: no running task of run ${record.runId}`);
        return;
      }
      const ids = live.map((t) => t.taskId);
      for (let attempt = 1; live.length > 0; attempt++) {
        try {
          await region.stopTasks(live.map((t) => t.ref), `cable-fanout stop ${record.runId}`);
        } catch (err) {
          log(`${region.name}: ${(err as Error).message}`);
        }
        if (deps.now() >= deadline) break;
        await deps.sleep(Math.min(backoffDelay(attempt, RESTOP_BACKOFF), Math.max(0, deadline - deps.now())));
        live = (await region.describeTasks(live.map((t) => t.ref)).catch(() => live)).filter((t) => t.phase !== "stopped");
      }
      stopped += ids.length - live.length;
      unstopped += live.length;
      log(`${region.name}: stopped ${ids.length - live.length} task(s): ${ids.filter((id) => !live.some((t) => t.taskId === id)).join(", ") || "none"}`);
      if (live.length > 0) log(`${region.name}: ${live.length} task(s) still not STOPPED: ${live.map((t) => t.taskId).join(", ")}`);
    }),
  );
  const byThemselves = detached ? "at the run's --max-duration" : "once the heartbeat is stale";
  if (unstopped > 0) throw new Error(`${unstopped} task(s) of run ${record.runId} did not stop; run \`cable-fanout stop ${record.runId}\` again (they also stop themselves ${byThemselves})`);
  return stopped;
}

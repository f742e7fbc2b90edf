// `collect <runId>` and `stop <runId>`: the run record (or flags) says which regions and backend.
import path from "node:path";
import type { Backend } from "./backend.js";
import { collectRun, type CollectResult } from "./collect.js";
import { FanoutInputError } from "./errors.js";
import { readRecord, type RunRecord } from "./record.js";
import { openRegions } from "./runner.js";

export interface RunLookup {
  runId: string;
  outDir: string;
  /** Overrides the record's, and stands in for it when there is none (e.g. another machine). */
  regions?: string[];
  count?: number;
}

/** The record of a run, or one built from flags when this machine did not start it. */
export function lookupRun(lookup: RunLookup, backend: Backend): { runDir: string; record: RunRecord } {
  const runDir = path.resolve(lookup.outDir, lookup.runId);
  const saved = readRecord(runDir);
  const regions = lookup.regions ?? saved?.regions;
  if (!regions || regions.length === 0) throw new FanoutInputError(`no ${path.join(runDir, "fanout.json")} for run ${lookup.runId}: say which regions with --regions`);
  if (saved && saved.backend !== backend.kind) throw new FanoutInputError(`run ${lookup.runId} ran on the ${saved.backend} backend (${path.join(runDir, "fanout.json")}); ${saved.backend === "local" ? "add --local" : "drop --local"}`);
  const record: RunRecord = saved
    ? { ...saved, regions, count: lookup.count ?? saved.count }
    : { format: "cable-fanout-run", version: 1, runId: lookup.runId, backend: backend.kind, scenario: "", regions, count: lookup.count ?? 1, startAt: 0, started: {}, tasks: [], regionFailures: {} };
  return { runDir, record };
}

export async function collectCommand(
  lookup: RunLookup,
  backend: Backend,
  report: { baseline?: string; regressionThreshold?: number; title?: string },
  log: (line: string) => void,
): Promise<CollectResult & { runDir: string }> {
  const { runDir, record } = lookupRun(lookup, backend);
  const regions = await openRegions(backend, record.regions);
  const result = await collectRun({ runDir, record, regions, snapshots: new Map(), regionFailures: new Map(), ...report, log });
  return { ...result, runDir };
}

/** Stops the run's tasks that still run: those the record lists, and those the backend finds by run id. */
export async function stopCommand(lookup: RunLookup, backend: Backend, log: (line: string) => void): Promise<number> {
  const { record } = lookupRun(lookup, backend);
  const regions = await openRegions(backend, record.regions);
  let stopped = 0;
  await Promise.all(
    regions.map(async (region) => {
      const found = await region.findRunningTasks(record.runId);
      const listed = record.started[region.name] ?? [];
      const candidates = [...new Set([...found, ...listed])];
      const live = candidates.length === 0 ? [] : (await region.describeTasks(candidates)).filter((t) => t.phase !== "stopped");
      if (live.length === 0) {
        log(`${region.name}: no running task of run ${record.runId}`);
        return;
      }
      await region.stopTasks(live.map((t) => t.ref), `cable-fanout stop ${record.runId}`);
      log(`${region.name}: stopped ${live.length} task(s): ${live.map((t) => t.taskId).join(", ")}`);
      stopped += live.length;
    }),
  );
  return stopped;
}

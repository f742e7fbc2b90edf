// `status`: the runs with tasks still running, per region, from the backends (ECS ListTasks by
// startedBy; --local, the store's pid files), with what each run's record in the store says (its
// age, its tasks, whether it is detached). A record read from a store is validated like any other.
import path from "node:path";
import type { Backend, RunningRun } from "../backend.js";
import { formatDuration } from "../progress.js";
import { readRecord, type RunRecord } from "../run/record.js";
import { openRegions } from "../run/runner.js";
import { readStoredRecord } from "./store-record.js";

export interface StatusRow {
  region: string;
  runId: string;
  running: number;
  /** Tasks of the run in this region that have stopped; undefined without a record that lists them. */
  stopped?: number;
  ageMs?: number;
  runner: "detached" | "watched" | "unknown";
}

export interface StatusDeps {
  now: () => number;
  /** Results directory: a watched run's record is in <out>/<runId>/fanout.json on the machine that runs it. */
  outDir: string;
  warn: (line: string) => void;
}

export async function runsInProgress(backend: Backend, regionNames: string[], deps: StatusDeps): Promise<StatusRow[]> {
  const regions = await openRegions(backend, regionNames);
  const rows: StatusRow[] = [];
  await Promise.all(
    regions.map(async (region) => {
      if (!region.runsInProgress) {
        deps.warn(`${region.name}: this backend cannot list its runs`);
        return;
      }
      let runs: RunningRun[];
      try {
        runs = await region.runsInProgress();
      } catch (err) {
        deps.warn(`${region.name}: listing the running tasks failed: ${(err as Error).message}`);
        return;
      }
      for (const run of runs) {
        let record: RunRecord | undefined;
        try {
          record = (await readStoredRecord(region.store, run.runId, backend.kind)) ?? readRecord(path.resolve(deps.outDir, run.runId));
        } catch (err) {
          deps.warn(`${region.name}: run ${run.runId}: ${(err as Error).message}`);
        }
        const started = record?.started[region.name]?.length;
        const since = record?.createdAt ?? run.since;
        rows.push({
          region: region.name,
          runId: run.runId,
          running: run.running,
          ...(started !== undefined ? { stopped: Math.max(0, started - run.running) } : {}),
          ...(since !== undefined ? { ageMs: Math.max(0, deps.now() - since) } : {}),
          runner: record?.detached ? "detached" : record ? "watched" : "unknown",
        });
      }
    }),
  );
  return rows.sort((a, b) => a.region.localeCompare(b.region) || a.runId.localeCompare(b.runId));
}

/** One line per region and run, aligned: what `status` prints on stdout. */
export function formatStatus(rows: StatusRow[]): string[] {
  if (rows.length === 0) return ["no run in progress"];
  const table = [
    ["REGION", "RUN", "AGE", "RUNNING", "STOPPED", "RUNNER"],
    ...rows.map((r) => [r.region, r.runId, r.ageMs === undefined ? "?" : formatDuration(r.ageMs), String(r.running), r.stopped === undefined ? "?" : String(r.stopped), r.runner]),
  ];
  const widths = table[0].map((_, i) => Math.max(...table.map((row) => row[i].length)));
  return table.map((row) => row.map((cell, i) => cell.padEnd(widths[i])).join("  ").trimEnd());
}

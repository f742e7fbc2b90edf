// `attach <runId>`: from any machine with access to the stores, a detached run's record read back,
// its live lines (and --live page) picked up where the run is, its tasks waited for, then the same
// collection a watched run ends with. Attaching never stops a task: the runner that attached may
// die (Ctrl-C, killed) and the run goes on.
import { mkdirSync } from "node:fs";
import path from "node:path";
import { describeVerdicts, writeFileAtomic } from "artillery-plugin-cable-report";
import type { RunnerStop } from "cable-worker/contract";
import type { TaskSnapshot } from "../backend.js";
import type { Progress } from "../progress.js";
import { type ReportFlags, lookupRun, type RunLookup } from "../commands.js";
import { FanoutInputError } from "../errors.js";
import type { LivePageAddress } from "../live/page.js";
import { collectRun } from "../run/collect.js";
import { followLive } from "../run/follow-live.js";
import { RECORD_FILE, type RunRecord } from "../run/record.js";
import type { RunDeps, RunResult } from "../run/run-options.js";
import { openRegions, runLocator } from "../run/runner.js";

/**
 * How long past a task's own limit (--max-duration from the start, then its stop grace) attach waits
 * before it collects whatever exists: tasks enforce the limit themselves, so only a task its backend
 * cannot stop outlives this.
 */
const END_SLACK_MS = 60_000;

export interface AttachOptions extends ReportFlags {
  live?: LivePageAddress;
}

/** What to say when the person attached presses Ctrl-C: the run goes on, and how to stop it. */
export function detachedSignalLine(signal: string, record: Pick<RunRecord, "runId" | "backend" | "store" | "regions">): string {
  const where = runLocator(record);
  return `${signal}: leaving run ${record.runId}, which goes on without this runner; \`cable-fanout stop ${record.runId} ${where}\` stops it, \`cable-fanout attach ${record.runId} ${where}\` follows it again`;
}

export async function attachRun(lookup: RunLookup, options: AttachOptions, deps: RunDeps & { onRecord?: (record: RunRecord) => void }): Promise<RunResult> {
  const { runDir, record } = await lookupRun(lookup, deps.backend);
  const detached = record.detached;
  if (!detached) throw new FanoutInputError(`run ${record.runId} was not started with --detach: the runner that started it watches it (\`cable-fanout collect ${record.runId}\` writes its report once it has ended)`);
  if (record.startAt === null) throw new FanoutInputError(`run ${record.runId} never started: its record has no common start`);
  deps.onRecord?.(record);
  const regions = await openRegions(deps.backend, record.regions);
  mkdirSync(runDir, { recursive: true });
  const save = () => writeFileAtomic(path.join(runDir, RECORD_FILE), `${JSON.stringify(record, null, 2)}\n`);
  save();
  deps.log(`attached to run ${record.runId}: ${record.scenario} × ${record.count} task(s) in ${record.regions.join(", ")} (${record.backend}), started ${new Date(record.startAt).toISOString()}`);

  const progress = await deps.progress({ startAt: () => record.startAt ?? undefined, expectedMs: detached.phasesMs });
  const followed = {
    runId: record.runId,
    regions,
    record,
    scenario: {
      phaseCount: detached.phaseCount,
      durationMs: detached.phasesMs,
      // What the watching runner's page showed of the scenario, as the record kept it.
      ...(detached.page ? { file: detached.page.title, config: { phases: detached.page.phases, cable: detached.page.cable }, scenarios: detached.page.scenarios.map((name) => ({ name })) } : {}),
    },
    stopped: false,
    // Only --abort-on stops from the live side, and attach takes none: a detached run is stopped by `stop`.
    stop(reason: string, _why: RunnerStop) {
      progress.event(`${reason}: attach does not stop a detached run; \`cable-fanout stop ${record.runId}\` does`);
    },
    save,
  };
  const live = followLive(followed, { count: record.count, ...(options.live ? { live: options.live } : {}) }, deps, progress);
  let snapshots = new Map<string, TaskSnapshot[]>();
  try {
    snapshots = await untilEnded(record, regions, deps, live.progress, record.startAt + detached.maxDurationMs + deps.backend.timing.stopGraceMs + END_SLACK_MS);
  } finally {
    await live.stop();
    live.progress.stop();
  }

  deps.log(`collecting results into ${runDir}`);
  let collected: Awaited<ReturnType<typeof collectRun>> | undefined;
  try {
    collected = await collectRun({ runDir, record, regions, snapshots, regionFailures: new Map(), ...options, log: deps.log });
  } finally {
    await live.final(collected?.htmlFile);
  }
  for (const line of collected.merged ? describeVerdicts(collected.merged) : []) deps.log(line);
  return { ...collected, runId: record.runId, runDir };
}

/**
 * Every task the record lists, described every poll until all have stopped or `deadline` passes
 * (then a line says which still run, and what exists is collected). A failed describe is retried
 * at the next poll; the deadline bounds them all.
 */
async function untilEnded(record: RunRecord, regions: Awaited<ReturnType<typeof openRegions>>, deps: RunDeps, progress: Progress, deadline: number): Promise<Map<string, TaskSnapshot[]>> {
  const snapshots = new Map<string, TaskSnapshot[]>();
  const { pollMs } = deps.backend.timing;
  const failing = new Set<string>();
  for (;;) {
    await Promise.all(
      regions.map(async (region) => {
        const refs = record.started[region.name] ?? [];
        const seen = snapshots.get(region.name);
        // A region whose tasks have all stopped is not described again.
        if (refs.length === 0 || seen?.every((t) => t.phase === "stopped")) {
          snapshots.set(region.name, seen ?? []);
          return;
        }
        try {
          const tasks = await region.describeTasks(refs);
          snapshots.set(region.name, tasks);
          failing.delete(region.name);
          const stopped = tasks.filter((t) => t.phase === "stopped").length;
          progress.update(region.name, { pending: tasks.filter((t) => t.phase === "pending").length, running: tasks.filter((t) => t.phase === "running").length, stopped, failed: tasks.filter((t) => t.phase === "stopped" && t.exitCode !== undefined && t.exitCode !== null && t.exitCode !== 0).length });
        } catch (err) {
          if (!failing.has(region.name)) progress.event(`${region.name}: describing the tasks failed (${(err as Error).message}); trying again`);
          failing.add(region.name);
        }
      }),
    );
    const running = [...snapshots.values()].flat().filter((t) => t.phase !== "stopped");
    if (snapshots.size === regions.length && running.length === 0) return snapshots;
    if (deps.now() >= deadline) {
      progress.event(`${running.length} task(s) still running past the run's --max-duration and stop grace: ${running.map((t) => t.taskId).join(", ")}; collecting what exists`);
      return snapshots;
    }
    await deps.sleep(Math.min(pollMs, Math.max(0, deadline - deps.now())), deps.abort.signal);
    if (deps.abort.signal.aborted) return snapshots;
  }
}

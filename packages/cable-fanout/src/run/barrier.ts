// The ready barrier, runner side: count the tasks' ready markers, decide when the run may start, and
// write the go marker (a start time from the store's clock and the tasks that made it) into every
// region. Kept apart from the run loop so other loops (a capacity search) can drive it too.
import { READY_FILE, regionResultsPrefix, type GoMarker, taskKey, writeGo } from "cable-worker/contract";
import type { Region } from "../backend.js";
import type { Progress } from "../progress.js";
import type { BarrierRecord } from "./record.js";
import type { RegionControl } from "./region-watch.js";
import type { RunDeps } from "./run-options.js";
import type { RunTiming } from "./timing.js";

/** The task ids of a region whose ready marker exists. */
export async function readyTaskIds(region: Pick<Region, "store">, runId: string, regionName: string): Promise<string[]> {
  const prefix = regionResultsPrefix(runId, regionName);
  const suffix = `/${READY_FILE}`;
  return (await region.store.list(prefix))
    .filter((key) => key.endsWith(suffix))
    .map((key) => key.slice(prefix.length, -suffix.length))
    .filter((id) => id !== "" && !id.includes("/"));
}

/** Runs this large or smaller wait for every task by default: one missing task is a real share of the load. */
export const ALL_READY_MAX_TASKS = 50;

/**
 * The default --min-ready beyond ALL_READY_MAX_TASKS: a fleet of 1,500 tasks with a 0.1% chance per
 * task of a failed start (an image pull, a Spot placement) would start only 22% of the time at 100%;
 * at 98% one such failure no longer calls off the run, and 2% of the load is the most it can lose.
 */
export const LARGE_FLEET_MIN_READY_PCT = 98;

/** --min-ready when the user sets none, for `expected` tasks in all (count × regions). */
export function defaultMinReadyPct(expected: number): number {
  return expected <= ALL_READY_MAX_TASKS ? 100 : LARGE_FLEET_MIN_READY_PCT;
}

/** `--min-ready 90%` of `expected` tasks, rounded up: at least one task. */
export function tasksNeeded(expected: number, minReadyPct: number): number {
  return Math.max(1, Math.ceil((expected * minReadyPct) / 100 - 1e-9));
}

export interface BarrierState {
  /** Every task the run asked for (count × regions): tasks that never started count as not ready. */
  expected: number;
  needed: number;
  ready: number;
  /** Tasks that may still become ready: started, not stopped, not ready yet. */
  pending: number;
  /** RunTask has returned in every region (until then more tasks may appear). */
  allStarted: boolean;
  now: number;
  deadline: number;
}

export type BarrierDecision = { kind: "wait" } | { kind: "go" } | { kind: "fail"; reason: string };

/**
 * Go as soon as enough tasks are ready; fail when the deadline passes first, or as soon as too many
 * tasks have failed or never started for the minimum to be reachable.
 */
export function decideBarrier(s: BarrierState): BarrierDecision {
  if (s.ready >= s.needed) return { kind: "go" };
  if (s.allStarted && s.ready + s.pending < s.needed) {
    return { kind: "fail", reason: `only ${s.ready + s.pending} of ${s.expected} task(s) could still become ready, ${s.needed} needed (--min-ready)` };
  }
  if (s.now >= s.deadline) return { kind: "fail", reason: `only ${s.ready} of ${s.expected} task(s) were ready within --ready-timeout, ${s.needed} needed (--min-ready)` };
  return { kind: "wait" };
}

/** Writes the same go marker into every region's store; returns the regions where that failed. */
export async function announce(regions: Region[], runId: string, go: GoMarker): Promise<string[]> {
  const settled = await Promise.allSettled(regions.map((r) => writeGo(r.store, runId, go)));
  return settled.flatMap((s, i) => (s.status === "rejected" ? [`${regions[i].name}: writing the go marker failed: ${(s.reason as Error).message}`] : []));
}

/** The go marker for these ready task ids per region. */
export function goMarker(startAt: number, ready: Map<string, string[]>): GoMarker {
  return { startAt, tasks: [...ready].flatMap(([region, ids]) => ids.map((id) => taskKey(region, id))).sort() };
}

export interface BarrierInput {
  runId: string;
  regions: Region[];
  /** Filled in by each region's watch once its RunTask calls have returned. */
  controls: Map<string, RegionControl>;
  count: number;
  minReadyPct: number;
  timing: Pick<RunTiming, "readyTimeoutMs" | "startDelayMs" | "readyPollMs">;
  deps: Pick<RunDeps, "now" | "sleep" | "abort">;
  progress: Progress;
  abortReason: () => string;
  onGo: (startAt: number) => void;
}

/**
 * Waits for the tasks' ready markers, then writes the go marker with the common start (the store's
 * clock + the start delay) and stops the tasks that were not ready. On abort, or when too few tasks
 * can be ready in time, it writes a cancelling go marker instead, so waiting tasks exit at once.
 */
export async function runBarrier(input: BarrierInput): Promise<BarrierRecord> {
  const { regions, controls, timing, deps, runId } = input;
  const expected = input.count * regions.length;
  const needed = tasksNeeded(expected, input.minReadyPct);
  const began = deps.now();
  const deadline = began + timing.readyTimeoutMs;
  const ready = new Map<string, string[]>();
  const base = { minReadyPct: input.minReadyPct, readyTimeoutMs: timing.readyTimeoutMs, expected, missed: {} };
  const count = () => [...ready.values()].reduce((n, ids) => n + ids.length, 0);
  let lastReported = -1;
  const cancel = async (outcome: "failed" | "cancelled", reason: string): Promise<BarrierRecord> => {
    for (const line of await announce(regions, runId, { cancelled: reason })) input.progress.event(line);
    return { ...base, outcome, ready: count(), waitedMs: deps.now() - began, reason };
  };
  for (;;) {
    if (deps.abort.signal.aborted) return cancel("cancelled", input.abortReason());
    await Promise.all(
      regions.map(async (region) => {
        const started = new Set((controls.get(region.name)?.tasks() ?? []).map((t) => t.taskId));
        try {
          // Only tasks of this run's watch count (a stale marker of a reused local task id does not).
          ready.set(region.name, (await readyTaskIds(region, runId, region.name)).filter((id) => started.has(id)));
        } catch (err) {
          input.progress.event(`${region.name}: listing ready markers failed: ${(err as Error).message}`);
        }
      }),
    );
    const all = [...controls].flatMap(([name, c]) => c.tasks().map((t) => ({ region: name, task: t })));
    const pending = all.filter(({ region, task }) => task.phase !== "stopped" && !(ready.get(region) ?? []).includes(task.taskId)).length;
    const decision = decideBarrier({ expected, needed, ready: count(), pending, allStarted: controls.size === regions.length, now: deps.now(), deadline });
    if (count() !== lastReported) {
      lastReported = count();
      input.progress.event(`ready: ${lastReported} of ${expected} task(s) (${needed} needed)`);
    }
    if (decision.kind === "fail") return cancel("failed", decision.reason);
    if (decision.kind === "go") {
      let now: number;
      try {
        now = await regions[0].serverTime();
      } catch (err) {
        now = deps.now();
        input.progress.event(`reading the store's clock failed (${(err as Error).message}); using this machine's`);
      }
      const startAt = now + timing.startDelayMs;
      for (const line of await announce(regions, runId, goMarker(startAt, ready))) input.progress.event(line);
      input.onGo(startAt);
      input.progress.event(`go: ${count()} of ${expected} task(s) ready after ${Math.round((deps.now() - began) / 1000)} s; load starts at ${new Date(startAt).toISOString()}`);
      const missed: Record<string, string[]> = {};
      await Promise.all(
        [...controls].map(async ([name, control]) => {
          const late = control.tasks().filter((t) => !(ready.get(name) ?? []).includes(t.taskId));
          if (late.length === 0) return;
          missed[name] = late.map((t) => t.taskId);
          input.progress.event(`${name}: ${late.length} task(s) missed the ready barrier and run no load: ${missed[name].join(", ")}`);
          await control.stop(late.map((t) => t.ref), "missed the ready barrier", { by: "barrier-missed" });
        }),
      );
      const readyByRegion = Object.fromEntries(regions.map((r) => [r.name, ready.get(r.name)?.length ?? 0]));
      return { ...base, outcome: "go", ready: count(), waitedMs: deps.now() - began, missed, readyByRegion };
    }
    await deps.sleep(Math.min(timing.readyPollMs, Math.max(0, deadline - deps.now()) || timing.readyPollMs), deps.abort.signal);
  }
}

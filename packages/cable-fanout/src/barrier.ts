// The ready barrier, runner side: count the tasks' ready markers, decide when the run may start, and
// write the go marker (a start time from the store's clock and the tasks that made it) into every
// region. Kept apart from the run loop so other loops (a capacity search) can drive it too.
import { READY_FILE, regionResultsPrefix, type GoMarker, taskKey, writeGo } from "cable-worker/contract";
import type { Region } from "./backend.js";

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

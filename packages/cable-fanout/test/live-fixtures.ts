// Live files as tests write them (each task's periods, phases, ended marker), folded into the
// regions' live state as the feed folds what it reads.
import type { LiveEnded, LivePeriod, LivePhase } from "cable-worker/contract";
import { RegionLive, type LiveSnapshot } from "../src/live/region-live";

export interface TaskFiles {
  region: string;
  taskId: string;
  phases: LivePhase[];
  periods: LivePeriod[];
  ended?: LiveEnded;
}

/** Every region's state once the feed has read these tasks' files. */
export function liveOf(tasks: TaskFiles[]): LiveSnapshot {
  const live: LiveSnapshot = new Map();
  for (const t of tasks) {
    let region = live.get(t.region);
    if (!region) live.set(t.region, (region = new RegionLive(t.region)));
    const task = region.task(t.taskId);
    task.phases = t.phases;
    if (t.ended) task.ended = t.ended;
    for (const period of t.periods) region.addPeriod(t.taskId, period);
  }
  return live;
}

/** One region's state (the tasks' region, or an empty one named `eu`). */
export function regionOf(tasks: TaskFiles[]): RegionLive {
  return liveOf(tasks).get(tasks[0]?.region ?? "eu") ?? new RegionLive("eu");
}

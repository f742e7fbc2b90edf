// The live channel between the tasks and the search, read side: each task's probe plugin (in the
// worker: cable-infra's artillery-plugin-cable-capacity-probe) writes every metrics period (counters,
// raw DDSketch histograms, the generator's CPU) and its phases' start times into the run's store as
// they happen, and reads a stop marker from it. The same keys work on S3 and in a local directory.
import { DDSketch } from "@artilleryio/sketches-js";
import { regionResultsPrefix } from "cable-infra/worker/layout";
import { LIVE_DIR, LIVE_SUFFIX, type LiveEnded, type LivePeriod, type LivePhase } from "cable-infra/worker/live-keys";
import type { Store } from "cable-infra/worker/store";

// The keys and file shapes are the worker's (cable-infra/worker/live-keys): its probe plugin writes them.
export { stopKey, type LiveEnded, type LivePeriod, type LivePhase } from "cable-infra/worker/live-keys";

export interface TaskLive {
  region: string;
  taskId: string;
  periods: LivePeriod[];
  phases: LivePhase[];
  ended?: LiveEnded;
}

export function decodeHistograms(period: LivePeriod): Record<string, DDSketch> {
  const out: Record<string, DDSketch> = {};
  for (const [name, base64] of Object.entries(period.histograms)) {
    try {
      out[name] = DDSketch.fromProto(Buffer.from(base64, "base64"));
    } catch {
      // A damaged sketch leaves that metric out of the period rather than ending the search.
    }
  }
  return out;
}

/**
 * Reads every task's live files of a region. Period files are immutable once written, so those
 * already read are kept in `cache` and not fetched again.
 */
export async function readRegionLive(store: Store, runId: string, region: string, cache: Map<string, LivePeriod>): Promise<TaskLive[]> {
  const prefix = regionResultsPrefix(runId, region);
  const tasks = new Map<string, TaskLive>();
  const task = (taskId: string) => {
    let t = tasks.get(taskId);
    if (!t) tasks.set(taskId, (t = { region, taskId, periods: [], phases: [] }));
    return t;
  };
  for (const key of await store.list(prefix)) {
    const parts = key.slice(prefix.length).split("/");
    if (parts.length !== 3 || parts[1] !== LIVE_DIR) continue;
    const [taskId, , file] = parts;
    try {
      if (file.startsWith("period-")) {
        let period = cache.get(key);
        if (!period) {
          period = JSON.parse(await store.getText(key)) as LivePeriod;
          cache.set(key, period);
        }
        task(taskId).periods.push(period);
      } else if (file === `phases${LIVE_SUFFIX}`) {
        task(taskId).phases = JSON.parse(await store.getText(key)) as LivePhase[];
      } else if (file === `ended${LIVE_SUFFIX}`) {
        task(taskId).ended = JSON.parse(await store.getText(key)) as LiveEnded;
      }
    } catch {
      // Half-written or vanished: read again at the next poll.
    }
  }
  for (const t of tasks.values()) t.periods.sort((a, b) => a.period - b.period);
  return [...tasks.values()];
}

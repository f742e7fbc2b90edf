// The live channel between the tasks and the search: each task's probe plugin writes every metrics
// period (counters and raw DDSketch histograms) and its phases' start times into the run's store as
// they happen, and reads a stop marker from it. The same keys work on S3 and in a local directory.
import { DDSketch } from "@artilleryio/sketches-js";
import { regionResultsPrefix, resultPrefix, RUNS_PREFIX } from "cable-infra/worker/layout";
import type { Store } from "cable-infra/worker/store";

export const LIVE_DIR = "live";
/** JSON inside, but not named *.json: the report merger reads every *.json of a task folder as an Artillery report. */
export const LIVE_SUFFIX = ".live";

export interface LivePeriod {
  /** Start of Artillery's 10 s period, epoch ms. */
  period: number;
  counters: Record<string, number>;
  /** Metric name → base64 of `DDSketch.toProto()`. */
  histograms: Record<string, string>;
}

export interface LivePhase {
  index: number;
  name: string;
  startTime: number;
}

/** Written once the task saw the stop and every user it started had ended. */
export interface LiveEnded {
  at: number;
  created: number;
  completed: number;
  failed: number;
}

export interface TaskLive {
  region: string;
  taskId: string;
  periods: LivePeriod[];
  phases: LivePhase[];
  ended?: LiveEnded;
}

export const periodKey = (runId: string, region: string, taskId: string, period: number) => `${resultPrefix(runId, region, taskId)}${LIVE_DIR}/period-${period}${LIVE_SUFFIX}`;
export const phasesKey = (runId: string, region: string, taskId: string) => `${resultPrefix(runId, region, taskId)}${LIVE_DIR}/phases${LIVE_SUFFIX}`;
export const endedKey = (runId: string, region: string, taskId: string) => `${resultPrefix(runId, region, taskId)}${LIVE_DIR}/ended${LIVE_SUFFIX}`;
/** One marker per region, inside the region's own results prefix (the only place its tasks may read and write). */
export const stopKey = (runId: string, region: string) => `${regionResultsPrefix(runId, region)}capacity-stop${LIVE_SUFFIX}`;
export const runsPrefix = RUNS_PREFIX;

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

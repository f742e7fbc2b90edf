/**
 * The capacity search's live channel in the store (an S3 bucket or a local directory), shared by
 * the task side (the cable-capacity-probe plugin, shipped in the image beside the worker) and the
 * runner (cable-fanout's capacity search): each task writes every metrics period and its phases'
 * start times as they happen, and reads its region's stop marker.
 *
 *   runs/<runId>/<region>/<taskId>/live/period-<epoch ms>.live   one Artillery metrics period
 *   runs/<runId>/<region>/<taskId>/live/phases.live              the phases started so far
 *   runs/<runId>/<region>/<taskId>/live/ended.live               every user it started has ended
 *   runs/<runId>/<region>/capacity-stop.live                     the runner: end the users now
 *
 * Everything sits inside the region's results prefix, the only place its tasks may write; the stack
 * lets them list the stop marker's key (is it there?) and read nothing of it (capacityStopKeyPattern).
 */
import { RUNS_PREFIX, regionResultsPrefix, resultPrefix } from "./layout.js";

/** The plugin's name in `config.plugins`; Artillery loads it as `artillery-plugin-<name>` from the worker's directory. */
export const CAPACITY_PLUGIN = "cable-capacity-probe";
/** The BroadcastChannel processors/capacity.js listens on for "stop". */
export const CAPACITY_STOP_CHANNEL = "cable-capacity";

export const LIVE_DIR = "live";
/** JSON inside, but not named *.json: the report merger reads every *.json of a task folder as an Artillery report. */
export const LIVE_SUFFIX = ".live";
export const STOP_FILE = `capacity-stop${LIVE_SUFFIX}`;

export interface LivePeriod {
  /** Start of Artillery's 10 s period, epoch ms. */
  period: number;
  counters: Record<string, number>;
  /** Metric name → base64 of `DDSketch.toProto()`. */
  histograms: Record<string, string>;
  /**
   * The Artillery process's CPU over the period (every worker thread included) as a percent of the
   * cores its workers may use, as cable-report's sidecar counts it; absent for a period under 1 s.
   */
  cpuPercent?: number;
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

export const periodKey = (runId: string, region: string, taskId: string, period: number): string => `${resultPrefix(runId, region, taskId)}${LIVE_DIR}/period-${period}${LIVE_SUFFIX}`;
export const phasesKey = (runId: string, region: string, taskId: string): string => `${resultPrefix(runId, region, taskId)}${LIVE_DIR}/phases${LIVE_SUFFIX}`;
export const endedKey = (runId: string, region: string, taskId: string): string => `${resultPrefix(runId, region, taskId)}${LIVE_DIR}/ended${LIVE_SUFFIX}`;
/** One marker per region, inside the region's own results prefix. */
export const stopKey = (runId: string, region: string): string => `${regionResultsPrefix(runId, region)}${STOP_FILE}`;

/** The stop marker of every run of one region, in IAM's S3 wildcard syntax (the task role may list that key). */
export const capacityStopKeyPattern = (region: string): string => `${RUNS_PREFIX}/*/${region}/${STOP_FILE}`;

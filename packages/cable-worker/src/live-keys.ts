/**
 * The live channel in the store (an S3 bucket or a local directory), shared by the task side (the
 * cable-live and cable-capacity-probe plugins, shipped in the image beside the worker) and the
 * runner (cable-fanout's LiveFeed: `run`'s live lines and --abort-on, the capacity search): each
 * task writes every metrics period and its phases' start times as they happen (cable-live); in a
 * capacity search it also reads its region's stop marker and says when its users have all ended
 * (cable-capacity-probe).
 *
 *   runs/<runId>/<region>/<taskId>/live/period-<epoch ms>.live   one Artillery metrics period
 *   runs/<runId>/<region>/<taskId>/live/phases.live              the phases started so far
 *   runs/<runId>/<region>/<taskId>/live/ended.live               every user it started has ended
 *   runs/<runId>/<region>/capacity-stop.live                     the runner: end the users now
 *
 * Everything sits inside the region's results prefix, the only place its tasks may write; the stack
 * lets them list the stop marker's key (is it there?) and read nothing of it (capacityStopKeyPattern).
 */
// Types only from the report package: the plugins load this module in every Artillery worker thread.
import type { PeriodRecord, PhaseStart } from "artillery-plugin-cable-report";
import { z } from "zod";
import { RUNS_PREFIX, regionResultsPrefix, resultPrefix } from "./layout.js";

/** The live plugin's name in `config.plugins` (every task of the fan-out loads it). */
export const LIVE_PLUGIN = "cable-live";

/** The plugin's name in `config.plugins`; Artillery loads it as `artillery-plugin-<name>` from the worker's directory. */
export const CAPACITY_PLUGIN = "cable-capacity-probe";
/** The BroadcastChannel processors/capacity.js listens on for "stop". */
export const CAPACITY_STOP_CHANNEL = "cable-capacity";

export const LIVE_DIR = "live";
/** JSON inside, but not named *.json: the report merger reads every *.json of a task folder as an Artillery report. */
export const LIVE_SUFFIX = ".live";
export const STOP_FILE = `capacity-stop${LIVE_SUFFIX}`;

/** One Artillery metrics period: cable-report's period record, the type the sidecar and the report use too. */
export type LivePeriod = PeriodRecord;

export type LivePhase = PhaseStart;

/** Written once the task saw the stop and every user it started had ended. */
export const liveEndedSchema = z.object({
  at: z.number(),
  created: z.number(),
  completed: z.number(),
  failed: z.number(),
});
export type LiveEnded = z.infer<typeof liveEndedSchema>;

/** The live files' names in a task's live/ folder: `period-<epoch ms>.live`, phases.live, ended.live. */
export const PERIOD_FILE_PREFIX = "period-";
export const PHASES_FILE = `phases${LIVE_SUFFIX}`;
export const ENDED_FILE = `ended${LIVE_SUFFIX}`;

export const periodKey = (runId: string, region: string, taskId: string, period: number): string => `${resultPrefix(runId, region, taskId)}${LIVE_DIR}/${PERIOD_FILE_PREFIX}${period}${LIVE_SUFFIX}`;
export const phasesKey = (runId: string, region: string, taskId: string): string => `${resultPrefix(runId, region, taskId)}${LIVE_DIR}/${PHASES_FILE}`;
export const endedKey = (runId: string, region: string, taskId: string): string => `${resultPrefix(runId, region, taskId)}${LIVE_DIR}/${ENDED_FILE}`;
/** One marker per region, inside the region's own results prefix. */
export const stopKey = (runId: string, region: string): string => `${regionResultsPrefix(runId, region)}${STOP_FILE}`;

/** The stop marker of every run of one region, in IAM's S3 wildcard syntax (the task role may list that key). */
export const capacityStopKeyPattern = (region: string): string => `${RUNS_PREFIX}/*/${region}/${STOP_FILE}`;

/**
 * The live channel in the store (an S3 bucket or a local directory), shared by the task side (the
 * cable-live and cable-capacity-probe plugins, shipped in the image beside the worker) and the
 * runner (cable-fanout's LiveFeed: `run`'s live lines and --abort-on, the capacity search): each
 * task writes every metrics period and its phases' start times as they happen (cable-live); in a
 * capacity search it also reads its region's stop marker and says when its users have all ended
 * (cable-capacity-probe).
 *
 *   runs/<runId>/<region>/live/<period>/<taskId>.live   one task's Artillery metrics period (<period>: its start, epoch ms)
 *   runs/<runId>/<region>/live/phases/<taskId>.live     the phases the task started so far
 *   runs/<runId>/<region>/live/ended/<taskId>.live      every user the task started has ended
 *   runs/<runId>/<region>/capacity-stop.live            the runner: end the users now
 *
 * The files sit in region-level folders, not in each task's, because the runner reads them while
 * hundreds of tasks write: a period's files are one listing of `live/<period>/` (one page up to
 * 1,000 tasks), the region's periods one delimited listing of `live/`, and the phases and ended
 * markers one listing each, however long the run; a task-level layout made every poll page
 * through the region's whole prefix. The runner calls a period folder finished (never listed again)
 * once every task it expects has its file in it, or once the period is over by more than two
 * periods and a grace (FINISHED_AFTER_MS) when the folder was listed: Artillery sends a period a few
 * seconds after its end, and a task idle in it, or ended, sends none. `collect` copies a stopped task's files back into the
 * task's own folder (`<taskId>/live/period-<period>.live`, `phases.live`), where the report reads
 * them. `live` is therefore no task id (ECS task ids are hex, local ones `task-<n>`).
 *
 * Everything sits inside the region's results prefix, the only place its tasks may write (the
 * stack's resultKeyPattern); the stack lets them list the stop marker's key (is it there?) and read
 * nothing of it (capacityStopKeyPattern).
 */
// Types only from the report package: the plugins load this module in every Artillery worker thread.
import type { PeriodRecord, PhaseStart } from "artillery-plugin-cable-report";
import { z } from "zod";
import { RUNS_PREFIX, regionResultsPrefix } from "./layout.js";

/** The live plugin's name in `config.plugins` (every task of the fan-out loads it). */
export const LIVE_PLUGIN = "cable-live";

/** The plugin's name in `config.plugins`; Artillery loads it as `artillery-plugin-<name>` from the worker's directory. */
export const CAPACITY_PLUGIN = "cable-capacity-probe";
/** The BroadcastChannel processors/capacity.js listens on for "stop". */
export const CAPACITY_STOP_CHANNEL = "cable-capacity";

/** The region-level folder of the live files; also the folder of a task's own copies, after collect. */
export const LIVE_DIR = "live";
const PHASES_DIR = "phases";
const ENDED_DIR = "ended";
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

/** How long past a period's end its folder is still listed: two periods and a grace, then no task is still sending it. */
export const FINISHED_AFTER_MS = 30_000;

/** The names of a task's own copies in its folder (collect writes them, the report reads them): `period-<epoch ms>.live`, phases.live. */
export const PERIOD_FILE_PREFIX = "period-";
export const PHASES_FILE = `phases${LIVE_SUFFIX}`;

/** The region's live folder: `live/<period>/`, `live/phases/` and `live/ended/` below it. */
export const liveRegionPrefix = (runId: string, region: string): string => `${regionResultsPrefix(runId, region)}${LIVE_DIR}/`;
export const periodPrefix = (runId: string, region: string, period: number): string => `${liveRegionPrefix(runId, region)}${period}/`;
export const phasesPrefix = (runId: string, region: string): string => `${liveRegionPrefix(runId, region)}${PHASES_DIR}/`;
export const endedPrefix = (runId: string, region: string): string => `${liveRegionPrefix(runId, region)}${ENDED_DIR}/`;

const taskFile = (taskId: string) => `${taskId}${LIVE_SUFFIX}`;
export const periodKey = (runId: string, region: string, taskId: string, period: number): string => `${periodPrefix(runId, region, period)}${taskFile(taskId)}`;
export const phasesKey = (runId: string, region: string, taskId: string): string => `${phasesPrefix(runId, region)}${taskFile(taskId)}`;
export const endedKey = (runId: string, region: string, taskId: string): string => `${endedPrefix(runId, region)}${taskFile(taskId)}`;

/**
 * The period of a folder of the region's live folder (`<prefix><period>/`); undefined for phases/,
 * ended/ and any name a period is not spelt as (epoch ms, no leading zero, at most 13 digits): the
 * folders are written by tasks, and one the runner cannot finish would be listed at every poll.
 */
export function periodOfFolder(folder: string): number | undefined {
  const name = folder.split("/").at(-2) ?? "";
  return /^[1-9]\d{0,12}$/.test(name) ? Number(name) : undefined;
}

/** The task of a key in one of the region's live folders (`…/<taskId>.live`); undefined for anything else. */
export function taskOfLiveKey(key: string): string | undefined {
  const name = key.slice(key.lastIndexOf("/") + 1);
  return name.endsWith(LIVE_SUFFIX) && name.length > LIVE_SUFFIX.length ? name.slice(0, -LIVE_SUFFIX.length) : undefined;
}

/** One marker per region, inside the region's own results prefix. */
export const stopKey = (runId: string, region: string): string => `${regionResultsPrefix(runId, region)}${STOP_FILE}`;

/** The stop marker of every run of one region, in IAM's S3 wildcard syntax (the task role may list that key). */
export const capacityStopKeyPattern = (region: string): string => `${RUNS_PREFIX}/*/${region}/${STOP_FILE}`;

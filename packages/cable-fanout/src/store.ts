// Writing a run's bundle into a region's store and reading its results back, in the worker's layout.
import { mkdir, stat } from "node:fs/promises";
import path from "node:path";
import {
  LIVE_DIR,
  LIVE_SUFFIX,
  MANIFEST_FILE,
  MARKER_FILES,
  PERIOD_FILE_PREFIX,
  PHASES_FILE,
  REPORT_FILE,
  SEGMENT_PATTERN,
  STATUS_FILE,
  bundlePrefix,
  liveRegionPrefix,
  periodOfFolder,
  periodPrefix,
  phasesPrefix,
  regionResultsPrefix,
  resultPrefix,
  type Store,
  type TaskStatus,
  taskOfLiveKey,
  taskStatusSchema,
} from "cable-worker/contract";
import type { DownloadedResults } from "./backend.js";
import type { DownloadProgress } from "./download-progress.js";
import pLimit, { type Limit } from "p-limit";
import type { Bundle } from "./run/bundle.js";

/**
 * Store requests in flight per region, for the live feed and collect alike: one at a time, 500
 * tasks' round trips add up (25 s at 50 ms); all at once, they meet S3's per-prefix rates and the
 * machine's sockets.
 */
export const REGION_CONCURRENCY = 32;

export async function uploadBundle(store: Store, runId: string, bundle: Bundle): Promise<void> {
  const prefix = bundlePrefix(runId);
  for (const file of bundle.files) await store.putFile(prefix + file.key, file.source);
  // The manifest goes last: a task that sees it sees the whole bundle.
  await store.putText(prefix + MANIFEST_FILE, `${JSON.stringify(bundle.manifest, null, 2)}\n`);
}

/**
 * Copies `runs/<runId>/<region>/<taskId>/*` into `dir/<taskId>/`, except each status.json, which it
 * returns, and the live files of every task that left no report.json (the report merges a task
 * from its live periods only when it has no report): `live/<period>/<taskId>.live` into
 * `dir/<taskId>/live/period-<period>.live`, `live/phases/<taskId>.live` into
 * `dir/<taskId>/live/phases.live`, where cable-report's loadLiveTask reads them. The live files of
 * tasks with a report, most of a long run's objects, repeat its sidecar and are not downloaded.
 * Up to REGION_CONCURRENCY requests at once.
 */
export async function downloadRegionResults(store: Store, runId: string, region: string, dir: string, progress?: DownloadProgress): Promise<DownloadedResults> {
  const request = pLimit(REGION_CONCURRENCY);
  const prefix = regionResultsPrefix(runId, region);
  const taskIds = (await request(() => store.listFolders(prefix))).map((folder) => folder.slice(prefix.length, -1)).filter((id) => id !== LIVE_DIR && SEGMENT_PATTERN.test(id));
  const taskKeys = await Promise.all(taskIds.map((taskId) => request(() => store.list(resultPrefix(runId, region, taskId)))));

  const files: string[] = [];
  const statuses: TaskStatus[] = [];
  const download = async (key: string, rel: string) => {
    const target = path.join(dir, ...rel.split("/"));
    await mkdir(path.dirname(target), { recursive: true });
    await request(() => store.getToFile(key, target));
    files.push(rel);
    progress?.file((await stat(target)).size);
  };
  const copies = taskKeys.flat().map(async (key) => {
    const rel = key.slice(prefix.length);
    const parts = rel.split("/");
    if (parts.length < 2 || parts.some((p) => p === "" || p === "." || p === "..")) return;
    if (parts.length === 2 && parts[1] === STATUS_FILE) {
      const text = await request(() => store.getText(key));
      statuses.push(taskStatusSchema.parse(JSON.parse(text)));
      progress?.file(Buffer.byteLength(text));
      return;
    }
    // Ready markers coordinate the run; they are not results.
    if (parts.length === 2 && MARKER_FILES.includes(parts[1])) return;
    await download(key, rel);
  });
  const reported = new Set(taskIds.filter((_, i) => taskKeys[i].includes(`${resultPrefix(runId, region, taskIds[i])}${REPORT_FILE}`)));
  const unreportedTasks = taskIds.some((id) => !reported.has(id));
  // Settled, not all: on a failed download the others still write, and the merge must not read them half-written.
  const failed = (await Promise.allSettled([...copies, downloadUnreportedLive(store, runId, region, reported, unreportedTasks, request, download)])).find((r) => r.status === "rejected");
  if (failed) throw failed.reason;
  files.sort();
  return { files, statuses };
}

/**
 * The live files of the tasks not in `reported`; nothing is listed past the phases when every task
 * folder holds a report and no phases file names another task (a task whose phases upload failed
 * still has its folder: its ready marker).
 */
async function downloadUnreportedLive(store: Store, runId: string, region: string, reported: Set<string>, unreportedTasks: boolean, request: Limit, download: (key: string, rel: string) => Promise<void>): Promise<void> {
  const unreported = (key: string) => {
    const taskId = taskOfLiveKey(key);
    return taskId !== undefined && SEGMENT_PATTERN.test(taskId) && !reported.has(taskId) ? taskId : undefined;
  };
  const phases = (await request(() => store.list(phasesPrefix(runId, region)))).filter((key) => unreported(key) !== undefined);
  if (phases.length === 0 && !unreportedTasks) return;
  const periods = (await request(() => store.listFolders(liveRegionPrefix(runId, region)))).map(periodOfFolder).filter((p) => p !== undefined);
  const periodKeys = await Promise.all(periods.map(async (period) => ({ period, keys: await request(() => store.list(periodPrefix(runId, region, period))) })));
  const settled = await Promise.allSettled([
    ...phases.map((key) => download(key, `${unreported(key)}/${LIVE_DIR}/${PHASES_FILE}`)),
    ...periodKeys.flatMap(({ period, keys }) => keys.flatMap((key) => {
      const taskId = unreported(key);
      return taskId === undefined ? [] : [download(key, `${taskId}/${LIVE_DIR}/${PERIOD_FILE_PREFIX}${period}${LIVE_SUFFIX}`)];
    })),
  ]);
  const failed = settled.find((r) => r.status === "rejected");
  if (failed) throw failed.reason;
}

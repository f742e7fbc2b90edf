/**
 * Where a run's files live in the store (an S3 bucket or a local directory standing in for one).
 * The CDK stack derives its IAM resource patterns from the same functions, so the task role and
 * the worker cannot drift apart.
 *
 *   runs/<runId>/bundle/run.json                  the manifest (see manifest.ts)
 *   runs/<runId>/bundle/<scenario, processors, payload files…>
 *   runs/<runId>/<region>/<taskId>/report.json    artillery run -o
 *   runs/<runId>/<region>/<taskId>/report.json.sketches.json   the sidecar (artillery-plugin-cable-report)
 *   runs/<runId>/<region>/<taskId>/artillery.log  artillery's stdout and stderr, secrets redacted
 *   runs/<runId>/<region>/<taskId>/status.json    written last: the task's outcome
 *   runs/<runId>/<region>/<taskId>/ready.json     the task is up: bundle fetched, secrets read, Artillery found
 *   runs/<runId>/<region>/live/…                  the tasks' live periods and phases (live-keys.ts)
 *   runs/<runId>/control/go.json                  the runner's go marker: the common start (or a cancel)
 *   runs/<runId>/control/heartbeat.json           the runner is alive (rewritten every few seconds)
 *
 * Tasks write only under their region's folder and read only bundle/ and control/ (the task role
 * says so); the runner writes bundle/ and control/ and reads everything.
 */

export const RUNS_PREFIX = "runs";
/**
 * `cable-fanout --history stack`: one record per run, kept beside runs/ in the first region's bucket
 * (cable-report history/record.ts); the runner reads and writes it, no task does, and the bucket's
 * expiry rule (runs/ only) leaves it.
 */
export const HISTORY_PREFIX = "history";
export const BUNDLE_DIR = "bundle";
export const MANIFEST_FILE = "run.json";
export const REPORT_FILE = "report.json";
export const LOG_FILE = "artillery.log";
export const STATUS_FILE = "status.json";
export const READY_FILE = "ready.json";
export const CONTROL_DIR = "control";
export const GO_FILE = "go.json";
export const HEARTBEAT_FILE = "heartbeat.json";
/** Files in a task's folder that coordinate the run rather than report on it; not copied into results. */
export const MARKER_FILES: readonly string[] = [READY_FILE];
/** Names that cannot be regions: they are the run's own folders. */
export const RESERVED_SEGMENTS: readonly string[] = [BUNDLE_DIR, CONTROL_DIR];

/** Run ids, regions and task ids become single path segments, so they are kept to a safe alphabet. */
export const SEGMENT_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

export function bundlePrefix(runId: string): string {
  return `${RUNS_PREFIX}/${runId}/${BUNDLE_DIR}/`;
}

/** Every task's results of one region of a run: `<taskId>/<file>` below it. */
export function regionResultsPrefix(runId: string, region: string): string {
  return `${RUNS_PREFIX}/${runId}/${region}/`;
}

export function resultPrefix(runId: string, region: string, taskId: string): string {
  return `${regionResultsPrefix(runId, region)}${taskId}/`;
}

export function controlPrefix(runId: string): string {
  return `${RUNS_PREFIX}/${runId}/${CONTROL_DIR}/`;
}

export const goKey = (runId: string): string => `${controlPrefix(runId)}${GO_FILE}`;
export const heartbeatKey = (runId: string): string => `${controlPrefix(runId)}${HEARTBEAT_FILE}`;
export const readyKey = (runId: string, region: string, taskId: string): string => `${resultPrefix(runId, region, taskId)}${READY_FILE}`;

/** Key patterns (S3 wildcard syntax) for IAM: every run's bundle, and one region's results. */
export const bundleKeyPattern = (): string => `${RUNS_PREFIX}/*/${BUNDLE_DIR}/*`;
export const resultKeyPattern = (region: string): string => `${RUNS_PREFIX}/*/${region}/*`;
export const controlKeyPattern = (): string => `${RUNS_PREFIX}/*/${CONTROL_DIR}/*`;

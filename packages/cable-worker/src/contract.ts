/**
 * `cable-worker/contract`: everything the fan-out runner and the tasks exchange through the store,
 * in one import. The runner imports it from here; the tasks' own modules import the files it
 * gathers, so a change to a key or a shape shows both sides at once.
 *
 *   what                          written by                  read by
 *   bundle/run.json               runner (bundle.ts)          task (manifest.ts)
 *     its sequencePayloads        runner (payloads.ts)        task (payload-slice.ts)
 *   CABLE_SLICE (task's env)      runner (aws-backend.ts,     task (config.ts → payload-slice.ts)
 *                                 local-backend.ts)
 *   <task>/ready.json             task (run-task.ts)          runner (barrier.ts)
 *   control/go.json               runner (barrier.ts)         task (markers.ts waitForGo)
 *   control/heartbeat.json        runner (heartbeat.ts)       task (markers.ts watchHeartbeat)
 *   <region>/live/<period>/<task>.live   task (cable-live)    runner (live/feed.ts; collect copies a
 *   <region>/live/phases/<task>.live     task (cable-live)    stopped task's into <task>/live/ for
 *                                                             the report's loadLiveTask)
 *   <region>/live/ended/<task>.live      task (cable-capacity-probe)  runner (live/feed.ts)
 *   <region>/capacity-stop.live   runner (capacity)           task (cable-capacity-probe, by listing)
 *   <task>/status.json            task (run-task.ts)          runner (store.ts, collect.ts)
 *     its end (TaskEnd)           task (run-task.ts,          runner (run/task-end.ts), beside the
 *                                 task-stops.ts)              runner's own stops in fanout.json
 *
 * CABLE_SLICE is the one entry that is no file: each task's own slice travels in its environment
 * (RunTask's container overrides, the local backend's spawn), since every task reads the same bundle.
 * So does CABLE_SECRET_ENV (local-backend.ts → config.ts): the names of the variables that hold the
 * local backend's secrets, which the task redacts from everything it writes, as it does those it
 * reads from SSM. The runner's merge redacts the server's words again with the same rule (makeRedactor).
 *
 * The keys are in layout.ts and live-keys.ts (the CDK stack derives the task role's IAM patterns
 * from them); every JSON file has a zod schema here, and its type is inferred from it.
 */
// How a schema's complaint is worded, by the worker and by the CDK app's settings alike.
export { formatIssues } from "./config.js";
export * from "./layout.js";
export * from "./live-keys.js";
export * from "./markers.js";
export { REPORT_PLUGIN, type RunManifest, manifestSchema, parseManifest, taskOverrides } from "./manifest.js";
export { explainCsvError, formatSlice, PayloadCsvError, type PayloadFile, type PayloadShape, readPayloadRows, SLICE_ENV, type TaskSlice } from "./payload-slice.js";
export {
  describeStop,
  EXIT,
  type RunnerStop,
  runnerStopSchema,
  type SeenEnd,
  seenEndSchema,
  type TaskClock,
  taskClockSchema,
  type TaskEnd,
  taskEndSchema,
  type TaskStatus,
  taskStatusSchema,
  unreachable,
} from "./status.js";
export { makeRedactor, type Redact, SECRET_ENV } from "./redact.js";
export type { Store } from "./store.js";
// The live period and phase files hold cable-report's own records: the sidecar and the report read the same shapes.
export { periodRecordSchema as livePeriodSchema, phaseStartSchema as livePhaseSchema } from "artillery-plugin-cable-report";

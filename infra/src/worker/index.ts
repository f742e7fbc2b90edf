/**
 * `cable-infra/worker`: what the fan-out runner needs to write bundles and read results in the
 * worker's layout, and to run a task in-process or (via `cable-infra/worker/main`) as a child.
 */
export { type WorkerConfig, readWorkerConfig } from "./config.js";
export * from "./layout.js";
export { type RunManifest, manifestSchema, parseManifest } from "./manifest.js";
export { type TaskDeps, runTask } from "./run-task.js";
export { EXIT, type TaskStatus } from "./status.js";
export { LocalStore, S3Store, type Store, fetchTree, openStore } from "./store.js";
export * from "./markers.js";

// Reading and writing the run's objects. Mirrors the worker's Store (infra/src/worker/store.ts),
// which cable-infra does not export.
import { mkdir } from "node:fs/promises";
import path from "node:path";
import type { DownloadedResults, WorkerStatus } from "./backend.js";
import { type Bundle, MANIFEST_FILE } from "./bundle.js";
import { bundlePrefix } from "cable-infra/worker";

/** The last file a task writes (infra/src/worker/layout.ts STATUS_FILE). */
export const STATUS_FILE = "status.json";

export interface ObjectStore {
  readonly location: string;
  /** Full keys under `prefix` (which ends with `/`). */
  list(prefix: string): Promise<string[]>;
  getToFile(key: string, file: string): Promise<void>;
  getText(key: string): Promise<string>;
  putFile(key: string, file: string): Promise<void>;
  putText(key: string, text: string): Promise<void>;
}

export async function uploadBundle(store: ObjectStore, runId: string, bundle: Bundle): Promise<void> {
  const prefix = bundlePrefix(runId);
  for (const file of bundle.files) await store.putFile(prefix + file.key, file.source);
  // The manifest goes last: a task that sees it sees the whole bundle.
  await store.putText(prefix + MANIFEST_FILE, `${JSON.stringify(bundle.manifest, null, 2)}\n`);
}

export async function downloadRegionResults(store: ObjectStore, runId: string, region: string, dir: string): Promise<DownloadedResults> {
  // resultPrefix(runId, region, taskId) without the task: every task of the region.
  const prefix = `runs/${runId}/${region}/`;
  const files: string[] = [];
  const statuses: WorkerStatus[] = [];
  for (const key of await store.list(prefix)) {
    const rel = key.slice(prefix.length);
    const parts = rel.split("/");
    if (parts.length < 2 || parts.some((p) => p === "" || p === "." || p === "..")) continue;
    if (parts.length === 2 && parts[1] === STATUS_FILE) {
      statuses.push(JSON.parse(await store.getText(key)) as WorkerStatus);
      continue;
    }
    const target = path.join(dir, ...parts);
    await mkdir(path.dirname(target), { recursive: true });
    await store.getToFile(key, target);
    files.push(rel);
  }
  return { files, statuses };
}

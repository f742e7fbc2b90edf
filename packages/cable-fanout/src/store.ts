// Writing a run's bundle into a region's store and reading its results back, in the worker's layout.
import { mkdir } from "node:fs/promises";
import path from "node:path";
import { MANIFEST_FILE, MARKER_FILES, STATUS_FILE, bundlePrefix, regionResultsPrefix, type Store, type TaskStatus, taskStatusSchema } from "cable-worker/contract";
import type { DownloadedResults } from "./backend.js";
import type { Bundle } from "./bundle.js";

export async function uploadBundle(store: Store, runId: string, bundle: Bundle): Promise<void> {
  const prefix = bundlePrefix(runId);
  for (const file of bundle.files) await store.putFile(prefix + file.key, file.source);
  // The manifest goes last: a task that sees it sees the whole bundle.
  await store.putText(prefix + MANIFEST_FILE, `${JSON.stringify(bundle.manifest, null, 2)}\n`);
}

export async function downloadRegionResults(store: Store, runId: string, region: string, dir: string): Promise<DownloadedResults> {
  const prefix = regionResultsPrefix(runId, region);
  const files: string[] = [];
  const statuses: TaskStatus[] = [];
  for (const key of await store.list(prefix)) {
    const rel = key.slice(prefix.length);
    const parts = rel.split("/");
    if (parts.length < 2 || parts.some((p) => p === "" || p === "." || p === "..")) continue;
    if (parts.length === 2 && parts[1] === STATUS_FILE) {
      statuses.push(taskStatusSchema.parse(JSON.parse(await store.getText(key))));
      continue;
    }
    // Ready markers coordinate the run; they are not results.
    if (parts.length === 2 && MARKER_FILES.includes(parts[1])) continue;
    const target = path.join(dir, ...parts);
    await mkdir(path.dirname(target), { recursive: true });
    await store.getToFile(key, target);
    files.push(rel);
  }
  return { files, statuses };
}

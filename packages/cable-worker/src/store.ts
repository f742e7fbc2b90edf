import { mkdir } from "node:fs/promises";
import path from "node:path";

/**
 * The few operations the worker and the fan-out runner need from "S3", so that the runner's local
 * backend can run the same entrypoint against a directory and get the same results tree.
 * Keys are `/`-separated, relative to the store's root.
 */
export interface Store {
  /** Human-readable location, for logs and reasons. */
  readonly location: string;
  /** Keys under `prefix` (which ends with `/`, or is one whole key: then that key if it exists), as full keys. */
  list(prefix: string): Promise<string[]>;
  /**
   * The folders right below `prefix` (which ends with `/`), as full prefixes ending with `/`: S3's
   * common prefixes for the delimiter `/`. One request lists what a whole listing would page through.
   */
  listFolders(prefix: string): Promise<string[]>;
  getToFile(key: string, file: string): Promise<void>;
  /** A small UTF-8 object (run.json, status.json). */
  getText(key: string): Promise<string>;
  putFile(key: string, file: string): Promise<void>;
  putText(key: string, text: string): Promise<void>;
}

/** Downloads every object under `prefix` into `dir`, keeping relative paths; returns them. */
export async function fetchTree(store: Store, prefix: string, dir: string): Promise<string[]> {
  const keys = await store.list(prefix);
  const relative: string[] = [];
  for (const key of keys) {
    const rel = key.slice(prefix.length);
    if (rel === "" || rel.endsWith("/")) continue; // "folder" placeholder objects
    const target = path.join(dir, ...rel.split("/"));
    if (!target.startsWith(dir + path.sep)) throw new Error(`refusing to write ${key} outside ${dir}`);
    await mkdir(path.dirname(target), { recursive: true });
    await store.getToFile(key, target);
    relative.push(rel);
  }
  return relative;
}

import { mkdir } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { S3Client } from "@aws-sdk/client-s3";
import { LocalStore } from "./local-store.js";
import { S3Store } from "./s3-store.js";

export { LocalStore, S3Store };

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
  getToFile(key: string, file: string): Promise<void>;
  /** A small UTF-8 object (run.json, status.json). */
  getText(key: string): Promise<string>;
  putFile(key: string, file: string): Promise<void>;
  putText(key: string, text: string): Promise<void>;
}

export interface StoreDeps {
  s3Client: () => S3Client;
}

/** `s3://bucket[/prefix]` selects S3; `file://` URLs and plain paths select a local directory. */
export function openStore(url: string, deps: StoreDeps): Store {
  if (url.startsWith("s3://")) {
    const rest = url.slice("s3://".length);
    const slash = rest.indexOf("/");
    const bucket = slash === -1 ? rest : rest.slice(0, slash);
    const prefix = slash === -1 ? "" : rest.slice(slash + 1).replace(/^\/+|\/+$/g, "");
    if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket)) throw new Error(`CABLE_STORE: "${bucket}" is not a valid S3 bucket name`);
    return new S3Store(deps.s3Client(), bucket, prefix);
  }
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(url) && !url.startsWith("file://")) {
    throw new Error(`CABLE_STORE: unsupported scheme in "${url}" (use s3://bucket[/prefix], file:///dir or a directory path)`);
  }
  const dir = url.startsWith("file://") ? fileURLToPath(url) : path.resolve(url);
  return new LocalStore(dir);
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

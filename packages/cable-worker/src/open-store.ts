/**
 * Which store a URL names. Apart from the Store interface (store.ts): the two implementations
 * import the interface and this module imports them, so no import goes round in a circle.
 */
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { S3Client } from "@aws-sdk/client-s3";
import { LocalStore } from "./local-store.js";
import { S3Store } from "./s3-store.js";
import type { Store } from "./store.js";

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

/**
 * An Artillery plugin the worker adds to every run with a start time (ARTILLERY_PLUGINS and
 * ARTILLERY_PLUGIN_PATH), so that Artillery is fully loaded *before* the common start: the worker
 * spawns Artillery early, this plugin's constructor (main thread, after Artillery and every plugin
 * are loaded, before any virtual user) says "loaded" and then holds Artillery until the worker
 * writes the start time, and releases it at that moment. Loading Artillery takes seconds to tens of
 * seconds depending on the machine; without the gate that time would be start skew.
 *
 * Files in CABLE_GATE_DIR (written by gate.ts in the worker):
 *   loaded     this plugin: Artillery is loaded (the worker then writes its ready marker)
 *   go         the worker: the start time, epoch ms
 *   cancel     the worker: do not start (the run was called off, or the task is stopping)
 *   released   this plugin: when it let Artillery go, epoch ms
 *
 * The wait is synchronous (Artillery has no asynchronous hook between loading and the first
 * phase), in slices of 20 ms, bounded by CABLE_GATE_TIMEOUT_MS.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { isMainThread } from "node:worker_threads";

export const GATE_FILES = { loaded: "loaded", go: "go", cancel: "cancel", released: "released" } as const;
/** The exit code of an Artillery that was called off at the gate. */
export const GATE_CANCELLED_EXIT = 75;

const slice = new Int32Array(new SharedArrayBuffer(4));
const pause = (ms: number) => Atomics.wait(slice, 0, 0, Math.max(1, ms));

export class Plugin {
  constructor() {
    const dir = process.env.CABLE_GATE_DIR;
    // Worker threads load plugins too; only the main thread holds the start.
    if (!dir || !isMainThread) return;
    const timeoutMs = Number(process.env.CABLE_GATE_TIMEOUT_MS) || 15 * 60_000;
    const deadline = Date.now() + timeoutMs;
    writeFileSync(path.join(dir, GATE_FILES.loaded), String(Date.now()));
    let startAt: number | undefined;
    while (startAt === undefined) {
      if (existsSync(path.join(dir, GATE_FILES.cancel))) process.exit(GATE_CANCELLED_EXIT);
      if (existsSync(path.join(dir, GATE_FILES.go))) {
        const value = Number(readFileSync(path.join(dir, GATE_FILES.go), "utf8"));
        if (Number.isFinite(value)) startAt = value;
      }
      if (Date.now() > deadline) {
        process.stderr.write(`[cable-start-gate] no start time within ${Math.round(timeoutMs / 1000)} s; exiting\n`);
        process.exit(GATE_CANCELLED_EXIT);
      }
      if (startAt === undefined) pause(20);
    }
    for (let left = startAt - Date.now(); left > 0; left = startAt - Date.now()) {
      if (existsSync(path.join(dir, GATE_FILES.cancel))) process.exit(GATE_CANCELLED_EXIT);
      pause(Math.min(20, left));
    }
    writeFileSync(path.join(dir, GATE_FILES.released), String(Date.now()));
  }
}

/**
 * The markers a run coordinates through, in the store (see layout.ts): each task's ready marker,
 * the runner's go marker and its heartbeat. The runner (cable-fanout) writes go and heartbeat and
 * reads ready markers; the worker does the opposite. Both sides parse with these schemas.
 */
import { z } from "zod";
import { goKey, heartbeatKey, readyKey } from "./layout.js";
import type { Store } from "./store.js";

export const readyMarkerSchema = z.object({
  runId: z.string(),
  region: z.string(),
  taskId: z.string(),
  /** The task's clock (epoch ms) when it became ready. */
  readyAt: z.number(),
});
export type ReadyMarker = z.infer<typeof readyMarkerSchema>;

/** `<region>/<taskId>`: how the go marker names a task. */
export const taskKey = (region: string, taskId: string): string => `${region}/${taskId}`;

export const goMarkerSchema = z.union([
  z.object({
    /** The common start, epoch ms, from the store's clock (S3's Date header). */
    startAt: z.number().int().nonnegative(),
    /** The tasks that passed the barrier (taskKey); any other task must not start load. */
    tasks: z.array(z.string()),
  }),
  z.object({
    /** The run was called off before its start; waiting tasks exit without load. */
    cancelled: z.string(),
  }),
]);
export type GoMarker = z.infer<typeof goMarkerSchema>;

export const heartbeatSchema = z.object({
  /** Grows with every beat: a task judges staleness by its own clock, by when this last changed. */
  seq: z.number().int().nonnegative(),
  /** The runner's clock, for people reading the bucket. */
  at: z.number(),
});
export type Heartbeat = z.infer<typeof heartbeatSchema>;

/** A small JSON object, or undefined when it is not there (yet) or unreadable. */
export async function readMarker<T>(store: Store, key: string, schema: z.ZodType<T>): Promise<T | undefined> {
  let text: string;
  try {
    text = await store.getText(key);
  } catch {
    return undefined;
  }
  try {
    const parsed = schema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

export const writeReady = (store: Store, marker: ReadyMarker): Promise<void> => store.putText(readyKey(marker.runId, marker.region, marker.taskId), `${JSON.stringify(marker)}\n`);
export const writeGo = (store: Store, runId: string, go: GoMarker): Promise<void> => store.putText(goKey(runId), `${JSON.stringify(go)}\n`);
export const writeHeartbeat = (store: Store, runId: string, beat: Heartbeat): Promise<void> => store.putText(heartbeatKey(runId), `${JSON.stringify(beat)}\n`);
export const readGo = (store: Store, runId: string): Promise<GoMarker | undefined> => readMarker(store, goKey(runId), goMarkerSchema);
export const readHeartbeat = (store: Store, runId: string): Promise<Heartbeat | undefined> => readMarker(store, heartbeatKey(runId), heartbeatSchema);

export interface WaitDeps {
  now: () => number;
  /** Resolves after `ms` or when `signal` aborts. */
  sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
}

/** Polls for the go marker until it appears, `waitMs` passes, or `signal` aborts (then undefined). */
export async function waitForGo(store: Store, runId: string, opts: { waitMs: number; pollMs: number; signal?: AbortSignal }, deps: WaitDeps): Promise<GoMarker | undefined> {
  const deadline = deps.now() + opts.waitMs;
  for (;;) {
    const go = await readGo(store, runId);
    if (go) return go;
    if (opts.signal?.aborted || deps.now() >= deadline) return undefined;
    await deps.sleep(Math.min(opts.pollMs, Math.max(0, deadline - deps.now())), opts.signal);
  }
}

/**
 * Watches the runner's heartbeat: `onStale` fires once when the heartbeat has not changed for
 * `staleMs` by this task's own clock (so the runner's clock does not matter), counting from the
 * watch's start when there is none yet. A runner that died, lost its network or was killed leaves
 * its tasks to stop themselves.
 */
export function watchHeartbeat(
  store: Store,
  runId: string,
  opts: { staleMs: number; pollMs: number; onStale: (silentMs: number) => void },
  deps: WaitDeps,
): { stop: () => void } {
  const stopped = new AbortController();
  let lastSeq: number | undefined;
  let lastChange = deps.now();
  void (async () => {
    while (!stopped.signal.aborted) {
      const beat = await readHeartbeat(store, runId);
      if (beat && beat.seq !== lastSeq) {
        lastSeq = beat.seq;
        lastChange = deps.now();
      }
      const silent = deps.now() - lastChange;
      if (silent >= opts.staleMs) {
        if (!stopped.signal.aborted) opts.onStale(silent);
        return;
      }
      await deps.sleep(Math.min(opts.pollMs, opts.staleMs - silent), stopped.signal);
    }
  })();
  return { stop: () => stopped.abort() };
}

// The runner's heartbeat: a counter rewritten into every region's store, so that tasks notice when
// the runner is gone (killed, laptop closed, CI job cancelled) and stop themselves.
import { writeHeartbeat } from "cable-worker/contract";
import type { Region } from "../backend.js";

export interface HeartbeatDeps {
  now: () => number;
  log: (line: string) => void;
}

/** Writes one beat at once (awaited), then every `intervalMs` until stopped. Write errors are logged once per streak. */
export async function startHeartbeat(regions: Region[], runId: string, intervalMs: number, deps: HeartbeatDeps): Promise<{ stop: () => void }> {
  let seq = 0;
  const failing = new Set<string>();
  const beat = () =>
    Promise.all(
      regions.map(async (region) => {
        try {
          await writeHeartbeat(region.store, runId, { seq, at: deps.now() });
          if (failing.delete(region.name)) deps.log(`${region.name}: heartbeat written again`);
        } catch (err) {
          if (!failing.has(region.name)) deps.log(`${region.name}: writing the heartbeat failed (${(err as Error).message}); tasks stop themselves if it stays stale`);
          failing.add(region.name);
        }
      }),
    ).then(() => void seq++);
  await beat();
  let running: Promise<void> | undefined;
  const timer = setInterval(() => {
    running ??= beat().finally(() => (running = undefined));
  }, intervalMs);
  return { stop: () => clearInterval(timer) };
}

import type { ChildProcess } from "node:child_process";
import { terminate } from "./artillery.js";
import type { StartGate } from "./gate.js";
import { type WaitDeps, watchHeartbeat } from "./markers.js";
import type { RunManifest } from "./manifest.js";
import { describeStop, type SelfStop } from "./status.js";
import type { Store } from "./store.js";

/**
 * Why a task ends before its Artillery does: ECS's StopTask (a signal the entrypoint caught), or one
 * of the task's own reasons (the runner's heartbeat went stale, the run's --max-duration passed).
 * Either reaches Artillery wherever it is: running (SIGTERM, then SIGKILL after the grace), or held
 * at the start gate, where it runs no signal handler and is cancelled through the gate instead.
 */
export class TaskStops {
  private readonly self = new AbortController();
  private selfStop: SelfStop | undefined;
  private artillery: ChildProcess | undefined;
  private gate: StartGate | undefined;
  private readonly disposers: Array<() => void> = [];

  constructor(
    private readonly deps: WaitDeps & {
      log: (line: string) => void;
      /** The signal the worker was asked to stop with, if any. */
      stopSignal?: () => NodeJS.Signals | undefined;
    },
    private readonly graceMs: number,
  ) {
    // A stop signal must also reach an Artillery held at the start gate.
    const signalWatch = setInterval(() => {
      if (deps.stopSignal?.()) this.gate?.cancel();
    }, 200);
    signalWatch.unref();
    this.disposers.push(() => clearInterval(signalWatch));
  }

  /** Aborts when the task stops itself: its waits end early. */
  get signal(): AbortSignal {
    return this.self.signal;
  }

  /** Why the task is stopping (a stop from outside first); undefined while it is not. */
  end(): SelfStop | undefined {
    const signal = this.deps.stopSignal?.();
    return signal ? { by: "stop-signal", signal } : this.selfStop;
  }

  /** Sleeps `ms`, or less when the task stops itself. */
  readonly sleep = (ms: number): Promise<void> => this.deps.sleep(ms, this.self.signal);

  /** The task's own stop: the first reason counts. */
  stopSelf(stop: SelfStop): void {
    if (this.selfStop) return;
    this.selfStop = stop;
    this.deps.log(`stopping: ${describeStop(stop)}`);
    this.self.abort();
    this.gate?.cancel();
    if (this.artillery) terminate(this.artillery, this.graceMs, this.deps.log);
  }

  /** Artillery was spawned: a stop that came first reaches it now. */
  artillerySpawned(child: ChildProcess): void {
    this.artillery = child;
    if (this.selfStop) terminate(child, this.graceMs, this.deps.log);
  }

  heldAt(gate: StartGate): void {
    this.gate = gate;
  }

  /** The run's own limits, once its manifest is read: --max-duration, and the runner's heartbeat. */
  watchRun(manifest: RunManifest, store: Store, runId: string): void {
    if (manifest.maxDurationMs !== undefined) {
      const limit = manifest.maxDurationMs;
      const timer = setTimeout(() => this.stopSelf({ by: "max-duration", limitMs: limit }), limit);
      timer.unref();
      this.disposers.push(() => clearTimeout(timer));
    }
    if (manifest.heartbeat) {
      const { staleMs, pollMs } = manifest.heartbeat;
      const onStale = (silentMs: number) => this.stopSelf({ by: "heartbeat", silentMs });
      const heartbeat = watchHeartbeat(store, runId, { staleMs, pollMs, onStale }, { now: this.deps.now, sleep: this.deps.sleep });
      this.disposers.push(() => heartbeat.stop());
    }
  }

  /** Stops every watch; the reasons already given stay. */
  dispose(): void {
    for (const dispose of this.disposers.splice(0)) dispose();
  }
}

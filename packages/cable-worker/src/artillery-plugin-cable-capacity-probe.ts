/**
 * The capacity search's Artillery plugin. `cable-fanout capacity` names it in every task's
 * `config.plugins["cable-capacity-probe"]`; it ships beside the worker (in the image under
 * /app/worker, locally in cable-worker's dist), and the worker puts its own directory on
 * ARTILLERY_PLUGIN_PATH, so Artillery finds it as `artillery-plugin-cable-capacity-probe` on a
 * Fargate task and on this machine alike: the runner never sends a path.
 *
 * In Artillery's main thread (the periods and phases themselves reach the search through the
 * cable-live plugin, which every task loads):
 *  - watches the region's stop marker (by listing its key), and at the stop (or at the end of the planned stair) tells
 *    the worker threads over a BroadcastChannel, where processors/capacity.js ends every user's
 *    `whileTrue: capacityRunning` loop: each user finishes its flow once, nobody keeps the run alive;
 *  - writes ended.live once every user it started has ended, so that the search can end the run.
 *
 * It needs CABLE_RUN_ID, CABLE_REGION, CABLE_TASK_ID and CABLE_STORE, which the worker gives
 * Artillery (run-task.ts); elsewhere it records nothing.
 */
import type { EventEmitter } from "node:events";
import { BroadcastChannel, isMainThread } from "node:worker_threads";
import { CAPACITY_PLUGIN, CAPACITY_STOP_CHANNEL, type LiveEnded, type LivePhase, endedKey, stopKey } from "./live-keys.js";
import { artilleryLog, LiveWriter, openTaskStore } from "./live-writer.js";
import { redactorFromEnv } from "./redact.js";

interface PhaseSpec {
  pause?: number;
}

interface PluginConfig {
  /** Seconds from the first phase's start after which the stair is over and the users are told to end. */
  endAfterS?: number;
}

interface PeriodStats {
  counters?: Record<string, number>;
}

/** How often the stop marker is looked for (on S3 each look is a LIST request: 3,600 an hour per task). */
const POLL_MS = 1_000;
/** How long a hold must still last for the search to end the run before the next climb. */
const QUIET_MARGIN_MS = 10_000;

export class Plugin {
  private writer: LiveWriter | undefined;
  private readonly phases: LivePhase[] = [];
  private stopped = false;
  private endedWritten = false;
  private readonly totals = { created: 0, completed: 0, failed: 0 };
  private timer: NodeJS.Timeout | undefined;
  private channel: BroadcastChannel | undefined;
  private lookWarned = false;
  private polling = false;

  private current: LivePhase | undefined;
  private lastPhaseDone = false;
  private phaseSpecs: PhaseSpec[] = [];

  constructor(script: { config?: { plugins?: Record<string, PluginConfig>; phases?: PhaseSpec[] } }, events: EventEmitter) {
    // Worker threads load plugins too; the merged periods and the phases are the main thread's.
    if (!isMainThread) return;
    const { CABLE_RUN_ID: runId, CABLE_REGION: region, CABLE_TASK_ID: taskId, CABLE_STORE: storeUrl } = process.env;
    if (!runId || !region || !taskId || !storeUrl) {
      artilleryLog(`${CAPACITY_PLUGIN}: not inside a cable-fanout task (CABLE_RUN_ID, CABLE_REGION, CABLE_TASK_ID, CABLE_STORE); nothing is recorded`, "warn");
      return;
    }
    const store = openTaskStore(storeUrl);
    this.writer = new LiveWriter(store, CAPACITY_PLUGIN, redactorFromEnv(process.env));
    const endAfterMs = (script.config?.plugins?.[CAPACITY_PLUGIN]?.endAfterS ?? Infinity) * 1000;
    this.phaseSpecs = script.config?.phases ?? [];
    this.channel = new BroadcastChannel(CAPACITY_STOP_CHANNEL);
    this.channel.unref();

    events.on("phaseStarted", (phase: { index: number; name?: string; startTime?: number }) => {
      this.current = { index: phase.index, name: phase.name ?? "", startTime: phase.startTime ?? Date.now() };
      this.phases.push(this.current);
    });
    events.on("phaseCompleted", (phase: { index: number }) => {
      if (phase.index === this.phaseSpecs.length - 1) this.lastPhaseDone = true;
    });

    events.on("stats", (stats: PeriodStats) => {
      const counters = stats.counters ?? {};
      this.totals.created += counters["vusers.created"] ?? 0;
      this.totals.completed += counters["vusers.completed"] ?? 0;
      this.totals.failed += counters["vusers.failed"] ?? 0;
      this.maybeEnded(runId, region, taskId);
    });

    // Artillery also emits `done` when it is stopped by a signal, with its users cut off: the counts
    // written then say so (completed + failed short of created).
    events.on("done", () => {
      this.stop();
      this.maybeEnded(runId, region, taskId, true);
      if (this.timer) clearInterval(this.timer);
    });

    const marker = stopKey(runId, region);
    this.timer = setInterval(() => {
      const first = this.phases.find((p) => p.index === 0);
      if (first && Date.now() - first.startTime > endAfterMs) this.stop();
      if (this.stopped) {
        // Said again each second: a worker thread busy with a climb still hears it.
        this.channel?.postMessage("stop");
        this.maybeEnded(runId, region, taskId);
        return;
      }
      // One look at a time: a slow store must not pile up requests.
      if (this.polling) return;
      this.polling = true;
      // Listed, not read: "not written yet" is an empty list, never an error, so an error is a real
      // one (denied: a stack deployed before the task role allowed the look; or the store unreachable).
      store
        .list(marker)
        .then(
          (keys) => {
            if (keys.includes(marker)) this.stop();
          },
          (err: Error) => {
            if (this.lookWarned) return;
            this.lookWarned = true;
            artilleryLog(`${CAPACITY_PLUGIN}: cannot look for the stop marker ${store.location}/${marker} (${err.name}: ${err.message}); while it cannot, the search ends the run by stopping this task (an older stack: cdk deploy again)`, "warn");
          },
        )
        .finally(() => (this.polling = false));
    }, POLL_MS);
    this.timer.unref();
  }

  private stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.channel?.postMessage("stop");
  }

  private maybeEnded(runId: string, region: string, taskId: string, done = false): void {
    if (!this.stopped || this.endedWritten) return;
    const { created, completed, failed } = this.totals;
    if (!done && (created === 0 || completed + failed < created || !this.noMoreArrivals())) return;
    this.endedWritten = true;
    const ended: LiveEnded = { at: Date.now(), created, completed, failed };
    this.writer?.put(endedKey(runId, region, taskId), ended);
  }

  /**
   * Users keep arriving after the stop while the stair's phases run (a climb's arrivals end at
   * their first turn). "Every user ended" is only true when none can arrive before the run is
   * ended: after the last phase, or in a hold with time to spare for the search to end the run.
   */
  private noMoreArrivals(): boolean {
    if (this.lastPhaseDone) return true;
    const spec = this.current && this.phaseSpecs[this.current.index];
    if (!this.current || !spec || spec.pause === undefined) return false;
    return this.current.startTime + spec.pause * 1000 - Date.now() > QUIET_MARGIN_MS;
  }
}

export const LEGACY_METRICS_FORMAT = false;

// The capacity search's Artillery plugin, added by `cable-fanout capacity` to every task of a
// search (config.plugins["cable-capacity-probe"], loaded by path through Artillery's plugin
// `scope`). In Artillery's main thread, where the worker threads' metrics arrive merged per period:
//  - writes each period (counters, raw DDSketch histograms) and the phases' start times into the
//    run's store as they happen, so that the search judges a hold while the run goes on;
//  - watches the region's stop marker, and at the stop (or at the end of the planned stair) tells
//    the worker threads over a BroadcastChannel, where processors/capacity.js ends every user's
//    `whileTrue: capacityRunning` loop: each user finishes its flow once, nobody keeps the run alive;
//  - writes ended.live once every user it started has ended, so that the search can end the run.
import type { EventEmitter } from "node:events";
import { BroadcastChannel, isMainThread } from "node:worker_threads";
import type { DDSketch } from "@artilleryio/sketches-js";
import { openStore, type Store } from "cable-infra/worker/store";
import { endedKey, periodKey, phasesKey, stopKey, type LiveEnded, type LivePeriod, type LivePhase } from "./live.js";

/** The BroadcastChannel name processors/capacity.js listens on. */
export const STOP_CHANNEL = "cable-capacity";
export const PLUGIN_NAME = "cable-capacity-probe";

interface PhaseSpec {
  pause?: number;
}

interface PluginConfig {
  /** Seconds from the first phase's start after which the stair is over and the users are told to end. */
  endAfterS?: number;
}

interface PeriodStats {
  period: number | string;
  counters?: Record<string, number>;
  histograms?: Record<string, DDSketch>;
}

interface ArtilleryGlobal {
  log(message: string, level?: string): void;
  ext(extension: { ext: "beforeExit" | "onShutdown"; method: (event: unknown) => Promise<void> }): void;
}

const POLL_MS = 1_000;
/** How long a hold must still last for the search to end the run before the next climb. */
const QUIET_MARGIN_MS = 10_000;

export class Plugin {
  private store: Store | undefined;
  private readonly phases: LivePhase[] = [];
  private stopped = false;
  private endedWritten = false;
  private readonly totals = { created: 0, completed: 0, failed: 0 };
  private timer: NodeJS.Timeout | undefined;
  private channel: BroadcastChannel | undefined;
  private warned = false;
  /** Writes not yet settled: Artillery exits right after `done`, so its beforeExit hook waits for them. */
  private readonly pending = new Set<Promise<void>>();

  private current: LivePhase | undefined;
  private lastPhaseDone = false;
  private phaseSpecs: PhaseSpec[] = [];

  constructor(script: { config?: { plugins?: Record<string, PluginConfig>; phases?: PhaseSpec[] } }, events: EventEmitter) {
    if (!isMainThread) return;
    const { CABLE_RUN_ID: runId, CABLE_REGION: region, CABLE_TASK_ID: taskId, CABLE_STORE: storeUrl } = process.env;
    if (!runId || !region || !taskId || !storeUrl) {
      this.log("cable-capacity-probe: not inside a cable-fanout task (CABLE_RUN_ID, CABLE_REGION, CABLE_TASK_ID, CABLE_STORE); nothing is recorded", "warn");
      return;
    }
    const store = openStore(storeUrl, { s3Client: () => new (require("@aws-sdk/client-s3") as typeof import("@aws-sdk/client-s3")).S3Client({}) });
    this.store = store;
    const endAfterMs = (script.config?.plugins?.[PLUGIN_NAME]?.endAfterS ?? Infinity) * 1000;
    this.phaseSpecs = script.config?.phases ?? [];
    this.channel = new BroadcastChannel(STOP_CHANNEL);
    this.channel.unref();

    events.on("phaseStarted", (phase: { index: number; name?: string; startTime?: number }) => {
      this.current = { index: phase.index, name: phase.name ?? "", startTime: phase.startTime ?? Date.now() };
      this.phases.push(this.current);
      this.put(phasesKey(runId, region, taskId), this.phases);
    });
    events.on("phaseCompleted", (phase: { index: number }) => {
      if (phase.index === this.phaseSpecs.length - 1) this.lastPhaseDone = true;
    });

    events.on("stats", (stats: PeriodStats) => {
      const counters = { ...stats.counters };
      const period: LivePeriod = {
        period: Number(stats.period),
        counters,
        histograms: Object.fromEntries(Object.entries(stats.histograms ?? {}).map(([name, sketch]) => [name, Buffer.from(sketch.toProto()).toString("base64")])),
      };
      this.totals.created += counters["vusers.created"] ?? 0;
      this.totals.completed += counters["vusers.completed"] ?? 0;
      this.totals.failed += counters["vusers.failed"] ?? 0;
      this.put(periodKey(runId, region, taskId, period.period), period);
      this.maybeEnded(runId, region, taskId);
    });

    // Artillery also emits `done` when it is stopped by a signal, with its users cut off: the counts
    // written then say so (completed + failed short of created).
    events.on("done", () => {
      this.stop();
      this.maybeEnded(runId, region, taskId, true);
      if (this.timer) clearInterval(this.timer);
    });

    this.timer = setInterval(() => {
      const first = this.phases.find((p) => p.index === 0);
      if (first && Date.now() - first.startTime > endAfterMs) this.stop();
      if (this.stopped) {
        // Said again each second: a worker thread busy with a climb still hears it.
        this.channel?.postMessage("stop");
        this.maybeEnded(runId, region, taskId);
        return;
      }
      store.getText(stopKey(runId, region)).then(
        () => this.stop(),
        () => undefined,
      );
    }, POLL_MS);
    this.timer.unref();
    this.artillery()?.ext({ ext: "beforeExit", method: () => Promise.all(this.pending).then(() => undefined) });
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
    this.put(endedKey(runId, region, taskId), ended);
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

  private put(key: string, value: unknown): void {
    if (!this.store) return;
    const write = this.store.putText(key, JSON.stringify(value)).catch((err: Error) => {
      if (this.warned) return;
      this.warned = true;
      this.log(`cable-capacity-probe: could not write ${key}: ${err.message}`, "error");
    });
    this.pending.add(write);
    void write.finally(() => this.pending.delete(write));
  }

  private artillery(): ArtilleryGlobal | undefined {
    return (global as unknown as { artillery?: ArtilleryGlobal }).artillery;
  }

  private log(message: string, level: string): void {
    this.artillery()?.log(message, level);
  }
}

export const LEGACY_METRICS_FORMAT = false;

/**
 * The task's live channel: every task the fan-out starts (`run` and `capacity`, on Fargate and
 * `--local` alike) loads it by name (taskOverrides switches it on beside cable-report; it ships
 * beside the worker, whose directory is on ARTILLERY_PLUGIN_PATH). In Artillery's main thread,
 * where the worker threads' metrics arrive merged per period, it writes into the run's store, as
 * they happen:
 *  - each period, as cable-report's period record (counters, rates, raw DDSketch histograms, the
 *    generator's CPU): the same type the sidecar keeps and the report merges;
 *  - the phases' start times.
 * The runner reads them for its live lines, --abort-on and the capacity search's verdicts
 * (cable-fanout's LiveFeed); the report reads them for a task stopped before Artillery wrote its
 * report (cable-report's loadLiveTask).
 *
 * It needs CABLE_RUN_ID, CABLE_REGION, CABLE_TASK_ID and CABLE_STORE, which the worker gives
 * Artillery (run-task.ts); elsewhere it records nothing.
 */
import type { EventEmitter } from "node:events";
import { isMainThread } from "node:worker_threads";
import type { ArtilleryPeriodStats, PhaseStart } from "artillery-plugin-cable-report";
import { LIVE_PLUGIN, periodKey, phasesKey } from "./live-keys.js";
import type { Store } from "./store.js";

interface ArtilleryGlobal {
  log(message: string, level?: string): void;
  ext(extension: { ext: "beforeExit" | "onShutdown"; method: (event: unknown) => Promise<void> }): void;
}

export class Plugin {
  private store: Store | undefined;
  private readonly phases: PhaseStart[] = [];
  private warned = false;
  /** Writes not yet settled: Artillery exits right after `done`, so its beforeExit hook waits for them. */
  private readonly pending = new Set<Promise<void>>();

  constructor(_script: unknown, events: EventEmitter) {
    // Worker threads load plugins too; the merged periods and the phases are the main thread's.
    if (!isMainThread) return;
    const { CABLE_RUN_ID: runId, CABLE_REGION: region, CABLE_TASK_ID: taskId, CABLE_STORE: storeUrl } = process.env;
    if (!runId || !region || !taskId || !storeUrl) {
      this.log(`${LIVE_PLUGIN}: not inside a cable-fanout task (CABLE_RUN_ID, CABLE_REGION, CABLE_TASK_ID, CABLE_STORE); nothing is recorded`, "warn");
      return;
    }
    // Loaded here, in the main thread only: the store pulls in the S3 SDK, which no worker thread needs.
    /* eslint-disable @typescript-eslint/no-require-imports */
    const { openStore } = require("./store.js") as typeof import("./store.js");
    const { CpuMeter, recordPeriod } = require("artillery-plugin-cable-report") as typeof import("artillery-plugin-cable-report");
    this.store = openStore(storeUrl, { s3Client: () => new (require("@aws-sdk/client-s3") as typeof import("@aws-sdk/client-s3")).S3Client({}) });
    /* eslint-enable @typescript-eslint/no-require-imports */
    const cpu = new CpuMeter();

    events.on("phaseStarted", (phase: { index: number; name?: string; startTime?: number }) => {
      cpu.begin();
      this.phases.push({ index: phase.index, name: phase.name ?? "", startTime: phase.startTime ?? Date.now() });
      this.put(phasesKey(runId, region, taskId), this.phases);
    });
    events.on("stats", (stats: ArtilleryPeriodStats) => {
      const period = recordPeriod(stats, cpu.mark());
      this.put(periodKey(runId, region, taskId, period.period), period);
    });
    this.artillery()?.ext({ ext: "beforeExit", method: () => Promise.all(this.pending).then(() => undefined) });
  }

  private put(key: string, value: unknown): void {
    if (!this.store) return;
    const write = this.store.putText(key, JSON.stringify(value)).catch((err: Error) => {
      if (this.warned) return;
      this.warned = true;
      this.log(`${LIVE_PLUGIN}: could not write ${key}: ${err.message}`, "error");
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

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
import { artilleryLog, LiveWriter, openTaskStore } from "./live-writer.js";
import { redactorFromEnv } from "./redact.js";

export class Plugin {
  private readonly phases: PhaseStart[] = [];

  constructor(_script: unknown, events: EventEmitter) {
    // Worker threads load plugins too; the merged periods and the phases are the main thread's.
    if (!isMainThread) return;
    const { CABLE_RUN_ID: runId, CABLE_REGION: region, CABLE_TASK_ID: taskId, CABLE_STORE: storeUrl } = process.env;
    if (!runId || !region || !taskId || !storeUrl) {
      artilleryLog(`${LIVE_PLUGIN}: not inside a cable-fanout task (CABLE_RUN_ID, CABLE_REGION, CABLE_TASK_ID, CABLE_STORE); nothing is recorded`, "warn");
      return;
    }
    // A dependency of this package (and in the image beside it); required in the main thread only.
    const { CpuMeter, recordPeriod } = require("artillery-plugin-cable-report") as typeof import("artillery-plugin-cable-report");
    const writer = new LiveWriter(openTaskStore(storeUrl), LIVE_PLUGIN, redactorFromEnv(process.env));
    const cpu = new CpuMeter();

    events.on("phaseStarted", (phase: { index: number; name?: string; startTime?: number }) => {
      cpu.begin();
      this.phases.push({ index: phase.index, name: phase.name ?? "", startTime: phase.startTime ?? Date.now() });
      writer.put(phasesKey(runId, region, taskId), this.phases);
    });
    events.on("stats", (stats: ArtilleryPeriodStats) => {
      const period = recordPeriod(stats, cpu.mark());
      writer.put(periodKey(runId, region, taskId, period.period), period);
    });
  }
}

export const LEGACY_METRICS_FORMAT = false;

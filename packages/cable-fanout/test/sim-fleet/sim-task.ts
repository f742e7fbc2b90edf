// One simulated Fargate task: no Artillery, the worker's life on the simulated clock, writing what
// the worker writes where the contract says (cable-worker/contract's keys, never a path of its own):
// its ready marker, the go marker awaited, the phases and a period file every 10 s of load (a few
// seconds after the period's end, as Artillery sends it), then report.json, its sidecar,
// artillery.log and status.json last; or, when stopped (StopTask), what a stopped worker uploads.
import { PERIOD_MS, type PhaseStart, sidecarPathFor } from "artillery-plugin-cable-report";
import {
  describeStop,
  EXIT,
  LOG_FILE,
  phasesKey,
  periodKey,
  REPORT_FILE,
  resultPrefix,
  STATUS_FILE,
  type SeenEnd,
  type Store,
  taskKey,
  type TaskStatus,
  taskStatusSchema,
  waitForGo,
  writeReady,
} from "cable-worker/contract";
import type { TaskSnapshot } from "../../src/backend";
import type { SimClock } from "./sim-clock";
import { type LoadShape, TaskLoad } from "./task-load";

export interface SimTaskPlan {
  runId: string;
  region: string;
  taskId: string;
  /** The region's store as the task sees it (slow, counted). */
  store: Store;
  clock: SimClock;
  /** From RunTask to the ready marker (image pulled, Artillery loaded), simulated ms. */
  readyAfterMs: number;
  /** The task never starts (CannotPullContainerError), as a fraction of a large fleet's do. */
  failsToStart: boolean;
  load: LoadShape;
  /** How long the load runs from the common start, simulated ms. */
  loadMs: number;
  /** How long after its period's end the period file is written, simulated ms. */
  sendDelayMs: number;
  /** The barrier's wait and poll for the go marker, simulated ms. */
  go: { waitMs: number; pollMs: number };
}

class Stopped extends Error {}

export class SimTask {
  readonly snapshot: TaskSnapshot;
  /** Settles once the task has stopped and written all it writes. */
  readonly done: Promise<void>;
  private readonly stopSignal = new AbortController();
  private readonly writes = new Set<Promise<void>>();
  private readonly phases: PhaseStart[] = [];

  constructor(
    readonly ref: string,
    private readonly plan: SimTaskPlan,
  ) {
    this.snapshot = { ref, taskId: plan.taskId, phase: "pending", log: `simulated task ${plan.region}/${plan.taskId}` };
    this.done = this.run();
  }

  /** StopTask: the worker gets SIGTERM and uploads what it has. */
  stop(): void {
    this.stopSignal.abort();
  }

  private get stopped(): boolean {
    return this.stopSignal.signal.aborted;
  }

  private async run(): Promise<void> {
    const { plan } = this;
    const { clock } = plan;
    await clock.sleep(plan.readyAfterMs / 3, this.stopSignal.signal);
    if (plan.failsToStart) return this.end({ exitCode: null, stopCode: "TaskFailedToStart", stoppedReason: "CannotPullContainerError: simulated pull failure" });
    this.snapshot.phase = "running";
    const status: TaskStatus = { runId: plan.runId, region: plan.region, taskId: plan.taskId, exitCode: EXIT.ok, reason: null, startedAt: new Date(clock.now()).toISOString(), endedAt: "", startLagMs: null, artilleryExitCode: null, readyAt: null, loadStartedAt: null, firstMetricAt: null, startAt: null };
    try {
      await this.pause((plan.readyAfterMs * 2) / 3);
      status.readyAt = clock.now();
      await writeReady(plan.store, { runId: plan.runId, region: plan.region, taskId: plan.taskId, readyAt: status.readyAt });
      const go = await waitForGo(plan.store, plan.runId, { ...plan.go, signal: this.stopSignal.signal }, clock);
      if (this.stopped) throw new Stopped();
      if (!go) {
        const reason = `no go marker within ${Math.round(plan.go.waitMs / 1000)} s of being ready`;
        return await this.finish(status, EXIT.setup, reason, { by: "crash", reason });
      }
      if ("cancelled" in go) return await this.finish(status, EXIT.setup, `the run was called off before the start: ${go.cancelled}`, { by: "go-cancelled", reason: go.cancelled });
      if (!go.tasks.includes(taskKey(plan.region, plan.taskId))) return await this.finish(status, EXIT.setup, "missed the ready barrier: the run started without this task", { by: "barrier-missed" });
      status.startAt = go.startAt;
      await this.pause(go.startAt - clock.now());
      status.loadStartedAt = clock.now();
      status.startLagMs = Math.max(0, status.loadStartedAt - go.startAt);
      await this.runLoad(status);
      await this.finish(status, EXIT.ok, null, { by: "phases-done" });
    } catch (err) {
      if (!(err instanceof Stopped)) throw err;
      const end = { by: "stop-signal", signal: "SIGTERM" } as const;
      await this.finish(status, EXIT.artillery, `${describeStop(end)} before artillery ${status.loadStartedAt === null ? "started" : "finished"}`, end);
    }
  }

  /** The phases, then a period file per 10 s period of load, each sent `sendDelayMs` after the period's end. */
  private async runLoad(status: TaskStatus): Promise<void> {
    const { plan } = this;
    const { clock } = plan;
    const load = new TaskLoad(plan.load);
    const start = status.loadStartedAt!;
    const end = start + plan.loadMs;
    this.phases.push({ index: 0, name: "sim", startTime: start });
    this.put(phasesKey(plan.runId, plan.region, plan.taskId), this.phases);
    for (let period = Math.floor(start / PERIOD_MS) * PERIOD_MS; period < end; period += PERIOD_MS) {
      await this.pause(Math.min(period + PERIOD_MS, end) + plan.sendDelayMs - clock.now());
      const record = load.next(period);
      status.firstMetricAt ??= start;
      this.put(periodKey(plan.runId, plan.region, plan.taskId, record.period), record);
    }
    const { report, sidecar } = load.results({ name: "chat.yml", durationS: plan.loadMs / 1000, testRunId: `sim-${plan.runId}-${plan.region}-${plan.taskId}` }, this.phases, clock.now());
    const prefix = resultPrefix(plan.runId, plan.region, plan.taskId);
    await plan.store.putText(prefix + REPORT_FILE, report);
    await plan.store.putText(sidecarPathFor(prefix + REPORT_FILE), sidecar);
  }

  /** The live writer's way: not awaited where the period arrives, all settled before the task exits. */
  private put(key: string, value: unknown): void {
    const write = this.plan.store.putText(key, JSON.stringify(value));
    this.writes.add(write);
    void write.finally(() => this.writes.delete(write));
  }

  /** Sleeps on the simulated clock; a StopTask ends it early, and the task then stops. */
  private async pause(ms: number): Promise<void> {
    await this.plan.clock.sleep(ms, this.stopSignal.signal);
    if (this.stopped) throw new Stopped();
  }

  /** The worker's last steps: every write settled, its log, then status.json; then the container exits. */
  private async finish(status: TaskStatus, exitCode: number, reason: string | null, end: SeenEnd): Promise<void> {
    const { plan } = this;
    await Promise.allSettled(this.writes);
    status.exitCode = exitCode;
    status.reason = reason;
    status.end = end;
    status.endedAt = new Date(plan.clock.now()).toISOString();
    const prefix = resultPrefix(plan.runId, plan.region, plan.taskId);
    await plan.store.putText(prefix + LOG_FILE, `simulated task ${plan.taskId}: ${reason ?? "done"}\n`);
    await plan.store.putText(prefix + STATUS_FILE, `${JSON.stringify(taskStatusSchema.parse(status), null, 2)}\n`);
    this.end(exitCode === EXIT.ok ? { exitCode, stopCode: "EssentialContainerExited" } : { exitCode, stopCode: this.stopped ? "UserInitiated" : "EssentialContainerExited", stoppedReason: this.stopped ? "Task stopped by user" : `Essential container in task exited` });
  }

  private end(how: Pick<TaskSnapshot, "exitCode" | "stopCode" | "stoppedReason">): void {
    Object.assign(this.snapshot, { phase: "stopped" as const, ...how });
  }
}

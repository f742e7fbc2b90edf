// One region's tasks from RunTask to STOPPED: started, polled, stopped on abort or when they do not
// start in time, StopTask sent again to those that keep running, and given up on past the grace.
import type { RunnerStop } from "cable-worker/contract";
import type { Region, TaskSnapshot, Timing } from "../backend.js";
import type { Progress } from "../progress.js";
import { isThrottling } from "../retry.js";
import { backoffDelay, RESTOP_BACKOFF } from "../schedule.js";

/** What the barrier needs from a region's watch: its tasks as last seen, and a way to stop some. */
export interface RegionControl {
  tasks: () => TaskSnapshot[];
  stop: (refs: string[], reason: string, why: RunnerStop) => Promise<void>;
}

export interface WatchInput {
  runId: string;
  count: number;
  startOptions: Parameters<Region["startTasks"]>[2];
  timing: Timing;
  deps: {
    now: () => number;
    sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
    /** Aborted when the run stops early: every task is stopped with `abortReason()`. */
    abort: AbortController;
  };
  progress: Progress;
  abortReason: () => string;
  /** Why the run was stopped early, for the tasks' ends (default: an interrupt). */
  abortedBy?: () => RunnerStop;
  /** The runner asked these tasks to stop (each once): the run's record keeps why. */
  onStopping?: (taskIds: string[], why: RunnerStop) => void;
  onStarted: (refs: string[]) => void;
  /** Called once RunTask has returned (also when it failed), for the ready barrier. */
  onControl?: (control: RegionControl) => void;
  /** --detach: aborted once the go is given; the watch then ends and leaves the tasks running. */
  release?: AbortSignal;
}

export interface RegionOutcome {
  tasks: TaskSnapshot[];
  failures: string[];
  notices: string[];
}

/** Consecutive DescribeTasks errors after which a region is given up (its tasks are stopped). */
const MAX_POLL_ERRORS = 6;

/** Starts a region's tasks and polls them until all have stopped; never throws. */
export async function watchRegion(region: Region, input: WatchInput): Promise<RegionOutcome> {
  const watch = new RegionWatch(region, input);
  if (await watch.start()) await watch.untilStopped();
  return watch.outcome();
}

/** Stops the runner asked for that are listed task by task in one poll; more are summed up in one line. */
const STOPS_LISTED = 5;

function stopCause(task: TaskSnapshot): string {
  return [task.stopCode, task.stoppedReason, task.exitCode !== undefined ? `exit code ${task.exitCode}` : undefined].filter(Boolean).join("; ");
}

function describeStop(task: TaskSnapshot): string {
  return `task ${task.taskId} stopped: ${stopCause(task)}${task.log ? ` (log: ${task.log})` : ""}`;
}

/** A task that stopped for any reason other than its worker finishing cleanly. */
function isFailedStop(task: TaskSnapshot): boolean {
  return (task.exitCode !== undefined && task.exitCode !== 0) || (task.stopCode !== undefined && task.stopCode !== "EssentialContainerExited");
}

class RegionWatch {
  private tasks: TaskSnapshot[] = [];
  private readonly failures: string[] = [];
  private readonly notices: string[] = [];
  private startDeadline = Infinity;
  private startTimedOut = false;
  private readonly stopRequested = new Set<string>();
  /** Set when StopTask returns: tasks asked to stop must have stopped by then. */
  private stopDeadline: number | undefined;
  private restops = 0;
  private nextRestop: number | undefined;
  private pollErrors = 0;

  constructor(
    private readonly region: Region,
    private readonly input: WatchInput,
  ) {}

  outcome(): RegionOutcome {
    return { tasks: this.tasks, failures: this.failures, notices: this.notices };
  }

  /** RunTask for the region's tasks; false when it failed outright (nothing to watch). */
  async start(): Promise<boolean> {
    const { input } = this;
    try {
      const outcome = await this.region.startTasks(input.runId, input.count, input.startOptions);
      this.tasks = outcome.started;
      this.failures.push(...outcome.failures);
      for (const f of outcome.failures) this.event(f);
      this.notices.push(...(outcome.notices ?? []));
      for (const n of this.notices) this.event(n);
    } catch (err) {
      const message = `starting tasks failed: ${(err as Error).name}: ${(err as Error).message}`;
      this.event(message);
      input.onControl?.({ tasks: () => [], stop: async () => undefined });
      this.failures.push(message);
      return false;
    }
    input.onStarted(this.tasks.map((t) => t.ref));
    this.startDeadline = input.deps.now() + input.timing.startTimeoutMs;
    input.onControl?.({ tasks: () => this.tasks, stop: (refs, reason, why) => this.requestStop(this.tasks.filter((t) => refs.includes(t.ref)), reason, why) });
    return true;
  }

  /** Polls until every task has stopped (or the region is given up). */
  async untilStopped(): Promise<void> {
    const { deps, progress } = this.input;
    progress.update(this.region.name, this.counts());
    const release = this.input.release;
    while (this.running().length > 0) {
      // Tasks already asked to stop (those that missed the barrier) are StopTask's to end, not the watch's.
      if (release?.aborted && !deps.abort.signal.aborted) return;
      if (deps.abort.signal.aborted) await this.requestStop(this.tasks, this.input.abortReason(), this.input.abortedBy?.() ?? { by: "interrupt" });
      await this.restop();
      if (this.pastStopGrace()) break;
      const delay = await this.poll();
      if (delay === undefined) break;
      progress.update(this.region.name, this.counts());
      await this.stopUnstarted();
      if (this.running().length === 0) break;
      const wake = this.stopDeadline === undefined ? (release ? AbortSignal.any([deps.abort.signal, release]) : deps.abort.signal) : undefined;
      await deps.sleep(delay, wake);
    }
  }

  private event(line: string): void {
    this.input.progress.event(`${this.region.name}: ${line}`);
  }

  private running(): TaskSnapshot[] {
    return this.tasks.filter((t) => t.phase !== "stopped");
  }

  /** Tasks asked to stop that still run. */
  private stuck(): TaskSnapshot[] {
    return this.tasks.filter((t) => t.phase !== "stopped" && this.stopRequested.has(t.ref));
  }

  private counts() {
    const tasks = this.tasks;
    return {
      pending: tasks.filter((t) => t.phase === "pending").length,
      running: tasks.filter((t) => t.phase === "running").length,
      stopped: tasks.filter((t) => t.phase === "stopped").length,
      failed: tasks.filter((t) => t.phase === "stopped" && isFailedStop(t)).length,
    };
  }

  private async requestStop(targets: TaskSnapshot[], reason: string, why: RunnerStop): Promise<void> {
    const asked = targets.filter((t) => t.phase !== "stopped" && !this.stopRequested.has(t.ref));
    const refs = asked.map((t) => t.ref);
    if (refs.length === 0) return;
    refs.forEach((r) => this.stopRequested.add(r));
    // Recorded before StopTask: a task killed before it writes its status is still known by it.
    this.input.onStopping?.(asked.map((t) => t.taskId), why);
    this.event(`stopping ${refs.length} task(s): ${reason}`);
    try {
      await this.region.stopTasks(refs, `cable-fanout: ${reason}`);
    } catch (err) {
      this.event((err as Error).message);
    }
    // Counted from the last StopTask's return: a task stopped late in a long batch gets the whole
    // grace to upload, and so does every task of a later, overlapping request.
    this.stopDeadline = Math.max(this.stopDeadline ?? -Infinity, this.input.deps.now() + this.input.timing.stopGraceMs);
  }

  /** StopTask again, with backoff, to tasks that still run after it, until DescribeTasks says STOPPED. */
  private async restop(): Promise<void> {
    const stuck = this.stuck();
    if (stuck.length === 0) return;
    const { now } = this.input.deps;
    this.nextRestop ??= now() + backoffDelay(1, RESTOP_BACKOFF);
    if (now() < this.nextRestop) return;
    this.restops++;
    this.nextRestop = now() + backoffDelay(this.restops + 1, RESTOP_BACKOFF);
    this.event(`${stuck.length} task(s) still running after StopTask; sending it again`);
    try {
      await this.region.stopTasks(stuck.map((t) => t.ref), "cable-fanout: stop (again)");
    } catch (err) {
      this.event((err as Error).message);
    }
  }

  /**
   * Past the stop grace, tasks that ignored StopTask are failures and are counted as stopped;
   * true when no task is left that nobody asked to stop (nothing more worth watching).
   */
  private pastStopGrace(): boolean {
    const { timing, deps } = this.input;
    if (this.stopDeadline === undefined || deps.now() <= this.stopDeadline) return false;
    const stuck = this.stuck();
    if (stuck.length > 0) {
      this.failures.push(
        `${stuck.length} task(s) had not stopped ${Math.round(timing.stopGraceMs / 1000)} s after StopTask: ${stuck.map((t) => t.taskId).join(", ")} ` +
          `(they stop themselves once the runner's heartbeat is ${Math.round(timing.heartbeatStaleMs / 1000)} s old)`,
      );
    }
    if (this.tasks.every((t) => t.phase === "stopped" || this.stopRequested.has(t.ref))) return true;
    stuck.forEach((t) => Object.assign(t, { phase: "stopped" as const, stoppedReason: t.stoppedReason ?? "did not stop after StopTask" }));
    this.stopDeadline = undefined;
    return false;
  }

  /** DescribeTasks once: the delay before the next poll, or undefined when the region is given up. */
  private async poll(): Promise<number | undefined> {
    const { timing } = this.input;
    try {
      const fresh = new Map((await this.region.describeTasks(this.tasks.map((t) => t.ref))).map((t) => [t.ref, t]));
      this.pollErrors = 0;
      const asked: TaskSnapshot[] = [];
      this.tasks = this.tasks.map((before) => {
        const now = fresh.get(before.ref) ?? before;
        if (before.phase !== "stopped" && now.phase === "stopped" && isFailedStop(now)) {
          if (this.stopRequested.has(now.ref)) asked.push(now);
          else this.event(describeStop(now));
        }
        return now;
      });
      // Tasks the runner stopped itself (--abort-on, Ctrl-C, the barrier): a line each only for a few; 500 of them are one line.
      if (asked.length <= STOPS_LISTED) for (const task of asked) this.event(describeStop(task));
      else this.event(`${asked.length} tasks stopped as asked (${stopCause(asked[0])}, …)`);
      return timing.pollMs;
    } catch (err) {
      this.pollErrors++;
      const delay = backoffDelay(this.pollErrors, { baseMs: timing.pollMs, maxMs: Math.max(timing.pollMs, 60_000), attempts: MAX_POLL_ERRORS });
      this.event(`DescribeTasks failed (${(err as Error).name}: ${(err as Error).message})${isThrottling(err) ? ", throttled" : ""}; next try in ${Math.round(delay / 1000)} s`);
      if (this.pollErrors < MAX_POLL_ERRORS) return delay;
      const message = `gave up watching after ${this.pollErrors} DescribeTasks errors in a row`;
      this.failures.push(message);
      await this.requestStop(this.tasks, message, { by: "watch-lost" });
      return undefined;
    }
  }

  /** Once, past --start-timeout: the tasks still pending are stopped and counted as failures. */
  private async stopUnstarted(): Promise<void> {
    const pending = this.tasks.filter((t) => t.phase === "pending");
    if (this.startTimedOut || pending.length === 0 || this.input.deps.now() <= this.startDeadline) return;
    this.startTimedOut = true;
    const message = `${pending.length} task(s) did not start within ${Math.round(this.input.timing.startTimeoutMs / 1000)} s`;
    this.failures.push(message);
    await this.requestStop(pending, message, { by: "start-timeout" });
  }
}

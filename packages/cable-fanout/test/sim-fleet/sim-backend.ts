// A simulated fleet behind cable-fanout's Backend: every region's tasks are SimTasks (timers in this
// process, no Artillery), every region's bucket a directory behind a slow, counting store. The
// runner drives it as it drives Fargate: RunTask, DescribeTasks, StopTask, the ready barrier, the
// live files and collect all go through the real code; only the tasks are simulated.
import path from "node:path";
import { LocalStore } from "cable-worker/local-store";
import { type Backend, LOCAL_PREFLIGHT, type Preflight, type PreflightResult, type Region, type StartOptions, type StartOutcome, type TaskSnapshot, type Timing } from "../../src/backend";
import type { Bundle } from "../../src/run/bundle";
import { uploadBundle } from "../../src/store";
import type { SimClock } from "./sim-clock";
import { SimTask } from "./sim-task";
import { slowStore, type StoreCalls } from "./slow-store";
import type { LoadShape } from "./task-load";

/** Fargate's pace in simulated ms: tasks poll the go marker every second, the runner describes them every 5 s. */
export const SIM_TIMING: Timing = {
  startDelayMs: 5_000,
  startTimeoutMs: 120_000,
  readyTimeoutMs: 120_000,
  marginMs: 120_000,
  pollMs: 5_000,
  stopGraceMs: 60_000,
  goPollMs: 1_000,
  heartbeatMs: 15_000,
  heartbeatStaleMs: 90_000,
};

export interface SimFleetOptions {
  /** The directory standing in for every region's bucket. */
  dir: string;
  clock: SimClock;
  /** Real ms every store call waits, the runner's and the tasks' alike (S3 is some 20–100 ms away). */
  storeLatencyMs: number;
  /** How long each task's load runs from the common start, simulated ms. */
  loadMs: number;
  /** The load of the region numbered `index` (in the order the regions were opened). */
  load: (index: number) => LoadShape;
  /** Region → how many of its tasks never start (the last ones started), as CannotPullContainerError. */
  failedStarts?: Record<string, number>;
  /** From RunTask to ready, simulated ms: each task draws its own in this range. */
  readyAfterMs?: [number, number];
  timing?: Partial<Timing>;
}

export class SimFleet implements Backend {
  readonly kind = "local";
  readonly timing: Timing;
  readonly regions = new Map<string, SimRegion>();

  constructor(private readonly options: SimFleetOptions) {
    this.timing = { ...SIM_TIMING, ...options.timing };
  }

  async openRegion(name: string): Promise<Region> {
    const region = new SimRegion(name, this.regions.size, this.options, this.timing);
    this.regions.set(name, region);
    return region;
  }

  /** Every task of every region, once it has stopped and written all it writes. */
  async settled(): Promise<void> {
    await Promise.all([...this.regions.values()].flatMap((r) => [...r.tasks.values()].map((t) => t.done)));
  }

  /** Store calls so far, the runner's and the tasks', summed over the regions. */
  storeCalls(): { runner: number; tasks: number } {
    const sum = (pick: (r: SimRegion) => StoreCalls) => [...this.regions.values()].reduce((n, r) => n + pick(r).total(), 0);
    return { runner: sum((r) => r.store), tasks: sum((r) => r.taskStore) };
  }
}

export class SimRegion implements Region {
  /** The runner's view of the region's bucket. */
  readonly store: LocalStore & StoreCalls;
  /** The tasks' view of the same bucket, counted apart. */
  readonly taskStore: LocalStore & StoreCalls;
  readonly tasks = new Map<string, SimTask>();

  constructor(
    readonly name: string,
    private readonly index: number,
    private readonly options: SimFleetOptions,
    private readonly timing: Timing,
  ) {
    const bucket = path.join(options.dir, name);
    this.store = slowStore(new LocalStore(bucket), options.storeLatencyMs);
    this.taskStore = slowStore(new LocalStore(bucket), options.storeLatencyMs);
  }

  get location(): string {
    return this.store.location;
  }

  async serverTime(): Promise<number> {
    return this.options.clock.now();
  }

  async preflight(_plan: Preflight): Promise<PreflightResult> {
    return LOCAL_PREFLIGHT;
  }

  uploadBundle(runId: string, bundle: Bundle): Promise<void> {
    return uploadBundle(this.store, runId, bundle);
  }

  async startTasks(runId: string, count: number, options: StartOptions): Promise<StartOutcome> {
    const { clock, readyAfterMs = [5_000, 15_000] } = this.options;
    const started: TaskSnapshot[] = [];
    for (let n = 1; n <= count && !options.abort.aborted; n++) {
      const taskId = `task-${n}`;
      const task = new SimTask(`${runId}/${this.name}/${taskId}`, {
        runId,
        region: this.name,
        taskId,
        store: this.taskStore,
        clock,
        readyAfterMs: readyAfterMs[0] + Math.random() * (readyAfterMs[1] - readyAfterMs[0]),
        failsToStart: n > count - (this.options.failedStarts?.[this.name] ?? 0),
        load: this.options.load(this.index),
        loadMs: this.options.loadMs,
        // Artillery sends a period a second or three after its end.
        sendDelayMs: 1_000 + Math.random() * 2_000,
        // As the bundle tells the worker (runner.ts prepareRun): the runner's decision time, the lead and a minute.
        go: { waitMs: this.timing.readyTimeoutMs + this.timing.startDelayMs + 60_000, pollMs: this.timing.goPollMs },
      });
      this.tasks.set(task.ref, task);
      started.push({ ...task.snapshot });
    }
    return { started, failures: [] };
  }

  async describeTasks(refs: string[]): Promise<TaskSnapshot[]> {
    return refs.map((ref) => {
      const task = this.tasks.get(ref);
      return task ? { ...task.snapshot } : { ref, taskId: ref.slice(ref.lastIndexOf("/") + 1), phase: "stopped", exitCode: null, stoppedReason: "not a task of this fleet" };
    });
  }

  async stopTasks(refs: string[]): Promise<void> {
    for (const ref of refs) this.tasks.get(ref)?.stop();
  }

  async findRunningTasks(runId: string): Promise<string[]> {
    return [...this.tasks.values()].filter((t) => t.ref.startsWith(`${runId}/`) && t.snapshot.phase !== "stopped").map((t) => t.ref);
  }
}

// The live channel between the tasks and the runner, read side: each task's cable-live plugin (in
// the worker) writes every metrics period (cable-report's period record: counters, raw DDSketch
// histograms, the generator's CPU) and its phases' start times into the run's store as they happen;
// in a capacity search, the probe also writes its ended marker. One LiveFeed per run polls every
// region's store and serves the run's live lines, its --abort-on and the capacity search alike, so
// the store is read once per poll, whoever reads. The same keys work on S3 and in a local directory.
//
// A poll lists the region's period folders (one delimited listing), the period folders it has not
// finished, and the phases and ended folders, then reads only what it has not folded in yet, up to
// REGION_CONCURRENCY requests at once per region and every region at once: its time is about
// new files ÷ concurrency × round trip, not every task's files one after the other.
import {
  endedPrefix,
  FINISHED_AFTER_MS,
  type Store,
  liveEndedSchema,
  livePeriodSchema,
  livePhaseSchema,
  liveRegionPrefix,
  periodOfFolder,
  periodPrefix,
  phasesPrefix,
  taskOfLiveKey,
} from "cable-worker/contract";
import { PERIOD_MS } from "artillery-plugin-cable-report";
import type { z } from "zod";
import pLimit, { type Limit } from "p-limit";
import { REGION_CONCURRENCY } from "../store.js";
import { RegionLive, tasksExpected, type LiveSnapshot, type TasksExpected } from "./region-live.js";

// The keys and file shapes are the runner-task contract's (cable-worker/contract): the worker's plugins write them.
export { stopKey, type LiveEnded, type LivePeriod, type LivePhase } from "cable-worker/contract";
export { allTasks, RegionLive, type LiveSnapshot, type TaskLive } from "./region-live.js";

export interface RegionReaderOptions {
  /** The tasks the region runs: until that many have shown up, no period is finished early. */
  expected: TasksExpected;
  /** The phases every task runs: a task's phases are read until that many have started (or it ended). Unknown: until it ended. */
  phaseCount?: number;
  limit: Limit;
  now: () => number;
}

/**
 * Reads one region's live files into its RegionLive, poll after poll. Period files are immutable
 * once written: each is read once and folded in; a period folder is no longer listed once it is
 * finished (live-keys.ts says when).
 */
export class RegionReader {
  readonly live: RegionLive;
  private readonly finished = new Set<number>();
  private readonly phasesComplete = new Set<string>();

  constructor(
    private readonly store: Store,
    private readonly runId: string,
    region: string,
    private readonly options: RegionReaderOptions,
  ) {
    this.live = new RegionLive(region);
  }

  async poll(): Promise<void> {
    const { store, runId, options } = this;
    const region = this.live.region;
    // The time rule judges by when the folders were listed: a file landing during a slow poll is read at the next.
    const listedAt = options.now();
    const [folders, phaseKeys, endedKeys] = await Promise.all([
      options.limit(() => store.listFolders(liveRegionPrefix(runId, region))),
      options.limit(() => store.list(phasesPrefix(runId, region))),
      options.limit(() => store.list(endedPrefix(runId, region))),
    ]);
    // A folder far in the future is no period of this run (it could never be finished by time).
    const open = folders.map(periodOfFolder).filter((p): p is number => p !== undefined && !this.finished.has(p) && p <= listedAt + FUTURE_PERIOD_MS);
    // The ended markers before the phases: a task's phases are read one last time once it has ended.
    const markers = async () => {
      await Promise.all(endedKeys.map((key) => this.readEnded(key)));
      await Promise.all(phaseKeys.map((key) => this.readPhases(key)));
    };
    await Promise.all([...open.map((period) => this.readPeriod(period)), markers()]);
    for (const period of open) if (this.isFinished(period, listedAt)) this.finished.add(period);
  }

  private async readPeriod(period: number): Promise<void> {
    const keys = await this.options.limit(() => this.store.list(periodPrefix(this.runId, this.live.region, period)));
    await Promise.all(
      keys.map(async (key) => {
        const taskId = taskOfLiveKey(key);
        if (!taskId || this.live.has(taskId, period)) return;
        const record = await this.readFile(key, livePeriodSchema);
        if (record) this.live.addPeriod(taskId, record);
      }),
    );
  }

  /** Rewritten at every phase start, so read again at every poll until the task's last phase has started. */
  private async readPhases(key: string): Promise<void> {
    const taskId = taskOfLiveKey(key);
    if (!taskId || this.phasesComplete.has(taskId)) return;
    const phases = await this.readFile(key, livePhaseSchema.array());
    if (!phases) return;
    const task = this.live.task(taskId);
    task.phases = phases;
    const { phaseCount } = this.options;
    if ((phaseCount !== undefined && phases.length >= phaseCount) || task.ended) this.phasesComplete.add(taskId);
  }

  private async readEnded(key: string): Promise<void> {
    const taskId = taskOfLiveKey(key);
    if (!taskId || this.live.tasks.get(taskId)?.ended) return;
    const ended = await this.readFile(key, liveEndedSchema);
    if (ended) this.live.task(taskId).ended = ended;
  }

  /** Undefined when half-written, vanished or not the contract's shape: read again at the next poll. */
  private async readFile<T extends z.ZodTypeAny>(key: string, schema: T): Promise<z.infer<T> | undefined> {
    try {
      return schema.parse(JSON.parse(await this.options.limit(() => this.store.getText(key))));
    } catch {
      return undefined;
    }
  }

  /**
   * Every expected task has sent the period, or the period was long over when its folder was listed
   * (live-keys.ts). A task that has ended still holds the folder open until then: its ended marker
   * and its last period file are written by two plugins and may land in either order.
   */
  private isFinished(period: number, listedAt: number): boolean {
    if (listedAt > period + PERIOD_MS + FINISHED_AFTER_MS) return true;
    const tasks = [...this.live.tasks.values()];
    return tasks.length >= tasksExpected(this.options.expected, this.live.region) && tasks.every((t) => this.live.has(t.taskId, period));
  }
}

/** The warned-once key of a listener that threw (no region is named so). */
const LISTENER_FAILED = "\u0000listener";

/** How far ahead of the runner's clock a task's period may start: clocks differ by far less. */
const FUTURE_PERIOD_MS = 3_600_000;

export interface FeedDeps {
  now: () => number;
  sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** A region's store could not be read (logged once per region, then quietly retried). */
  warn?: (line: string) => void;
}

export interface FeedOptions {
  /** Tasks per region. */
  expected: TasksExpected;
  /** Phases per task (the scenario's), when known. */
  phaseCount?: number;
  pollMs?: number;
}

/** One run's live files, polled every `pollMs` while started; listeners hear each poll's state. */
export class LiveFeed {
  private readonly readers: RegionReader[];
  private readonly live: LiveSnapshot;
  private readonly listeners = new Set<(snapshot: LiveSnapshot) => void>();
  private readonly waiters = new Set<() => void>();
  private reading: Promise<LiveSnapshot> | undefined;
  private readonly stopped = new AbortController();
  private readonly warned = new Set<string>();
  readonly pollMs: number;
  /** Whether the feed has made its last read (finish()). */
  final = false;

  constructor(
    readonly runId: string,
    private readonly stores: Map<string, Store>,
    private readonly deps: FeedDeps,
    options: FeedOptions,
  ) {
    this.pollMs = options.pollMs ?? 2_000;
    // Each region its own bound: one slow bucket does not hold back the others' requests.
    this.readers = [...stores].map(([region, store]) => new RegionReader(store, runId, region, { expected: options.expected, phaseCount: options.phaseCount, limit: pLimit(REGION_CONCURRENCY), now: deps.now }));
    this.live = new Map(this.readers.map((r) => [r.live.region, r.live]));
  }

  /** Polls until stop(); the first read happens at once. */
  start(): this {
    void (async () => {
      while (!this.stopped.signal.aborted) {
        await this.refresh();
        await this.deps.sleep(this.pollMs, this.stopped.signal);
      }
    })();
    return this;
  }

  /**
   * Every task has stopped: polling ends with one last read, which holds every file the tasks
   * wrote (their last periods land as they exit, often after the poll before). Readers waiting on
   * next(), and those who call it meanwhile, wake after that read; `final` says nothing more is coming.
   */
  async finish(): Promise<LiveSnapshot> {
    this.stopped.abort();
    // A read in flight may have listed the folders before the last files landed: a fresh one after it.
    while (this.reading) await this.reading.catch(() => undefined);
    const last = await this.refresh().catch(() => this.live);
    this.final = true;
    for (const wake of this.waiters) wake();
    this.waiters.clear();
    return last;
  }

  /** Every region's state as of the last poll (the same objects, updated by each poll). */
  snapshot(): LiveSnapshot {
    return this.live;
  }

  /** Reads every region now (one read at a time: a caller during a read shares it). */
  refresh(): Promise<LiveSnapshot> {
    this.reading ??= this.read().finally(() => (this.reading = undefined));
    return this.reading;
  }

  onUpdate(listener: (snapshot: LiveSnapshot) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Resolves after the next poll, or at once once the last read is in or `signal` aborts. Not at
   * once while the last read is under way: a caller looping on next() would spin on resolved
   * promises and starve that read's own I/O.
   */
  next(signal?: AbortSignal): Promise<void> {
    if (this.final || signal?.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        this.waiters.delete(done);
        signal?.removeEventListener("abort", done);
        resolve();
      };
      this.waiters.add(done);
      signal?.addEventListener("abort", done, { once: true });
    });
  }

  private async read(): Promise<LiveSnapshot> {
    await Promise.all(
      this.readers.map((reader) =>
        reader.poll().catch((err: Error) => {
          const region = reader.live.region;
          if (this.warned.has(region)) return;
          this.warned.add(region);
          this.deps.warn?.(`${region}: cannot read the tasks' live files from ${this.stores.get(region)!.location} (${err.name}: ${err.message}); live figures wait for it`);
        }),
      ),
    );
    // A listener that throws (a bug, odd figures) must not end the polling the others depend on.
    for (const listener of this.listeners) {
      try {
        listener(this.live);
      } catch (err) {
        if (!this.warned.has(LISTENER_FAILED)) this.deps.warn?.(`live figures: ${(err as Error).name} while reading a poll (${(err as Error).message}); polling goes on`);
        this.warned.add(LISTENER_FAILED);
      }
    }
    for (const wake of [...this.waiters]) wake();
    return this.live;
  }
}

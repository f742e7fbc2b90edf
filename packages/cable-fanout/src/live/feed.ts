// The live channel between the tasks and the runner, read side: each task's cable-live plugin (in
// the worker) writes every metrics period (cable-report's period record: counters, raw DDSketch
// histograms, the generator's CPU) and its phases' start times into the run's store as they happen;
// in a capacity search, the probe also writes ended.live. One LiveFeed per run polls every region's
// store and serves the run's live lines, its --abort-on and the capacity search alike, so the store
// is listed once per poll, whoever reads. The same keys work on S3 and in a local directory.
import {
  ENDED_FILE,
  LIVE_DIR,
  type LiveEnded,
  type LivePeriod,
  type LivePhase,
  PERIOD_FILE_PREFIX,
  PHASES_FILE,
  type Store,
  liveEndedSchema,
  livePeriodSchema,
  livePhaseSchema,
  regionResultsPrefix,
} from "cable-worker/contract";

// The keys and file shapes are the runner-task contract's (cable-worker/contract): the worker's plugins write them.
export { stopKey, type LiveEnded, type LivePeriod, type LivePhase } from "cable-worker/contract";

export interface TaskLive {
  region: string;
  taskId: string;
  periods: LivePeriod[];
  phases: LivePhase[];
  ended?: LiveEnded;
}

export type LiveSnapshot = Map<string, TaskLive[]>;

/**
 * Reads every task's live files of a region. Period files are immutable once written, so those
 * already read are kept in `cache` (the same objects each time) and not fetched again.
 */
export async function readRegionLive(store: Store, runId: string, region: string, cache: Map<string, LivePeriod>): Promise<TaskLive[]> {
  const prefix = regionResultsPrefix(runId, region);
  const tasks = new Map<string, TaskLive>();
  const task = (taskId: string) => {
    let t = tasks.get(taskId);
    if (!t) tasks.set(taskId, (t = { region, taskId, periods: [], phases: [] }));
    return t;
  };
  for (const key of await store.list(prefix)) {
    const parts = key.slice(prefix.length).split("/");
    if (parts.length !== 3 || parts[1] !== LIVE_DIR) continue;
    const [taskId, , file] = parts;
    try {
      if (file.startsWith(PERIOD_FILE_PREFIX)) {
        let period = cache.get(key);
        if (!period) {
          period = livePeriodSchema.parse(JSON.parse(await store.getText(key)));
          cache.set(key, period);
        }
        task(taskId).periods.push(period);
      } else if (file === PHASES_FILE) {
        task(taskId).phases = livePhaseSchema.array().parse(JSON.parse(await store.getText(key)));
      } else if (file === ENDED_FILE) {
        task(taskId).ended = liveEndedSchema.parse(JSON.parse(await store.getText(key)));
      }
    } catch {
      // Half-written, vanished or not the contract's shape: read again at the next poll.
    }
  }
  for (const t of tasks.values()) t.periods.sort((a, b) => a.period - b.period);
  return [...tasks.values()];
}

export interface FeedDeps {
  sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** A region's store could not be read (logged once per region, then quietly retried). */
  warn?: (line: string) => void;
}

/** One run's live files, polled every `pollMs` while started; listeners hear each fresh snapshot. */
export class LiveFeed {
  private readonly cache = new Map<string, LivePeriod>();
  private latest: LiveSnapshot = new Map();
  private readonly listeners = new Set<(snapshot: LiveSnapshot) => void>();
  private readonly waiters = new Set<() => void>();
  private reading: Promise<LiveSnapshot> | undefined;
  private readonly stopped = new AbortController();
  private readonly warned = new Set<string>();

  constructor(
    readonly runId: string,
    private readonly stores: Map<string, Store>,
    private readonly deps: FeedDeps,
    readonly pollMs = 2_000,
  ) {}

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

  stop(): void {
    this.stopped.abort();
    for (const wake of this.waiters) wake();
    this.waiters.clear();
  }

  snapshot(): LiveSnapshot {
    return this.latest;
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

  /** Resolves after the next poll (or at once when stopped, or when `signal` aborts). */
  next(signal?: AbortSignal): Promise<void> {
    if (this.stopped.signal.aborted || signal?.aborted) return Promise.resolve();
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
    const out: LiveSnapshot = new Map();
    for (const [region, store] of this.stores) {
      out.set(
        region,
        await readRegionLive(store, this.runId, region, this.cache).catch((err: Error) => {
          if (!this.warned.has(region)) {
            this.warned.add(region);
            this.deps.warn?.(`${region}: cannot read the tasks' live files from ${store.location} (${err.name}: ${err.message}); live figures wait for it`);
          }
          return this.latest.get(region) ?? [];
        }),
      );
    }
    this.latest = out;
    for (const listener of this.listeners) listener(out);
    for (const wake of [...this.waiters]) wake();
    return out;
  }
}

// One segment's run of the fan-out, as the capacity search starts and watches it.
import { CAPACITY_PLUGIN, type RunnerStop } from "cable-worker/contract";
import type { LiveFeed, LiveSnapshot } from "../live/feed.js";
import type { RunOptions, RunResult } from "../run/run-options.js";
import { newRunId, runFanout } from "../run/runner.js";
import type { CapacityDeps } from "./options.js";

/** How often the search looks before the run has a feed, and after the feed's last read. */
const POLL_MS = 2_000;

type Json = Record<string, unknown>;

/**
 * The overrides of one segment's run: the stair's phases, and the probe plugin by name only. The
 * probe ships with the worker (cable-worker's artillery-plugin-cable-capacity-probe), which puts its
 * own directory on ARTILLERY_PLUGIN_PATH: no path of this machine goes to a task.
 */
export function segmentOverrides(base: Json | undefined, phases: Json[], endAfterS: number, segmentVariables: Json = {}): Json {
  const config = { ...((base?.config as Json | undefined) ?? {}) };
  const plugins = { ...((config.plugins as Json | undefined) ?? {}), [CAPACITY_PLUGIN]: { endAfterS } };
  // A user stays at most the stair's length and a margin, even if the stop never reached it.
  // The segment's own variables (by rate: capacity_users, capacity_rate) win over the user's.
  const variables = { ...((config.variables as Json | undefined) ?? {}), ...segmentVariables, capacity_max_s: endAfterS + 120 };
  return { ...base, config: { ...config, phases, plugins, variables } };
}

/**
 * One segment's fan-out run while it goes on, and the one place the search waits on a run. Its
 * abort is the segment's own (the search ends the run early with it; --max-duration inside the run
 * trips it too), which the user's Ctrl-C also reaches until the run is over.
 */
export class SegmentRun {
  runId = "";
  feed: LiveFeed | undefined;
  finished = false;
  readonly abort = new AbortController();
  private readonly run: Promise<RunResult>;
  private readonly settled: Promise<unknown>;
  private readonly detach: () => void;

  constructor(
    private readonly deps: CapacityDeps,
    options: RunOptions,
  ) {
    const onUserAbort = () => this.abort.abort();
    deps.abort.signal.addEventListener("abort", onUserAbort);
    this.detach = () => deps.abort.signal.removeEventListener("abort", onUserAbort);
    this.run = runFanout(options, {
      backend: deps.backend,
      now: deps.now,
      sleep: deps.sleep,
      log: deps.log,
      abort: this.abort,
      progress: deps.progress,
      newRunId: () => (this.runId = newRunId(deps.now())),
      onFeed: (feed) => (this.feed = feed),
      ...(deps.ask ? { ask: deps.ask } : {}),
      ...(deps.livePage ? { livePage: deps.livePage } : {}),
    });
    this.settled = this.run.then(
      () => (this.finished = true),
      () => (this.finished = true),
    );
  }

  /** The search has its answer: the run stops its tasks, and records why (a capacity stop, not an interrupt). */
  end(): void {
    this.abort.abort({ by: "capacity-stop" } satisfies RunnerStop);
  }

  /**
   * Looks at the run until `look` says it has seen enough, the run ends or is stopped, or `until`
   * passes. Before each look (after it, with `lookFirst`) it waits for the feed's next read of the
   * live files (every 2 s; a poll's time before the run has a feed) or the run's end, then runs `afterRead`.
   */
  async poll(look: () => boolean | Promise<boolean>, opts: { lookFirst?: boolean; until?: number; afterRead?: () => Promise<void> } = {}): Promise<void> {
    const until = opts.until ?? Infinity;
    while (!this.finished && this.deps.now() < until && !this.abort.signal.aborted) {
      if (opts.lookFirst && (await look())) return;
      // A feed past its last read answers next() at once: sleep then, or this loop would spin on
      // resolved promises and starve the run's own I/O until it settles.
      await Promise.race([this.feed && !this.feed.final ? this.feed.next(this.abort.signal) : this.deps.sleep(POLL_MS, this.abort.signal), this.settled]);
      await opts.afterRead?.();
      if (!opts.lookFirst && (await look())) return;
    }
  }

  /** The live files now (a fresh read, or the last one if that fails); nothing before the run has a feed. */
  readLive(): Promise<LiveSnapshot> {
    const feed = this.feed;
    return feed ? feed.refresh().catch(() => feed.snapshot()) : Promise.resolve(new Map());
  }

  /** The run's result once it is over (undefined if it failed); the user's Ctrl-C no longer reaches this segment after it. */
  async result(): Promise<RunResult | undefined> {
    const result = await this.run.catch(() => undefined);
    this.detach();
    return result;
  }
}

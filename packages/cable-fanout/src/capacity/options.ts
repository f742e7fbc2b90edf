// What a capacity search is asked (CapacityOptions), given (CapacityDeps) and answers
// (CapacityResult, each run's SegmentRecord, the exit codes).
import type { Store } from "cable-worker/contract";
import type { Backend } from "../backend.js";
import type { RunDeps, RunOptions } from "../run/run-options.js";
import type { Slo } from "../slo.js";
import type { Axis, StairOptions } from "./plan.js";
import type { Answer, Attempt } from "./search.js";

export interface CapacityOptions extends Omit<RunOptions, "maxDurationMs" | "baseline" | "regressionThreshold" | "title" | "outDir"> {
  outDir: string;
  slos: Slo[];
  stair: StairOptions;
  /** What the stair steps (default users). By rate, the levels are messages a second from `users` users. */
  vary?: Axis;
  /** By rate: the users held at every level, all regions together. */
  users?: number;
  /** After a confirmed breach, search between the last level held and the first that broke, down to this resolution. */
  refine?: number;
  minCapacity?: number;
  /** A Prometheus text endpoint of the server, scraped during the search (`--server-metrics`). */
  serverMetricsUrl?: string;
}

export interface CapacityDeps {
  backend: Backend;
  /** The store the region's tasks write their live periods to (a directory locally, the region's bucket on AWS). */
  liveStore: (region: string) => Store;
  now: () => number;
  sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  log: (line: string) => void;
  /** Ctrl-C: ends the search at once, with what was judged so far. */
  abort: AbortController;
  progress: RunDeps["progress"];
  /** Asks before a costly first segment (RunDeps.ask). */
  ask?: RunDeps["ask"];
  /** --live: one page for the whole search, each run drawn on it in turn (RunDeps.livePage). */
  livePage?: RunDeps["livePage"];
}

export interface CapacityResult {
  answer: Answer;
  searchDir: string;
  jsonFile: string;
  markdownFile: string;
  exitCode: number;
  runs: SegmentRecord[];
}

export interface SegmentRecord {
  runId: string;
  attempt: Attempt;
  /** The levels the run planned (by rate, one). */
  levels: number[];
  /** Users every task started and ended in that run, from its ended.live (every user ends once). */
  users: { created: number; completed: number; failed: number } | null;
  stoppedEarly: boolean;
}

/** Capacity search exit codes, beside `run`'s (EXIT in collect.ts). */
export const CAPACITY_EXIT = { ok: 0, belowMinimum: 1, usage: 2, internal: 3, incomplete: 4, generatorBound: 6 } as const;

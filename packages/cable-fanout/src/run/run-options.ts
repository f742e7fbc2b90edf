// What a run is asked (RunOptions, as the CLI and the capacity search build it), what it is given
// (RunDeps), what it answers (RunResult), and the overrides its tasks get.
import type { LivePage, LivePageAddress } from "../live/page.js";
import type { Arch, Backend, StartOptions, SubnetKind } from "../backend.js";
import type { AbortCondition } from "../live/abort.js";
import type { LiveFeed } from "../live/feed.js";
import type { Progress } from "../progress.js";
import type { CollectResult } from "./collect.js";
import type { HistoryOptions } from "./history.js";

type Json = Record<string, unknown>;

/** The task settings (spot, size, secrets) are StartOptions' own: the run hands them on to every region. */
export interface RunOptions extends Pick<StartOptions, "spot" | "spotOnly" | "cpu" | "memory" | "secretRefs" | "secretValues"> {
  scenarioFile: string;
  /** --bundle-root: the folder every file the scenario names must lie in (default: the scenario's project, bundle-root.ts). */
  bundleRoot?: string;
  regions: string[];
  count: number;
  /**
   * --arch: the architecture the run expects the stacks to run (the backend refuses a region whose
   * stack runs another, before any task starts); absent: each stack's own (RegionFacts.arch).
   */
  arch?: Arch;
  /**
   * --subnets: the tasks' subnets where no stack says (`plan` with no region reached): private ones
   * reach the target through a NAT gateway. A reached stack's RegionFacts.publicIp wins (a
   * contradicting --subnets is a preflight warning).
   */
  subnets?: SubnetKind;
  outDir: string;
  overrides?: Json;
  target?: string;
  variables?: Json;
  /** Artillery's --insecure: `config.tls.rejectUnauthorized: false` in every task. */
  insecure?: boolean;
  environment?: string;
  /**
   * --env: plain variables every task gets. The plan checks them, with the secrets, against what
   * the scenario reads (task-env.ts); the backend gives them to the tasks (its `taskEnv` option).
   */
  taskEnv?: Record<string, string>;
  maxDurationMs?: number;
  /** How far after the go marker the common start lies. */
  startDelayMs?: number;
  startTimeoutMs?: number;
  /** --min-ready: the share of all tasks (count × regions) that must be ready for the run to start; default by size (barrier.ts defaultMinReadyPct). */
  minReadyPct?: number;
  /** --ready-timeout: how long the barrier waits for them. */
  readyTimeoutMs?: number;
  /** --heartbeat-timeout: tasks stop themselves when the runner's heartbeat is this old. */
  heartbeatTimeoutMs?: number;
  /** --run-id: chosen by the caller instead of generated. */
  runId?: string;
  baseline?: string;
  regressionThreshold?: number;
  /** --baseline-any: compare with a baseline of another scenario or target (the gate refuses one otherwise). */
  baselineAny?: boolean;
  title?: string;
  /** --history: keep the run, and judge it against the band of its comparable runs (run/history.ts). */
  history?: HistoryOptions;
  /** Where the local backend keeps its store, recorded for `collect` and `stop`. */
  store?: string;
  /** --abort-on: stop every task once one of these holds on the merged live figures. */
  abortOn?: AbortCondition[];
  /** --server-metrics: the server's Prometheus endpoint, scraped while the run goes on and charted in the report. */
  serverMetricsUrl?: string;
  /** false: no live line per region and period (the capacity search prints its own progress). */
  liveLines?: boolean;
  /** --live[=PORT] and --live-host: the live page's address (follow-live.ts); absent: no page. */
  live?: LivePageAddress;
  /**
   * --detach: return once the go is given, leaving the tasks to run to their end bounded by
   * --max-duration alone (their manifest has no heartbeat to watch); `attach` and `collect` take it up.
   */
  detach?: boolean;
  /** --max-cost: refuse a run whose estimate is higher (dollars). */
  maxCostUsd?: number;
  /** --yes: start a run above the asking threshold without asking. */
  yes?: boolean;
  /**
   * "block" (default): print the plan and guard the cost; "quiet": neither (a comparison's or a
   * capacity search's later runs, once the first has been shown and allowed).
   */
  plan?: "block" | "quiet";
  /** How many runs like this one the command makes (a comparison's servers): the guard judges them all. */
  runsInAll?: number;
}


export interface RunDeps {
  backend: Backend;
  now: () => number;
  /** Resolves after `ms`, or early when `signal` aborts. */
  sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Created before the tasks start; `startAt` is known once the barrier lets the run go. */
  progress: (clock: { startAt: () => number | undefined; expectedMs: number | undefined }) => Progress | Promise<Progress>;
  log: (line: string) => void;
  /** Aborted by Ctrl-C; --max-duration aborts it too. */
  abort: AbortController;
  newRunId?: () => string;
  /** A live page the caller keeps across its runs (a capacity search's): this run draws on it and leaves it open. */
  livePage?: LivePage;
  /** Handed the run's live feed once the run has an id (the capacity search judges its steps from it). */
  onFeed?: (feed: LiveFeed) => void;
  /** Asks the person at the terminal a yes/no question; absent when nobody can answer (CI, no TTY). */
  ask?: (question: string) => Promise<boolean>;
}

export interface RunResult extends CollectResult {
  runId: string;
  runDir: string;
  /** --detach: the go was given and the runner left the run; nothing was collected. */
  detached?: boolean;
}

/** `--target` and `-v` become overrides, as Artillery's own flags would set them. */
export function effectiveOverrides(options: Pick<RunOptions, "overrides" | "target" | "variables" | "insecure">): Json | undefined {
  const overrides: Json = { ...options.overrides };
  const config: Json = { ...(overrides.config as Json | undefined) };
  if (options.target) config.target = options.target;
  if (options.insecure) config.tls = { ...(config.tls as Json | undefined), rejectUnauthorized: false };
  if (options.variables) config.variables = { ...(config.variables as Json | undefined), ...options.variables };
  if (Object.keys(config).length > 0) overrides.config = config;
  return Object.keys(overrides).length > 0 ? overrides : undefined;
}

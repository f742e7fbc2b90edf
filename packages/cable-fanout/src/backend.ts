// The run loop drives regions through this interface; `aws/` (ECS + S3 + CloudFormation) and
// `local/` (child processes + a directory) implement it, so both produce the same results tree.
import type { TaskSlice, TaskStatus, Store } from "cable-worker/contract";
import type { Bundle } from "./run/bundle.js";
import type { BackendKind } from "./region-names.js";

export type TaskPhase = "pending" | "running" | "stopped";

export interface TaskSnapshot {
  /** What describe and stop take: the ECS task ARN, or `<region>/<taskId>` locally. */
  ref: string;
  /** The task's results folder: the ECS task id, or `task-<n>` locally. */
  taskId: string;
  phase: TaskPhase;
  /** The worker's exit code once stopped; null when it never ran or was killed. */
  exitCode?: number | null;
  /** ECS stop code (SpotInterruption, TaskFailedToStart, EssentialContainerExited, UserInitiated…). */
  stopCode?: string;
  /** Why it stopped, as ECS or the process tells it (e.g. CannotPullContainerError: …). */
  stoppedReason?: string;
  /** Where its output is: a CloudWatch log group and stream, or a local file. */
  log?: string;
  /** Fargate bills from the image pull to the stop (epoch ms of each), on the capacity the task ran on; absent locally. */
  billing?: { pullStartedAt?: number; stoppedAt?: number; capacity: "FARGATE" | "FARGATE_SPOT" };
}

export interface StartOptions {
  /** Run on FARGATE_SPOT; the tasks Spot cannot place fall back to FARGATE unless `spotOnly`. */
  spot: boolean;
  spotOnly?: boolean;
  /** Task size overrides (CPU units, MiB). */
  cpu?: number;
  memory?: number;
  /** Env var → secret reference (SSM parameter name/ARN or Secrets Manager ARN); names only, resolved by the worker. */
  secretRefs: Record<string, string>;
  /** Local backend only: env vars passed straight to the child processes (values; never logged). */
  secretValues: Record<string, string>;
  /** --env: plain (non-secret) variables for every task, over the backend's own (its `taskEnv` option); names may be printed, values never are. */
  env?: Record<string, string>;
  /**
   * The region's tasks take slices `first`, `first + 1`, … of `total` (CABLE_SLICE), in the order
   * they are started; absent when the run has no sequence payload to slice.
   */
  slices?: { first: number; total: number };
  abort: AbortSignal;
  /**
   * --detach: the tasks must outlive this runner. Fargate tasks do anyway; local workers are started
   * in a session of their own (a Ctrl-C or a closed terminal does not reach them) and do not keep
   * the runner's process alive.
   */
  detached?: boolean;
}

/** A run with tasks still running in a region, as `status` lists it. */
export interface RunningRun {
  runId: string;
  running: number;
  /** When its first running task was created (epoch ms), if the backend says. */
  since?: number;
}

/** The slice of the region's task number `slot` (0-based, in the order of starting). */
export function taskSlice(slices: NonNullable<StartOptions["slices"]>, slot: number): TaskSlice {
  return { index: slices.first + slot, count: slices.total };
}

export interface Preflight {
  count: number;
  spot: boolean;
  spotOnly?: boolean;
  /** Task CPU units and memory (MiB), when overridden (else the task definition's). */
  cpu?: number;
  memory?: number;
  secretRefs: Record<string, string>;
  /** --env, over the backend's own: its size in RunTask's overrides is checked. */
  env?: Record<string, string>;
}

/** One of a region's Fargate vCPU quotas: its value (applied, or AWS's default for one never adjusted) and the vCPUs in use now. */
export interface QuotaFact {
  kind: "on-demand" | "spot";
  /** The Service Quotas code. */
  code: string;
  /** undefined when neither the applied nor the default value could be read. */
  quota?: number;
  from: "applied" | "default" | "unknown";
  /** vCPUs running now, account-wide (CloudWatch AWS/Usage); undefined when it could not be read. */
  inUse?: number;
  /** Why a figure is missing. */
  unread?: string;
}

/** The CPU architecture a stack's tasks run on (its `-c arch=` context; ECS's X86_64 and ARM64). */
export type Arch = "x86_64" | "arm64";

/**
 * --subnets: where the tasks are taken to run when no stack says (`plan` without a reachable
 * region): public subnets with a public IP each, or private ones reaching the target through a NAT
 * gateway. A reached stack says it itself (RegionFacts.publicIp).
 */
export type SubnetKind = "public" | "private";

/**
 * What the run expects of every region's stack, which RunTask cannot change (--arch, --subnets):
 * the backend's preflight holds each stack to it. Absent: whatever the stack has.
 */
export interface StackExpectations {
  /** --arch: a stack of another architecture is a problem (no task starts anywhere). */
  arch?: Arch;
  /** --subnets: a stack whose subnets are the other kind is a warning (the stack's are what the tasks use). */
  subnets?: SubnetKind;
}

/** What a region told the preflight, for the plan: the tasks' size, its quotas, its free addresses. */
export interface RegionFacts {
  /** The architecture of the stack's task definition; undefined for stacks deployed before it was an output. */
  arch?: Arch;
  /** Task CPU units and memory (MiB) the tasks take: the override, else the stack's; undefined when neither says. */
  cpu?: number;
  memoryMiB?: number;
  quotas: QuotaFact[];
  /** Free addresses in the task subnets (each task holds one). */
  freeAddresses?: number;
  /** Tasks take a public IPv4 address (billed by the hour). */
  publicIp: boolean;
  /** What could not be checked, one line each. */
  unchecked: string[];
}

export interface PreflightResult {
  /** Reasons not to start any task, one line each naming the region. */
  problems: string[];
  /** What the user should know before the tasks start (Spot quota short, the rest on-demand…). */
  warnings: string[];
  facts: RegionFacts;
}

/** Local processes: no quota, no address, no bill. */
export const LOCAL_PREFLIGHT: PreflightResult = Object.freeze({ problems: [], warnings: [], facts: { quotas: [], publicIp: false, unchecked: [] } });

export interface StartOutcome {
  started: TaskSnapshot[];
  /** One line per task that could not be started, after retries. */
  failures: string[];
  /** What the user should know that is no failure (tasks on FARGATE because Spot had no capacity). */
  notices?: string[];
}

/** What collect downloaded of one region (store.ts downloadRegionResults, the same for every backend). */
export interface DownloadedResults {
  /** Files written under the region's folder, relative to it. */
  files: string[];
  statuses: TaskStatus[];
}

/** One region, found and ready. */
export interface Region {
  readonly name: string;
  /** Where the bundle and results live (`s3://bucket` or a directory), for messages. */
  readonly location: string;
  /** The region's bucket (or directory): the bundle, the markers, the results. */
  readonly store: Store;
  /** The store's clock (S3's Date header), epoch ms: the common start is set by it, not by this machine's. */
  serverTime(): Promise<number>;
  /** Problems to fix before any task starts (missing secrets, too little Fargate quota or addresses), and what the plan shows of the region. */
  preflight(plan: Preflight): Promise<PreflightResult>;
  uploadBundle(runId: string, bundle: Bundle): Promise<void>;
  startTasks(runId: string, count: number, options: StartOptions): Promise<StartOutcome>;
  describeTasks(refs: string[]): Promise<TaskSnapshot[]>;
  stopTasks(refs: string[], reason: string): Promise<void>;
  /** Tasks of the run that have not stopped, found without the run's own bookkeeping (for `stop <runId>`). */
  findRunningTasks(runId: string): Promise<string[]>;
  /** Every run with tasks still running here (for `status`); absent where the backend cannot list them. */
  runsInProgress?(): Promise<RunningRun[]>;
}

export interface Timing {
  /** How far after the go marker the common start lies: every ready task must see the marker by then. */
  startDelayMs: number;
  /** A region whose tasks are not all running this long after RunTask is marked failed. */
  startTimeoutMs: number;
  /** Added to start delay + phases for the default --max-duration. */
  marginMs: number;
  /** DescribeTasks interval. */
  pollMs: number;
  /** After StopTask, how long to wait for tasks to stop (they upload partial results). */
  stopGraceMs: number;
  /** Default --ready-timeout: how long the barrier waits for tasks to be ready (image pulled, Artillery loaded). */
  readyTimeoutMs: number;
  /** How often a waiting task looks for the go marker. */
  goPollMs: number;
  /** How often the runner writes its heartbeat. */
  heartbeatMs: number;
  /** Default --heartbeat-timeout: a task whose runner's heartbeat is this old stops itself. */
  heartbeatStaleMs: number;
}

export interface Backend {
  readonly kind: BackendKind;
  readonly timing: Timing;
  /** Finds a region's resources; throws FanoutInputError naming the region and the fix when it is not there. */
  openRegion(name: string): Promise<Region>;
}

// The embedded default: each task is the worker's entrypoint (cable-worker's dist/main.js) as
// a child process of this machine, and a directory stands in for each region's bucket.
import { type ChildProcess, spawn } from "node:child_process";
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, readdirSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { formatSlice, SECRET_ENV, SLICE_ENV } from "cable-worker/contract";
import { LocalStore } from "cable-worker/local-store";
import { type Backend, type Preflight, LOCAL_PREFLIGHT, type PreflightResult, type Region, type RunningRun, type StartOptions, type StartOutcome, type TaskSnapshot, type Timing, taskSlice } from "../backend.js";
import type { Bundle } from "../run/bundle.js";
import { FanoutInputError } from "../errors.js";
import { checkedRegionName } from "../region-names.js";
import { uploadBundle } from "../store.js";

const LOCAL_TIMING: Timing = {
  startDelayMs: 2_000,
  startTimeoutMs: 60_000,
  readyTimeoutMs: 60_000,
  marginMs: 120_000,
  pollMs: 500,
  stopGraceMs: 20_000,
  goPollMs: 250,
  heartbeatMs: 1_000,
  heartbeatStaleMs: 30_000,
};

function workerEntrypoint(): string {
  return require.resolve("cable-worker/main");
}

export interface LocalBackendOptions {
  /** The directory standing in for every region's bucket (each region's results are under its own name anyway). */
  storeDir: string;
  timing?: Partial<Timing>;
  /** The environment the workers inherit (default: this process's). */
  env?: NodeJS.ProcessEnv;
  /** --env: plain variables every worker gets, over what it inherits. */
  taskEnv?: Record<string, string>;
}

export class LocalBackend implements Backend {
  readonly kind = "local";
  readonly timing: Timing;

  constructor(private readonly options: LocalBackendOptions) {
    this.timing = { ...LOCAL_TIMING, ...options.timing };
  }

  async openRegion(name: string): Promise<Region> {
    checkedRegionName(name, this.kind);
    const worker = workerEntrypoint();
    if (!existsSync(worker)) throw new FanoutInputError(`${worker} is missing: build the worker first (npm run build -w cable-worker)`);
    return new LocalRegion(name, path.resolve(this.options.storeDir), worker, this.options.env ?? process.env, this.options.taskEnv ?? {});
  }

  /** The regions any run in this store has started tasks in (`pids/<runId>/<region>/`), for `status`. */
  knownRegions(): string[] {
    const pids = path.join(path.resolve(this.options.storeDir), "pids");
    if (!existsSync(pids)) return [];
    const regions = new Set<string>();
    for (const runId of newestRuns(pids)) for (const entry of readdirSync(path.join(pids, runId), { withFileTypes: true })) if (entry.isDirectory()) regions.add(entry.name);
    return [...regions].sort();
  }
}

/**
 * The runs a store's pids/ holds, newest first (generated run ids sort by time; a folder's mtime
 * orders the others), at most MAX_RUNS_LISTED: an old store's history is not worth a /proc read each.
 */
function newestRuns(pidsDir: string): string[] {
  // Folders only: a stray file there (an editor's, the desktop's) is no run.
  const runs = readdirSync(pidsDir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map(({ name: runId }) => ({ runId, at: statSync(path.join(pidsDir, runId)).mtimeMs }));
  return runs.sort((a, b) => b.at - a.at).slice(0, MAX_RUNS_LISTED).map((r) => r.runId);
}

/** The most runs of a local store `status` looks at. */
const MAX_RUNS_LISTED = 200;

interface LocalTask {
  child: ChildProcess;
  snapshot: TaskSnapshot;
}

class LocalRegion implements Region {
  readonly store: LocalStore;
  private readonly tasks = new Map<string, LocalTask>();

  constructor(
    readonly name: string,
    private readonly storeDir: string,
    private readonly worker: string,
    private readonly env: NodeJS.ProcessEnv,
    private readonly taskEnv: Record<string, string>,
  ) {
    this.store = new LocalStore(storeDir);
  }

  get location(): string {
    return this.storeDir;
  }

  /** Every local task shares this machine's clock. */
  async serverTime(): Promise<number> {
    return Date.now();
  }

  /** Local secrets come from this environment (checked when parsed); there is no quota. */
  async preflight(_plan: Preflight): Promise<PreflightResult> {
    return LOCAL_PREFLIGHT;
  }

  uploadBundle(runId: string, bundle: Bundle): Promise<void> {
    return uploadBundle(this.store, runId, bundle);
  }

  async startTasks(runId: string, count: number, options: StartOptions): Promise<StartOutcome> {
    if (options.spot || options.cpu !== undefined || options.memory !== undefined) {
      throw new FanoutInputError("--spot, --cpu and --memory apply to Fargate tasks, not to --local");
    }
    const pidDir = this.pidDir(runId);
    const logDir = path.join(this.storeDir, "logs", runId, this.name);
    mkdirSync(pidDir, { recursive: true });
    mkdirSync(logDir, { recursive: true });
    const inherited = Object.fromEntries(Object.entries(this.env).filter(([k]) => !k.startsWith("CABLE_")));
    const started: TaskSnapshot[] = [];
    for (let n = 1; n <= count && !options.abort.aborted; n++) {
      const taskId = `task-${n}`;
      const ref = `${runId}/${taskId}`;
      const logFile = path.join(logDir, `${taskId}.log`);
      const out = openSync(logFile, "w");
      const child = spawn(process.execPath, [this.worker], {
        env: {
          ...inherited,
          ...this.taskEnv,
          ...options.env,
          ...options.secretValues,
          ARTILLERY_DISABLE_TELEMETRY: "true",
          CABLE_RUN_ID: runId,
          CABLE_REGION: this.name,
          CABLE_TASK_ID: taskId,
          CABLE_STORE: this.storeDir,
          CABLE_WORK_DIR: path.join(this.storeDir, "work"),
          ...(Object.keys(options.secretRefs).length > 0 ? { CABLE_SECRETS: JSON.stringify(options.secretRefs) } : {}),
          // The values are this machine's own and in the workers' environment anyway; the names tell the worker to redact them.
          ...(Object.keys(options.secretValues).length > 0 ? { [SECRET_ENV]: Object.keys(options.secretValues).join(",") } : {}),
          ...(options.slices ? { [SLICE_ENV]: formatSlice(taskSlice(options.slices, n - 1)) } : {}),
        },
        stdio: ["ignore", out, out],
        // A detached run's workers outlive this runner: their own session (no Ctrl-C or SIGHUP of
        // this terminal reaches them), and no hold on this process's exit.
        ...(options.detached ? { detached: true } : {}),
      });
      closeSync(out);
      if (options.detached) child.unref();
      const snapshot: TaskSnapshot = { ref, taskId, phase: "running", log: logFile };
      child.once("error", (err) => Object.assign(snapshot, { phase: "stopped", exitCode: null, stoppedReason: `could not start: ${err.message}` }));
      child.once("exit", (code, signal) =>
        Object.assign(snapshot, { phase: "stopped", exitCode: code, stoppedReason: signal ? `killed by ${signal}` : `exited with code ${code}` }),
      );
      if (child.pid !== undefined) writeFileSync(path.join(pidDir, `${taskId}.pid`), String(child.pid));
      this.tasks.set(ref, { child, snapshot });
      started.push({ ...snapshot });
    }
    return { started, failures: [] };
  }

  async describeTasks(refs: string[]): Promise<TaskSnapshot[]> {
    return refs.map((ref) => {
      const own = this.tasks.get(ref);
      if (own) return { ...own.snapshot };
      const { runId, taskId } = parseRef(ref);
      return { ref, taskId, phase: this.liveWorkerPid(runId, taskId) === undefined ? "stopped" : "running" };
    });
  }

  async stopTasks(refs: string[]): Promise<void> {
    for (const ref of refs) {
      const own = this.tasks.get(ref);
      if (own) {
        if (own.snapshot.phase !== "stopped") own.child.kill("SIGTERM");
        continue;
      }
      // A worker of an earlier `run` (from `stop <runId>`): by pid, once it is proven to be that worker.
      const { runId, taskId } = parseRef(ref);
      const pid = this.liveWorkerPid(runId, taskId);
      if (pid !== undefined) process.kill(pid, "SIGTERM");
    }
  }

  async findRunningTasks(runId: string): Promise<string[]> {
    const dir = this.pidDir(runId);
    if (!existsSync(dir)) return [];
    return readdirSync(dir)
      .filter((f) => f.endsWith(".pid"))
      .map((f) => f.slice(0, -".pid".length))
      .filter((taskId) => this.liveWorkerPid(runId, taskId) !== undefined)
      .map((taskId) => `${runId}/${taskId}`);
  }


  async runsInProgress(): Promise<RunningRun[]> {
    const pids = path.join(this.storeDir, "pids");
    if (!existsSync(pids)) return [];
    const runs: RunningRun[] = [];
    for (const runId of newestRuns(pids)) {
      const dir = this.pidDir(runId);
      if (!existsSync(dir)) continue;
      const live = readdirSync(dir).filter((f) => f.endsWith(".pid") && this.liveWorkerPid(runId, f.slice(0, -".pid".length)) !== undefined);
      if (live.length === 0) continue;
      runs.push({ runId, running: live.length, since: Math.min(...live.map((f) => statSync(path.join(dir, f)).mtimeMs)) });
    }
    return runs;
  }

  private pidDir(runId: string): string {
    return path.join(this.storeDir, "pids", runId, this.name);
  }

  /** The pid, if that process is alive and is this worker of this run (pids get reused). */
  private liveWorkerPid(runId: string, taskId: string): number | undefined {
    try {
      const pid = Number(readFileSync(path.join(this.pidDir(runId), `${taskId}.pid`), "utf8"));
      const environ = readFileSync(`/proc/${pid}/environ`, "utf8").split("\0");
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8");
      return cmdline.includes(this.worker) && environ.includes(`CABLE_RUN_ID=${runId}`) && environ.includes(`CABLE_TASK_ID=${taskId}`) ? pid : undefined;
    } catch {
      return undefined;
    }
  }
}

/** Local task refs are `<runId>/<taskId>` (the region is the Region's own). */
function parseRef(ref: string): { runId: string; taskId: string } {
  const slash = ref.indexOf("/");
  return { runId: ref.slice(0, slash), taskId: ref.slice(slash + 1) };
}

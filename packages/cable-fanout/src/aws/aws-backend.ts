// Fargate tasks in each region's CableLoadtest-<region> stack; the bundle and results in its bucket.
import { CloudFormationClient } from "@aws-sdk/client-cloudformation";
import { CloudWatchClient } from "@aws-sdk/client-cloudwatch";
import { EC2Client } from "@aws-sdk/client-ec2";
import { DescribeTasksCommand, ECSClient, type Task, RunTaskCommand, StopTaskCommand, paginateListTasks, type RunTaskCommandInput } from "@aws-sdk/client-ecs";
import { ListObjectsV2Command, S3Client } from "@aws-sdk/client-s3";
import { SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import { ServiceQuotasClient } from "@aws-sdk/client-service-quotas";
import { SSMClient } from "@aws-sdk/client-ssm";
import { formatSlice, RUNS_PREFIX } from "cable-worker/contract";
import { S3Store } from "cable-worker/s3-store";
import { type Backend, type Preflight, type PreflightResult, type Region, type RunningRun, type StackExpectations, type StartOptions, type StartOutcome, type TaskSnapshot, type Timing, taskSlice } from "../backend.js";
import type { Bundle } from "../run/bundle.js";
import pLimit from "p-limit";
import { checkedRegionName } from "../region-names.js";
import { isCapacityFailure, isThrottling, startInBatches, type RetryDeps } from "../retry.js";
import { type Backoff, backoffDelay, RUN_TASK_MAX_COUNT, SPOT_BACKOFF, STOP_TASK_BACKOFF } from "../schedule.js";
import { uploadBundle } from "../store.js";
import { describeRegionStack, type RegionStack } from "./discovery.js";
import { containerEnvironment, overridesSizeProblem, runTaskOverrides } from "./overrides-size.js";
import { checkSecrets, judgeQuotas, judgeStack, readQuotaFacts, readFreeAddresses } from "./preflight.js";

/**
 * Fargate needs a minute or two to pull a large image: the ready barrier waits up to 10 minutes for
 * it, then the common start lies 10 s after the go marker (tasks look for it every second).
 */
export const AWS_TIMING: Timing = {
  startDelayMs: 10_000,
  startTimeoutMs: 600_000,
  readyTimeoutMs: 600_000,
  marginMs: 600_000,
  pollMs: 10_000,
  stopGraceMs: 120_000,
  goPollMs: 1_000,
  heartbeatMs: 15_000,
  heartbeatStaleMs: 90_000,
};

type Capacity = "FARGATE" | "FARGATE_SPOT";

/** The most running tasks `status` describes in a region (ListTasks pages of 100). */
const STATUS_MAX_TASKS = 5_000;

/** DescribeTasks takes at most 100 tasks per call. */
const DESCRIBE_MAX = 100;

/**
 * ECS meters StopTask per account and region with a token bucket (Amazon ECS Developer Guide,
 * "Request throttling for the Amazon ECS API"); at 100–300 ms a call, 10 in flight stay under its
 * rate while 500 tasks are stopped in seconds, and what is throttled anyway is retried.
 */
export const STOP_TASKS_IN_FLIGHT = 10;

export interface AwsClients {
  cloudFormation: CloudFormationClient;
  ecs: ECSClient;
  s3: S3Client;
  ssm: SSMClient;
  secretsManager: SecretsManagerClient;
  serviceQuotas: ServiceQuotasClient;
  cloudWatch: CloudWatchClient;
  ec2: EC2Client;
}

export interface AwsBackendOptions {
  timing?: Partial<Timing>;
  /** Per-region SDK clients; by default from the environment's credentials (AWS_ENDPOINT_URL honoured). */
  clients?: (region: string) => AwsClients;
  retry: Omit<RetryDeps, "abort">;
  /** --env: plain variables every task of every region gets in its RunTask overrides (checked against their size in the preflight). */
  taskEnv?: Record<string, string>;
  /** --arch and --subnets: what every region's stack is held to in the preflight (judgeStack). */
  expected?: StackExpectations;
}

export const defaultClients = (region: string): AwsClients => ({
  cloudFormation: new CloudFormationClient({ region }),
  ecs: new ECSClient({ region }),
  s3: new S3Client({ region }),
  ssm: new SSMClient({ region }),
  secretsManager: new SecretsManagerClient({ region }),
  serviceQuotas: new ServiceQuotasClient({ region }),
  cloudWatch: new CloudWatchClient({ region }),
  ec2: new EC2Client({ region }),
});

export class AwsBackend implements Backend {
  readonly kind = "aws";
  readonly timing: Timing;

  constructor(private readonly options: AwsBackendOptions) {
    this.timing = { ...AWS_TIMING, ...options.timing };
  }

  async openRegion(name: string): Promise<Region> {
    const clients = (this.options.clients ?? defaultClients)(checkedRegionName(name, this.kind));
    const stack = await describeRegionStack(clients.cloudFormation, name);
    return new AwsRegion(stack, clients, this.options.retry, this.options.taskEnv, this.options.expected);
  }
}

export class AwsRegion implements Region {
  readonly store: S3Store;

  constructor(
    private readonly stack: RegionStack,
    private readonly clients: AwsClients,
    private readonly retry: Omit<RetryDeps, "abort">,
    /** --env, given to every task this region starts. */
    private readonly taskEnv: Record<string, string> = {},
    /** --arch and --subnets, held against the stack in the preflight. */
    private readonly expected: StackExpectations = {},
  ) {
    this.store = new S3Store(clients.s3, stack.bucketName);
  }

  /** S3's `Date` response header (1 s resolution): the clock every task of the run agrees on. */
  async serverTime(): Promise<number> {
    let date: string | undefined;
    const command = new ListObjectsV2Command({ Bucket: this.stack.bucketName, Prefix: `${RUNS_PREFIX}/`, MaxKeys: 1 });
    command.middlewareStack.add(
      (next) => async (args) => {
        const result = await next(args);
        const headers = (result.response as { headers?: Record<string, string> }).headers;
        date = headers?.date ?? headers?.Date;
        return result;
      },
      { step: "deserialize", name: "cableServerDate" },
    );
    await this.clients.s3.send(command);
    const ms = date ? Date.parse(date) : NaN;
    if (!Number.isFinite(ms)) throw new Error(`S3 in ${this.name} sent no Date header`);
    return ms;
  }

  async preflight(plan: Preflight): Promise<PreflightResult> {
    const cpu = plan.cpu ?? this.stack.taskCpu;
    const memoryMiB = plan.memory ?? this.stack.taskMemory;
    const [secrets, quotas, addresses] = await Promise.all([
      checkSecrets(this.clients, this.name, plan.secretRefs, this.retry.log),
      readQuotaFacts(this.clients),
      readFreeAddresses(this.clients.ec2, this.stack.subnetIds),
    ]);
    const unchecked = quotas.flatMap((q) => (q.unread ? [`${q.kind === "spot" ? "Fargate Spot" : "Fargate On-Demand"} vCPU quota: ${q.unread}`] : []));
    const capacity = plan.spotOnly ? "spot-only" : plan.spot ? "spot" : "on-demand";
    const quota = cpu === undefined ? { problems: [], warnings: [] } : judgeQuotas(this.name, quotas, { tasks: plan.count, cpu, capacity });
    if (cpu === undefined) unchecked.push("the task's CPU (the stack gives none, and no --cpu): the quota was not compared");
    const stack = judgeStack(this.name, this.stack, this.expected);
    const problems = [...stack.problems, ...secrets, ...quota.problems];
    const oversize = overridesSizeProblem({ containerName: this.stack.containerName, secretRefs: plan.secretRefs, env: { ...this.taskEnv, ...plan.env }, cpu: plan.cpu, memory: plan.memory });
    if (oversize) problems.push(`region ${this.name}: ${oversize}`);
    if (addresses.free === undefined) unchecked.push(`free addresses in the task subnets: ${addresses.error}`);
    else if (addresses.free < plan.count) {
      problems.push(`region ${this.name}: ${plan.count} task(s) need an address each, and the task subnets (${this.stack.subnetIds.join(", ")}) have ${addresses.free} free; run fewer tasks or give the stack larger subnets`);
    }
    return {
      problems,
      warnings: [...stack.warnings, ...quota.warnings],
      facts: { ...(this.stack.taskArch ? { arch: this.stack.taskArch } : {}), cpu, memoryMiB, quotas, ...(addresses.free !== undefined ? { freeAddresses: addresses.free } : {}), publicIp: this.stack.assignPublicIp === "ENABLED", unchecked },
    };
  }

  get name(): string {
    return this.stack.region;
  }

  get location(): string {
    return this.store.location;
  }

  uploadBundle(runId: string, bundle: Bundle): Promise<void> {
    return uploadBundle(this.store, runId, bundle);
  }

  /**
   * On demand, or on Spot with a fallback: Spot is tried briefly, and the tasks it could not place
   * for want of capacity start on FARGATE (a notice says how many), unless `spotOnly`. A call's
   * overrides are shared by every task it starts, so tasks with slices of their own start one per call.
   */
  async startTasks(runId: string, count: number, options: StartOptions): Promise<StartOutcome> {
    const start = (slots: number[], capacity: Capacity, backoff?: Backoff) =>
      startInBatches(
        slots,
        options.slices ? 1 : RUN_TASK_MAX_COUNT,
        async (batch) => {
          const out = await this.clients.ecs.send(new RunTaskCommand(this.runTaskInput(runId, batch, options, capacity)));
          return {
            started: (out.tasks ?? []).map((t) => this.snapshot(t)),
            failures: (out.failures ?? []).map((f) => [f.reason, f.detail].filter(Boolean).join(": ") || "unknown failure"),
          };
        },
        { ...this.retry, abort: options.abort, ...(backoff ? { backoff } : {}) },
      );
    const slots = Array.from({ length: count }, (_, slot) => slot);
    if (!options.spot) return start(slots, "FARGATE");
    const spot = await start(slots, "FARGATE_SPOT", options.spotOnly ? undefined : SPOT_BACKOFF);
    const missing = spot.unstarted;
    if (missing.length === 0 || options.spotOnly || options.abort.aborted || !spot.reasons.every(isCapacityFailure)) return spot;
    this.retry.log(`${this.name}: Fargate Spot placed ${spot.started.length} of ${count} task(s); starting ${missing.length} on FARGATE (--spot-only would not)`);
    const onDemand = await start(missing, "FARGATE");
    return {
      started: [...spot.started, ...onDemand.started],
      failures: onDemand.failures,
      notices: onDemand.started.length > 0 ? [`${onDemand.started.length} of ${count} task(s) ran on FARGATE (on-demand), not Spot: ${spot.reasons.join("; ")}`] : [],
    };
  }

  /** One RunTask call for the region's tasks number `slots`: with slices, a single task. */
  runTaskInput(runId: string, slots: number[], options: StartOptions, capacity: Capacity = options.spot ? "FARGATE_SPOT" : "FARGATE"): RunTaskCommandInput {
    if (options.slices && slots.length !== 1) throw new Error(`a task's slice is its own: RunTask with slices starts one task, not ${slots.length}`);
    // Names of parameters/secrets only (the worker resolves them with its task role); --env's plain values.
    const environment = containerEnvironment({
      runId,
      ...(options.slices ? { slice: formatSlice(taskSlice(options.slices, slots[0])) } : {}),
      secretRefs: options.secretRefs,
      env: { ...this.taskEnv, ...options.env },
    });
    return {
      cluster: this.stack.clusterArn,
      taskDefinition: this.stack.taskDefinitionArn,
      count: slots.length,
      // `stop <runId>` finds the run's tasks by this (ListTasks startedBy), without local state.
      startedBy: runId,
      ...(capacity === "FARGATE_SPOT" ? { capacityProviderStrategy: [{ capacityProvider: "FARGATE_SPOT", weight: 1 }] } : { launchType: "FARGATE" as const }),
      networkConfiguration: {
        awsvpcConfiguration: { subnets: this.stack.subnetIds, securityGroups: [this.stack.securityGroupId], assignPublicIp: this.stack.assignPublicIp },
      },
      // The container's own memory limit must fit inside the task's.
      overrides: runTaskOverrides(this.stack.containerName, environment, options),
    };
  }

  async describeTasks(refs: string[]): Promise<TaskSnapshot[]> {
    const out: TaskSnapshot[] = [];
    for (let i = 0; i < refs.length; i += DESCRIBE_MAX) {
      const chunk = refs.slice(i, i + DESCRIBE_MAX);
      const res = await this.clients.ecs.send(new DescribeTasksCommand({ cluster: this.stack.clusterArn, tasks: chunk }));
      const found = new Map((res.tasks ?? []).map((t) => [t.taskArn, t]));
      for (const ref of chunk) {
        const task = found.get(ref);
        if (task) out.push(this.snapshot(task));
        else {
          const failure = res.failures?.find((f) => f.arn === ref);
          out.push({ ref, taskId: taskIdOf(ref), phase: "stopped", exitCode: null, stoppedReason: `ECS no longer describes the task (${failure?.reason ?? "MISSING"})`, log: this.logOf(taskIdOf(ref)) });
        }
      }
    }
    return out;
  }

  /**
   * StopTask for each task, STOP_TASKS_IN_FLIGHT at a time (one at a time, 500 tasks took 50–100 s of
   * the stop grace), retrying throttling with backoff beyond the SDK's own retries; the watch loop
   * re-sends it until DescribeTasks says STOPPED.
   */
  async stopTasks(refs: string[], reason: string): Promise<void> {
    const errors: string[] = [];
    const inFlight = pLimit(STOP_TASKS_IN_FLIGHT);
    const stopOne = async (ref: string) => {
      for (let attempt = 1; ; attempt++) {
        try {
          await this.clients.ecs.send(new StopTaskCommand({ cluster: this.stack.clusterArn, task: ref, reason: reason.slice(0, 255) }));
          return;
        } catch (err) {
          if (isThrottling(err) && attempt < STOP_TASK_BACKOFF.attempts) {
            await this.retry.sleep(backoffDelay(attempt, STOP_TASK_BACKOFF), new AbortController().signal);
            continue;
          }
          errors.push(`${taskIdOf(ref)}: ${(err as Error).name}: ${(err as Error).message}`);
          return;
        }
      }
    };
    await Promise.all(refs.map((ref) => inFlight(() => stopOne(ref))));
    if (errors.length > 0) throw new Error(`StopTask failed in ${this.name} for ${errors.join("; ")}`);
  }

  /**
   * ECS takes `startedBy` only as the sole filter (InvalidParameterException with `desiredStatus`
   * beside it; moto accepts both). Alone, it still lists only tasks whose desired status is RUNNING,
   * ListTasks' default.
   */
  async findRunningTasks(runId: string): Promise<string[]> {
    const arns: string[] = [];
    for await (const page of paginateListTasks({ client: this.clients.ecs }, { cluster: this.stack.clusterArn, startedBy: runId })) {
      arns.push(...(page.taskArns ?? []));
    }
    return arns;
  }


  /**
   * The cluster's tasks whose desired status is RUNNING (ListTasks' default), grouped by the run id
   * RunTask gave them as `startedBy`. At most STATUS_MAX_TASKS are described: a cluster busier than
   * that is more than a status line can say, and it is said.
   */
  async runsInProgress(): Promise<RunningRun[]> {
    const arns: string[] = [];
    for await (const page of paginateListTasks({ client: this.clients.ecs }, { cluster: this.stack.clusterArn })) {
      arns.push(...(page.taskArns ?? []));
      if (arns.length >= STATUS_MAX_TASKS) break;
    }
    const runs = new Map<string, RunningRun>();
    for (let i = 0; i < Math.min(arns.length, STATUS_MAX_TASKS); i += DESCRIBE_MAX) {
      const res = await this.clients.ecs.send(new DescribeTasksCommand({ cluster: this.stack.clusterArn, tasks: arns.slice(i, i + DESCRIBE_MAX) }));
      for (const task of res.tasks ?? []) {
        if (!task.startedBy || task.lastStatus === "STOPPED" || task.lastStatus === "DELETED") continue;
        const run = runs.get(task.startedBy) ?? { runId: task.startedBy, running: 0 };
        run.running++;
        const created = task.createdAt?.getTime();
        if (created !== undefined) run.since = Math.min(run.since ?? created, created);
        runs.set(task.startedBy, run);
      }
    }
    if (arns.length >= STATUS_MAX_TASKS) this.retry.log(`${this.name}: more than ${STATUS_MAX_TASKS} running tasks in the cluster; status counts the first ${STATUS_MAX_TASKS}`);
    return [...runs.values()];
  }

  private snapshot(task: Task): TaskSnapshot {
    const ref = task.taskArn ?? "";
    const taskId = taskIdOf(ref);
    const status = task.lastStatus ?? "PROVISIONING";
    const phase = status === "STOPPED" || status === "DELETED" ? "stopped" : ["PROVISIONING", "PENDING", "ACTIVATING"].includes(status) ? "pending" : "running";
    const snapshot: TaskSnapshot = {
      ref,
      taskId,
      phase,
      log: this.logOf(taskId),
      billing: {
        capacity: task.capacityProviderName === "FARGATE_SPOT" ? "FARGATE_SPOT" : "FARGATE",
        ...(task.pullStartedAt ? { pullStartedAt: task.pullStartedAt.getTime() } : {}),
        ...(task.stoppedAt ? { stoppedAt: task.stoppedAt.getTime() } : {}),
      },
    };
    if (phase === "stopped") {
      const container = task.containers?.find((c) => c.name === this.stack.containerName);
      snapshot.exitCode = container?.exitCode ?? null;
      snapshot.stopCode = task.stopCode;
      const reasons = [task.stoppedReason, container?.reason].filter((r): r is string => Boolean(r));
      if (reasons.length > 0) snapshot.stoppedReason = reasons.join("; ");
    }
    return snapshot;
  }

  /** awslogs names a task's stream `<prefix>/<container>/<task id>`; the operator policy may read it. */
  private logOf(taskId: string): string {
    return `CloudWatch Logs ${this.stack.logGroupName} ${this.stack.logStreamPrefix}/${this.stack.containerName}/${taskId}`;
  }
}

const taskIdOf = (arn: string): string => arn.slice(arn.lastIndexOf("/") + 1);

import { CloudFormationClient, DescribeStacksCommand } from "@aws-sdk/client-cloudformation";
import { DescribeTasksCommand, ECSClient, ListTasksCommand, RunTaskCommand, StopTaskCommand, type Task } from "@aws-sdk/client-ecs";
import { DescribeSecretCommand, SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import { GetAWSDefaultServiceQuotaCommand, GetServiceQuotaCommand, ServiceQuotasClient } from "@aws-sdk/client-service-quotas";
import { CloudWatchClient, GetMetricDataCommand } from "@aws-sdk/client-cloudwatch";
import { DescribeSubnetsCommand, EC2Client } from "@aws-sdk/client-ec2";
import { DescribeParametersCommand, SSMClient } from "@aws-sdk/client-ssm";
import { mockClient } from "aws-sdk-client-mock";
import { violations } from "cable-test-servers";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AwsRegion, AWS_TIMING, defaultClients, STOP_TASKS_IN_FLIGHT } from "../src/aws/aws-backend";
import { describeRegionStack, type RegionStack } from "../src/aws/discovery";
import type { StackExpectations, StartOptions } from "../src/backend";
import { FanoutInputError } from "../src/errors";
import { watchRegion } from "../src/run/region-watch";
import type { RunDeps } from "../src/run/run-options";
import { fakeClock, RecordingProgress, throttling } from "./helpers";

const STACK: RegionStack = {
  region: "eu-west-2",
  clusterArn: "arn:aws:ecs:eu-west-2:123456789012:cluster/c",
  taskDefinitionArn: "arn:aws:ecs:eu-west-2:123456789012:task-definition/CableLoadtest-eu-west-2:1",
  containerName: "loadgen",
  subnetIds: ["subnet-0a1b2c3d", "subnet-0e1f2a3b"],
  securityGroupId: "sg-1",
  assignPublicIp: "ENABLED",
  bucketName: "bucket",
  logGroupName: "logs",
  logStreamPrefix: "loadgen",
  taskCpu: 4096,
};

const ecs = mockClient(ECSClient);
const cfn = mockClient(CloudFormationClient);
let sleeps: number[];
let logs: string[];
let n: number;

const arn = (i: number) => `arn:aws:ecs:eu-west-2:123456789012:task/c/task${i}`;
const region = () =>
  new AwsRegion(STACK, defaultClients("eu-west-2"), {
    sleep: async (ms) => void sleeps.push(ms),
    log: (l) => logs.push(l),
  });
const options = (extra: Partial<StartOptions> = {}): StartOptions => ({ spot: false, secretRefs: {}, secretValues: {}, abort: new AbortController().signal, ...extra });
const provisioning = (count: number): Task[] => Array.from({ length: count }, () => ({ taskArn: arn(++n), lastStatus: "PROVISIONING" }));

// The mocks answer anything; every call the code under test made is also held to what AWS accepts
// (the strict double's rules, cable-test-servers/strict-aws).
afterEach(() => {
  const refused = [ecs, cfn].flatMap((mock) =>
    mock.calls().flatMap((call) => {
      const command = call.args[0] as unknown as { constructor: { name: string }; input: Record<string, unknown> };
      const client = mock === ecs ? "ECSClient" : "CloudFormationClient";
      return violations(client, command.constructor.name, command.input).map((v) => `${client}.${command.constructor.name}: ${v.detail} (${v.constraint.rule})`);
    }),
  );
  expect(refused).toEqual([]);
});

beforeEach(() => {
  ecs.reset();
  cfn.reset();
  sleeps = [];
  logs = [];
  n = 0;
});

describe("RunTask", () => {
  it("starts 23 tasks as 10, 10 and 3, tagged with the run id", async () => {
    ecs.on(RunTaskCommand).callsFake((input) => ({ tasks: provisioning(input.count), failures: [] }));
    const outcome = await region().startTasks("run-1", 23, options());
    const calls = ecs.commandCalls(RunTaskCommand).map((c) => c.args[0].input);
    expect(calls.map((c) => c.count)).toEqual([10, 10, 3]);
    expect(calls.every((c) => c.startedBy === "run-1" && c.launchType === "FARGATE")).toBe(true);
    expect(outcome.started.map((t) => t.taskId)).toEqual(Array.from({ length: 23 }, (_, i) => `task${i + 1}`));
    expect(outcome.failures).toEqual([]);
  });

  it("retries throttling with a growing backoff", async () => {
    ecs.on(RunTaskCommand).rejectsOnce(throttling()).rejectsOnce(throttling()).callsFake((input) => ({ tasks: provisioning(input.count) }));
    const outcome = await region().startTasks("run-1", 4, options());
    expect(outcome.started).toHaveLength(4);
    expect(sleeps).toEqual([2_000, 4_000]);
    expect(ecs.commandCalls(RunTaskCommand).map((c) => c.args[0].input.count)).toEqual([4, 4, 4]);
  });

  it("retries only the tasks a partial failure left out, then reports lasting failures", async () => {
    ecs
      .on(RunTaskCommand)
      .resolvesOnce({ tasks: provisioning(6), failures: Array.from({ length: 4 }, () => ({ reason: "Capacity is unavailable at this time" })) })
      .resolvesOnce({ tasks: provisioning(2), failures: [{ reason: "RESOURCE:MEMORY" }, { reason: "RESOURCE:MEMORY" }] })
      .resolves({ tasks: [], failures: [{ reason: "AGENT", detail: "no agent" }] });
    const outcome = await region().startTasks("run-1", 10, options());
    expect(ecs.commandCalls(RunTaskCommand).map((c) => c.args[0].input.count)).toEqual([10, 4, 2]);
    expect(outcome.started).toHaveLength(8);
    expect(outcome.failures).toEqual(["2 task(s) not started after 3 tries: AGENT: no agent"]);
  });

  it("tries a throttled call again in the next round, after the calls behind it", async () => {
    let calls = 0;
    ecs.on(RunTaskCommand).callsFake((input) => {
      if (++calls === 2) throw throttling();
      return { tasks: provisioning(input.count) };
    });
    const outcome = await region().startTasks("run-1", 23, options());
    expect(ecs.commandCalls(RunTaskCommand).map((c) => c.args[0].input.count)).toEqual([10, 10, 3, 10]);
    expect(sleeps).toEqual([2_000]);
    expect(outcome.started).toHaveLength(23);
  });

  it("starts tasks with slices one per call, each with its own CABLE_SLICE, and no other task's", async () => {
    ecs.on(RunTaskCommand).callsFake((input) => ({ tasks: provisioning(input.count), failures: [] }));
    const outcome = await region().startTasks("run-1", 3, options({ slices: { first: 3, total: 6 } }));
    const calls = ecs.commandCalls(RunTaskCommand).map((c) => c.args[0].input);
    expect(calls.map((c) => c.count)).toEqual([1, 1, 1]);
    expect(calls.map((c) => c.overrides?.containerOverrides?.[0].environment)).toEqual(
      ["3/6", "4/6", "5/6"].map((slice) => [
        { name: "CABLE_RUN_ID", value: "run-1" },
        { name: "CABLE_SLICE", value: slice },
      ]),
    );
    expect(outcome.started).toHaveLength(3);
    expect(() => region().runTaskInput("run-1", [0, 1], options({ slices: { first: 0, total: 2 } }))).toThrow("RunTask with slices starts one task, not 2");
  });

  it("gives up at once on an error that will not go away", async () => {
    ecs.on(RunTaskCommand).rejects(Object.assign(new Error("subnet not found"), { name: "InvalidParameterException" }));
    const outcome = await region().startTasks("run-1", 3, options());
    expect(outcome.failures).toEqual(["3 task(s) not started after 1 try: InvalidParameterException: subnet not found"]);
    expect(sleeps).toEqual([]);
  });

  it("asks for Spot, the task size, and secrets by name only", () => {
    const input = region().runTaskInput("run-1", [0, 1], options({ spot: true, cpu: 2048, memory: 8192, secretRefs: { PUSHER_APP_SECRET: "/cable-loadtest/pusher" } }));
    expect(input.launchType).toBeUndefined();
    expect(input.capacityProviderStrategy).toEqual([{ capacityProvider: "FARGATE_SPOT", weight: 1 }]);
    expect(input.overrides).toEqual({
      cpu: "2048",
      memory: "8192",
      containerOverrides: [
        {
          name: "loadgen",
          memory: 8192,
          environment: [
            { name: "CABLE_RUN_ID", value: "run-1" },
            { name: "CABLE_SECRETS", value: JSON.stringify({ PUSHER_APP_SECRET: "/cable-loadtest/pusher" }) },
          ],
        },
      ],
    });
    expect(input.networkConfiguration?.awsvpcConfiguration).toEqual({ subnets: ["subnet-0a1b2c3d", "subnet-0e1f2a3b"], securityGroups: ["sg-1"], assignPublicIp: "ENABLED" });
  });
});

describe("Spot with a fallback", () => {
  const noSpot = "Capacity is unavailable at this time. Please try again later or in a different availability zone";
  // RunTask answers a Spot shortage with a failure per task, not an error.
  const spotShort = (spotPlaces: number) =>
    ecs.on(RunTaskCommand).callsFake((input) => {
      if (input.launchType === "FARGATE") return { tasks: provisioning(input.count), failures: [] };
      const placed = Math.min(spotPlaces, input.count);
      spotPlaces -= placed;
      return { tasks: provisioning(placed), failures: Array.from({ length: input.count - placed }, () => ({ reason: noSpot })) };
    });

  it("starts on FARGATE the tasks Spot could not place after a few quick tries, and says so", async () => {
    spotShort(1);
    const outcome = await region().startTasks("run-1", 3, options({ spot: true }));
    const calls = ecs.commandCalls(RunTaskCommand).map((c) => c.args[0].input);
    expect(calls.map((c) => [c.capacityProviderStrategy?.[0]?.capacityProvider ?? c.launchType, c.count])).toEqual([
      ["FARGATE_SPOT", 3],
      ["FARGATE_SPOT", 2],
      ["FARGATE_SPOT", 2],
      ["FARGATE", 2],
    ]);
    expect(outcome.started).toHaveLength(3);
    expect(outcome.failures).toEqual([]);
    expect(outcome.notices).toEqual([`2 of 3 task(s) ran on FARGATE (on-demand), not Spot: ${noSpot}`]);
    expect(sleeps.reduce((a, b) => a + b, 0)).toBeLessThan(10_000);
  });

  it("with slices, waits Spot out for all tasks at once and starts on FARGATE exactly the slices Spot could not place", async () => {
    spotShort(1);
    const outcome = await region().startTasks("run-1", 3, options({ spot: true, slices: { first: 0, total: 3 } }));
    const calls = ecs.commandCalls(RunTaskCommand).map((c) => c.args[0].input);
    const slice = (c: (typeof calls)[number]) => c.overrides?.containerOverrides?.[0].environment?.find((e) => e.name === "CABLE_SLICE")?.value;
    expect(calls.map((c) => `${c.capacityProviderStrategy?.[0]?.capacityProvider ?? c.launchType} ${slice(c)}`)).toEqual([
      "FARGATE_SPOT 0/3",
      "FARGATE_SPOT 1/3",
      "FARGATE_SPOT 2/3",
      "FARGATE_SPOT 1/3",
      "FARGATE_SPOT 2/3",
      "FARGATE_SPOT 1/3",
      "FARGATE_SPOT 2/3",
      "FARGATE 1/3",
      "FARGATE 2/3",
    ]);
    // One backoff per round, not per task.
    expect(sleeps).toEqual([2_000, 4_000]);
    expect(outcome.started).toHaveLength(3);
    expect(outcome.notices).toEqual([`2 of 3 task(s) ran on FARGATE (on-demand), not Spot: ${noSpot}`]);
  });

  it("--spot-only waits Spot out for the usual minute and starts nothing elsewhere", async () => {
    spotShort(0);
    const outcome = await region().startTasks("run-1", 2, options({ spot: true, spotOnly: true }));
    const calls = ecs.commandCalls(RunTaskCommand).map((c) => c.args[0].input);
    expect(calls.every((c) => c.capacityProviderStrategy?.[0]?.capacityProvider === "FARGATE_SPOT")).toBe(true);
    expect(calls).toHaveLength(6);
    expect(outcome.started).toEqual([]);
    expect(outcome.failures).toEqual([`2 task(s) not started after 6 tries: ${noSpot}`]);
  });

  it("does not fall back for a failure that is not capacity", async () => {
    ecs.on(RunTaskCommand).resolves({ tasks: [], failures: [{ reason: "MISSING", detail: "task definition" }] });
    const outcome = await region().startTasks("run-1", 1, options({ spot: true }));
    expect(ecs.commandCalls(RunTaskCommand).map((c) => c.args[0].input.launchType)).toEqual([undefined]);
    expect(outcome.failures).toEqual(["1 task(s) not started after 1 try: MISSING: task definition"]);
  });
});

describe("watching a region", () => {
  const watch = (clock: ReturnType<typeof fakeClock>, abort = new AbortController(), progress = new RecordingProgress()) =>
    watchRegion(region(), {
      runId: "run-1",
      count: 2,
      startOptions: options({ abort: abort.signal }),
      timing: { ...AWS_TIMING, startTimeoutMs: 60_000, pollMs: 10_000, stopGraceMs: 30_000 },
      deps: { now: clock.now, sleep: clock.sleep, abort } as unknown as RunDeps,
      progress,
      abortReason: () => "--max-duration 60 s reached",
      onStarted: () => {},
    });

  it("reports a Spot interruption with its reason and log stream, and an image pull failure", async () => {
    ecs.on(RunTaskCommand).callsFake((input) => ({ tasks: provisioning(input.count) }));
    ecs
      .on(DescribeTasksCommand)
      .resolvesOnce({ tasks: [{ taskArn: arn(1), lastStatus: "RUNNING" }, { taskArn: arn(2), lastStatus: "PENDING" }] })
      .resolves({
        tasks: [
          { taskArn: arn(1), lastStatus: "STOPPED", stopCode: "SpotInterruption", stoppedReason: "Your Spot Task was interrupted.", containers: [{ name: "loadgen", exitCode: 143 }] },
          { taskArn: arn(2), lastStatus: "STOPPED", stopCode: "TaskFailedToStart", stoppedReason: "CannotPullContainerError: pull access denied", containers: [{ name: "loadgen" }] },
        ],
      });
    const progress = new RecordingProgress();
    const clock = fakeClock();
    const result = await watch(clock, undefined, progress);
    expect(result.tasks.map((t) => [t.taskId, t.phase, t.stopCode, t.exitCode])).toEqual([
      ["task1", "stopped", "SpotInterruption", 143],
      ["task2", "stopped", "TaskFailedToStart", null],
    ]);
    expect(progress.events).toEqual([
      "eu-west-2: task task1 stopped: SpotInterruption; Your Spot Task was interrupted.; exit code 143 (log: CloudWatch Logs logs loadgen/loadgen/task1)",
      "eu-west-2: task task2 stopped: TaskFailedToStart; CannotPullContainerError: pull access denied; exit code null (log: CloudWatch Logs logs loadgen/loadgen/task2)",
    ]);
    expect(progress.updates.at(-1)).toEqual(["eu-west-2", { pending: 0, running: 0, stopped: 2, failed: 2 }]);
    expect(result.failures).toEqual([]);
  });

  it("marks a region failed and stops its tasks when they do not start in time", async () => {
    ecs.on(RunTaskCommand).callsFake((input) => ({ tasks: provisioning(input.count) }));
    let stopped = false;
    ecs.on(StopTaskCommand).callsFake(() => ((stopped = true), {}));
    ecs.on(DescribeTasksCommand).callsFake((input) => ({
      tasks: input.tasks.map((taskArn: string) => (stopped ? { taskArn, lastStatus: "STOPPED", stopCode: "UserInitiated", containers: [{ name: "loadgen" }] } : { taskArn, lastStatus: "PROVISIONING" })),
    }));
    const clock = fakeClock();
    const result = await watch(clock);
    expect(result.failures).toEqual(["2 task(s) did not start within 60 s"]);
    expect(ecs.commandCalls(StopTaskCommand).map((c) => [c.args[0].input.task, c.args[0].input.reason])).toEqual([
      [arn(1), "cable-fanout: 2 task(s) did not start within 60 s"],
      [arn(2), "cable-fanout: 2 task(s) did not start within 60 s"],
    ]);
    expect(result.tasks.every((t) => t.phase === "stopped")).toBe(true);
  });

  it("stops every running task on abort (Ctrl-C or --max-duration) and waits for them", async () => {
    ecs.on(RunTaskCommand).callsFake((input) => ({ tasks: provisioning(input.count) }));
    let stops = 0;
    ecs.on(StopTaskCommand).callsFake(() => (stops++, {}));
    ecs.on(DescribeTasksCommand).callsFake((input) => ({
      tasks: input.tasks.map((taskArn: string) => (stops === 2 ? { taskArn, lastStatus: "STOPPED", stopCode: "UserInitiated", containers: [{ name: "loadgen", exitCode: 1 }] } : { taskArn, lastStatus: "RUNNING" })),
    }));
    const abort = new AbortController();
    const clock = fakeClock();
    const watching = watch(clock, abort);
    abort.abort();
    const result = await watching;
    expect(ecs.commandCalls(StopTaskCommand).map((c) => c.args[0].input.reason)).toEqual(["cable-fanout: --max-duration 60 s reached", "cable-fanout: --max-duration 60 s reached"]);
    expect(result.tasks.map((t) => t.phase)).toEqual(["stopped", "stopped"]);
  });

  it("backs off when DescribeTasks is throttled, and keeps watching", async () => {
    ecs.on(RunTaskCommand).callsFake((input) => ({ tasks: provisioning(input.count) }));
    ecs
      .on(DescribeTasksCommand)
      .rejectsOnce(throttling())
      .rejectsOnce(throttling())
      .callsFake((input) => ({ tasks: input.tasks.map((taskArn: string) => ({ taskArn, lastStatus: "STOPPED", stopCode: "EssentialContainerExited", containers: [{ name: "loadgen", exitCode: 0 }] })) }));
    const clock = fakeClock();
    const result = await watch(clock);
    expect(clock.sleeps).toEqual([10_000, 20_000]);
    expect(result.failures).toEqual([]);
    expect(result.tasks.map((t) => t.exitCode)).toEqual([0, 0]);
  });
});

describe("finding a run's tasks (cable-fanout stop)", () => {
  it("lists them with startedBy as ListTasks' only filter, as ECS requires, page by page", async () => {
    ecs.on(ListTasksCommand).callsFake((input) => (input.nextToken ? { taskArns: [arn(2)] } : { taskArns: [arn(1)], nextToken: "t" }));
    expect(await region().findRunningTasks("run-1")).toEqual([arn(1), arn(2)]);
    const inputs = ecs.commandCalls(ListTasksCommand).map((c) => c.args[0].input);
    expect(inputs.map((i) => Object.keys(i).filter((k) => k !== "nextToken" && k !== "maxResults").sort())).toEqual([["cluster", "startedBy"], ["cluster", "startedBy"]]);
  });
});

describe("stopping until STOPPED", () => {
  it("retries a throttled StopTask with backoff, then re-sends it while DescribeTasks still says RUNNING", async () => {
    ecs.on(RunTaskCommand).callsFake((input) => ({ tasks: provisioning(input.count) }));
    let calls = 0;
    // The first two calls throttled, then accepted — but the first acceptance does not take (the task keeps running).
    ecs.on(StopTaskCommand).callsFake(() => {
      calls++;
      if (calls <= 2) throw throttling();
      return {};
    });
    ecs.on(DescribeTasksCommand).callsFake((input) => ({
      tasks: input.tasks.map((taskArn: string) => (calls >= 5 ? { taskArn, lastStatus: "STOPPED", stopCode: "UserInitiated", containers: [{ name: "loadgen", exitCode: 1 }] } : { taskArn, lastStatus: "RUNNING" })),
    }));
    const abort = new AbortController();
    abort.abort();
    const clock = fakeClock();
    const progress = new RecordingProgress();
    const result = await watchRegion(region(), {
      runId: "run-1",
      count: 2,
      startOptions: options({ abort: new AbortController().signal }),
      timing: { ...AWS_TIMING, pollMs: 10_000, stopGraceMs: 120_000 },
      deps: { now: clock.now, sleep: clock.sleep, abort } as unknown as RunDeps,
      progress,
      abortReason: () => "interrupted (signal)",
      onStarted: () => {},
    });
    // Both tasks' StopTask go at once and are throttled once each: each backs off 1 s (the region's retry sleep).
    expect(sleeps).toEqual([1_000, 1_000]);
    expect(progress.events).toContain("eu-west-2: 2 task(s) still running after StopTask; sending it again");
    expect(calls).toBeGreaterThanOrEqual(5);
    expect(result.tasks.map((t) => t.phase)).toEqual(["stopped", "stopped"]);
    expect(result.failures).toEqual([]);
  });

  it("sends StopTask to 50 tasks 10 at a time, each task once", async () => {
    let inFlight = 0;
    let peak = 0;
    ecs.on(StopTaskCommand).callsFake(async () => {
      peak = Math.max(peak, ++inFlight);
      await new Promise((r) => setTimeout(r, 5));
      inFlight--;
      return {};
    });
    const refs = Array.from({ length: 50 }, (_, i) => arn(i + 1));
    await region().stopTasks(refs, "cable-fanout: done");
    expect(peak).toBe(STOP_TASKS_IN_FLIGHT);
    expect(ecs.commandCalls(StopTaskCommand).map((c) => c.args[0].input.task).sort()).toEqual([...refs].sort());
  });

  it("counts the stop grace from the last StopTask's return, not from the first call", async () => {
    ecs.on(RunTaskCommand).callsFake((input) => ({ tasks: provisioning(input.count) }));
    ecs.on(DescribeTasksCommand).callsFake((input) => ({ tasks: input.tasks.map((taskArn: string) => ({ taskArn, lastStatus: "RUNNING" })) }));
    const clock = fakeClock();
    // Each first StopTask takes a second of the clock; the tasks ignore it (re-sends are instant).
    const stopped = new Set<string>();
    let lastReturn = 0;
    ecs.on(StopTaskCommand).callsFake(async (input) => {
      await new Promise((r) => setTimeout(r, 1));
      if (!stopped.has(input.task)) clock.advance(1_000);
      stopped.add(input.task);
      lastReturn = clock.now();
      return {};
    });
    const abort = new AbortController();
    abort.abort();
    const result = await watchRegion(region(), {
      runId: "run-1",
      count: 50,
      startOptions: options(),
      timing: { ...AWS_TIMING, pollMs: 10_000, stopGraceMs: 30_000 },
      deps: { now: clock.now, sleep: clock.sleep, abort } as unknown as RunDeps,
      progress: new RecordingProgress(),
      abortReason: () => "interrupted (signal)",
      onStarted: () => {},
    });
    expect(stopped.size).toBe(50);
    expect(result.failures).toEqual([expect.stringMatching(/^50 task\(s\) had not stopped 30 s after StopTask/)]);
    // 50 s went by while the first round of StopTask ran; the tasks still got their 30 s after it.
    const firstRoundEnd = 1_000_000 + 50_000;
    expect(clock.now() - firstRoundEnd).toBeGreaterThanOrEqual(30_000);
    expect(lastReturn).toBeGreaterThanOrEqual(firstRoundEnd);
  });

  it("describes more than 100 tasks 100 at a time", async () => {
    ecs.on(DescribeTasksCommand).callsFake((input) => ({ tasks: input.tasks.map((taskArn: string) => ({ taskArn, lastStatus: "RUNNING" })) }));
    const refs = Array.from({ length: 250 }, (_, i) => arn(i + 1));
    const described = await region().describeTasks(refs);
    expect(ecs.commandCalls(DescribeTasksCommand).map((c) => c.args[0].input.tasks!.length)).toEqual([100, 100, 50]);
    expect(described.map((t) => t.ref)).toEqual(refs);
  });

  it("counts a task ECS no longer describes as stopped, with the reason", async () => {
    ecs.on(DescribeTasksCommand).resolves({ tasks: [{ taskArn: arn(1), lastStatus: "RUNNING" }], failures: [{ arn: arn(2), reason: "MISSING" }] });
    const described = await region().describeTasks([arn(1), arn(2)]);
    expect(described.map((t) => [t.phase, t.stoppedReason])).toEqual([
      ["running", undefined],
      ["stopped", "ECS no longer describes the task (MISSING)"],
    ]);
  });
});

describe("preflight", () => {
  const ssm = mockClient(SSMClient);
  const sm = mockClient(SecretsManagerClient);
  const quotas = mockClient(ServiceQuotasClient);
  const cloudWatch = mockClient(CloudWatchClient);
  const ec2 = mockClient(EC2Client);
  /** Fargate vCPUs in use, as CloudWatch's AWS/Usage metric answers for the last minutes. */
  const inUse = (onDemand: number | undefined, spot: number | undefined) =>
    cloudWatch.on(GetMetricDataCommand).resolves({
      MetricDataResults: [
        { Id: "ondemand", Values: onDemand === undefined ? [] : [onDemand, 0] },
        { Id: "spot", Values: spot === undefined ? [] : [spot] },
      ],
    });
  const quota = (code: string, value: number | "unset") =>
    value === "unset"
      ? quotas.on(GetServiceQuotaCommand, { QuotaCode: code }).rejects(Object.assign(new Error("The request failed because the specified quota has no value"), { name: "NoSuchResourceException" }))
      : quotas.on(GetServiceQuotaCommand, { QuotaCode: code }).resolves({ Quota: { Value: value } });
  const ON_DEMAND = "L-3032A538";
  const SPOT = "L-36FBB829";
  beforeEach(() => {
    for (const m of [ssm, sm, quotas, cloudWatch, ec2]) m.reset();
    quota(ON_DEMAND, 4000);
    quota(SPOT, 4000);
    inUse(0, 0);
    ec2.on(DescribeSubnetsCommand).resolves({ Subnets: [{ SubnetId: "subnet-0a1b2c3d", AvailableIpAddressCount: 4000 }, { SubnetId: "subnet-0e1f2a3b", AvailableIpAddressCount: 4091 }] });
  });
  afterEach(() => {
    // Every call the preflight made, held to AWS's documented limits (the strict double's rules).
    const named = [
      [quotas, "ServiceQuotasClient"],
      [cloudWatch, "CloudWatchClient"],
      [ec2, "EC2Client"],
      [ssm, "SSMClient"],
    ] as const;
    const refused = named.flatMap(([mock, client]) =>
      mock.calls().flatMap((call) => {
        const command = call.args[0] as unknown as { constructor: { name: string }; input: Record<string, unknown> };
        return violations(client, command.constructor.name, command.input).map((v) => `${client}.${command.constructor.name}: ${v.detail}`);
      }),
    );
    expect(refused).toEqual([]);
  });

  it("names a secret missing in this region, refuses an ARN from another region, and warns about a customer KMS key", async () => {
    ssm.on(DescribeParametersCommand).callsFake((input) =>
      input.ParameterFilters[0].Values[0] === "/cable-loadtest/there" ? { Parameters: [{ Name: "/cable-loadtest/there", Type: "SecureString", KeyId: "alias/team-key" }] } : { Parameters: [] },
    );
    sm.on(DescribeSecretCommand).rejects(Object.assign(new Error("Secrets Manager can't find the specified secret."), { name: "ResourceNotFoundException" }));
    const { problems } = await region().preflight({
      count: 2,
      spot: false,
      secretRefs: {
        THERE: "/cable-loadtest/there",
        GONE: "/cable-loadtest/gone",
        COOKIE: "secretsmanager:cable-loadtest/cookie",
        PINNED: "arn:aws:ssm:us-east-1:123456789012:parameter/cable-loadtest/x",
      },
    });
    expect(problems).toEqual([
      "region eu-west-2: secret GONE (/cable-loadtest/gone): no SSM parameter /cable-loadtest/gone in eu-west-2; create it there: aws ssm put-parameter --region eu-west-2 --name /cable-loadtest/gone --type SecureString --value …",
      "region eu-west-2: secret COOKIE (secretsmanager:cable-loadtest/cookie): no Secrets Manager secret cable-loadtest/cookie in eu-west-2; create it there: aws secretsmanager create-secret --region eu-west-2 --name cable-loadtest/cookie --secret-string …",
      "region eu-west-2: secret PINNED (arn:aws:ssm:us-east-1:123456789012:parameter/cable-loadtest/x) is an ARN in us-east-1, and tasks read secrets in their own region only; name it (--secret PINNED=ssm:/cable-loadtest/x) and create it in every region",
    ]);
    expect(logs).toEqual(['region eu-west-2: secret THERE (/cable-loadtest/there) is encrypted with KMS key alias/team-key: the task role needs kms:Decrypt on it (infra/README.md, "Secrets")']);
  });

  it("counts the vCPUs already running against the quota, and says how to raise it to what the run needs beside them", async () => {
    quota(ON_DEMAND, 100);
    inUse(92, 0);
    // 8 free vCPUs hold two tasks of 4 exactly; a third does not fit.
    expect((await region().preflight({ count: 2, spot: false, secretRefs: {} })).problems).toEqual([]);
    const more = await region().preflight({ count: 3, spot: false, secretRefs: {} });
    expect(more.problems).toEqual([
      "region eu-west-2: 3 task(s) × 4 vCPU = 12 vCPU exceed the Fargate On-Demand vCPU quota's free 8 (92 in use of 100); ask for more: aws service-quotas request-service-quota-increase --region eu-west-2 --service-code fargate --quota-code L-3032A538 --desired-value 104, or run fewer or smaller tasks (--count, --cpu/--memory)",
    ]);
    expect(more.facts).toMatchObject({ cpu: 4096, publicIp: true, freeAddresses: 8091, unchecked: [] });
    expect(more.facts.quotas).toEqual([
      { kind: "on-demand", code: ON_DEMAND, quota: 100, from: "applied", inUse: 92 },
      { kind: "spot", code: SPOT, quota: 4000, from: "applied", inUse: 0 },
    ]);
  });

  it("with --spot judges both quotas: Spot first, the on-demand fallback for the rest; --spot-only only Spot", async () => {
    quota(SPOT, 20);
    quota(ON_DEMAND, 40);
    inUse(24, 4);
    // 16 Spot vCPUs free hold 4 tasks of 4 vCPU; the 2 others fall back to 16 free on-demand vCPUs.
    const fallback = await region().preflight({ count: 6, spot: true, secretRefs: {} });
    expect(fallback.problems).toEqual([]);
    expect(fallback.warnings).toEqual(["region eu-west-2: the Fargate Spot quota holds 4 of 6 task(s) (4 in use of 20); the rest would start on-demand (24 in use of 40)"]);
    const tooMany = await region().preflight({ count: 9, spot: true, secretRefs: {} });
    expect(tooMany.problems).toEqual([
      "region eu-west-2: 9 task(s) × 4 vCPU = 36 vCPU exceed the free Fargate Spot vCPUs (16: 4 in use of 20) and the on-demand fallback's (16: 24 in use of 40); ask for more: aws service-quotas request-service-quota-increase --region eu-west-2 --service-code fargate --quota-code L-36FBB829 --desired-value 40, or run fewer or smaller tasks (--count, --cpu/--memory)",
    ]);
    const spotOnly = await region().preflight({ count: 6, spot: true, spotOnly: true, secretRefs: {} });
    expect(spotOnly.problems).toEqual([
      "region eu-west-2: 6 task(s) × 4 vCPU = 24 vCPU exceed the Fargate Spot vCPU quota's free 16 (4 in use of 20); ask for more: aws service-quotas request-service-quota-increase --region eu-west-2 --service-code fargate --quota-code L-36FBB829 --desired-value 28, or run fewer or smaller tasks (--count, --cpu/--memory)",
    ]);
  });

  it("reads AWS's default for a quota that has no applied value, and only warns when neither can be read", async () => {
    quota(ON_DEMAND, "unset");
    quotas.on(GetAWSDefaultServiceQuotaCommand, { QuotaCode: ON_DEMAND }).resolves({ Quota: { Value: 6 } });
    const fresh = await region().preflight({ count: 2, spot: false, secretRefs: {} });
    expect(fresh.problems).toEqual([
      "region eu-west-2: 2 task(s) × 4 vCPU = 8 vCPU exceed the Fargate On-Demand vCPU quota's free 6 (0 in use of 6 (the default: never adjusted)); ask for more: aws service-quotas request-service-quota-increase --region eu-west-2 --service-code fargate --quota-code L-3032A538 --desired-value 8, or run fewer or smaller tasks (--count, --cpu/--memory)",
    ]);
    expect(fresh.facts.quotas[0]).toEqual({ kind: "on-demand", code: ON_DEMAND, quota: 6, from: "default", inUse: 0 });
    quotas.on(GetServiceQuotaCommand, { QuotaCode: SPOT }).rejects(Object.assign(new Error("denied"), { name: "AccessDeniedException" }));
    quotas.on(GetAWSDefaultServiceQuotaCommand, { QuotaCode: SPOT }).rejects(Object.assign(new Error("denied"), { name: "AccessDeniedException" }));
    cloudWatch.on(GetMetricDataCommand).rejects(Object.assign(new Error("denied"), { name: "AccessDeniedException" }));
    const unread = await region().preflight({ count: 100, spot: true, spotOnly: true, cpu: 1024, secretRefs: {} });
    expect(unread.problems).toEqual([]);
    expect(unread.warnings).toEqual([
      "region eu-west-2: could not read the Fargate Spot vCPU quota (current use: AccessDeniedException; applied quota: AccessDeniedException; default quota: AccessDeniedException); RunTask will say if 100 vCPU is too much",
    ]);
    expect(unread.facts.unchecked).toEqual([
      "Fargate On-Demand vCPU quota: current use: AccessDeniedException",
      "Fargate Spot vCPU quota: current use: AccessDeniedException; applied quota: AccessDeniedException; default quota: AccessDeniedException",
    ]);
  });

  it("refuses more tasks than the task subnets have free addresses", async () => {
    ec2.on(DescribeSubnetsCommand).resolves({ Subnets: [{ SubnetId: "subnet-0a1b2c3d", AvailableIpAddressCount: 3 }, { SubnetId: "subnet-0e1f2a3b", AvailableIpAddressCount: 2 }] });
    const { problems } = await region().preflight({ count: 6, spot: false, cpu: 1024, memory: 2048, secretRefs: {} });
    expect(problems).toEqual([
      "region eu-west-2: 6 task(s) need an address each, and the task subnets (subnet-0a1b2c3d, subnet-0e1f2a3b) have 5 free; run fewer tasks or give the stack larger subnets",
    ]);
  });
  describe("--arch and --subnets against the stack", () => {
    const at = (stack: Partial<RegionStack>, expected: StackExpectations) => new AwsRegion({ ...STACK, ...stack }, defaultClients("eu-west-2"), { sleep: async () => undefined, log: (l) => logs.push(l) }, {}, expected);
    const plan = { count: 2, spot: true, secretRefs: {} };

    it("refuses, before any task, a region whose stack runs another architecture, naming the region and the redeploy that fixes it", async () => {
      const refused = await at({ taskArch: "x86_64" }, { arch: "arm64" }).preflight(plan);
      expect(refused.problems).toEqual([
        "region eu-west-2: its stack runs x86_64 tasks, not arm64 (--arch), and RunTask cannot change a task definition's architecture; redeploy it with: cd infra && npx cdk deploy -c regions=eu-west-2 -c arch=arm64 CableLoadtest-eu-west-2, or drop --arch to run on x86_64",
      ]);
      expect(refused.facts.arch).toBe("x86_64");
      const other = await at({ taskArch: "arm64" }, { arch: "x86_64" }).preflight(plan);
      expect(other.problems).toEqual([expect.stringMatching(/^region eu-west-2: its stack runs arm64 tasks, not x86_64 \(--arch\).* -c arch=x86_64 CableLoadtest-eu-west-2, or drop --arch to run on arm64$/)]);
      expect(ecs.calls()).toHaveLength(0);
    });

    it("takes a stack from before the TaskArch output as x86_64, and says so", async () => {
      const old = await at({}, { arch: "arm64" }).preflight(plan);
      expect(old.problems).toEqual([expect.stringContaining("region eu-west-2: its stack runs x86_64 tasks (deployed before its TaskArch output: x86_64), not arm64 (--arch)")]);
      expect(old.facts).not.toHaveProperty("arch");
      expect((await at({}, { arch: "x86_64" }).preflight(plan)).problems).toEqual([]);
    });

    it("runs on the stack's own architecture without --arch, and puts it in the facts", async () => {
      const arm = await at({ taskArch: "arm64" }, {}).preflight(plan);
      expect(arm.problems).toEqual([]);
      expect(arm.facts.arch).toBe("arm64");
      expect((await at({ taskArch: "arm64" }, { arch: "arm64" }).preflight(plan)).problems).toEqual([]);
    });

    it("only warns when --subnets says the other kind than the stack's: the stack's subnets are what the tasks use", async () => {
      const privateWanted = await at({ assignPublicIp: "ENABLED" }, { subnets: "private" }).preflight(plan);
      expect(privateWanted.problems).toEqual([]);
      expect(privateWanted.warnings).toEqual(["region eu-west-2: --subnets private, but its stack's tasks run in public subnets with a public IP each (AssignPublicIp ENABLED); they use the stack's subnets"]);
      expect(privateWanted.facts.publicIp).toBe(true);
      const publicWanted = await at({ assignPublicIp: "DISABLED" }, { subnets: "public" }).preflight(plan);
      expect(publicWanted.warnings).toEqual(["region eu-west-2: --subnets public, but its stack's tasks run in private subnets without a public IP (AssignPublicIp DISABLED), through a NAT gateway; they use the stack's subnets"]);
      expect((await at({ assignPublicIp: "DISABLED" }, { subnets: "private" }).preflight(plan)).warnings).toEqual([]);
    });
  });
});

describe("discovery", () => {
  it("names the region and the cdk deploy command when the stack is missing", async () => {
    cfn.on(DescribeStacksCommand).rejects(Object.assign(new Error("Stack with id CableLoadtest-ap-south-1 does not exist"), { name: "ValidationError" }));
    const err = await describeRegionStack(new CloudFormationClient({ region: "ap-south-1" }), "ap-south-1").catch((e: Error) => e);
    expect(err).toBeInstanceOf(FanoutInputError);
    expect((err as Error).message).toBe(
      "region ap-south-1 is not deployed (no CloudFormation stack CableLoadtest-ap-south-1); deploy it with: cd infra && npx cdk deploy -c regions=ap-south-1 CableLoadtest-ap-south-1",
    );
  });

  it("reads the outputs and splits the subnets; the log prefix and the task's CPU come from outputs, not DescribeTaskDefinition", async () => {
    const outputs = { ClusterArn: "c", TaskDefinitionArn: "t", ContainerName: "loadgen", SubnetIds: "s1,s2", SecurityGroupId: "sg", AssignPublicIp: "ENABLED", BucketName: "b", LogGroupName: "l", LogStreamPrefix: "loadgen", TaskCpu: "4096" };
    cfn.on(DescribeStacksCommand).resolves({ Stacks: [{ StackName: "CableLoadtest-eu-west-2", StackStatus: "UPDATE_COMPLETE", CreationTime: new Date(), Outputs: Object.entries(outputs).map(([OutputKey, OutputValue]) => ({ OutputKey, OutputValue })) }] });
    const stack = await describeRegionStack(new CloudFormationClient({ region: "eu-west-2" }), "eu-west-2");
    expect(stack).toMatchObject({ clusterArn: "c", subnetIds: ["s1", "s2"], bucketName: "b", logStreamPrefix: "loadgen", taskCpu: 4096 });
    expect(ecs.calls()).toHaveLength(0);
  });

  it("reads the TaskArch output; a stack from before it has none (it runs x86_64); a value that is no architecture asks to redeploy", async () => {
    const base = { ClusterArn: "c", TaskDefinitionArn: "t", ContainerName: "loadgen", SubnetIds: "s1,s2", SecurityGroupId: "sg", AssignPublicIp: "ENABLED", BucketName: "b", LogGroupName: "l", LogStreamPrefix: "loadgen", TaskCpu: "4096" };
    const describe = async (outputs: Record<string, string>) => {
      cfn.on(DescribeStacksCommand).resolves({ Stacks: [{ StackName: "CableLoadtest-eu-west-2", StackStatus: "CREATE_COMPLETE", CreationTime: new Date(), Outputs: Object.entries(outputs).map(([OutputKey, OutputValue]) => ({ OutputKey, OutputValue })) }] });
      return describeRegionStack(new CloudFormationClient({ region: "eu-west-2" }), "eu-west-2");
    };
    expect((await describe({ ...base, TaskArch: "arm64" })).taskArch).toBe("arm64");
    expect((await describe({ ...base, TaskArch: "x86_64" })).taskArch).toBe("x86_64");
    expect(await describe(base)).not.toHaveProperty("taskArch");
    await expect(describe({ ...base, TaskArch: "riscv64" })).rejects.toThrow(
      'region eu-west-2: stack CableLoadtest-eu-west-2\'s TaskArch output is "riscv64", not x86_64 or arm64 (deployed by a newer version?); redeploy it with: cd infra && npx cdk deploy -c regions=eu-west-2 CableLoadtest-eu-west-2',
    );
  });

  it("asks to redeploy a stack from before the LogStreamPrefix and TaskCpu outputs", async () => {
    const outputs = { ClusterArn: "c", TaskDefinitionArn: "t", ContainerName: "loadgen", SubnetIds: "s1,s2", SecurityGroupId: "sg", AssignPublicIp: "ENABLED", BucketName: "b", LogGroupName: "l" };
    cfn.on(DescribeStacksCommand).resolves({ Stacks: [{ StackName: "CableLoadtest-eu-west-2", StackStatus: "UPDATE_COMPLETE", CreationTime: new Date(), Outputs: Object.entries(outputs).map(([OutputKey, OutputValue]) => ({ OutputKey, OutputValue })) }] });
    await expect(describeRegionStack(new CloudFormationClient({ region: "eu-west-2" }), "eu-west-2")).rejects.toThrow("lacks the outputs LogStreamPrefix, TaskCpu (deployed by an older version?); redeploy it with: cd infra && npx cdk deploy");
  });

  it("refuses a stack in a failed state", async () => {
    cfn.on(DescribeStacksCommand).resolves({ Stacks: [{ StackName: "CableLoadtest-eu-west-2", StackStatus: "ROLLBACK_COMPLETE", CreationTime: new Date() }] });
    await expect(describeRegionStack(new CloudFormationClient({ region: "eu-west-2" }), "eu-west-2")).rejects.toThrow(/is ROLLBACK_COMPLETE; fix or redeploy it with: cd infra && npx cdk deploy/);
  });
});

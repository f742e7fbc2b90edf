// What Fargate does with a task, played against moto (which runs no container): every task ECS
// lists gets the real worker entrypoint as a child process, with the environment the task definition
// and the RunTask overrides give it; a StopTask (desired status STOPPED) sends the worker SIGTERM; a
// worker that exits stops its task (the essential container exited). So a test sees what a real
// region would: ready markers, the start gate, heartbeats, self-stops and results in the bucket.
import { type ChildProcess, spawn } from "node:child_process";
import path from "node:path";
import { DescribeTaskDefinitionCommand, DescribeTasksCommand, ECSClient, ListTasksCommand, StopTaskCommand, type Task } from "@aws-sdk/client-ecs";
import type { RegionStack } from "../src/aws/discovery";

export interface EmulatedTask {
  region: string;
  arn: string;
  taskId: string;
  runId: string;
  worker: ChildProcess;
  exitCode: number | null | undefined;
  output: string;
  /** The capacity ECS placed it on (FARGATE_SPOT with --spot), as DescribeTasks says. */
  capacityProviderName?: string;
  /** Its task definition's runtime platform, as DescribeTaskDefinition says (the worker runs on this machine's CPU whatever it is: Node and the engine are pure JavaScript). */
  runtimePlatform?: { cpuArchitecture?: string; operatingSystemFamily?: string };
}

const WORKER = require.resolve("cable-worker/main");

export async function emulateEcs(stacks: RegionStack[], env: Record<string, string>, workDir: string) {
  const tasks = new Map<string, EmulatedTask>();
  let stopped = false;
  // Tasks of earlier tests in the same moto are not this emulator's.
  const ignored = new Set<string>();
  const clients = new Map(stacks.map((s) => [s.region, new ECSClient({ region: s.region })]));

  const platforms = new Map<string, Promise<EmulatedTask["runtimePlatform"]>>();
  const platformOf = (stack: RegionStack, taskDefinitionArn: string | undefined) => {
    if (!taskDefinitionArn) return Promise.resolve(undefined);
    if (!platforms.has(taskDefinitionArn)) {
      platforms.set(
        taskDefinitionArn,
        clients
          .get(stack.region)!
          .send(new DescribeTaskDefinitionCommand({ taskDefinition: taskDefinitionArn }))
          .then((out) => out.taskDefinition?.runtimePlatform),
      );
    }
    return platforms.get(taskDefinitionArn)!;
  };

  const startWorker = (stack: RegionStack, described: Task) => {
    const arn = described.taskArn!;
    const overrides = described.overrides?.containerOverrides?.[0]?.environment ?? [];
    const taskId = arn.slice(arn.lastIndexOf("/") + 1);
    const fromRunTask = Object.fromEntries(overrides.map((o) => [o.name!, o.value!]));
    const worker = spawn(process.execPath, [WORKER], {
      env: {
        ...process.env,
        ...env,
        ARTILLERY_DISABLE_TELEMETRY: "true",
        AWS_REGION: stack.region,
        CABLE_STORE: `s3://${stack.bucketName}`,
        CABLE_REGION: stack.region,
        CABLE_TASK_ID: taskId,
        CABLE_WORK_DIR: path.join(workDir, "workers"),
        ...fromRunTask,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const task: EmulatedTask = { region: stack.region, arn, taskId, runId: fromRunTask.CABLE_RUN_ID, worker, exitCode: undefined, output: "", capacityProviderName: described.capacityProviderName };
    void platformOf(stack, described.taskDefinitionArn).then(
      (platform) => (task.runtimePlatform = platform),
      () => undefined,
    );
    worker.stdout!.on("data", (d) => (task.output += d));
    worker.stderr!.on("data", (d) => (task.output += d));
    worker.once("exit", (code) => {
      task.exitCode = code;
      // The essential container exited: ECS stops the task.
      void clients.get(stack.region)!.send(new StopTaskCommand({ cluster: stack.clusterArn, task: arn, reason: "Essential container in task exited" })).catch(() => undefined);
    });
    tasks.set(arn, task);
  };

  for (const stack of stacks) {
    const { taskArns = [] } = await clients.get(stack.region)!.send(new ListTasksCommand({ cluster: stack.clusterArn }));
    taskArns.forEach((arn) => ignored.add(arn));
  }
  const loop = (async () => {
    while (!stopped) {
      for (const stack of stacks) {
        const ecs = clients.get(stack.region)!;
        const { taskArns = [] } = await ecs.send(new ListTasksCommand({ cluster: stack.clusterArn }));
        if (taskArns.length === 0) continue;
        for (let i = 0; i < taskArns.length; i += 100) {
          const { tasks: described = [] } = await ecs.send(new DescribeTasksCommand({ cluster: stack.clusterArn, tasks: taskArns.slice(i, i + 100) }));
          for (const t of described) {
            const known = tasks.get(t.taskArn!);
            if (!known && !ignored.has(t.taskArn!) && t.desiredStatus === "RUNNING") startWorker(stack, t);
            // StopTask: ECS sends the container SIGTERM.
            if (known && known.exitCode === undefined && t.desiredStatus === "STOPPED" && !known.worker.killed) known.worker.kill("SIGTERM");
          }
        }
      }
      await new Promise((r) => setTimeout(r, 300));
    }
  })();

  return {
    tasks,
    /** This emulator's tasks that ECS still counts as running (desired status RUNNING), in every region. */
    async running(): Promise<string[]> {
      const out: string[] = [];
      for (const stack of stacks) {
        const { taskArns = [] } = await clients.get(stack.region)!.send(new ListTasksCommand({ cluster: stack.clusterArn, desiredStatus: "RUNNING" }));
        out.push(...taskArns.filter((arn) => !ignored.has(arn)));
      }
      return out;
    },
    /** Waits (bounded) until every worker has exited. */
    async settled(timeoutMs: number): Promise<void> {
      const until = Date.now() + timeoutMs;
      while (Date.now() < until && [...tasks.values()].some((t) => t.exitCode === undefined)) await new Promise((r) => setTimeout(r, 200));
    },
    async stop(): Promise<void> {
      stopped = true;
      await loop.catch(() => undefined);
      for (const t of tasks.values()) if (t.exitCode === undefined) t.worker.kill("SIGKILL");
    },
  };
}

// RunTask's overrides: the environment each task gets (the run's id, its slice, the secrets' names,
// --env), and the size ECS allows them. ECS refuses overrides over 8192 characters of JSON
// ("Container Overrides length must be at most 8192", API_TaskOverride; cable-test-servers'
// strict-aws.ts holds moto to it), so a run whose --env would not fit is refused before any task
// starts, in the preflight and when the flags are read, naming the largest values.
import type { ContainerOverride, KeyValuePair, TaskOverride } from "@aws-sdk/client-ecs";
import { SLICE_ENV } from "cable-worker/contract";
import { FanoutInputError } from "../errors.js";

export const RUN_TASK_OVERRIDES_MAX = 8192;

export interface TaskEnvironment {
  runId: string;
  /** CABLE_SLICE's value, when the task has a slice. */
  slice?: string;
  /** Env var → secret reference (names only; the worker resolves them). */
  secretRefs: Record<string, string>;
  /** --env: plain values. */
  env?: Record<string, string>;
}

/** The container's environment in one RunTask: the runner's own variables, then --env. */
export function containerEnvironment(task: TaskEnvironment): KeyValuePair[] {
  const environment: KeyValuePair[] = [{ name: "CABLE_RUN_ID", value: task.runId }];
  if (task.slice !== undefined) environment.push({ name: SLICE_ENV, value: task.slice });
  if (Object.keys(task.secretRefs).length > 0) environment.push({ name: "CABLE_SECRETS", value: JSON.stringify(task.secretRefs) });
  for (const [name, value] of Object.entries(task.env ?? {})) environment.push({ name, value });
  return environment;
}

/** The overrides of one RunTask: the task size, and the container's environment (and memory, within the task's). */
export function runTaskOverrides(containerName: string, environment: KeyValuePair[], size: { cpu?: number; memory?: number }): TaskOverride {
  const container: ContainerOverride = { name: containerName, environment, ...(size.memory !== undefined ? { memory: size.memory } : {}) };
  return {
    ...(size.cpu !== undefined ? { cpu: String(size.cpu) } : {}),
    ...(size.memory !== undefined ? { memory: String(size.memory) } : {}),
    containerOverrides: [container],
  };
}

/** The longest a run id (ECS startedBy) and a slice (`<index>/<count>`, 9 digits each) may be: the size is judged for the largest task. */
const LONGEST_RUN_ID = "r".repeat(36);
const LONGEST_SLICE = "999999999/999999999";

/** Why no RunTask of this run would be accepted, or undefined when the largest one fits. */
export function overridesSizeProblem(input: { containerName: string; secretRefs: Record<string, string>; env?: Record<string, string>; cpu?: number; memory?: number }): string | undefined {
  const environment = containerEnvironment({ runId: LONGEST_RUN_ID, slice: LONGEST_SLICE, secretRefs: input.secretRefs, env: input.env });
  const size = JSON.stringify(runTaskOverrides(input.containerName, environment, input)).length;
  if (size <= RUN_TASK_OVERRIDES_MAX) return undefined;
  const entries = Object.entries(input.env ?? {});
  const envSize = entries.reduce((n, [name, value]) => n + JSON.stringify({ name, value }).length + 1, 0);
  const largest = entries
    .map(([name, value]) => ({ name, length: value.length }))
    .sort((a, b) => b.length - a.length)
    .slice(0, 3)
    .map((e) => `${e.name} ${e.length}`)
    .join(", ");
  return (
    `each task's RunTask overrides would be up to ${size} characters of JSON, over ECS's limit of ${RUN_TASK_OVERRIDES_MAX}` +
    (entries.length > 0 ? `: --env takes ${envSize} of them (the longest values, in characters: ${largest})` : "") +
    `; keep long values out of the environment: put them into the scenario (config.variables, or -v) or a file it reads`
  );
}

/** overridesSizeProblem, thrown as bad input (exit 2). */
export function refuseOversizeOverrides(input: Parameters<typeof overridesSizeProblem>[0]): void {
  const problem = overridesSizeProblem(input);
  if (problem) throw new FanoutInputError(problem);
}

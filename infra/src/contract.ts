/**
 * `cable-infra/contract`: what the stacks promise the fan-out runner. The CDK code builds the stacks
 * from these values and the runner finds and drives them with the same ones, so the two cannot
 * drift apart. Nothing here loads aws-cdk-lib (the runner does not ship it).
 */

/** The runner finds each region's stack by this name (CloudFormation DescribeStacks). */
export const stackNameFor = (region: string): string => `CableLoadtest-${region}`;

export const CONTAINER_NAME = "loadgen";

/** The managed policy each region's stack creates for whoever runs `cable-fanout run|collect|stop` there. */
export const operatorPolicyNameFor = (region: string): string => `CableLoadtestOperator-${region}`;

/** With `-c githubRepo=owner/name`: the stack holding the GitHub Actions OIDC role (deployed in the first region). */
export const GITHUB_STACK_NAME = "CableLoadtest-github";
export const GITHUB_ROLE_NAME = "CableLoadtestGitHubActions";

/** Service Quotas codes of Fargate's concurrent vCPU quotas (service code `fargate`). */
export const FARGATE_VCPU_QUOTA = { onDemand: "L-3032A538", spot: "L-36FBB829" } as const;

/** The output keys DescribeStacks returns; the runner's contract. */
export const OUTPUT_KEYS = [
  "ClusterArn",
  "TaskDefinitionArn",
  "ContainerName",
  "SubnetIds",
  "SecurityGroupId",
  "AssignPublicIp",
  "BucketName",
  "LogGroupName",
  "LogStreamPrefix",
  "TaskCpu",
] as const;
export type OutputKey = (typeof OUTPUT_KEYS)[number];

/**
 * The task's memory in MiB (the task definition's), for cost estimates. Optional, not in OUTPUT_KEYS:
 * stacks deployed before it was added lack it, and the runner must still drive them.
 */
export const TASK_MEMORY_OUTPUT = "TaskMemory";

/** The CPU architectures a stack's tasks can run on: its `-c arch=` context, and its TaskArch output. */
export const TASK_ARCHES = ["x86_64", "arm64"] as const;
export type TaskArch = (typeof TASK_ARCHES)[number];

/**
 * The task definition's CPU architecture (`x86_64` or `arm64`, TASK_ARCHES). Optional, not in
 * OUTPUT_KEYS: stacks deployed before it was added lack it, and they run x86_64 (the only
 * architecture they could be deployed with).
 */
export const TASK_ARCH_OUTPUT = "TaskArch";

/** Where task secrets live; the task role may read nothing else from SSM or Secrets Manager. */
export const SECRETS_PATH = "cable-loadtest";

const UNDER_SECRETS_PATH = new RegExp(`(^/?|^secretsmanager:|:parameter/|:secret:)${SECRETS_PATH}/`);

/** `secretsmanager:<name>`: a Secrets Manager secret by name, read in each task's own region. */
export const SECRETS_MANAGER_SCHEME = "secretsmanager:";

/**
 * Whether the task role can read this reference: an SSM parameter name (`/cable-loadtest/x`), a
 * Secrets Manager name (`secretsmanager:cable-loadtest/x`), or an SSM parameter / Secrets Manager ARN
 * whose name starts with `cable-loadtest/`.
 */
export const isUnderSecretsPath = (reference: string): boolean => UNDER_SECRETS_PATH.test(reference);

const range = (min: number, max: number, step: number): number[] => Array.from({ length: (max - min) / step + 1 }, (_, i) => min + i * step);

/** Fargate's CPU/memory pairs (Linux), in MiB per CPU size. */
const FARGATE_SIZES: ReadonlyMap<number, readonly number[]> = new Map([
  [256, [512, 1024, 2048]],
  [512, range(1024, 4096, 1024)],
  [1024, range(2048, 8192, 1024)],
  [2048, range(4096, 16384, 1024)],
  [4096, range(8192, 30720, 1024)],
  [8192, range(16384, 61440, 4096)],
  [16384, range(32768, 122880, 8192)],
]);

/** How the caller names the two values in its messages: CDK context keys, or CLI flags. */
export interface SizeNames {
  cpu: string;
  memory: string;
}

export class FargateSizeError extends Error {
  override name = "FargateSizeError";
}

/** Throws a FargateSizeError naming the allowed values unless `cpu`/`memoryMiB` is a Fargate task size. */
export function assertFargateSize(cpu: number, memoryMiB: number, names: SizeNames = { cpu: "cpu", memory: "memoryMiB" }): void {
  const memories = FARGATE_SIZES.get(cpu);
  if (!memories) throw new FargateSizeError(`${names.cpu}: ${cpu} is not a Fargate CPU size (${[...FARGATE_SIZES.keys()].join(", ")})`);
  if (!memories.includes(memoryMiB)) {
    const last = memories[memories.length - 1];
    const allowed = memories.length <= 4 ? memories.join(", ") : `${memories[0]}–${last} in steps of ${last - memories[memories.length - 2]}`;
    throw new FargateSizeError(`${names.memory}: ${memoryMiB} does not fit ${names.cpu} ${cpu} (Fargate allows ${allowed} MiB)`);
  }
}

// A region's deployment, from the outputs of its CableLoadtest-<region> stack (cable-infra's contract).
import { type CloudFormationClient, DescribeStacksCommand, type Stack } from "@aws-sdk/client-cloudformation";
import { OUTPUT_KEYS, type OutputKey, stackNameFor, TASK_ARCH_OUTPUT, TASK_ARCHES, TASK_MEMORY_OUTPUT } from "cable-infra/contract";
import type { Arch } from "../backend.js";
import { FanoutInputError } from "../errors.js";

export interface RegionStack {
  region: string;
  clusterArn: string;
  taskDefinitionArn: string;
  containerName: string;
  subnetIds: string[];
  securityGroupId: string;
  assignPublicIp: "ENABLED" | "DISABLED";
  bucketName: string;
  logGroupName: string;
  /** awslogs' stream prefix: a task's stream is `<prefix>/<container>/<task id>`. */
  logStreamPrefix: string;
  /** Task CPU units, for the Fargate vCPU quota check and the cost. */
  taskCpu?: number;
  /** Task memory (MiB), for the cost; stacks deployed before it was an output lack it. */
  taskMemory?: number;
  /**
   * The task definition's architecture (the TaskArch output). Undefined for stacks deployed before
   * it was an output, which run x86_64: they could be deployed with no other.
   */
  taskArch?: Arch;
}

/** Stack states in which its resources exist and match its outputs. */
const USABLE = new Set(["CREATE_COMPLETE", "UPDATE_COMPLETE", "UPDATE_ROLLBACK_COMPLETE", "IMPORT_COMPLETE"]);

export const deployHint = (region: string): string => `cd infra && npx cdk deploy -c regions=${region} ${stackNameFor(region)}`;

export async function describeRegionStack(cloudFormation: CloudFormationClient, region: string): Promise<RegionStack> {
  const name = stackNameFor(region);
  let stack: Stack | undefined;
  try {
    stack = (await cloudFormation.send(new DescribeStacksCommand({ StackName: name }))).Stacks?.[0];
  } catch (err) {
    const e = err as Error;
    if (/does not exist/i.test(e.message)) throw new FanoutInputError(`region ${region} is not deployed (no CloudFormation stack ${name}); deploy it with: ${deployHint(region)}`);
    throw new FanoutInputError(`region ${region}: DescribeStacks ${name} failed: ${e.name}: ${e.message}`);
  }
  if (!stack) throw new FanoutInputError(`region ${region} is not deployed (no CloudFormation stack ${name}); deploy it with: ${deployHint(region)}`);
  if (!USABLE.has(stack.StackStatus ?? "")) {
    throw new FanoutInputError(`region ${region}: stack ${name} is ${stack.StackStatus}${stack.StackStatusReason ? ` (${stack.StackStatusReason})` : ""}; fix or redeploy it with: ${deployHint(region)}`);
  }
  const outputs = new Map((stack.Outputs ?? []).map((o) => [o.OutputKey, o.OutputValue]));
  const missing = OUTPUT_KEYS.filter((k) => !outputs.get(k));
  if (missing.length > 0) throw new FanoutInputError(`region ${region}: stack ${name} lacks the outputs ${missing.join(", ")} (deployed by an older version?); redeploy it with: ${deployHint(region)}`);
  const get = (key: OutputKey) => outputs.get(key)!;
  const cpu = Number(get("TaskCpu"));
  const memory = Number(outputs.get(TASK_MEMORY_OUTPUT));
  const arch = outputs.get(TASK_ARCH_OUTPUT);
  if (arch !== undefined && !(TASK_ARCHES as readonly string[]).includes(arch)) {
    throw new FanoutInputError(`region ${region}: stack ${name}'s ${TASK_ARCH_OUTPUT} output is "${arch}", not ${TASK_ARCHES.join(" or ")} (deployed by a newer version?); redeploy it with: ${deployHint(region)}`);
  }
  return {
    region,
    clusterArn: get("ClusterArn"),
    taskDefinitionArn: get("TaskDefinitionArn"),
    containerName: get("ContainerName"),
    subnetIds: get("SubnetIds").split(",").map((s) => s.trim()).filter(Boolean),
    securityGroupId: get("SecurityGroupId"),
    assignPublicIp: get("AssignPublicIp") === "DISABLED" ? "DISABLED" : "ENABLED",
    bucketName: get("BucketName"),
    logGroupName: get("LogGroupName"),
    logStreamPrefix: get("LogStreamPrefix"),
    ...(Number.isFinite(cpu) && cpu > 0 ? { taskCpu: cpu } : {}),
    ...(Number.isFinite(memory) && memory > 0 ? { taskMemory: memory } : {}),
    ...(arch !== undefined ? { taskArch: arch as Arch } : {}),
  };
}

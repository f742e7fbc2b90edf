import { CfnOutput, Stack, type StackProps, Tags } from "aws-cdk-lib";
import type * as iam from "aws-cdk-lib/aws-iam";
import type { Construct } from "constructs";
import { CONTAINER_NAME, OUTPUT_KEYS, type OutputKey, TASK_ARCH_OUTPUT, TASK_MEMORY_OUTPUT, stackNameFor } from "../contract.js";
import { LoadGenerator } from "./load-generator.js";
import { Network } from "./network.js";
import { OperatorPolicy } from "./operator-policy.js";
import { ResultsBucket } from "./results-bucket.js";
import type { StackSettings } from "./settings.js";

export const PROJECT_TAG = { key: "project", value: "cable-loadtest" } as const;

export interface LoadtestStackProps extends StackProps {
  settings: StackSettings;
  /** Use this VPC (looked up; needs an account in `env`) instead of creating one. */
  vpcId?: string;
  /** The Docker build context (see src/image/stage.ts). */
  imageDirectory: string;
}

/**
 * One region's load generator: the network, the results bucket, the cluster and task definition, the
 * operator policy, and the outputs the runner reads.
 *
 * The construct ids keep every logical id what it was when this stack created the resources itself
 * (test/templates.test.ts pins the templates): a construct whose main resource is its "Default" child
 * takes that resource's old id, and the load generator, which has four, is this stack's "Default".
 */
export class LoadtestStack extends Stack {
  readonly operatorPolicy: iam.ManagedPolicy;

  constructor(scope: Construct, id: string, props: LoadtestStackProps) {
    super(scope, id, props);
    const { settings } = props;
    const region = this.region;

    const network = new Network(this, "Vpc", { vpcId: props.vpcId });
    const results = new ResultsBucket(this, "Bucket", settings);
    const loadGenerator = new LoadGenerator(this, "Default", {
      ...settings,
      vpc: network.vpc,
      results,
      family: stackNameFor(region),
      imageDirectory: props.imageDirectory,
    });
    const { cluster, taskDefinition, logGroup } = loadGenerator;
    const bucket = results.bucket;
    this.operatorPolicy = new OperatorPolicy(this, "OperatorPolicy", { cluster, taskDefinition, bucket, logGroup }).policy;

    const outputs: Record<OutputKey, string> = {
      ClusterArn: cluster.clusterArn,
      TaskDefinitionArn: taskDefinition.taskDefinitionArn,
      ContainerName: loadGenerator.container.containerName,
      SubnetIds: network.subnets.map((s) => s.subnetId).join(","),
      SecurityGroupId: loadGenerator.securityGroup.securityGroupId,
      AssignPublicIp: network.assignPublicIp ? "ENABLED" : "DISABLED",
      BucketName: bucket.bucketName,
      LogGroupName: logGroup.logGroupName,
      // What the runner used to read with DescribeTaskDefinition, which IAM grants only on "*" (every
      // task definition in the region, other applications' environments included).
      LogStreamPrefix: CONTAINER_NAME,
      TaskCpu: String(settings.cpu),
    };
    for (const key of OUTPUT_KEYS) new CfnOutput(this, key, { value: outputs[key] });
    // Beside TaskCpu, for the runner's cost estimate; optional to the runner (older stacks lack it).
    new CfnOutput(this, TASK_MEMORY_OUTPUT, { value: String(settings.memoryMiB) });
    // The task definition's architecture, x86_64 or arm64: RunTask cannot override it, so the runner
    // refuses a run whose --arch differs, and prices the one it starts; optional too (older stacks are x86_64).
    new CfnOutput(this, TASK_ARCH_OUTPUT, { value: settings.arch });
    // Not part of the runner's contract: for people attaching the policy.
    new CfnOutput(this, "OperatorPolicyArn", { value: this.operatorPolicy.managedPolicyArn });

    Tags.of(this).add(PROJECT_TAG.key, PROJECT_TAG.value);
    Tags.of(this).add(`${PROJECT_TAG.value}:region`, region);
    for (const [key, value] of Object.entries(settings.tags)) Tags.of(this).add(key, value);
  }
}

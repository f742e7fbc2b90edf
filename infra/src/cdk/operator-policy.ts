/**
 * The operator policy, a managed policy named for its region (`CableLoadtestOperator-<region>`) that
 * the person or CI role running `cable-fanout` attaches (README: "The operator policy"). It allows
 * what `cable-fanout run | collect | stop` may do in one region, and nothing more: find the stack,
 * start, watch and stop this stack's tasks, pass its two roles to ECS, read and write its bucket
 * (runs/, and history/ for `--history stack`),
 * check secrets, read its tasks' logs, and what the runner's preflight (`cable-fanout plan`, and
 * `run` before any task starts) reads to know before a launch whether the run fits: the Fargate vCPU
 * quotas (applied, or AWS's default when the quota was never adjusted), the vCPUs Fargate already
 * uses (CloudWatch's AWS/Usage metrics) and the free addresses in the task subnets. Every statement
 * is proven against the calls the runner makes (cable-fanout's moto tests, moto-first-run.test.ts
 * among them, with an IAM policy simulator).
 */
import { ArnFormat, Stack } from "aws-cdk-lib";
import type * as ecs from "aws-cdk-lib/aws-ecs";
import * as iam from "aws-cdk-lib/aws-iam";
import type * as logs from "aws-cdk-lib/aws-logs";
import type * as s3 from "aws-cdk-lib/aws-s3";
import { Construct } from "constructs";
import { FARGATE_VCPU_QUOTA, SECRETS_PATH, operatorPolicyNameFor, stackNameFor } from "../contract.js";
import { HISTORY_PREFIX, RUNS_PREFIX } from "cable-worker/contract";

/** The stack's resources the operator acts on. */
export interface OperatorPolicyProps {
  cluster: ecs.ICluster;
  taskDefinition: ecs.TaskDefinition;
  bucket: s3.IBucket;
  logGroup: logs.ILogGroup;
}

export class OperatorPolicy extends Construct {
  readonly policy: iam.ManagedPolicy;

  constructor(scope: Construct, id: string, props: OperatorPolicyProps) {
    super(scope, id);
    const stack = Stack.of(this);
    // "Default" is left out of logical ids, so the policy keeps the one it had when the stack created
    // it itself: under a new logical id CloudFormation would create the replacement first, and fail
    // on its fixed name, which the old policy still holds.
    this.policy = new iam.ManagedPolicy(this, "Default", {
      managedPolicyName: operatorPolicyNameFor(stack.region),
      description: `cable-fanout run | collect | stop against ${stackNameFor(stack.region)}`,
      statements: operatorStatements(stack, props),
    });
  }
}

export function operatorStatements(stack: Stack, r: OperatorPolicyProps): iam.PolicyStatement[] {
  const onCluster = { ArnEquals: { "ecs:cluster": r.cluster.clusterArn } };
  const family = r.taskDefinition.family;
  const logGroupArn = stack.formatArn({ service: "logs", resource: "log-group", resourceName: r.logGroup.logGroupName, arnFormat: ArnFormat.COLON_RESOURCE_NAME });
  return [
    new iam.PolicyStatement({
      sid: "FindStack",
      actions: ["cloudformation:DescribeStacks"],
      resources: [stack.formatArn({ service: "cloudformation", resource: "stack", resourceName: `${stackNameFor(stack.region)}/*` })],
    }),
    new iam.PolicyStatement({
      sid: "RunTasks",
      actions: ["ecs:RunTask"],
      resources: [stack.formatArn({ service: "ecs", resource: "task-definition", resourceName: `${family}:*` })],
      conditions: onCluster,
    }),
    new iam.PolicyStatement({
      sid: "WatchAndStopTasks",
      actions: ["ecs:DescribeTasks", "ecs:StopTask"],
      resources: [stack.formatArn({ service: "ecs", resource: "task", resourceName: `${r.cluster.clusterName}/*` })],
      conditions: onCluster,
    }),
    // ListTasks is authorized against container instances, which Fargate tasks have none of; the
    // cluster condition is what scopes it.
    new iam.PolicyStatement({ sid: "FindRunTasks", actions: ["ecs:ListTasks"], resources: ["*"], conditions: onCluster }),
    new iam.PolicyStatement({
      sid: "PassTaskRoles",
      actions: ["iam:PassRole"],
      resources: [r.taskDefinition.taskRole.roleArn, r.taskDefinition.obtainExecutionRole().roleArn],
      conditions: { StringEquals: { "iam:PassedToService": "ecs-tasks.amazonaws.com" } },
    }),
    new iam.PolicyStatement({
      sid: "ListRuns",
      actions: ["s3:ListBucket"],
      resources: [r.bucket.bucketArn],
      conditions: { StringLike: { "s3:prefix": `${RUNS_PREFIX}/*` } },
    }),
    new iam.PolicyStatement({ sid: "ReadWriteRuns", actions: ["s3:GetObject", "s3:PutObject"], resources: [r.bucket.arnForObjects(`${RUNS_PREFIX}/*`)] }),
    // `--history stack`: one record per run under history/, which the runner lists (Prefix "history/",
    // which "history/*" matches: IAM's * matches nothing too), reads and writes; no task does (the task
    // role has nothing there), and the bucket's expiry rule leaves it.
    new iam.PolicyStatement({
      sid: "ListHistory",
      actions: ["s3:ListBucket"],
      resources: [r.bucket.bucketArn],
      conditions: { StringLike: { "s3:prefix": `${HISTORY_PREFIX}/*` } },
    }),
    new iam.PolicyStatement({ sid: "ReadWriteHistory", actions: ["s3:GetObject", "s3:PutObject"], resources: [r.bucket.arnForObjects(`${HISTORY_PREFIX}/*`)] }),
    // DescribeParameters has no resource-level permissions; it returns names and metadata, never values.
    new iam.PolicyStatement({ sid: "CheckSecretParameters", actions: ["ssm:DescribeParameters"], resources: ["*"] }),
    new iam.PolicyStatement({
      sid: "CheckSecrets",
      actions: ["secretsmanager:DescribeSecret"],
      resources: [stack.formatArn({ service: "secretsmanager", resource: "secret", resourceName: `${SECRETS_PATH}/*`, arnFormat: ArnFormat.COLON_RESOURCE_NAME })],
    }),
    // The runner names a failed task's log stream; reading it is the next thing its operator does.
    // Built by hand: the log group's Arn attribute ends in ":*", which FilterLogEvents' resource (the
    // group itself) does not match.
    new iam.PolicyStatement({
      sid: "ReadTaskLogs",
      actions: ["logs:GetLogEvents", "logs:FilterLogEvents"],
      resources: [logGroupArn, `${logGroupArn}:log-stream:*`],
    }),
    new iam.PolicyStatement({
      sid: "CheckFargateQuota",
      actions: ["servicequotas:GetServiceQuota"],
      resources: Object.values(FARGATE_VCPU_QUOTA).map((code) => stack.formatArn({ service: "servicequotas", resource: "fargate", resourceName: code, arnFormat: ArnFormat.SLASH_RESOURCE_NAME })),
    }),
    // A quota never adjusted has no applied value (GetServiceQuota answers NoSuchResourceException):
    // its default is what holds. GetAWSDefaultServiceQuota has no resource-level permissions and no
    // condition keys (Service Authorization Reference, Service Quotas), so "*"; it reads AWS's
    // published defaults, nothing of the account's.
    new iam.PolicyStatement({ sid: "ReadFargateDefaultQuota", actions: ["servicequotas:GetAWSDefaultServiceQuota"], resources: ["*"] }),
    // The vCPUs Fargate already runs in the region (AWS/Usage, ResourceCount of the Fargate OnDemand
    // and Spot resources), which the quota must also hold. GetMetricData has no resource-level
    // permissions for CloudWatch metrics ("*"); it reads metric values, never logs or secrets.
    new iam.PolicyStatement({ sid: "ReadFargateUsage", actions: ["cloudwatch:GetMetricData"], resources: ["*"] }),
    // Free addresses in the task subnets (AvailableIpAddressCount): each task takes one. DescribeSubnets
    // has no resource-level permissions ("*"); it reads network metadata only.
    new iam.PolicyStatement({ sid: "CheckSubnetAddresses", actions: ["ec2:DescribeSubnets"], resources: ["*"] }),
  ];
}

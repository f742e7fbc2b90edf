// Every AWS call the runner makes, recorded at the SDK (a middleware on each client), and what IAM
// authorizes each one against: the action, the resource ARN and the condition keys. The mapping is
// per command and fails loudly for a command it does not know, so a new call cannot slip past the
// operator-policy test.
import type { AwsClients } from "../src/aws/aws-backend";

export interface RecordedCall {
  region: string;
  client: string;
  command: string;
  input: Record<string, unknown>;
  output?: Record<string, unknown>;
}

export interface IamRequest {
  action: string;
  resource: string;
  context: Record<string, string>;
  /** The call that needs it, for messages. */
  call: string;
}

/** Adds a recording middleware to every client of a region. */
export function recordCalls(clients: AwsClients, region: string, calls: RecordedCall[]): AwsClients {
  for (const client of Object.values(clients) as Array<{ middlewareStack: { add: (...args: unknown[]) => void } }>) {
    client.middlewareStack.add(
      (next: (args: { input: Record<string, unknown> }) => Promise<{ output: Record<string, unknown> }>, context: { clientName: string; commandName: string }) =>
        async (args: { input: Record<string, unknown> }) => {
          const call: RecordedCall = { region, client: context.clientName, command: context.commandName, input: args.input };
          calls.push(call);
          const result = await next(args);
          call.output = result.output;
          return result;
        },
      { step: "initialize", name: "recordCalls" },
    );
  }
  return clients;
}

export interface Deployment {
  account: string;
  /** Per region: the two roles RunTask passes to ECS. */
  roles: Map<string, { taskRoleArn: string; executionRoleArn: string }>;
}

const s3Object = (input: Record<string, unknown>) => `arn:aws:s3:::${input.Bucket}/${input.Key}`;

/** What IAM checks for one recorded call. */
export function iamRequests(call: RecordedCall, deployment: Deployment): IamRequest[] {
  const { region, input } = call;
  const name = `${call.client}.${call.command}`;
  const req = (action: string, resource: string, context: Record<string, string> = {}): IamRequest => ({ action, resource, context, call: name });
  const cluster = { "ecs:cluster": String(input.cluster) };
  switch (name) {
    case "CloudFormationClient.DescribeStacksCommand": {
      const stackId = (call.output?.Stacks as Array<{ StackId: string }> | undefined)?.[0]?.StackId;
      return [req("cloudformation:DescribeStacks", stackId ?? `arn:aws:cloudformation:${region}:${deployment.account}:stack/${input.StackName}/missing`)];
    }
    case "ECSClient.RunTaskCommand": {
      const roles = deployment.roles.get(region)!;
      const pass = { "iam:PassedToService": "ecs-tasks.amazonaws.com" };
      return [req("ecs:RunTask", String(input.taskDefinition), cluster), req("iam:PassRole", roles.taskRoleArn, pass), req("iam:PassRole", roles.executionRoleArn, pass)];
    }
    case "ECSClient.DescribeTasksCommand":
      return (input.tasks as string[]).map((arn) => req("ecs:DescribeTasks", arn, cluster));
    case "ECSClient.StopTaskCommand":
      return [req("ecs:StopTask", String(input.task), cluster)];
    case "ECSClient.ListTasksCommand": {
      // Authorized against a container instance of the cluster (Fargate has none; the condition scopes it).
      const clusterName = String(input.cluster).slice(String(input.cluster).lastIndexOf("/") + 1);
      return [req("ecs:ListTasks", `arn:aws:ecs:${region}:${deployment.account}:container-instance/${clusterName}/0123456789abcdef`, cluster)];
    }
    case "S3Client.PutObjectCommand":
      return [req("s3:PutObject", s3Object(input))];
    case "S3Client.GetObjectCommand":
      return [req("s3:GetObject", s3Object(input))];
    case "S3Client.ListObjectsV2Command":
      return [req("s3:ListBucket", `arn:aws:s3:::${input.Bucket}`, { "s3:prefix": String(input.Prefix ?? "") })];
    case "SSMClient.DescribeParametersCommand":
      return [req("ssm:DescribeParameters", "*")];
    case "SecretsManagerClient.DescribeSecretCommand":
      return [req("secretsmanager:DescribeSecret", String(call.output?.ARN ?? `arn:aws:secretsmanager:${region}:${deployment.account}:secret:${input.SecretId}-AbCdEf`))];
    case "ServiceQuotasClient.GetServiceQuotaCommand":
      return [req("servicequotas:GetServiceQuota", `arn:aws:servicequotas:${region}:${deployment.account}:${input.ServiceCode}/${input.QuotaCode}`)];
    // No resource-level permissions (Service Authorization Reference: Service Quotas, CloudWatch, EC2).
    case "ServiceQuotasClient.GetAWSDefaultServiceQuotaCommand":
      return [req("servicequotas:GetAWSDefaultServiceQuota", "*")];
    case "CloudWatchClient.GetMetricDataCommand":
      return [req("cloudwatch:GetMetricData", "*")];
    case "EC2Client.DescribeSubnetsCommand":
      return [req("ec2:DescribeSubnets", "*")];
    default:
      throw new Error(`no IAM mapping for ${name}: add it to test/iam-calls.ts and the operator policy (infra/src/cdk/operator-policy.ts)`);
  }
}

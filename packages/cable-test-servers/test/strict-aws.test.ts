import { spawnSync } from "node:child_process";
import { ListTasksCommand, ECSClient, StopTaskCommand } from "@aws-sdk/client-ecs";
import { describe, expect, test } from "vitest";
import { CONSTRAINTS, installStrictAws, strictAwsNodeOptions, violations } from "../src/index.js";

// Each rule with an input AWS refuses and one it accepts.
const cases: Array<[string, Record<string, unknown>, Record<string, unknown>]> = [
  ["ECSClient.ListTasksCommand", { cluster: "c", startedBy: "run-1", desiredStatus: "RUNNING" }, { cluster: "c", startedBy: "run-1" }],
  ["ECSClient.ListTasksCommand", { cluster: "c", maxResults: 500 }, { cluster: "c", desiredStatus: "RUNNING", maxResults: 100 }],
  ["ECSClient.RunTaskCommand", { count: 11 }, { count: 10 }],
  ["ECSClient.RunTaskCommand", { count: 1, startedBy: "run 1" }, { count: 1, startedBy: "20261124-201824-556c57" }],
  ["ECSClient.RunTaskCommand", { count: 1, startedBy: "r".repeat(37) }, { count: 1, startedBy: "capacity/r".padEnd(36, "x") }],
  ["ECSClient.RunTaskCommand", { count: 1, launchType: "FARGATE", capacityProviderStrategy: [{ capacityProvider: "FARGATE_SPOT" }] }, { count: 1, capacityProviderStrategy: [{ capacityProvider: "FARGATE_SPOT" }] }],
  ["ECSClient.RunTaskCommand", { count: 1, overrides: { containerOverrides: [{ environment: [{ name: "X", value: "x".repeat(9000) }] }] } }, { count: 1, overrides: { containerOverrides: [{ environment: [{ name: "X", value: "x" }] }] } }],
  ["ECSClient.RegisterTaskDefinitionCommand", { family: "f", runtimePlatform: { cpuArchitecture: "AARCH64", operatingSystemFamily: "LINUX" } }, { family: "f", runtimePlatform: { cpuArchitecture: "ARM64", operatingSystemFamily: "LINUX" } }],
  ["ECSClient.RegisterTaskDefinitionCommand", { family: "f", runtimePlatform: { cpuArchitecture: "ARM64", operatingSystemFamily: "WINDOWS_SERVER_2022_CORE" } }, { family: "f", runtimePlatform: { cpuArchitecture: "X86_64", operatingSystemFamily: "WINDOWS_SERVER_2022_CORE" } }],
  ["ECSClient.RegisterTaskDefinitionCommand", { family: "f", runtimePlatform: { operatingSystemFamily: "UBUNTU" } }, { family: "f" }],
  ["CloudFormationClient.CreateStackCommand", { StackName: "s", TemplateBody: template("ARM") }, { StackName: "s", TemplateBody: template("ARM64") }],
  ["CloudFormationClient.UpdateStackCommand", { StackName: "s", TemplateBody: template("ARM64", "WINDOWS_SERVER_2019_FULL") }, { StackName: "s", TemplateBody: template("X86_64") }],
  ["ECSClient.RunTaskCommand", { count: 1, capacityProviderStrategy: [{ capacityProvider: "FARGATE_SPOT" }], platformVersion: "1.2.0" }, { count: 1, capacityProviderStrategy: [{ capacityProvider: "FARGATE_SPOT" }], platformVersion: "1.4.0" }],
  ["ECSClient.StopTaskCommand", { task: "t", reason: "r".repeat(256) }, { task: "t", reason: "r".repeat(255) }],
  ["ECSClient.DescribeTasksCommand", { tasks: Array.from({ length: 101 }, (_, i) => `t${i}`) }, { tasks: ["t"] }],
  ["S3Client.PutObjectCommand", { Key: "k".repeat(1025) }, { Key: "runs/x/€".repeat(100) }],
  ["S3Client.GetObjectCommand", { Key: "é".repeat(513) }, { Key: "é".repeat(512) }],
  ["S3Client.PutObjectCommand", { Key: "k", Metadata: { big: "v".repeat(2100) } }, { Key: "k", Metadata: { small: "v" } }],
  ["SSMClient.GetParameterCommand", { Name: "/cable loadtest/secret" }, { Name: "/cable-loadtest/pusher-secret" }],
  ["SSMClient.GetParameterCommand", { Name: "ssm-secret" }, { Name: "arn:aws:ssm:eu-west-2:123456789012:parameter/cable-loadtest/s" }],
  ["SSMClient.GetParameterCommand", { Name: "/aws/reference/secretsmanager/x" }, { Name: "/cable-loadtest/aws-key" }],
  ["SSMClient.DescribeParametersCommand", { MaxResults: 51 }, { MaxResults: 50, ParameterFilters: [{ Key: "Name", Option: "Equals", Values: ["/cable-loadtest/s"] }] }],
  ["SecretsManagerClient.DescribeSecretCommand", { SecretId: "cable loadtest/cookie" }, { SecretId: "cable-loadtest/cookie" }],
  ["SecretsManagerClient.GetSecretValueCommand", { SecretId: "" }, { SecretId: "arn:aws:secretsmanager:eu-west-2:123456789012:secret:cable-loadtest/cookie-AbCdEf" }],
  ["CloudFormationClient.DescribeStacksCommand", { StackName: "CableLoadtest_eu-west-2" }, { StackName: "CableLoadtest-eu-west-2" }],
  ["ServiceQuotasClient.GetServiceQuotaCommand", { ServiceCode: "fargate", QuotaCode: "L 3032A538" }, { ServiceCode: "fargate", QuotaCode: "L-3032A538" }],
  ["ServiceQuotasClient.GetAWSDefaultServiceQuotaCommand", { ServiceCode: "", QuotaCode: "L-36FBB829" }, { ServiceCode: "fargate", QuotaCode: "L-36FBB829" }],
  ["CloudWatchClient.GetMetricDataCommand", { MetricDataQueries: [{ Id: "OnDemand", Expression: "m" }], StartTime: new Date(0), EndTime: new Date(1) }, usage({})],
  ["CloudWatchClient.GetMetricDataCommand", usage({ Period: 90 }), usage({ Period: 60 })],
  ["EC2Client.DescribeSubnetsCommand", { SubnetIds: ["subnet-1"], MaxResults: 2 }, { SubnetIds: ["subnet-0a1b2c3d4e5f60789"] }],
];

/** A CloudFormation template (JSON) with one Fargate task definition on this runtime platform. */
function template(cpuArchitecture: string, operatingSystemFamily = "LINUX"): string {
  return JSON.stringify({ Resources: { Bucket: { Type: "AWS::S3::Bucket" }, TaskDefinition: { Type: "AWS::ECS::TaskDefinition", Properties: { RequiresCompatibilities: ["FARGATE"], RuntimePlatform: { CpuArchitecture: cpuArchitecture, OperatingSystemFamily: operatingSystemFamily } } } } });
}

/** A GetMetricData call for Fargate's vCPU usage, with its MetricStat changed by `stat`. */
function usage(stat: Record<string, unknown>): Record<string, unknown> {
  const metric = { Namespace: "AWS/Usage", MetricName: "ResourceCount", Dimensions: [{ Name: "Service", Value: "Fargate" }] };
  return { MetricDataQueries: [{ Id: "ondemand", MetricStat: { Metric: metric, Period: 60, Stat: "Maximum", ...stat } }], StartTime: new Date(0), EndTime: new Date(600_000) };
}

describe("the strict AWS double's rules", () => {
  test.each(cases)("%s: refused and accepted as AWS documents", (call, refused, accepted) => {
    const [client, command] = call.split(".");
    expect(violations(client, command, refused).length, JSON.stringify(refused).slice(0, 80)).toBeGreaterThan(0);
    expect(violations(client, command, accepted)).toEqual([]);
  });

  test("every rule has a case above and a page of the AWS documentation", () => {
    for (const c of CONSTRAINTS) {
      expect(c.source).toMatch(/^https:\/\/docs\.aws\.amazon\.com\//);
      const [client, command] = c.call.split(".");
      expect(cases.some(([call, refused]) => call === c.call && c.check(refused) !== undefined), `${c.call}: ${c.rule}`).toBe(true);
      expect(violations(client, command, {}).every((v) => v.constraint !== c) || c.check({}) !== undefined).toBe(true);
    }
  });
});

describe("installed on the SDK", () => {
  test("a refused call rejects with AWS's error name before anything is sent; an accepted one is sent", async () => {
    expect(installStrictAws()).toBe(true);
    // Nothing listens on port 9: a call that is sent fails with a network error instead.
    const ecs = new ECSClient({ region: "eu-west-2", endpoint: "http://127.0.0.1:9", credentials: { accessKeyId: "a", secretAccessKey: "b" }, maxAttempts: 1 });
    const refused = await ecs.send(new ListTasksCommand({ cluster: "c", startedBy: "run-1", desiredStatus: "RUNNING" })).catch((e: Error) => e);
    expect(refused).toMatchObject({ name: "InvalidParameterException", $metadata: { httpStatusCode: 400 } });
    expect((refused as Error).message).toContain("API_ListTasks.html");
    const sent = await ecs.send(new StopTaskCommand({ cluster: "c", task: "t", reason: "fine" })).catch((e: Error) => e);
    expect((sent as Error).name).not.toBe("InvalidParameterException");
  });

  test("a process spawned with strictAwsNodeOptions() refuses the same call", () => {
    const script = `
      const { ECSClient, StopTaskCommand } = require("@aws-sdk/client-ecs");
      new ECSClient({ region: "eu-west-2", endpoint: "http://127.0.0.1:9", credentials: { accessKeyId: "a", secretAccessKey: "b" }, maxAttempts: 1 })
        .send(new StopTaskCommand({ cluster: "c", task: "t", reason: "x".repeat(300) }))
        .then(() => console.log("sent"), (e) => console.log(e.name));`;
    const out = spawnSync(process.execPath, ["-e", script], { env: { ...process.env, NODE_OPTIONS: strictAwsNodeOptions("") }, encoding: "utf8", timeout: 30_000 });
    expect(out.stdout.trim(), out.stderr).toBe("InvalidParameterException");
  });
});

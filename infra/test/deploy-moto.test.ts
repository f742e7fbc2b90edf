import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { CloudFormationClient, CreateStackCommand, DescribeStacksCommand } from "@aws-sdk/client-cloudformation";
import { DescribeTasksCommand, ECSClient, RunTaskCommand } from "@aws-sdk/client-ecs";
import { PutParameterCommand, SSMClient } from "@aws-sdk/client-ssm";
import { App } from "aws-cdk-lib";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type Moto, startMoto } from "cable-test-servers";
import { buildApp } from "../src/cdk/app";
import { CONTAINER_NAME, OUTPUT_KEYS, TASK_ARCH_OUTPUT, TASK_MEMORY_OUTPUT, stackNameFor } from "../src/contract";
import { stageImage } from "../src/image/stage";

// The synthesized template created in moto's CloudFormation, then used the way the fan-out runner
// will: DescribeStacks outputs → RunTask. moto runs no container; this checks the contract's shape.
let moto: Moto;
let imageDir: string;
beforeAll(async () => {
  moto = await startMoto({ region: "eu-west-2" });
  imageDir = mkdtempSync(path.join(os.tmpdir(), "cable-image-"));
  stageImage(imageDir);
});
afterAll(async () => {
  rmSync(imageDir, { recursive: true, force: true });
  await moto?.stop();
});

it("creates the stack from the synthesized template, and its outputs are enough for RunTask", async () => {
  const region = "eu-west-2";
  const app = new App({ context: { regions: region } });
  const [stack] = buildApp(app, imageDir);
  const template = app.synth().getStackByName(stack.stackName).template;
  const config = { region, endpoint: moto.endpoint, credentials: { accessKeyId: "testing", secretAccessKey: "testing" } };
  // What `cdk bootstrap` would have left; the template's BootstrapVersion rule reads it.
  await new SSMClient(config).send(new PutParameterCommand({ Name: "/cdk-bootstrap/hnb659fds/version", Value: "30", Type: "String" }));

  const cfn = new CloudFormationClient(config);
  await cfn.send(new CreateStackCommand({ StackName: stackNameFor(region), TemplateBody: JSON.stringify(template), Capabilities: ["CAPABILITY_IAM"] }));
  const { Stacks } = await cfn.send(new DescribeStacksCommand({ StackName: stackNameFor(region) }));
  expect(Stacks?.[0].StackStatus).toBe("CREATE_COMPLETE");
  const outputs = Object.fromEntries((Stacks?.[0].Outputs ?? []).map((o) => [o.OutputKey, o.OutputValue ?? ""]));
  expect(Object.keys(outputs).sort()).toEqual([...OUTPUT_KEYS, TASK_MEMORY_OUTPUT, TASK_ARCH_OUTPUT, "OperatorPolicyArn"].sort());
  expect(outputs.TaskMemory).toBe("8192");
  expect(outputs.ClusterArn).toMatch(/^arn:aws:ecs:eu-west-2:\d{12}:cluster\//);
  expect(outputs.TaskDefinitionArn).toMatch(/^arn:aws:ecs:eu-west-2:\d{12}:task-definition\/CableLoadtest-eu-west-2:1$/);
  // One subnet per zone, three zones (placed by AvailabilityZoneId, which moto's CloudFormation takes without placing by it).
  expect(outputs.SubnetIds.split(",")).toHaveLength(3);
  expect(outputs).toMatchObject({ ContainerName: CONTAINER_NAME, AssignPublicIp: "ENABLED" });

  const ecs = new ECSClient(config);
  const run = await ecs.send(
    new RunTaskCommand({
      cluster: outputs.ClusterArn,
      taskDefinition: outputs.TaskDefinitionArn,
      launchType: "FARGATE",
      count: 2,
      networkConfiguration: {
        awsvpcConfiguration: { subnets: outputs.SubnetIds.split(","), securityGroups: [outputs.SecurityGroupId], assignPublicIp: outputs.AssignPublicIp as "ENABLED" },
      },
      overrides: { containerOverrides: [{ name: outputs.ContainerName, environment: [{ name: "CABLE_RUN_ID", value: "r1" }] }] },
    }),
  );
  expect(run.failures).toEqual([]);
  expect(run.tasks).toHaveLength(2);
  const described = await ecs.send(new DescribeTasksCommand({ cluster: outputs.ClusterArn, tasks: run.tasks!.map((t) => t.taskArn!) }));
  expect(described.tasks?.map((t) => t.taskDefinitionArn)).toEqual([outputs.TaskDefinitionArn, outputs.TaskDefinitionArn]);
});

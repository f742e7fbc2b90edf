import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { App } from "aws-cdk-lib";
import { Match, Template } from "aws-cdk-lib/assertions";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { buildApp } from "../src/cdk/app";
import type { LoadtestStack } from "../src/cdk/loadtest-stack";
import { OUTPUT_KEYS, TASK_ARCH_OUTPUT, TASK_MEMORY_OUTPUT } from "../src/contract";
import { stageImage } from "../src/image/stage";
import { EVERY_OPTION_CONTEXT } from "./helpers";

// Synthesizing is slow (seconds per stack), so each template is built once and shared.
let imageDir: string;
let stacks: LoadtestStack[];
let london: Template;

const synth = (context: Record<string, unknown>) => buildApp(new App({ context }), imageDir);

beforeAll(() => {
  imageDir = mkdtempSync(path.join(os.tmpdir(), "cable-image-"));
  stageImage(imageDir);
  stacks = synth({ regions: "eu-west-2,us-east-1" });
  london = Template.fromStack(stacks[0]);
});
afterAll(() => rmSync(imageDir, { recursive: true, force: true }));

describe("the app", () => {
  it("makes one CableLoadtest-<region> stack per region, pinned to that region", () => {
    expect(stacks.map((s) => [s.stackName, s.region])).toEqual([
      ["CableLoadtest-eu-west-2", "eu-west-2"],
      ["CableLoadtest-us-east-1", "us-east-1"],
    ]);
    const virginia = Template.fromStack(stacks[1]);
    virginia.hasResourceProperties("AWS::ECS::TaskDefinition", {
      ContainerDefinitions: [Match.objectLike({ Environment: Match.arrayWith([{ Name: "CABLE_REGION", Value: "us-east-1" }]) })],
    });
  });
});

describe("a region's stack", () => {
  it("has a VPC of public subnets and no NAT gateway", () => {
    london.resourceCountIs("AWS::EC2::VPC", 1);
    london.resourceCountIs("AWS::EC2::NatGateway", 0);
    london.resourceCountIs("AWS::EC2::Subnet", 3);
    london.allResourcesProperties("AWS::EC2::Subnet", { MapPublicIpOnLaunch: true });
    // Room for thousands of tasks (one address each), not the ~500 of two /24s.
    for (const subnet of Object.values(london.findResources("AWS::EC2::Subnet"))) expect(subnet.Properties.CidrBlock).toMatch(/\/20$/);
    london.hasOutput("AssignPublicIp", { Value: "ENABLED" });
  });

  it("places one subnet in each of up to three zones where Fargate runs, by zone ID, its CIDR following the zone", () => {
    const placement = (t: Template) =>
      Object.entries(t.findResources("AWS::EC2::Subnet")).map(([id, r]) => [id.replace(/Subnet[0-9A-F]{8}$/, ""), r.Properties.AvailabilityZoneId, r.Properties.AvailabilityZone, r.Properties.CidrBlock]);
    // The first two keep the logical ids they had when CDK placed them by Fn::GetAZs.
    expect(placement(london)).toEqual([
      ["VpcpublicSubnet1", "euw2-az1", undefined, "10.0.32.0/20"],
      ["VpcpublicSubnet2", "euw2-az2", undefined, "10.0.48.0/20"],
      ["VpcpublicSubnet3", "euw2-az3", undefined, "10.0.64.0/20"],
    ]);
    london.hasOutput("SubnetIds", { Value: { "Fn::Join": ["", [{ Ref: Match.stringLikeRegexp("Subnet1") }, ",", { Ref: Match.stringLikeRegexp("Subnet2") }, ",", { Ref: Match.stringLikeRegexp("Subnet3") }]] } });
    // Fargate runs in two of us-west-1's zones and three of ap-northeast-1's (not apne1-az3).
    const [california, tokyo, unknown] = ["us-west-1", "ap-northeast-1", "eu-nowhere-1"].map((r) => Template.fromStack(synth({ regions: r })[0]));
    expect(placement(california)).toEqual([
      ["VpcpublicSubnet1", "usw1-az1", undefined, "10.0.32.0/20"],
      ["VpcpublicSubnet2", "usw1-az3", undefined, "10.0.64.0/20"],
    ]);
    expect(placement(tokyo).map(([, zone]) => zone)).toEqual(["apne1-az1", "apne1-az2", "apne1-az4"]);
    // A region the table does not know keeps CDK's placement: two zones by Fn::GetAZs, the original CIDRs.
    expect(placement(unknown)).toEqual([
      ["VpcpublicSubnet1", undefined, { "Fn::Select": [0, { "Fn::GetAZs": "" }] }, "10.0.0.0/20"],
      ["VpcpublicSubnet2", undefined, { "Fn::Select": [1, { "Fn::GetAZs": "" }] }, "10.0.16.0/20"],
    ]);
  });

  it("has a cluster with FARGATE and FARGATE_SPOT and Container Insights off", () => {
    london.hasResourceProperties("AWS::ECS::ClusterCapacityProviderAssociations", {
      CapacityProviders: Match.arrayWith(["FARGATE", "FARGATE_SPOT"]),
    });
    london.hasResourceProperties("AWS::ECS::Cluster", { ClusterSettings: [{ Name: "containerInsights", Value: "disabled" }] });
  });

  it("has a Fargate task definition sized for a load generator, with container memory, log retention and no secrets in its environment", () => {
    london.hasResourceProperties("AWS::ECS::TaskDefinition", {
      RequiresCompatibilities: ["FARGATE"],
      NetworkMode: "awsvpc",
      Cpu: "4096",
      Memory: "8192",
      ContainerDefinitions: [
        Match.objectLike({
          Name: "loadgen",
          Memory: 8192,
          Image: Match.objectLike({ "Fn::Sub": Match.stringLikeRegexp("cdk-hnb659fds-container-assets") }),
          Environment: [
            { Name: "CABLE_STORE", Value: { "Fn::Join": ["", ["s3://", { Ref: Match.stringLikeRegexp("^Bucket") }]] } },
            { Name: "CABLE_REGION", Value: "eu-west-2" },
            { Name: "AWS_REGION", Value: "eu-west-2" },
          ],
          Secrets: Match.absent(),
          LogConfiguration: Match.objectLike({ LogDriver: "awslogs" }),
          Ulimits: [{ Name: "nofile", SoftLimit: 65535, HardLimit: 65535 }],
          SystemControls: [
            { Namespace: "net.ipv4.ip_local_port_range", Value: "1024 65535" },
            { Namespace: "net.ipv4.tcp_tw_reuse", Value: "1" },
          ],
          LinuxParameters: { InitProcessEnabled: true },
        }),
      ],
    });
    london.hasResourceProperties("AWS::Logs::LogGroup", { RetentionInDays: 14 });
  });

  it("has a private, encrypted, SSL-only bucket that expires runs (never the history) and is kept unless asked", () => {
    london.hasResource("AWS::S3::Bucket", {
      DeletionPolicy: "Retain",
      Properties: Match.objectLike({
        PublicAccessBlockConfiguration: { BlockPublicAcls: true, BlockPublicPolicy: true, IgnorePublicAcls: true, RestrictPublicBuckets: true },
        BucketEncryption: { ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: "AES256" } }] },
        LifecycleConfiguration: {
          Rules: Match.arrayWith([Match.objectLike({ Prefix: "runs/", ExpirationInDays: 30, Status: "Enabled" })]),
        },
      }),
    });
    // `--history stack` keeps one record per run under history/, beside runs/: no rule expires it.
    const [bucket] = Object.values(london.findResources("AWS::S3::Bucket"));
    const rules = bucket.Properties.LifecycleConfiguration.Rules as Array<{ Prefix?: string; ExpirationInDays?: number; Id: string }>;
    expect(rules.filter((r) => r.ExpirationInDays !== undefined).map((r) => [r.Id, r.Prefix])).toEqual([["expire-old-runs", "runs/"]]);
    london.hasResourceProperties("AWS::S3::BucketPolicy", {
      PolicyDocument: {
        Statement: [Match.objectLike({ Effect: "Deny", Action: "s3:*", Condition: { Bool: { "aws:SecureTransport": "false" } }, Principal: { AWS: "*" } })],
      },
    });
  });

  it("gives the task role exactly: list+read bundles and the runner's markers, list this region's capacity stop marker's key, write this region's results but never bundles or the stop marker, read /cable-loadtest/* secrets", () => {
    const taskRole = Object.keys(london.findResources("AWS::IAM::Role", { Properties: { AssumeRolePolicyDocument: { Statement: [Match.objectLike({ Principal: { Service: "ecs-tasks.amazonaws.com" } })] } } }));
    const policies = Object.values(london.findResources("AWS::IAM::Policy")).filter((p) =>
      (p.Properties.Roles as Array<{ Ref: string }>).some((r) => r.Ref.startsWith("TaskDefinitionTaskRole")),
    );
    expect(taskRole.length).toBe(2); // the task role and the execution role
    expect(policies).toHaveLength(1);
    const [bucketId] = Object.keys(london.findResources("AWS::S3::Bucket"));
    const bucketArn = { "Fn::GetAtt": [bucketId, "Arn"] };
    const objects = (pattern: string) => ({ "Fn::Join": ["", [bucketArn, `/${pattern}`]] });
    const account = (service: string, sep: string, name: string) => ({
      "Fn::Join": ["", ["arn:", { Ref: "AWS::Partition" }, `:${service}:eu-west-2:`, { Ref: "AWS::AccountId" }, `:${sep}${name}`]],
    });
    expect(policies[0].Properties.PolicyDocument.Statement).toEqual([
      { Sid: "ListRunBundles", Effect: "Allow", Action: "s3:ListBucket", Resource: bucketArn, Condition: { StringLike: { "s3:prefix": ["runs/*/bundle/*", "runs/*/control/*", "runs/*/eu-west-2/capacity-stop.live"] } } },
      { Sid: "ReadRunBundles", Effect: "Allow", Action: "s3:GetObject", Resource: [objects("runs/*/bundle/*"), objects("runs/*/control/*")] },
      { Sid: "WriteRegionResults", Effect: "Allow", Action: "s3:PutObject", Resource: objects("runs/*/eu-west-2/*") },
      { Sid: "NeverWriteBundles", Effect: "Deny", Action: "s3:PutObject", Resource: [objects("runs/*/bundle/*"), objects("runs/*/control/*"), objects("runs/*/eu-west-2/capacity-stop.live")] },
      { Sid: "ReadSecretParameters", Effect: "Allow", Action: "ssm:GetParameter", Resource: account("ssm", "parameter/", "cable-loadtest/*") },
      { Sid: "ReadSecrets", Effect: "Allow", Action: "secretsmanager:GetSecretValue", Resource: account("secretsmanager", "secret:", "cable-loadtest/*") },
    ]);
    // Nowhere in the stack does an IAM policy allow s3:* or act on every resource.
    for (const policy of Object.values(london.findResources("AWS::IAM::Policy"))) {
      for (const statement of policy.Properties.PolicyDocument.Statement) {
        expect([statement.Action].flat()).not.toContain("s3:*");
        expect([statement.Resource].flat().filter((r: unknown) => r === "*" && !String(statement.Action).startsWith("ecr:GetAuthorizationToken"))).toEqual([]);
      }
    }
  });

  it("has a security group with no ingress", () => {
    london.resourceCountIs("AWS::EC2::SecurityGroup", 1);
    london.hasResourceProperties("AWS::EC2::SecurityGroup", { SecurityGroupIngress: Match.absent() });
    london.resourceCountIs("AWS::EC2::SecurityGroupIngress", 0);
  });

  it("outputs what the runner needs, under stable keys and without exports", () => {
    const outputs = london.findOutputs("*");
    expect(Object.keys(outputs).sort()).toEqual([...OUTPUT_KEYS, TASK_MEMORY_OUTPUT, TASK_ARCH_OUTPUT, "OperatorPolicyArn"].sort());
    // Optional to the runner: older stacks lack them.
    expect(OUTPUT_KEYS).not.toContain(TASK_MEMORY_OUTPUT);
    expect(OUTPUT_KEYS).not.toContain(TASK_ARCH_OUTPUT);
    for (const output of Object.values(outputs)) expect(output.Export).toBeUndefined();
    london.hasOutput("ContainerName", { Value: "loadgen" });
    london.hasOutput("BucketName", { Value: { Ref: Match.stringLikeRegexp("^Bucket") } });
    london.hasOutput("LogGroupName", { Value: { Ref: Match.stringLikeRegexp("^Logs") } });
    london.hasOutput("LogStreamPrefix", { Value: "loadgen" });
    london.hasOutput("TaskCpu", { Value: "4096" });
    london.hasOutput("TaskMemory", { Value: "8192" });
    london.hasOutput("TaskArch", { Value: "x86_64" });
  });

  it("tags every taggable resource with the project", () => {
    // CDK writes tags sorted by key, and arrayWith matches in order.
    const taggable = ["AWS::EC2::VPC", "AWS::EC2::Subnet", "AWS::EC2::SecurityGroup", "AWS::ECS::Cluster", "AWS::ECS::TaskDefinition", "AWS::S3::Bucket", "AWS::Logs::LogGroup", "AWS::IAM::Role"];
    for (const type of taggable) {
      london.allResourcesProperties(type, { Tags: Match.arrayWith([{ Key: "cable-loadtest:region", Value: "eu-west-2" }, { Key: "project", Value: "cable-loadtest" }]) });
    }
  });
});

describe("the image asset", () => {
  const dockerSource = (app: App) => {
    const assembly = app.synth();
    const manifest = JSON.parse(readFileSync(path.join(assembly.directory, `${stacks[0].stackName}.assets.json`), "utf8"));
    return (Object.values(manifest.dockerImages) as Array<{ source: Record<string, unknown> }>)[0].source;
  };

  it("is built for linux/amd64 with zstd layers (BuildKit's image exporter), or with the builder's default when asked for gzip", () => {
    // The builder's kind decides the default (image-build.ts); this is Docker's.
    const builder = process.env.CDK_DOCKER;
    delete process.env.CDK_DOCKER;
    onTestFinished(() => {
      if (builder !== undefined) process.env.CDK_DOCKER = builder;
    });
    const app = new App({ context: { regions: "eu-west-2" } });
    buildApp(app, imageDir);
    expect(dockerSource(app)).toMatchObject({ platform: "linux/amd64", dockerOutputs: ["type=image,compression=zstd,force-compression=true,oci-mediatypes=true"] });
    const gzip = new App({ context: { regions: "eu-west-2", imageCompression: "gzip" } });
    buildApp(gzip, imageDir);
    expect(dockerSource(gzip).dockerOutputs).toBeUndefined();
  });

  it("is built for linux/arm64 with -c arch=arm64, and the task definition runs on ARM64", () => {
    const app = new App({ context: { regions: "eu-west-2", arch: "arm64" } });
    const [stack] = buildApp(app, imageDir);
    expect(dockerSource(app)).toMatchObject({ platform: "linux/arm64" });
    const t = Template.fromStack(stack);
    t.hasResourceProperties("AWS::ECS::TaskDefinition", { RuntimePlatform: { CpuArchitecture: "ARM64", OperatingSystemFamily: "LINUX" } });
    t.hasOutput("TaskArch", { Value: "arm64" });
    // The default, for contrast: X86_64, and the Spot-capable cluster either way.
    london.hasResourceProperties("AWS::ECS::TaskDefinition", { RuntimePlatform: { CpuArchitecture: "X86_64", OperatingSystemFamily: "LINUX" } });
    t.hasResourceProperties("AWS::ECS::ClusterCapacityProviderAssociations", { CapacityProviders: Match.arrayWith(["FARGATE_SPOT"]) });
  });
});

describe("context options", () => {
  it("sizes the task, keeps logs and runs as asked, destroys the bucket only when asked, adds tags", () => {
    const [stack] = synth(EVERY_OPTION_CONTEXT);
    const t = Template.fromStack(stack);
    t.hasResourceProperties("AWS::ECS::TaskDefinition", { Cpu: "2048", Memory: "4096", ContainerDefinitions: [Match.objectLike({ Memory: 4096 })] });
    t.hasOutput("TaskCpu", { Value: "2048" });
    t.hasOutput("TaskMemory", { Value: "4096" });
    t.hasResourceProperties("AWS::Logs::LogGroup", { RetentionInDays: 7 });
    t.hasResource("AWS::S3::Bucket", { DeletionPolicy: "Delete", Properties: Match.objectLike({ LifecycleConfiguration: { Rules: Match.arrayWith([Match.objectLike({ ExpirationInDays: 3 })]) } }) });
    t.resourceCountIs("Custom::S3AutoDeleteObjects", 1);
    t.hasResourceProperties("AWS::ECS::Cluster", { ClusterSettings: [{ Name: "containerInsights", Value: "enabled" }] });
    t.hasResourceProperties("AWS::S3::Bucket", { Tags: Match.arrayWith([{ Key: "cost-center", Value: "42" }, { Key: "team", Value: "realtime" }]) });
  });

  it("takes an account's own CDK bootstrap qualifier from the context (DefaultStackSynthesizer)", () => {
    const [stack] = synth({ regions: "eu-west-2", "@aws-cdk/core:bootstrapQualifier": "acme1" });
    const t = Template.fromStack(stack);
    t.hasParameter("BootstrapVersion", { Default: "/cdk-bootstrap/acme1/version" });
    t.hasResourceProperties("AWS::ECS::TaskDefinition", {
      ContainerDefinitions: [Match.objectLike({ Image: Match.objectLike({ "Fn::Sub": Match.stringLikeRegexp("cdk-acme1-container-assets") }) })],
    });
  });

  it("uses an existing VPC (looked up) instead of creating one", () => {
    const previous = process.env.CDK_DEFAULT_ACCOUNT;
    process.env.CDK_DEFAULT_ACCOUNT = "123456789012";
    try {
      const [stack] = synth({ regions: "eu-west-2", "vpcId.eu-west-2": "vpc-0123456789abcdef0" });
      const t = Template.fromStack(stack);
      t.resourceCountIs("AWS::EC2::VPC", 0);
      t.resourceCountIs("AWS::EC2::Subnet", 0);
      // Without a cached lookup CDK uses its dummy VPC, which has private subnets: tasks get no public IP there.
      t.hasOutput("AssignPublicIp", { Value: "DISABLED" });
      t.hasOutput("SubnetIds", { Value: Match.stringLikeRegexp("^p-12345,p-67890$") });
    } finally {
      if (previous === undefined) delete process.env.CDK_DEFAULT_ACCOUNT;
      else process.env.CDK_DEFAULT_ACCOUNT = previous;
    }
  });

  it("refuses a VPC lookup without an account, naming why", () => {
    const previous = process.env.CDK_DEFAULT_ACCOUNT;
    delete process.env.CDK_DEFAULT_ACCOUNT;
    try {
      expect(() => synth({ regions: "eu-west-2", vpcId: "vpc-0123456789abcdef0" })).toThrow(
        "vpcId vpc-0123456789abcdef0 for eu-west-2 is looked up at synth time, which needs AWS credentials (no account found)",
      );
    } finally {
      if (previous !== undefined) process.env.CDK_DEFAULT_ACCOUNT = previous;
    }
  });
});

describe("the operator policy and the GitHub Actions role", () => {
  it("gives whoever runs cable-fanout one managed policy per region, named for it, scoped to the stack's resources", () => {
    const [policy] = Object.values(london.findResources("AWS::IAM::ManagedPolicy"));
    expect(policy.Properties.ManagedPolicyName).toBe("CableLoadtestOperator-eu-west-2");
    const statements = policy.Properties.PolicyDocument.Statement as Array<{ Sid: string; Action: string | string[]; Resource: unknown; Condition?: unknown }>;
    expect(statements.map((s) => [s.Sid, s.Action])).toEqual([
      ["FindStack", "cloudformation:DescribeStacks"],
      ["RunTasks", "ecs:RunTask"],
      ["WatchAndStopTasks", ["ecs:DescribeTasks", "ecs:StopTask"]],
      ["FindRunTasks", "ecs:ListTasks"],
      ["PassTaskRoles", "iam:PassRole"],
      ["ListRuns", "s3:ListBucket"],
      ["ReadWriteRuns", ["s3:GetObject", "s3:PutObject"]],
      ["ListHistory", "s3:ListBucket"],
      ["ReadWriteHistory", ["s3:GetObject", "s3:PutObject"]],
      ["CheckSecretParameters", "ssm:DescribeParameters"],
      ["CheckSecrets", "secretsmanager:DescribeSecret"],
      ["ReadTaskLogs", ["logs:GetLogEvents", "logs:FilterLogEvents"]],
      ["CheckFargateQuota", "servicequotas:GetServiceQuota"],
      ["ReadFargateDefaultQuota", "servicequotas:GetAWSDefaultServiceQuota"],
      ["ReadFargateUsage", "cloudwatch:GetMetricData"],
      ["CheckSubnetAddresses", "ec2:DescribeSubnets"],
    ]);
    // The bucket: runs/ and history/ (`--history stack`), each listed only under its own prefix.
    const [bucketId] = Object.keys(london.findResources("AWS::S3::Bucket"));
    const bucketArn = { "Fn::GetAtt": [bucketId, "Arn"] };
    const objects = (pattern: string) => ({ "Fn::Join": ["", [bucketArn, `/${pattern}`]] });
    const bySid = (sid: string) => statements.find((s) => s.Sid === sid)!;
    expect(bySid("ListRuns")).toMatchObject({ Resource: bucketArn, Condition: { StringLike: { "s3:prefix": "runs/*" } } });
    expect(bySid("ReadWriteRuns").Resource).toEqual(objects("runs/*"));
    expect(bySid("ListHistory")).toMatchObject({ Resource: bucketArn, Condition: { StringLike: { "s3:prefix": "history/*" } } });
    expect(bySid("ReadWriteHistory").Resource).toEqual(objects("history/*"));
    // The applied quota is read for the two Fargate vCPU quotas only.
    const quota = (code: string) => ({ "Fn::Join": ["", ["arn:", { Ref: "AWS::Partition" }, ":servicequotas:eu-west-2:", { Ref: "AWS::AccountId" }, `:fargate/${code}`]] });
    expect(statements.find((s) => s.Sid === "CheckFargateQuota")!.Resource).toEqual([quota("L-3032A538"), quota("L-36FBB829")]);
    // "*" only where the action has no resource-level permissions and reads no secret, or a condition
    // scopes it to the cluster. Not DescribeTaskDefinition: on "*" it reads every task definition in
    // the region, other applications' plaintext environments included (the stack outputs what the runner needs).
    // The preflight's three reads have no resource-level permissions at all (Service Authorization Reference).
    const star = statements.filter((s) => s.Resource === "*").map((s) => s.Sid);
    expect(star).toEqual(["FindRunTasks", "CheckSecretParameters", "ReadFargateDefaultQuota", "ReadFargateUsage", "CheckSubnetAddresses"]);
    expect(statements.flatMap((s) => [s.Action].flat())).not.toContain("ecs:DescribeTaskDefinition");
    const passRole = statements.find((s) => s.Sid === "PassTaskRoles")!;
    expect(passRole.Resource).toEqual([{ "Fn::GetAtt": [expect.stringMatching(/^TaskDefinitionTaskRole/), "Arn"] }, { "Fn::GetAtt": [expect.stringMatching(/^TaskDefinitionExecutionRole/), "Arn"] }]);
    expect(passRole.Condition).toEqual({ StringEquals: { "iam:PassedToService": "ecs-tasks.amazonaws.com" } });
    london.hasOutput("OperatorPolicyArn", { Value: { Ref: Match.stringLikeRegexp("^OperatorPolicy") } });
  });

  it("without -c githubRepo makes no GitHub stack; with it, an OIDC role only that repository can assume, holding every region's operator policy", () => {
    const app = new App({ context: { regions: "eu-west-2,us-east-1", githubRepo: "acme/chat" } });
    const regional = buildApp(app, imageDir);
    const github = app.node.findChild("CableLoadtest-github") as import("aws-cdk-lib").Stack;
    expect(github.region).toBe("eu-west-2");
    expect(github.dependencies.map((d) => d.stackName).sort()).toEqual(regional.map((s) => s.stackName).sort());
    const t = Template.fromStack(github);
    t.hasResourceProperties("Custom::AWSCDKOpenIdConnectProvider", { Url: "https://token.actions.githubusercontent.com", ClientIDList: ["sts.amazonaws.com"] });
    t.hasResourceProperties("AWS::IAM::Role", {
      RoleName: "CableLoadtestGitHubActions",
      MaxSessionDuration: 21600,
      AssumeRolePolicyDocument: {
        Statement: [
          Match.objectLike({
            Action: "sts:AssumeRoleWithWebIdentity",
            Condition: {
              StringEquals: { "token.actions.githubusercontent.com:aud": "sts.amazonaws.com" },
              StringLike: { "token.actions.githubusercontent.com:sub": "repo:acme/chat:*" },
            },
          }),
        ],
      },
      ManagedPolicyArns: [
        { "Fn::Join": ["", ["arn:", { Ref: "AWS::Partition" }, ":iam::", { Ref: "AWS::AccountId" }, ":policy/CableLoadtestOperator-eu-west-2"]] },
        { "Fn::Join": ["", ["arn:", { Ref: "AWS::Partition" }, ":iam::", { Ref: "AWS::AccountId" }, ":policy/CableLoadtestOperator-us-east-1"]] },
      ],
    });
    expect(stacks.some((s) => s.stackName === "CableLoadtest-github")).toBe(false);

    // An account that already has GitHub's OIDC provider reuses it.
    const reuse = new App({ context: { regions: "eu-west-2", githubRepo: "acme/chat", githubOidcProviderArn: "arn:aws:iam::123456789012:oidc-provider/token.actions.githubusercontent.com" } });
    buildApp(reuse, imageDir);
    Template.fromStack(reuse.node.findChild("CableLoadtest-github") as import("aws-cdk-lib").Stack).resourceCountIs("Custom::AWSCDKOpenIdConnectProvider", 0);
    expect(() => buildApp(new App({ context: { regions: "eu-west-2", githubRepo: "not a repo" } }), imageDir)).toThrow("invalid CDK context: githubRepo: must be owner/name, e.g. -c githubRepo=acme/chat");
  });
});

import { ArnFormat, CfnOutput, Duration, RemovalPolicy, Stack, type StackProps, Tags } from "aws-cdk-lib";
import * as ec2 from "aws-cdk-lib/aws-ec2";
import { Platform } from "aws-cdk-lib/aws-ecr-assets";
import * as ecs from "aws-cdk-lib/aws-ecs";
import * as iam from "aws-cdk-lib/aws-iam";
import * as logs from "aws-cdk-lib/aws-logs";
import * as s3 from "aws-cdk-lib/aws-s3";
import type { Construct } from "constructs";
import { CONTAINER_NAME, OUTPUT_KEYS, type OutputKey, SECRETS_PATH, operatorPolicyNameFor, stackNameFor } from "../contract.js";
import { RUNS_PREFIX, bundleKeyPattern, controlKeyPattern, resultKeyPattern } from "../worker/layout.js";
import { capacityStopKeyPattern } from "../worker/live-keys.js";
import { operatorStatements } from "./operator-policy.js";
import type { StackSettings } from "./settings.js";

export const PROJECT_TAG = { key: "project", value: "cable-loadtest" } as const;

export interface LoadtestStackProps extends StackProps {
  settings: StackSettings;
  /** Use this VPC (looked up; needs an account in `env`) instead of creating one. */
  vpcId?: string;
  /** The Docker build context (see src/image/stage.ts). */
  imageDirectory: string;
}

/** One region's load generator: network, cluster, task definition, bucket, and the outputs the runner reads. */
/** Kernel parameters of every task (see the container definition). */
export const SYSTEM_CONTROLS: ReadonlyArray<readonly [string, string]> = [
  ["net.ipv4.ip_local_port_range", "1024 65535"],
  ["net.ipv4.tcp_tw_reuse", "1"],
];

export class LoadtestStack extends Stack {
  readonly operatorPolicy: iam.ManagedPolicy;

  constructor(scope: Construct, id: string, props: LoadtestStackProps) {
    super(scope, id, props);
    const { settings } = props;
    const region = this.region;

    const network = props.vpcId ? this.existingNetwork(props.vpcId) : this.ownNetwork();

    const cluster = new ecs.Cluster(this, "Cluster", {
      vpc: network.vpc,
      enableFargateCapacityProviders: true,
      containerInsightsV2: settings.containerInsights ? ecs.ContainerInsights.ENABLED : ecs.ContainerInsights.DISABLED,
    });

    const bucket = new s3.Bucket(this, "Bucket", {
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
      lifecycleRules: [
        { id: "expire-old-runs", prefix: `${RUNS_PREFIX}/`, expiration: Duration.days(settings.resultsExpireDays) },
        { id: "abort-incomplete-uploads", abortIncompleteMultipartUploadAfter: Duration.days(1) },
      ],
      removalPolicy: settings.destroyBucket ? RemovalPolicy.DESTROY : RemovalPolicy.RETAIN,
      autoDeleteObjects: settings.destroyBucket,
    });

    const logGroup = new logs.LogGroup(this, "Logs", {
      retention: settings.logRetention,
      removalPolicy: RemovalPolicy.DESTROY,
    });

    const taskDefinition = new ecs.FargateTaskDefinition(this, "TaskDefinition", {
      family: stackNameFor(region),
      cpu: settings.cpu,
      memoryLimitMiB: settings.memoryMiB,
      runtimePlatform: { cpuArchitecture: ecs.CpuArchitecture.X86_64, operatingSystemFamily: ecs.OperatingSystemFamily.LINUX },
    });
    this.grantLeastPrivilege(taskDefinition.taskRole, bucket);

    const container = taskDefinition.addContainer(CONTAINER_NAME, {
      image: ecs.ContainerImage.fromAsset(props.imageDirectory, { platform: Platform.LINUX_AMD64 }),
      // Set explicitly: moto (and some tooling) rejects a container without a container-level memory value.
      memoryLimitMiB: settings.memoryMiB,
      essential: true,
      // Non-secret configuration only. The runner adds CABLE_RUN_ID (and CABLE_SECRETS, names only) per RunTask.
      environment: { CABLE_STORE: `s3://${bucket.bucketName}`, CABLE_REGION: region, AWS_REGION: region },
      logging: ecs.LogDrivers.awsLogs({ logGroup, streamPrefix: CONTAINER_NAME }),
      // One socket per virtual user: the default 1024 open files would cap a load generator early.
      ulimits: [{ name: ecs.UlimitName.NOFILE, softLimit: 65_535, hardLimit: 65_535 }],
      // The worker forwards SIGTERM to Artillery and then uploads partial results; give it time.
      stopTimeout: Duration.seconds(60),
      linuxParameters: new ecs.LinuxParameters(this, "LinuxParameters", { initProcessEnabled: true }),
      // Fargate takes any net.* sysctl (platform 1.4.0+). The default port range (32768–60999) caps
      // one task at ~28k connections to one target address; TIME_WAIT reuse frees ports faster.
      systemControls: SYSTEM_CONTROLS.map(([namespace, value]) => ({ namespace, value })),
    });

    // What the person or CI role running `cable-fanout` needs here (README: "The operator policy").
    this.operatorPolicy = new iam.ManagedPolicy(this, "OperatorPolicy", {
      managedPolicyName: operatorPolicyNameFor(region),
      description: `cable-fanout run | collect | stop against ${stackNameFor(region)}`,
      statements: operatorStatements(this, { cluster, taskDefinition, bucket, logGroup }),
    });

    const securityGroup = new ec2.SecurityGroup(this, "TaskSecurityGroup", {
      vpc: network.vpc,
      description: "Load generator tasks: outbound only, no ingress",
      allowAllOutbound: true,
    });

    const outputs: Record<OutputKey, string> = {
      ClusterArn: cluster.clusterArn,
      TaskDefinitionArn: taskDefinition.taskDefinitionArn,
      ContainerName: container.containerName,
      SubnetIds: network.subnets.map((s) => s.subnetId).join(","),
      SecurityGroupId: securityGroup.securityGroupId,
      AssignPublicIp: network.assignPublicIp ? "ENABLED" : "DISABLED",
      BucketName: bucket.bucketName,
      LogGroupName: logGroup.logGroupName,
      // What the runner used to read with DescribeTaskDefinition, which IAM grants only on "*" (every
      // task definition in the region, other applications' environments included).
      LogStreamPrefix: CONTAINER_NAME,
      TaskCpu: String(settings.cpu),
    };
    for (const key of OUTPUT_KEYS) new CfnOutput(this, key, { value: outputs[key] });
    // Not part of the runner's contract: for people attaching the policy.
    new CfnOutput(this, "OperatorPolicyArn", { value: this.operatorPolicy.managedPolicyArn });

    Tags.of(this).add(PROJECT_TAG.key, PROJECT_TAG.value);
    Tags.of(this).add(`${PROJECT_TAG.value}:region`, region);
    for (const [key, value] of Object.entries(settings.tags)) Tags.of(this).add(key, value);
  }

  /**
   * Public subnets only and no NAT gateway (the idle stack costs nothing); tasks get public IPs.
   * Every task takes one address (awsvpc): two /20 subnets hold about 8,000 tasks, far beyond the
   * Fargate quota of a new account (a /24 would stop at about 500).
   */
  private ownNetwork(): Network {
    const vpc = new ec2.Vpc(this, "Vpc", {
      maxAzs: 2,
      natGateways: 0,
      subnetConfiguration: [{ name: "public", subnetType: ec2.SubnetType.PUBLIC, cidrMask: 20 }],
      // Free, and keeps bundle/results traffic to S3 off the internet gateway.
      gatewayEndpoints: { S3: { service: ec2.GatewayVpcEndpointAwsService.S3 } },
    });
    return { vpc, subnets: vpc.publicSubnets, assignPublicIp: true };
  }

  /** A team's own VPC: private subnets with egress if it has them (no public IP), else its public subnets. */
  private existingNetwork(vpcId: string): Network {
    const vpc = ec2.Vpc.fromLookup(this, "Vpc", { vpcId });
    return vpc.privateSubnets.length > 0
      ? { vpc, subnets: vpc.privateSubnets, assignPublicIp: false }
      : { vpc, subnets: vpc.publicSubnets, assignPublicIp: true };
  }

  /**
   * Read the bundles, write this region's results (never a bundle), see whether this region's capacity
   * stop marker exists (nothing else of the results), read the project's secrets; nothing else.
   * Explicit statements rather than bucket.grantRead/grantPut, which add actions beyond these.
   */
  private grantLeastPrivilege(role: iam.IRole, bucket: s3.IBucket): void {
    const statements = [
      // Listing control/ too makes a missing go marker a 404 rather than a 403. The capacity probe
      // looks for its region's stop marker by listing that one key (artillery-plugin-cable-capacity-probe).
      new iam.PolicyStatement({
        sid: "ListRunBundles",
        actions: ["s3:ListBucket"],
        resources: [bucket.bucketArn],
        conditions: { StringLike: { "s3:prefix": [bundleKeyPattern(), controlKeyPattern(), capacityStopKeyPattern(this.region)] } },
      }),
      new iam.PolicyStatement({ sid: "ReadRunBundles", actions: ["s3:GetObject"], resources: [bucket.arnForObjects(bundleKeyPattern()), bucket.arnForObjects(controlKeyPattern())] }),
      new iam.PolicyStatement({ sid: "WriteRegionResults", actions: ["s3:PutObject"], resources: [bucket.arnForObjects(resultKeyPattern(this.region))] }),
      // IAM's * also matches "/", so the pattern above would admit runs/<id>/bundle/<region>/…; bundles and the runner's markers
      // (control/, and the capacity stop marker inside the region's own folder) stay read-only.
      new iam.PolicyStatement({
        sid: "NeverWriteBundles",
        effect: iam.Effect.DENY,
        actions: ["s3:PutObject"],
        resources: [bucket.arnForObjects(bundleKeyPattern()), bucket.arnForObjects(controlKeyPattern()), bucket.arnForObjects(capacityStopKeyPattern(this.region))],
      }),
      new iam.PolicyStatement({
        sid: "ReadSecretParameters",
        actions: ["ssm:GetParameter"],
        resources: [this.formatArn({ service: "ssm", resource: "parameter", resourceName: `${SECRETS_PATH}/*` })],
      }),
      new iam.PolicyStatement({
        sid: "ReadSecrets",
        actions: ["secretsmanager:GetSecretValue"],
        resources: [this.formatArn({ service: "secretsmanager", resource: "secret", resourceName: `${SECRETS_PATH}/*`, arnFormat: ArnFormat.COLON_RESOURCE_NAME })],
      }),
    ];
    for (const statement of statements) role.addToPrincipalPolicy(statement);
  }
}

interface Network {
  vpc: ec2.IVpc;
  subnets: ec2.ISubnet[];
  assignPublicIp: boolean;
}

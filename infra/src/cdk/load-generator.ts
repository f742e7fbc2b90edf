/**
 * The load generator itself: the ECS cluster, the Fargate task definition whose one container runs
 * Artillery through the worker, its log group, and the tasks' security group.
 */
import { ArnFormat, Duration, RemovalPolicy, Stack } from "aws-cdk-lib";
import * as ec2 from "aws-cdk-lib/aws-ec2";
import { Platform } from "aws-cdk-lib/aws-ecr-assets";
import * as ecs from "aws-cdk-lib/aws-ecs";
import * as iam from "aws-cdk-lib/aws-iam";
import * as logs from "aws-cdk-lib/aws-logs";
import { Construct } from "constructs";
import { CONTAINER_NAME, SECRETS_PATH } from "../contract.js";
import { imageBuildOutputs } from "./image-build.js";
import type { ResultsBucket } from "./results-bucket.js";
import type { StackSettings } from "./settings.js";

/** Kernel parameters of every task (see the container definition). */
export const SYSTEM_CONTROLS: ReadonlyArray<readonly [string, string]> = [
  ["net.ipv4.ip_local_port_range", "1024 65535"],
  ["net.ipv4.tcp_tw_reuse", "1"],
];

/**
 * ECS's architecture and the image's platform for each `-c arch=`. Node and the engine are pure
 * JavaScript (the image's dependencies install with --ignore-scripts and carry no native binary),
 * and node:<version>-bookworm-slim is a multi-arch tag, so the same Dockerfile builds either.
 *
 * Fargate Spot takes ARM64 tasks: "FARGATE_SPOT supports Linux tasks with the ARM64 architecture on
 * platform version 1.4.0 or later" (Amazon ECS API Reference, CapacityProviderStrategyItem,
 * https://docs.aws.amazon.com/AmazonECS/latest/APIReference/API_CapacityProviderStrategyItem.html;
 * older copies of the Developer Guide, "AWS Fargate capacity providers", still say X86_64 only).
 * RunTask takes the LATEST platform version (1.4.0) unless told otherwise, and the runner never
 * tells it, so --spot keeps its FARGATE_SPOT strategy on either architecture.
 */
export const ARCH_PLATFORMS = {
  x86_64: { cpuArchitecture: ecs.CpuArchitecture.X86_64, image: Platform.LINUX_AMD64 },
  arm64: { cpuArchitecture: ecs.CpuArchitecture.ARM64, image: Platform.LINUX_ARM64 },
} as const;

export interface LoadGeneratorProps extends Pick<StackSettings, "arch" | "cpu" | "memoryMiB" | "logRetention" | "containerInsights" | "imageCompression"> {
  vpc: ec2.IVpc;
  /** Where tasks read bundles and write results; they are granted exactly that (ResultsBucket.grantWorker). */
  results: ResultsBucket;
  /** The task definition's family, which the runner's RunTask permission names. */
  family: string;
  /** The Docker build context (see src/image/stage.ts). */
  imageDirectory: string;
}

export class LoadGenerator extends Construct {
  readonly cluster: ecs.Cluster;
  readonly logGroup: logs.LogGroup;
  readonly taskDefinition: ecs.FargateTaskDefinition;
  readonly container: ecs.ContainerDefinition;
  readonly securityGroup: ec2.SecurityGroup;

  constructor(scope: Construct, id: string, props: LoadGeneratorProps) {
    super(scope, id);
    const region = Stack.of(this).region;

    this.cluster = new ecs.Cluster(this, "Cluster", {
      vpc: props.vpc,
      enableFargateCapacityProviders: true,
      containerInsightsV2: props.containerInsights ? ecs.ContainerInsights.ENABLED : ecs.ContainerInsights.DISABLED,
    });

    this.logGroup = new logs.LogGroup(this, "Logs", {
      retention: props.logRetention,
      removalPolicy: RemovalPolicy.DESTROY,
    });

    this.taskDefinition = new ecs.FargateTaskDefinition(this, "TaskDefinition", {
      family: props.family,
      cpu: props.cpu,
      memoryLimitMiB: props.memoryMiB,
      runtimePlatform: { cpuArchitecture: ARCH_PLATFORMS[props.arch].cpuArchitecture, operatingSystemFamily: ecs.OperatingSystemFamily.LINUX },
    });
    props.results.grantWorker(this.taskDefinition.taskRole);
    this.grantReadSecrets(this.taskDefinition.taskRole);

    this.container = this.taskDefinition.addContainer(CONTAINER_NAME, {
      // Built for the task's architecture (an ARM laptop builds linux/amd64, an x86 one linux/arm64, each
      // with the builder's emulation). zstd layers where the builder keeps them (image-build.ts):
      // smaller, and faster for Fargate to unpack.
      image: ecs.ContainerImage.fromAsset(props.imageDirectory, { platform: ARCH_PLATFORMS[props.arch].image, outputs: imageBuildOutputs(props.imageCompression) }),
      // Set explicitly: moto (and some tooling) rejects a container without a container-level memory value.
      memoryLimitMiB: props.memoryMiB,
      essential: true,
      // Non-secret configuration only. The runner adds CABLE_RUN_ID (and CABLE_SECRETS, names only) per RunTask.
      environment: { CABLE_STORE: `s3://${props.results.bucket.bucketName}`, CABLE_REGION: region, AWS_REGION: region },
      logging: ecs.LogDrivers.awsLogs({ logGroup: this.logGroup, streamPrefix: CONTAINER_NAME }),
      // One socket per virtual user: the default 1024 open files would cap a load generator early.
      ulimits: [{ name: ecs.UlimitName.NOFILE, softLimit: 65_535, hardLimit: 65_535 }],
      // The worker forwards SIGTERM to Artillery and then uploads partial results; give it time.
      stopTimeout: Duration.seconds(60),
      linuxParameters: new ecs.LinuxParameters(this, "LinuxParameters", { initProcessEnabled: true }),
      // Fargate takes any net.* sysctl (platform 1.4.0+). The default port range (32768–60999) caps
      // one task at ~28k connections to one target address; TIME_WAIT reuse frees ports faster.
      systemControls: SYSTEM_CONTROLS.map(([namespace, value]) => ({ namespace, value })),
    });

    this.securityGroup = new ec2.SecurityGroup(this, "TaskSecurityGroup", {
      vpc: props.vpc,
      description: "Load generator tasks: outbound only, no ingress",
      allowAllOutbound: true,
    });
  }

  /** The project's secrets (the runner passes their names in CABLE_SECRETS), and no others. */
  private grantReadSecrets(grantee: iam.IGrantable): void {
    const stack = Stack.of(this);
    const statements = [
      new iam.PolicyStatement({
        sid: "ReadSecretParameters",
        actions: ["ssm:GetParameter"],
        resources: [stack.formatArn({ service: "ssm", resource: "parameter", resourceName: `${SECRETS_PATH}/*` })],
      }),
      new iam.PolicyStatement({
        sid: "ReadSecrets",
        actions: ["secretsmanager:GetSecretValue"],
        resources: [stack.formatArn({ service: "secretsmanager", resource: "secret", resourceName: `${SECRETS_PATH}/*`, arnFormat: ArnFormat.COLON_RESOURCE_NAME })],
      }),
    ];
    for (const statement of statements) grantee.grantPrincipal.addToPrincipalPolicy(statement);
  }
}

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

export interface LoadGeneratorProps extends Pick<StackSettings, "cpu" | "memoryMiB" | "logRetention" | "containerInsights" | "imageCompression"> {
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
      runtimePlatform: { cpuArchitecture: ecs.CpuArchitecture.X86_64, operatingSystemFamily: ecs.OperatingSystemFamily.LINUX },
    });
    props.results.grantWorker(this.taskDefinition.taskRole);
    this.grantReadSecrets(this.taskDefinition.taskRole);

    this.container = this.taskDefinition.addContainer(CONTAINER_NAME, {
      // zstd layers where the builder keeps them (image-build.ts): smaller, and faster for Fargate to unpack.
      image: ecs.ContainerImage.fromAsset(props.imageDirectory, { platform: Platform.LINUX_AMD64, outputs: imageBuildOutputs(props.imageCompression) }),
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

/**
 * Where the load generator's tasks run: a VPC of its own, or a team's existing one, and which of its
 * subnets the tasks take.
 */
import { Tags } from "aws-cdk-lib";
import * as ec2 from "aws-cdk-lib/aws-ec2";
import { Construct } from "constructs";

export interface NetworkProps {
  /** Use this VPC (looked up at synth time, so the stack needs an account in `env`) instead of creating one. */
  vpcId?: string;
}

export class Network extends Construct {
  readonly vpc: ec2.IVpc;
  /** The subnets RunTask places tasks in. */
  readonly subnets: ec2.ISubnet[];
  /** Whether a task needs a public IP to reach its targets and S3: true in public subnets. */
  readonly assignPublicIp: boolean;

  constructor(scope: Construct, id: string, props: NetworkProps = {}) {
    super(scope, id);
    // "Default" is left out of logical ids: the VPC's resources are named after this construct's id
    // alone, as they were when the stack created the VPC itself (AWS CDK guide, "Logical ID path
    // component heuristics"); a renamed VPC would be replaced on the next deploy.
    if (props.vpcId) {
      // A team's own VPC: private subnets with egress if it has them (no public IP), else its public subnets.
      this.vpc = ec2.Vpc.fromLookup(this, "Default", { vpcId: props.vpcId });
      const hasPrivate = this.vpc.privateSubnets.length > 0;
      this.subnets = hasPrivate ? this.vpc.privateSubnets : this.vpc.publicSubnets;
      this.assignPublicIp = !hasPrivate;
    } else {
      // Public subnets only and no NAT gateway (the idle stack costs nothing); tasks get public IPs.
      // Every task takes one address (awsvpc): two /20 subnets hold about 8,000 tasks, far beyond the
      // Fargate quota of a new account (a /24 would stop at about 500).
      const vpc = new ec2.Vpc(this, "Default", {
        // The Name tags CDK gives a VPC and its subnets are construct paths, which do include
        // "Default": name them as before (here, and the subnets below) rather than after this wrapper.
        vpcName: this.node.path,
        maxAzs: 2,
        natGateways: 0,
        subnetConfiguration: [{ name: "public", subnetType: ec2.SubnetType.PUBLIC, cidrMask: 20 }],
        // Free, and keeps bundle/results traffic to S3 off the internet gateway.
        gatewayEndpoints: { S3: { service: ec2.GatewayVpcEndpointAwsService.S3 } },
      });
      for (const subnet of vpc.publicSubnets) Tags.of(subnet).add("Name", `${this.node.path}/${subnet.node.id}`);
      this.vpc = vpc;
      this.subnets = vpc.publicSubnets;
      this.assignPublicIp = true;
    }
  }
}

/**
 * Where the load generator's tasks run: a VPC of its own, or a team's existing one, and which of its
 * subnets the tasks take.
 */
import { Stack, Tags } from "aws-cdk-lib";
import * as ec2 from "aws-cdk-lib/aws-ec2";
import { Construct } from "constructs";
import { fargateZoneIds, zoneNumber } from "./fargate-zones.js";

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
      // Every task takes one address (awsvpc): three /20 subnets hold about 12,000 tasks, far beyond
      // the Fargate quota of a new account (a /24 would stop at about 500).
      // Up to three zones where Fargate runs, by zone ID (fargate-zones.ts); a region the table does
      // not know keeps CDK's choice, the first two zones of the account's Fn::GetAZs, as before.
      const zoneIds = fargateZoneIds(Stack.of(this).region);
      const vpc = new ec2.Vpc(this, "Default", {
        // The Name tags CDK gives a VPC and its subnets are construct paths, which do include
        // "Default": name them as before (here, and the subnets below) rather than after this wrapper.
        vpcName: this.node.path,
        // The zone IDs stand in for zone names here (CDK only passes them through to each subnet);
        // each subnet then takes its zone by ID, below.
        ...(zoneIds ? { availabilityZones: zoneIds, ipAddresses: new CidrByZone() } : { maxAzs: 2 }),
        natGateways: 0,
        subnetConfiguration: [{ name: "public", subnetType: ec2.SubnetType.PUBLIC, cidrMask: SUBNET_MASK }],
        // Free, and keeps bundle/results traffic to S3 off the internet gateway.
        gatewayEndpoints: { S3: { service: ec2.GatewayVpcEndpointAwsService.S3 } },
      });
      if (zoneIds) {
        for (const subnet of vpc.publicSubnets) {
          const cfn = subnet.node.defaultChild as ec2.CfnSubnet;
          cfn.availabilityZoneId = cfn.availabilityZone;
          cfn.availabilityZone = undefined;
        }
      }
      for (const subnet of vpc.publicSubnets) Tags.of(subnet).add("Name", `${this.node.path}/${subnet.node.id}`);
      this.vpc = vpc;
      this.subnets = vpc.publicSubnets;
      this.assignPublicIp = true;
    }
  }
}

/** Each subnet is a /20: 4,091 usable addresses, one per task. */
const SUBNET_MASK = 20;
const VPC_CIDR = "10.0.0.0/16";

/**
 * Subnet CIDRs that follow the zone: `<prefix>-az<n>` takes the /20 numbered n + 1 in 10.0.0.0/16
 * (euw2-az1 → 10.0.32.0/20). A subnet that moves to another zone (a changed table) is replaced by
 * one with another CIDR, which CloudFormation can create beside the old one before deleting it; the
 * same CIDR would collide. /20s number 0 and 1 (10.0.0.0/20, 10.0.16.0/20) are left to the two
 * subnets stacks had before they were placed by zone ID, for the same reason (README, "Upgrading").
 */
class CidrByZone implements ec2.IIpAddresses {
  allocateVpcCidr(): ec2.VpcIpamOptions {
    return { cidrBlock: VPC_CIDR };
  }

  allocateSubnetsCidr(input: ec2.AllocateCidrRequest): ec2.SubnetIpamOptions {
    return {
      allocatedSubnets: input.requestedSubnets.map(({ availabilityZone }) => {
        const index = zoneNumber(availabilityZone) + 1;
        const addresses = 2 ** (32 - SUBNET_MASK);
        if ((index + 1) * addresses > 2 ** 16) throw new Error(`zone ${availabilityZone} has no /${SUBNET_MASK} left in ${VPC_CIDR}`);
        const start = index * addresses;
        return { cidr: `10.0.${start >> 8}.${start & 255}/${SUBNET_MASK}` };
      }),
    };
  }
}

/**
 * Which Availability Zones a region's VPC places its subnets in: up to three, only zones where
 * Fargate runs, named by zone ID.
 *
 * Zone IDs, not names: a zone's name (us-west-1a) maps to a different physical zone in each account,
 * while its ID (usw1-az1) is the same zone everywhere, and AWS's list of where Fargate runs is by ID.
 * The stacks are account-agnostic (region only), so CDK cannot look zones up at synth time: they are
 * this table, and the subnets are placed with AWS::EC2::Subnet's `AvailabilityZoneId`.
 *
 * Three zones rather than two: each zone is its own Spot capacity pool (FARGATE_SPOT interruptions and
 * "no capacity" are per zone), and RunTask spreads a run's tasks over the subnets it is given.
 */

/**
 * The regional Availability Zone IDs every account has, by region, in the order they are picked.
 *
 * Source: EC2 DescribeAvailabilityZones as moto 5.2 records it (moto/ec2/models/availability_zones_and_regions.py,
 * a real account's answer). Left out: older zones that only some
 * accounts have or that are closed to new capacity (use1-az3, usw1-az2, apne1-az3, cac1-az3), since a
 * subnet in a zone the account lacks fails the deploy. Local and Wavelength Zones are not regional
 * zones and are never used.
 */
export const REGION_ZONE_IDS: Readonly<Record<string, readonly string[]>> = {
  "af-south-1": ["afs1-az1", "afs1-az2", "afs1-az3"],
  "ap-east-1": ["ape1-az1", "ape1-az2", "ape1-az3"],
  "ap-east-2": ["ape2-az1", "ape2-az2", "ape2-az3"],
  "ap-northeast-1": ["apne1-az1", "apne1-az2", "apne1-az4"],
  "ap-northeast-2": ["apne2-az1", "apne2-az2", "apne2-az3", "apne2-az4"],
  "ap-northeast-3": ["apne3-az1", "apne3-az2", "apne3-az3"],
  "ap-south-1": ["aps1-az1", "aps1-az2", "aps1-az3"],
  "ap-south-2": ["aps2-az1", "aps2-az2", "aps2-az3"],
  "ap-southeast-1": ["apse1-az1", "apse1-az2", "apse1-az3"],
  "ap-southeast-2": ["apse2-az1", "apse2-az2", "apse2-az3"],
  "ap-southeast-3": ["apse3-az1", "apse3-az2", "apse3-az3"],
  "ap-southeast-4": ["apse4-az1", "apse4-az2", "apse4-az3"],
  "ap-southeast-5": ["apse5-az1", "apse5-az2", "apse5-az3"],
  "ap-southeast-6": ["apse6-az1", "apse6-az2", "apse6-az3"],
  "ap-southeast-7": ["apse7-az1", "apse7-az2", "apse7-az3"],
  "ca-central-1": ["cac1-az1", "cac1-az2", "cac1-az4"],
  "ca-west-1": ["caw1-az1", "caw1-az2", "caw1-az3"],
  "cn-north-1": ["cnn1-az1", "cnn1-az2"],
  "cn-northwest-1": ["cnnw1-az1", "cnnw1-az2", "cnnw1-az3"],
  "eu-central-1": ["euc1-az1", "euc1-az2", "euc1-az3"],
  "eu-central-2": ["euc2-az1", "euc2-az2", "euc2-az3"],
  "eu-north-1": ["eun1-az1", "eun1-az2", "eun1-az3"],
  "eu-south-1": ["eus1-az1", "eus1-az2", "eus1-az3"],
  "eu-south-2": ["eus2-az1", "eus2-az2", "eus2-az3"],
  "eu-west-1": ["euw1-az1", "euw1-az2", "euw1-az3"],
  "eu-west-2": ["euw2-az1", "euw2-az2", "euw2-az3"],
  "eu-west-3": ["euw3-az1", "euw3-az2", "euw3-az3"],
  "il-central-1": ["ilc1-az1", "ilc1-az2", "ilc1-az3"],
  "me-central-1": ["mec1-az1", "mec1-az2", "mec1-az3"],
  "me-south-1": ["mes1-az1", "mes1-az2", "mes1-az3"],
  "mx-central-1": ["mxc1-az1", "mxc1-az2", "mxc1-az3"],
  "sa-east-1": ["sae1-az1", "sae1-az2", "sae1-az3"],
  "us-east-1": ["use1-az1", "use1-az2", "use1-az4", "use1-az5", "use1-az6"],
  "us-east-2": ["use2-az1", "use2-az2", "use2-az3"],
  "us-gov-east-1": ["usge1-az1", "usge1-az2", "usge1-az3"],
  "us-gov-west-1": ["usgw1-az1", "usgw1-az2", "usgw1-az3"],
  "us-west-1": ["usw1-az1", "usw1-az3"],
  "us-west-2": ["usw2-az1", "usw2-az2", "usw2-az3", "usw2-az4"],
};

/**
 * Regions where Fargate (Linux) runs in some zones only; everywhere else it runs in every zone.
 *
 * Source: "Supported Regions for Amazon ECS on AWS Fargate",
 * https://docs.aws.amazon.com/AmazonECS/latest/developerguide/AWS_Fargate-Regions.html, as read on
 * 2026-11-27. ca-central-1 is listed there without a restriction (issue 40 thought otherwise; its
 * older zone cac1-az3, which only some accounts have, is not in REGION_ZONE_IDS anyway). Re-read the
 * page when a region's deploy or RunTask reports a zone Fargate does not serve.
 */
export const FARGATE_ONLY_IN: Readonly<Record<string, readonly string[]>> = {
  "us-west-1": ["usw1-az1", "usw1-az3"],
  "ap-northeast-1": ["apne1-az1", "apne1-az2", "apne1-az4"],
  "cn-north-1": ["cnn1-az1", "cnn1-az2"],
};

/** How many zones a region's VPC spreads its subnets over, at most. */
export const MAX_ZONES = 3;

/**
 * The zone IDs to place a region's subnets in: the first (up to) three of its zones where Fargate
 * runs. Undefined for a region the table does not know, whose VPC keeps CDK's own choice (the first
 * two zones `Fn::GetAZs` names in the deploying account).
 */
export function fargateZoneIds(region: string, max: number = MAX_ZONES): string[] | undefined {
  const zones = REGION_ZONE_IDS[region];
  if (!zones) return undefined;
  const fargate = FARGATE_ONLY_IN[region];
  return zones.filter((id) => !fargate || fargate.includes(id)).slice(0, max);
}

/** The zone's number within its region: 3 for `usw1-az3`. */
export function zoneNumber(zoneId: string): number {
  const match = /-az(\d+)$/.exec(zoneId);
  if (!match) throw new Error(`${zoneId} is not a regional Availability Zone ID (<prefix>-az<n>)`);
  return Number(match[1]);
}

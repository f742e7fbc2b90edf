// The list prices the cost estimate reads. Every figure carries where it was read and the date that
// source gives, and is kept as the source prints it (no rounding).
//
// What they are: AWS public on-demand LIST prices in USD, Linux/x86. No Savings Plans, no Compute
// Savings Plan or EDP discount, no free tier (the 100 GB/month of free internet egress, the 5 GB of
// free log ingestion and the first-year free public IPv4 hours are all ignored), no tax. A real bill
// is at most this, less any of those.
//
// Where they come from (no figure here was written from memory):
// - Fargate on-demand, per region: theuves/fgcalc, src/utils/data.js ("normal" Linux/x86 rates per
//   vCPU-hour and GB-hour for 22 regions). The stored copy read is at commit 5049a5e; the repository's
//   README (commit 04ac5d8) says all 22 on-demand rates were checked against the AWS AmazonECS Price
//   List offer (published 2026-09-11) on 2026-09-29 and all matched, hence that date. us-east-1 is
//   confirmed independently (factualminds.com, June 2026; vantage.sh), sa-east-1 by a second repo.
// - Fargate Spot: null in every region. The only per-region Spot figures found (the same fgcalc
//   data.js) are from an older version of that file than the 2026-09-29 refresh (the README says 16
//   of 22 Spot rates then changed), and carry no date; other sources only say "up to 70%" off. The
//   estimate therefore prices Spot tasks at the on-demand rate, as an upper bound.
// - Public IPv4, S3 requests, CloudWatch Logs ingestion, internet egress, inter-region transfer:
//   us-east-1 rates from the pages named on each figure.
//
// How to update: re-read the AWS Price List offers and change value, source and asOf together.
// - Fargate: https://pricing.us-east-1.amazonaws.com/offers/v1.0/aws/AmazonECS/current/region_index.json
//   then each region's offer; usagetypes `<PREFIX>-Fargate-vCPU-Hours:perCPU` and
//   `<PREFIX>-Fargate-GB-Hours` (USE1 for us-east-1, EUW2 for eu-west-2, APS1 for ap-southeast-1 …),
//   the "OnDemand" term's pricePerUnit.USD. Take the offer's publication date, or the day read.
// - Fargate Spot: the feed the aws.amazon.com/fargate/pricing page renders,
//   https://dftu77xade0tc.cloudfront.net/fargate-spot-prices.json ("aws:region", unit vCPU-Hours /
//   GB-Hours). Spot prices move: record the day fetched, and only set spot where the feed has the region.
// - Public IPv4: AmazonVPC offer (usagetype `<PREFIX>-PublicIPv4:InUseAddress`) or the "Public IPv4
//   Address" tab of https://aws.amazon.com/vpc/pricing/.
// - S3: AmazonS3 offer, or https://aws.amazon.com/s3/pricing/ (S3 Standard requests per 1,000).
// - Logs: AmazonCloudWatch offer, or https://aws.amazon.com/cloudwatch/pricing/ (Logs, Standard class,
//   "Collect (Data Ingestion)").
// - Transfer: AWSDataTransfer offer, or https://aws.amazon.com/ec2/pricing/on-demand/ (Data Transfer).
// Then set PRICES.asOf to the newest asOf in the table (the test checks it).

/** USD per vCPU-hour and per GB-hour. */
export interface RatePair {
  vcpuHour: number;
  gbHour: number;
}
export interface Sourced<T> {
  value: T;
  source: string;
  asOf: string /* YYYY-MM-DD */;
}
export interface RegionPrices {
  onDemand: Sourced<RatePair>;
  spot: Sourced<RatePair> | null;
}
export interface PriceTable {
  currency: "USD";
  /** The newest asOf in the table: the date the estimate prints. */
  asOf: string;
  /** Linux/x86, by region code. */
  fargate: Readonly<Record<string, RegionPrices>>;
  publicIpv4Hour: Sourced<number>;
  s3: { putPer1000: Sourced<number>; getPer1000: Sourced<number> };
  logsIngestionPerGb: Sourced<number>;
  internetEgressPerGb: Sourced<number>;
  interRegionPerGb: Sourced<number> | null;
}

const FGCALC =
  "https://github.com/theuves/fgcalc/blob/master/src/utils/data.js (Linux/x86 on-demand, stored copy at commit " +
  "5049a5e21fd511bb80159d17190ef1c05414c95a); date from the repo's README (commit 04ac5d810cfc94f500750ed0c12a3801c99a05d9): " +
  "all 22 on-demand rates checked against the AWS AmazonECS Price List offer (published 2026-09-11) on 2026-09-29, all matched";
const FGCALC_AS_OF = "2026-09-29";

/** An on-demand Linux/x86 Fargate rate from fgcalc, no Spot rate (see the header). */
function fgcalc(vcpuHour: number, gbHour: number, also?: string): RegionPrices {
  return {
    onDemand: { value: { vcpuHour, gbHour }, source: also ? `${FGCALC}; also ${also}` : FGCALC, asOf: FGCALC_AS_OF },
    spot: null,
  };
}

const FARGATE: Readonly<Record<string, RegionPrices>> = Object.freeze({
  "us-east-1": fgcalc(
    0.04048,
    0.004445,
    "https://www.factualminds.com/blog/amazon-fargate-ecs-task-pricing-2026/ (2026-06-17: $0.04048/vCPU-hour, " +
      "$0.004445/GB-hour, Linux x86 us-east-1) and https://vantage.sh/blog/fargate-pricing",
  ),
  "us-east-2": fgcalc(0.04048, 0.004445),
  "us-west-1": fgcalc(0.04656, 0.00511),
  "us-west-2": fgcalc(0.04048, 0.004445),
  "ca-central-1": fgcalc(0.04456, 0.004865),
  "sa-east-1": fgcalc(
    0.0696,
    0.0076,
    "https://github.com/apoloferreira/basecode, doc/custo02.md at commit 9921248258c8c2aa1573970e59509763469a37de (sa-east-1 x86: 0,0696 per vCPU-hour, 0,0076 per GB-hour; undated)",
  ),
  "eu-west-1": fgcalc(0.04048, 0.004445),
  "eu-west-2": fgcalc(0.04656, 0.00511),
  "eu-west-3": fgcalc(0.0486, 0.0053),
  "eu-central-1": fgcalc(0.04656, 0.00511),
  "eu-north-1": fgcalc(0.0445, 0.0049),
  "eu-south-1": fgcalc(0.0486, 0.0053),
  "ap-southeast-1": fgcalc(0.05056, 0.00553),
  "ap-southeast-2": fgcalc(0.04856, 0.00532),
  "ap-northeast-1": fgcalc(0.05056, 0.00553),
  "ap-northeast-2": fgcalc(0.04656, 0.00511),
  "ap-south-1": fgcalc(0.04256, 0.004655),
  "ap-east-1": fgcalc(0.0556, 0.0061),
  "af-south-1": fgcalc(0.0546, 0.006),
  "me-south-1": fgcalc(0.0526, 0.0058),
  "us-gov-east-1": fgcalc(0.0486, 0.0053),
  "us-gov-west-1": fgcalc(0.0486, 0.0053),
});

export const PRICES: PriceTable = Object.freeze({
  currency: "USD",
  asOf: "2026-10-16",
  fargate: FARGATE,
  publicIpv4Hour: {
    value: 0.005,
    source:
      "https://github.com/ChiefGyk3D/Clouds-Against-Humanity/wiki/Provider-AWS-Cost-Lesson (us-east-1 list prices read from " +
      "AWS's price-list files on 2026-10-16: public IPv4 address $0.005 per hour). The charge was announced by AWS on " +
      "2023-07-28 and applies from 2024-02-01 to every public IPv4 address, in use or idle " +
      "(https://www.repost.aws/articles/ARapCqBMkaTfCidGWemmSjAA/public-ipv4-addresses-cost-projection; " +
      "https://github.com/cmbuckley/cmbuckley.github.io/blob/main/_posts/2024-01-28-removing-aws-ec2-ipv4-addresses.md: $0.005 per hour)",
    asOf: "2026-10-16",
  },
  s3: {
    putPer1000: {
      value: 0.005,
      source:
        "https://github.com/SaimShaikh/Cloud_Computing, AWS/AWS_S3/AWS_S3_Pricing.md at commit 00d8ff44d670754d3e4904ba50defc21d018381a (\"Last verified: August 29, 2025\", " +
        "us-east-1, S3 Standard PUT/COPY/POST/LIST $0.005 per 1,000); also https://c3x.dev/blog/s3-request-fees-explained (undated)",
      asOf: "2025-08-29",
    },
    getPer1000: {
      value: 0.0004,
      source:
        "https://github.com/SaimShaikh/Cloud_Computing, AWS/AWS_S3/AWS_S3_Pricing.md at commit 00d8ff44d670754d3e4904ba50defc21d018381a (\"Last verified: August 29, 2025\", " +
        "us-east-1, S3 Standard GET and all other $0.0004 per 1,000); also https://c3x.dev/blog/s3-request-fees-explained (undated)",
      asOf: "2025-08-29",
    },
  },
  logsIngestionPerGb: {
    value: 0.5,
    source:
      "https://c3x.dev/blog/cloudwatch-logs-cost-optimization (\"us-east-1, June 2026\": Standard log class ingestion $0.50 per GB; " +
      "the page gives the month only, recorded as its first day); also https://hykell.com/knowledge-base/aws-cloudwatch-logs-pricing",
    asOf: "2026-06-01",
  },
  internetEgressPerGb: {
    value: 0.09,
    source:
      "https://www.usage.ai/blogs/aws/networking-cost/data-transfer-costs/ (updated 2026-06-02: internet egress 100 GB to 10 TB/month " +
      "$0.09/GB, US East; first 100 GB/month free, not applied here); also https://leanopstech.com/blog/aws-data-transfer-pricing-2026/ (2026-04-27)",
    asOf: "2026-06-02",
  },
  interRegionPerGb: {
    value: 0.02,
    source:
      "https://wring.co/blog/aws-data-transfer-pricing-guide (2026-03-08: cross-region $0.02/GB). Varies by source region: " +
      "https://thenegotiationexperts.com/blog/aws-egress-data-transfer-cost-negotiation/ gives ~$0.02/GB within a geography and " +
      "$0.05-$0.08/GB across continents",
    asOf: "2026-03-08",
  },
});

/** The region's Fargate prices, or undefined when the table has none. */
export function fargatePrices(region: string, table: PriceTable = PRICES): RegionPrices | undefined {
  return Object.hasOwn(table.fargate, region) ? table.fargate[region] : undefined;
}

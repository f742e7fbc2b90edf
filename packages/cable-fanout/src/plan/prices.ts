// The list prices the cost estimate reads. Every figure carries where it was read and the date that
// source gives, and is kept as the source prints it (no rounding). No figure here was written from
// memory, derived by a rule ("ARM is 20% off", "Spot is 70% off") or borrowed from a neighbouring region.
//
// What they are: AWS public LIST prices in USD, Linux. No Savings Plans or EDP discount, no free tier
// (the 100 GB/month of free internet egress, the 5 GB of free log ingestion and the first-year free
// public IPv4 hours are all ignored), no tax. A real bill is at most this, less any of those.
//
// Where they come from:
// - Regions where Fargate runs (`fargateRegions`): AWS's "Supported Regions for Amazon ECS on AWS
//   Fargate" page, Linux table (see FARGATE_REGIONS). The page carries no date, so its asOf is the
//   day the stored copies were read; it is not a price, and PRICES.asOf leaves it out.
// - Fargate x86 on-demand: theuves/fgcalc src/utils/data.js (22 regions), whose README says all 22
//   were checked against the AmazonECS Price List offer (published 2026-09-11) on 2026-09-29.
//   eu-west-2 and ap-northeast-1 are confirmed by the price-list notes named on them.
// - Fargate x86 Spot, all 22 regions: the same file at commit dac946d, whose header says the Spot
//   rates were read from the aws.amazon.com/fargate/pricing feed (fargate-spot-prices.json) on
//   2026-09-29 21:41 UTC (the README: 16 of the 22 changed that day; the other 6, ca-central-1,
//   af-south-1, ap-east-1, eu-south-1 and GovCloud, sit at exactly 30% of on-demand). A 2026-09-28
//   snapshot agrees within 0.3% for us-east-1 and eu-west-1. Spot prices move: a snapshot.
// - ARM64 (Graviton) on-demand, only where a dated source prints the region's figure: us-east-1,
//   eu-west-1, ap-south-1 (a regime note of 2026-09-28 from the AmazonECS offer of 2026-09-11),
//   eu-west-2 (a cost note's price-list table read 2026-10-06) and ap-northeast-1 (a note checked
//   against the Price List API 2026-08-27); ARM64 Spot for us-east-1 and eu-west-1 (the 2026-09-28
//   feed snapshot). Every other region has `arm64: null`. Pages say ARM is "20% cheaper", and it is
//   in four of the five regions found, but ap-south-1's ARM rate is 44% under its x86 one: the rule
//   is not a figure, so nothing here is derived from it.
// - Extras (public IPv4, S3 requests, log ingestion, internet egress, inter-region, NAT per GB): the
//   `default` is us-east-1's, from the pages named on each figure. eu-west-2 has its own figures
//   from the price list (S3 requests 6%, logs 20%, NAT 11% dearer); every other region borrows the
//   default, and `regionExtras` names the borrowed fields. No dated per-region inter-region price was
//   found (it varies by source and destination: $0.02 within a geography, more across continents).
//
// Unpriced: Fargate runs in ca-west-1, mx-central-1, ap-northeast-3, ap-south-2, ap-southeast-3,
// ap-southeast-4, ap-southeast-5, ap-southeast-7, eu-central-2, eu-south-2, me-central-1 and the
// China regions (billed in CNY), but no stored dated source gives their Fargate rates, so they are in
// `fargateRegions` and not in `fargate` (see UNPRICED) and the estimate says so. (ap-south-2 has a
// Spot figure in the 2026-09-28 snapshot, x86 $0.012768 / $0.0013965, but no on-demand one, so it
// stays unpriced.) The region list is the documented page's; its tail (after cn-north-1) could not
// be read in the current copy, so the Europe/Middle East/GovCloud/China rows come from the older
// awsdocs copy, and regions that page may add later (il-central-1, ap-east-2, ...) are not listed.
//
// How to update: re-read the AWS Price List offers and change value, source and asOf together.
// - Fargate: https://pricing.us-east-1.amazonaws.com/offers/v1.0/aws/AmazonECS/current/region_index.json
//   then each region's offer; usagetypes `<PREFIX>-Fargate-vCPU-Hours:perCPU` and
//   `<PREFIX>-Fargate-GB-Hours` (x86), `<PREFIX>-Fargate-ARM-vCPU-Hours:perCPU` and
//   `<PREFIX>-Fargate-ARM-GB-Hours` (ARM64), the "OnDemand" term's pricePerUnit.USD.
// - Spot: https://dftu77xade0tc.cloudfront.net/fargate-spot-prices.json ("aws:region", units
//   vCPU-Hours / GB-Hours, x86 and ARM); record the day fetched, set spot only where the feed has it.
// - Regions: https://docs.aws.amazon.com/AmazonECS/latest/developerguide/AWS_Fargate-Regions.html
// - Public IPv4: AmazonVPC offer (`<PREFIX>-PublicIPv4:InUseAddress`); S3: AmazonS3 offer (S3
//   Standard requests per 1,000); logs: AmazonCloudWatch offer (Standard class ingestion); transfer:
//   AWSDataTransfer offer; NAT: AmazonEC2 offer (`<PREFIX>-NatGateway-Bytes`).
// Then set PRICES.asOf to the newest asOf in the table (the test checks it).

import type { Arch } from "../backend.js";

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
/** One architecture's Fargate rates in a region; spot null when no dated Spot figure was found. */
export interface ArchPrices {
  onDemand: Sourced<RatePair>;
  spot: Sourced<RatePair> | null;
}
export interface RegionPrices {
  x86_64: ArchPrices;
  /** null where no ARM64 figure was found (the header says why). */
  arm64: ArchPrices | null;
}
/** Everything but Fargate, for one region (some figures borrowed from another region, see `borrowed`). */
export interface RegionExtras {
  publicIpv4Hour: Sourced<number>;
  s3: { putPer1000: Sourced<number>; getPer1000: Sourced<number> };
  logsIngestionPerGb: Sourced<number>;
  internetEgressPerGb: Sourced<number>;
  interRegionPerGb: Sourced<number>;
  /** NAT gateway data processing, per GB (tasks in private subnets reach the target through one) */
  natPerGb: Sourced<number>;
}
export interface PriceTable {
  currency: "USD";
  /** The newest asOf of the table's prices (Fargate and extras; not the region list's): the date the estimate prints. */
  asOf: string;
  /** By region code. */
  fargate: Readonly<Record<string, RegionPrices>>;
  /** Every region where Fargate runs, from AWS's documented list, kept as data with its date. */
  fargateRegions: Sourced<readonly string[]>;
  /** The defaults (us-east-1's) and per-region overrides where a regional figure was found. */
  extras: { default: RegionExtras; byRegion: Readonly<Record<string, Partial<RegionExtras>>> };
}

/** The architectures a RegionPrices holds (the same names as the stack's Arch). */
export const ARCHES: readonly Arch[] = ["x86_64", "arm64"];

// ---- Fargate x86 --------------------------------------------------------------------------------

const FGCALC =
  "https://github.com/theuves/fgcalc/blob/master/src/utils/data.js (Linux/x86 on-demand, stored copy at commit " +
  "5049a5e21fd511bb80159d17190ef1c05414c95a, the same on-demand figures at dac946d62837b73542cbac2e6e29a9427ae9b2a5); " +
  "date from the repo's README (commit 04ac5d810cfc94f500750ed0c12a3801c99a05d9): all 22 on-demand rates checked " +
  "against the AWS AmazonECS Price List offer (published 2026-09-11) on 2026-09-29, all matched";
const FGCALC_AS_OF = "2026-09-29";

const FGCALC_SPOT =
  "https://github.com/theuves/fgcalc/blob/master/src/utils/data.js at commit dac946d62837b73542cbac2e6e29a9427ae9b2a5 " +
  "(FARGATE_SPOT, Linux/x86; its header: \"Fargate Spot: AWS pricing page feed, retrieved 2026-09-29 21:41 UTC\"; the " +
  "README at 04ac5d810cfc94f500750ed0c12a3801c99a05d9: checked against https://dftu77xade0tc.cloudfront.net/fargate-spot-prices.json, " +
  "feed last modified 21:37:30 UTC, 16 of the 22 regional Spot rates changed)";
const FGCALC_SPOT_AS_OF = "2026-09-29";

/** A Linux/x86 Fargate rate from fgcalc: on-demand, and Spot from the 2026-09-29 feed snapshot. */
function fgcalc(vcpuHour: number, gbHour: number, spot: RatePair, also?: { onDemand?: string; spot?: string }): ArchPrices {
  return {
    onDemand: { value: { vcpuHour, gbHour }, source: also?.onDemand ? `${FGCALC}; also ${also.onDemand}` : FGCALC, asOf: FGCALC_AS_OF },
    spot: { value: spot, source: also?.spot ? `${FGCALC_SPOT}; also ${also.spot}` : FGCALC_SPOT, asOf: FGCALC_SPOT_AS_OF },
  };
}
const s = (vcpuHour: number, gbHour: number): RatePair => ({ vcpuHour, gbHour });

// ---- Fargate ARM64 ------------------------------------------------------------------------------

const REGIMES =
  "stored public note \"AWS Fargate — pricing regimes (as of 2026-09-28)\" (search-index file id 70068379380): " +
  "rates from the AWS Price List API, AmazonECS offer published 2026-09-11, " +
  "https://pricing.us-east-1.amazonaws.com/offers/v1.0/aws/AmazonECS/current/region_index.json";
const REGIMES_SPOT =
  "stored public note \"AWS Fargate — pricing regimes (as of 2026-09-28)\" (search-index file id 70068379380): " +
  "Spot from the feed aws.amazon.com/fargate/pricing renders, https://dftu77xade0tc.cloudfront.net/fargate-spot-prices.json, " +
  "point-in-time 2026-09-28";
const REGIMES_AS_OF = "2026-09-28";

const LONDON =
  "stored public cost note \"Hosting costs: the pay-per-request profile\" (search-index file id 70202682113), section 8 " +
  "\"Verified unit prices (London unless global)\", research date 2026-10-06, read from the AWS Price List Bulk API " +
  "https://pricing.us-east-1.amazonaws.com/offers/v1.0/aws/<ServiceCode>/current/eu-west-2/index.json";
const LONDON_AS_OF = "2026-10-06";
const LONDON_FIXTURE =
  "a stored Go test's eu-west-2 price fixture (search-index file id 67185914767) has the same line";

const TOKYO =
  "stored public note \"Free tiers verificados\" (search-index file id 61147661259): \"AWS en Tokio (ap-northeast-1), " +
  "verificado contra la Price List API el 2026-08-27\", https://pricing.us-east-1.amazonaws.com/offers/v1.0/aws/AmazonECS/current/ap-northeast-1/index.json";
const TOKYO_AS_OF = "2026-08-27";

function arm(onDemand: RatePair, what: string, spot?: { value: RatePair; what: string }, from = { source: REGIMES, asOf: REGIMES_AS_OF }): ArchPrices {
  return {
    onDemand: { value: onDemand, source: `${from.source} (${what})`, asOf: from.asOf },
    spot: spot ? { value: spot.value, source: `${REGIMES_SPOT} (${spot.what})`, asOf: REGIMES_AS_OF } : null,
  };
}

const FARGATE: Readonly<Record<string, RegionPrices>> = Object.freeze({
  "us-east-1": {
    x86_64: fgcalc(0.04048, 0.004445, s(0.01288561, 0.00141493), {
      onDemand:
        "https://www.factualminds.com/blog/amazon-fargate-ecs-task-pricing-2026/ (2026-06-17: $0.04048/vCPU-hour, " +
        "$0.004445/GB-hour, Linux x86 us-east-1) and https://vantage.sh/blog/fargate-pricing",
      spot: `${REGIMES_SPOT} (us-east-1 x86 $0.01288871 / $0.00141527 the day before)`,
    }),
    arm64: arm(
      s(0.03238, 0.00356),
      "Linux ARM64 us-east-1 $0.03238 / $0.00356; also https://www.vantage.sh/blog/fargate-pricing, Linux/ARM us-east-1 $0.03238 / $0.00356",
      { value: s(0.01030969, 0.00113349), what: "Spot ARM64 us-east-1 $0.01030969 / $0.00113349" },
    ),
  },
  "us-east-2": { x86_64: fgcalc(0.04048, 0.004445, s(0.01539807, 0.00169082)), arm64: null },
  "us-west-1": { x86_64: fgcalc(0.04656, 0.00511, s(0.01437645, 0.00157783)), arm64: null },
  "us-west-2": { x86_64: fgcalc(0.04048, 0.004445, s(0.01258905, 0.00138237)), arm64: null },
  "ca-central-1": { x86_64: fgcalc(0.04456, 0.004865, s(0.013368, 0.0014595)), arm64: null },
  "sa-east-1": {
    x86_64: fgcalc(0.0696, 0.0076, s(0.02199254, 0.00240148), {
      onDemand:
        "https://github.com/apoloferreira/basecode, doc/custo02.md at commit 9921248258c8c2aa1573970e59509763469a37de (sa-east-1 x86: 0,0696 per vCPU-hour, 0,0076 per GB-hour; undated)",
    }),
    arm64: null,
  },
  "eu-west-1": {
    x86_64: fgcalc(0.04048, 0.004445, s(0.01225536, 0.00134573), {
      spot: `${REGIMES_SPOT} (eu-west-1 x86 $0.01224056 / $0.0013441 the day before)`,
    }),
    arm64: arm(s(0.03238, 0.00356), "Linux ARM64 eu-west-1, \"us-east-1 = eu-west-1: $0.03238 / $0.00356\"", {
      value: s(0.00979124, 0.00107649),
      what: "Spot ARM64 eu-west-1 $0.00979124 / $0.00107649",
    }),
  },
  "eu-west-2": {
    x86_64: fgcalc(0.04656, 0.00511, s(0.01468459, 0.00161165), {
      onDemand: `${LONDON} (EUW2-Fargate-vCPU-Hours:perCPU $0.04656, EUW2-Fargate-GB-Hours $0.00511, AmazonECS offer of 2026-09-11)`,
    }),
    arm64: arm(
      s(0.03725, 0.00409),
      `Fargate Arm $0.03725 per vCPU-hour, $0.00409 per GB-hour, EUW2-Fargate-ARM-*, AmazonECS offer of 2026-09-11; ${LONDON_FIXTURE}`,
      undefined,
      { source: LONDON, asOf: LONDON_AS_OF },
    ),
  },
  "eu-west-3": { x86_64: fgcalc(0.0486, 0.0053, s(0.01464299, 0.00159687)), arm64: null },
  "eu-central-1": { x86_64: fgcalc(0.04656, 0.00511, s(0.01441236, 0.00158177)), arm64: null },
  "eu-north-1": { x86_64: fgcalc(0.0445, 0.0049, s(0.01342378, 0.00147812)), arm64: null },
  "eu-south-1": { x86_64: fgcalc(0.0486, 0.0053, s(0.01458, 0.00159)), arm64: null },
  "ap-southeast-1": { x86_64: fgcalc(0.05056, 0.00553, s(0.01544659, 0.00168947)), arm64: null },
  "ap-southeast-2": { x86_64: fgcalc(0.04856, 0.00532, s(0.01520795, 0.00166611)), arm64: null },
  "ap-northeast-1": {
    x86_64: fgcalc(0.05056, 0.00553, s(0.01563522, 0.0017101), { onDemand: `${TOKYO} (x86 $0.05056 / $0.00553)` }),
    arm64: arm(s(0.04045, 0.00442), "Fargate ARM $0.04045/vCPU-h + $0.00442/GB-h, APN1-Fargate-ARM-*", undefined, {
      source: TOKYO,
      asOf: TOKYO_AS_OF,
    }),
  },
  "ap-northeast-2": { x86_64: fgcalc(0.04656, 0.00511, s(0.013968, 0.001533)), arm64: null },
  "ap-south-1": {
    x86_64: fgcalc(0.04256, 0.004655, s(0.01344511, 0.00147056)),
    arm64: arm(s(0.02383, 0.00261), "Linux ARM64 ap-south-1 $0.02383 / $0.00261"),
  },
  "ap-east-1": { x86_64: fgcalc(0.0556, 0.0061, s(0.01668, 0.00183)), arm64: null },
  "af-south-1": { x86_64: fgcalc(0.0546, 0.006, s(0.01638, 0.0018)), arm64: null },
  "me-south-1": { x86_64: fgcalc(0.0526, 0.0058, s(0.0162103, 0.00178745)), arm64: null },
  "us-gov-east-1": { x86_64: fgcalc(0.0486, 0.0053, s(0.01458, 0.00159)), arm64: null },
  "us-gov-west-1": { x86_64: fgcalc(0.0486, 0.0053, s(0.01458, 0.00159)), arm64: null },
});

// ---- Where Fargate runs -------------------------------------------------------------------------

const FARGATE_REGIONS: Sourced<readonly string[]> = Object.freeze({
  value: Object.freeze([
    "us-east-1",
    "us-east-2",
    "us-west-1",
    "us-west-2",
    "ca-central-1",
    "ca-west-1",
    "mx-central-1",
    "sa-east-1",
    "af-south-1",
    "ap-east-1",
    "ap-south-1",
    "ap-south-2",
    "ap-northeast-1",
    "ap-northeast-2",
    "ap-northeast-3",
    "ap-southeast-1",
    "ap-southeast-2",
    "ap-southeast-3",
    "ap-southeast-4",
    "ap-southeast-5",
    "ap-southeast-7",
    "eu-central-1",
    "eu-central-2",
    "eu-west-1",
    "eu-west-2",
    "eu-west-3",
    "eu-south-1",
    "eu-south-2",
    "eu-north-1",
    "me-south-1",
    "me-central-1",
    "us-gov-east-1",
    "us-gov-west-1",
    "cn-north-1",
    "cn-northwest-1",
  ]),
  source:
    "https://docs.aws.amazon.com/AmazonECS/latest/developerguide/AWS_Fargate-Regions.html (\"Supported Regions for Amazon ECS " +
    "on AWS Fargate\", Linux containers table; stored copies https://docs.aws.amazon.com/he_il/AmazonECS/latest/developerguide/AWS_Fargate-Regions.md " +
    "and https://docs.amazonaws.cn/en_us/AmazonECS/latest/developerguide/AWS_Fargate-Regions.md list us-east-2 … ap-southeast-5 including " +
    "ca-west-1, mx-central-1, ap-northeast-3, ap-south-2, ap-southeast-3/4/5/7, cn-north-1); the Europe, Middle East, South America, " +
    "GovCloud and China rows from https://github.com/awsdocs/amazon-ecs-developer-guide doc_source/AWS_Fargate-Regions.md at commit " +
    "021abe8ca185a054dea7bab21e631f9461e05bd6. The page carries no date: asOf is the day the stored copies were read",
  asOf: "2026-11-29",
});

// ---- Everything but Fargate ---------------------------------------------------------------------

const US_EAST_1: RegionExtras = Object.freeze({
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
  natPerGb: {
    value: 0.045,
    source:
      `${REGIMES.replace(/: rates from.*/, "")}: NAT gateway us-east-1 "$0.045/h + $0.045/GB", AmazonEC2 price list NatGateway-Hours/Bytes; ` +
      "also a stored cost note with \"Sources fetched on 2026-08-22\" (https://aws.amazon.com/vpc/pricing/, search-index file id 57441594759): " +
      "NAT gateway $0.045/h + $0.045/GB processed",
    asOf: REGIMES_AS_OF,
  },
});

/** A London figure from the cost note's price-list table. */
function london(value: number, what: string): Sourced<number> {
  return { value, source: `${LONDON} (${what})`, asOf: LONDON_AS_OF };
}

const BY_REGION: Readonly<Record<string, Partial<RegionExtras>>> = Object.freeze({
  // us-east-1's figures are the default, so it borrows nothing.
  "us-east-1": US_EAST_1,
  // London: S3 requests 6% and log ingestion 20% dearer than us-east-1, NAT per GB 11% dearer.
  // No dated London inter-region figure was found: that one is borrowed.
  "eu-west-2": {
    publicIpv4Hour: london(0.005, "Public IPv4 $0.005 per hour, in use or idle, EUW2-PublicIPv4:InUseAddress, AmazonVPC offer of 2026-09-17"),
    s3: {
      putPer1000: london(0.0053, `S3 $0.0053 per 1,000 PUT/COPY/POST/LIST, EUW2-Requests-Tier1, AmazonS3 offer of 2026-09-28; ${LONDON_FIXTURE}`),
      getPer1000: london(
        0.00042,
        `S3 "$0.0042 per 10,000 GET", EUW2-Requests-Tier2, AmazonS3 offer of 2026-09-28, i.e. $0.00042 per 1,000; ${LONDON_FIXTURE} ($0.00000042 a request)`,
      ),
    },
    logsIngestionPerGb: london(0.5985, "CloudWatch Logs $0.5985 per GB ingested (Standard), EUW2-DataProcessing-Bytes, AmazonCloudWatch offer of 2026-09-22"),
    internetEgressPerGb: london(
      0.09,
      `S3/data out $0.09 per GB (first 10 TB) after 100 GB per month free globally, EUW2-DataTransfer-Out-Bytes, AWSDataTransfer offer of 2026-09-16; ${LONDON_FIXTURE}`,
    ),
    natPerGb: london(0.05, `NAT gateway $0.05 per hour, $0.05 per GB processed, AmazonEC2 offer of 2026-09-25; ${LONDON_FIXTURE} (EUW2-NatGateway-Bytes)`),
  },
});

const EXTRAS: PriceTable["extras"] = Object.freeze({ default: US_EAST_1, byRegion: BY_REGION });

export const PRICES: PriceTable = Object.freeze({
  currency: "USD",
  // The newest figure: us-east-1's public IPv4 price, read 2026-10-16 (the test checks this).
  asOf: "2026-10-16",
  fargate: FARGATE,
  fargateRegions: FARGATE_REGIONS,
  extras: EXTRAS,
});

/** Fargate regions in the documented list that the table has no prices for (the estimate says so). */
export const UNPRICED: readonly string[] = Object.freeze(FARGATE_REGIONS.value.filter((r) => !Object.hasOwn(FARGATE, r)));

/** The region's Fargate prices, or undefined when the table has none (own-property lookup; "__proto__" etc. undefined). */
export function fargatePrices(region: string, table: PriceTable = PRICES): RegionPrices | undefined {
  return Object.hasOwn(table.fargate, region) ? table.fargate[region] : undefined;
}

const EXTRA_FIELDS = [
  "publicIpv4Hour",
  "s3",
  "logsIngestionPerGb",
  "internetEgressPerGb",
  "interRegionPerGb",
  "natPerGb",
] as const satisfies readonly (keyof RegionExtras)[];

/** The region's extras: its own figures where the table has them, else the default's; `borrowed` names the fields taken from the default. */
export function regionExtras(region: string, table: PriceTable = PRICES): RegionExtras & { borrowed: string[] } {
  const own: Partial<RegionExtras> = Object.hasOwn(table.extras.byRegion, region) ? table.extras.byRegion[region] : {};
  const out = { ...table.extras.default, borrowed: [] as string[] };
  for (const f of EXTRA_FIELDS) {
    if (Object.hasOwn(own, f) && own[f] !== undefined) (out as Record<string, unknown>)[f] = own[f];
    else out.borrowed.push(f);
  }
  return out;
}

/** Fargate runs in this region (the documented list). */
export function fargateRuns(region: string, table: PriceTable = PRICES): boolean {
  return table.fargateRegions.value.includes(region);
}

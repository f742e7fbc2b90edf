import { describe, expect, it } from "vitest";
import { fargatePrices, PRICES, type PriceTable, type RegionPrices, type Sourced } from "../src/plan/prices";

// The price table's structure and sanity, not a copy of it: every figure sourced and dated, every
// price a positive number, Spot (where there is one) below on-demand, the table's date the newest of
// its figures', and us-east-1 at its known list price.

const REGION = /^[a-z]{2}(-gov)?-[a-z]+-\d+$/;
const DATE = /^\d{4}-\d{2}-\d{2}$/;

/** Every sourced figure in the table, named by where it sits. */
function sourced(table: PriceTable): Array<[string, Sourced<unknown>]> {
  const all: Array<[string, Sourced<unknown>]> = [];
  for (const [region, p] of Object.entries(table.fargate)) {
    all.push([`fargate.${region}.onDemand`, p.onDemand]);
    if (p.spot) all.push([`fargate.${region}.spot`, p.spot]);
  }
  all.push(["publicIpv4Hour", table.publicIpv4Hour]);
  all.push(["s3.putPer1000", table.s3.putPer1000]);
  all.push(["s3.getPer1000", table.s3.getPer1000]);
  all.push(["logsIngestionPerGb", table.logsIngestionPerGb]);
  all.push(["internetEgressPerGb", table.internetEgressPerGb]);
  if (table.interRegionPerGb) all.push(["interRegionPerGb", table.interRegionPerGb]);
  return all;
}

function validDate(s: string): boolean {
  if (!DATE.test(s)) return false;
  const d = new Date(`${s}T00:00:00Z`);
  return !Number.isNaN(d.getTime()) && d.toISOString().slice(0, 10) === s;
}

function positive(n: number): boolean {
  return typeof n === "number" && Number.isFinite(n) && n > 0;
}

describe("PRICES", () => {
  it("is in USD", () => {
    expect(PRICES.currency).toBe("USD");
  });

  it("names its regions by well-formed region codes", () => {
    const regions = Object.keys(PRICES.fargate);
    expect(regions.length).toBeGreaterThan(0);
    for (const r of regions) expect(r, r).toMatch(REGION);
  });

  it("covers the regions a run is planned in", () => {
    for (const r of [
      "us-east-1",
      "us-east-2",
      "us-west-1",
      "us-west-2",
      "eu-west-1",
      "eu-west-2",
      "eu-central-1",
      "ap-southeast-1",
      "ap-southeast-2",
      "ap-northeast-1",
      "ap-south-1",
      "ca-central-1",
      "sa-east-1",
    ]) {
      expect(fargatePrices(r), r).toBeDefined();
    }
  });

  it("sources and dates every figure, no later than today", () => {
    const today = new Date().toISOString().slice(0, 10);
    for (const [name, s] of sourced(PRICES)) {
      expect(s.source.trim().length, name).toBeGreaterThan(0);
      expect(s.source, name).toMatch(/https:\/\//);
      expect(validDate(s.asOf), `${name}: ${s.asOf}`).toBe(true);
      expect(s.asOf <= today, `${name}: ${s.asOf} is after ${today}`).toBe(true);
    }
  });

  it("has only positive, finite prices", () => {
    for (const [region, p] of Object.entries(PRICES.fargate)) {
      expect(positive(p.onDemand.value.vcpuHour), `${region} on-demand vCPU`).toBe(true);
      expect(positive(p.onDemand.value.gbHour), `${region} on-demand GB`).toBe(true);
      if (p.spot) {
        expect(positive(p.spot.value.vcpuHour), `${region} spot vCPU`).toBe(true);
        expect(positive(p.spot.value.gbHour), `${region} spot GB`).toBe(true);
      }
    }
    for (const [name, s] of sourced(PRICES)) {
      if (name.startsWith("fargate.")) continue;
      expect(positive(s.value as number), name).toBe(true);
    }
  });

  it("prices Spot below on-demand where it has a Spot price", () => {
    for (const [region, p] of Object.entries(PRICES.fargate)) {
      if (!p.spot) continue;
      expect(p.spot.value.vcpuHour, region).toBeLessThan(p.onDemand.value.vcpuHour);
      expect(p.spot.value.gbHour, region).toBeLessThan(p.onDemand.value.gbHour);
    }
  });

  it("prices a GB-hour below a vCPU-hour (a swapped pair would not be)", () => {
    for (const [region, p] of Object.entries(PRICES.fargate)) {
      expect(p.onDemand.value.gbHour, region).toBeLessThan(p.onDemand.value.vcpuHour);
    }
  });

  it("is dated by its newest figure", () => {
    expect(validDate(PRICES.asOf)).toBe(true);
    const newest = sourced(PRICES)
      .map(([, s]) => s.asOf)
      .reduce((a, b) => (b > a ? b : a));
    expect(PRICES.asOf).toBe(newest);
  });

  it("has us-east-1 at its known list price", () => {
    const p = fargatePrices("us-east-1");
    expect(p?.onDemand.value).toEqual({ vcpuHour: 0.04048, gbHour: 0.004445 });
  });

  it("keeps request prices per 1,000 and GET below PUT", () => {
    expect(PRICES.s3.getPer1000.value).toBeLessThan(PRICES.s3.putPer1000.value);
    // Per request these would be millionths of a dollar; per 1,000 they are thousandths at most a cent.
    expect(PRICES.s3.putPer1000.value).toBeLessThan(0.1);
    expect(PRICES.s3.putPer1000.value).toBeGreaterThan(0.0001);
  });
});

describe("fargatePrices", () => {
  it("is undefined for a region the table lacks, and for an object's own keys", () => {
    expect(fargatePrices("xx-nowhere-9")).toBeUndefined();
    expect(fargatePrices("constructor")).toBeUndefined();
    expect(fargatePrices("__proto__")).toBeUndefined();
    expect(fargatePrices("toString")).toBeUndefined();
  });

  it("reads the table it is given", () => {
    const only: RegionPrices = {
      onDemand: { value: { vcpuHour: 1, gbHour: 0.1 }, source: "https://example.test/", asOf: "2020-01-01" },
      spot: null,
    };
    const table: PriceTable = { ...PRICES, fargate: { "zz-test-1": only } };
    expect(fargatePrices("zz-test-1", table)).toBe(only);
    expect(fargatePrices("us-east-1", table)).toBeUndefined();
  });
});

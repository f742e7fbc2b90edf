import { describe, expect, it } from "vitest";
import {
  fargatePrices,
  fargateRuns,
  PRICES,
  regionExtras,
  type ArchPrices,
  type PriceTable,
  type RegionExtras,
  type RegionPrices,
  type Sourced,
} from "../src/plan/prices";

// The price table's structure and sanity, not a copy of it: every figure sourced and dated, every
// price a positive number, Spot below on-demand and ARM64 below x86 where both exist, the table's
// date the newest of its prices', every priced region a documented Fargate region, and us-east-1 at
// its known list price.

const REGION = /^[a-z]{2}(-gov)?-[a-z]+-\d+$/;
const DATE = /^\d{4}-\d{2}-\d{2}$/;
const ARCHES = ["x86_64", "arm64"] as const;

/** Every Fargate architecture's prices in the table, named by where they sit. */
function archPrices(table: PriceTable): Array<[string, ArchPrices]> {
  const all: Array<[string, ArchPrices]> = [];
  for (const [region, p] of Object.entries(table.fargate)) {
    for (const a of ARCHES) {
      const ap = p[a];
      if (ap) all.push([`fargate.${region}.${a}`, ap]);
    }
  }
  return all;
}

/** The sourced figures of one region's extras. */
function extraFigures(name: string, e: Partial<RegionExtras>): Array<[string, Sourced<number>]> {
  const all: Array<[string, Sourced<number>]> = [];
  for (const [k, v] of Object.entries(e)) {
    if (!v) continue;
    if ("asOf" in v) all.push([`${name}.${k}`, v as Sourced<number>]);
    else {
      all.push([`${name}.${k}.putPer1000`, v.putPer1000]);
      all.push([`${name}.${k}.getPer1000`, v.getPer1000]);
    }
  }
  return all;
}

/** Every priced figure in the table (Fargate and extras), named by where it sits. */
function prices(table: PriceTable): Array<[string, Sourced<unknown>]> {
  const all: Array<[string, Sourced<unknown>]> = [];
  for (const [name, ap] of archPrices(table)) {
    all.push([`${name}.onDemand`, ap.onDemand]);
    if (ap.spot) all.push([`${name}.spot`, ap.spot]);
  }
  all.push(...extraFigures("extras.default", table.extras.default));
  for (const [region, e] of Object.entries(table.extras.byRegion)) all.push(...extraFigures(`extras.${region}`, e));
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

const only: RegionPrices = {
  x86_64: { onDemand: { value: { vcpuHour: 1, gbHour: 0.1 }, source: "https://example.test/", asOf: "2020-01-01" }, spot: null },
  arm64: null,
};

describe("PRICES", () => {
  it("is in USD", () => {
    expect(PRICES.currency).toBe("USD");
  });

  it("names its regions by well-formed region codes", () => {
    const regions = Object.keys(PRICES.fargate);
    expect(regions.length).toBeGreaterThan(0);
    for (const r of regions) expect(r, r).toMatch(REGION);
    for (const r of PRICES.fargateRegions.value) expect(r, r).toMatch(REGION);
    for (const r of Object.keys(PRICES.extras.byRegion)) expect(r, r).toMatch(REGION);
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
    for (const [name, s] of [...prices(PRICES), ["fargateRegions", PRICES.fargateRegions] as [string, Sourced<unknown>]]) {
      expect(s.source.trim().length, name).toBeGreaterThan(0);
      expect(s.source, name).toMatch(/https:\/\//);
      expect(validDate(s.asOf), `${name}: ${s.asOf}`).toBe(true);
      expect(s.asOf <= today, `${name}: ${s.asOf} is after ${today}`).toBe(true);
    }
  });

  it("has only positive, finite prices", () => {
    for (const [name, ap] of archPrices(PRICES)) {
      expect(positive(ap.onDemand.value.vcpuHour), `${name} on-demand vCPU`).toBe(true);
      expect(positive(ap.onDemand.value.gbHour), `${name} on-demand GB`).toBe(true);
      if (ap.spot) {
        expect(positive(ap.spot.value.vcpuHour), `${name} spot vCPU`).toBe(true);
        expect(positive(ap.spot.value.gbHour), `${name} spot GB`).toBe(true);
      }
    }
    for (const [name, s] of prices(PRICES)) {
      if (name.startsWith("fargate.")) continue;
      expect(positive(s.value as number), name).toBe(true);
    }
  });

  it("keeps Fargate rates in a sane range (cents per vCPU-hour, tenths of a cent per GB-hour)", () => {
    for (const [name, ap] of archPrices(PRICES)) {
      for (const [kind, r] of [["onDemand", ap.onDemand], ["spot", ap.spot]] as const) {
        if (!r) continue;
        expect(r.value.vcpuHour, `${name}.${kind}`).toBeGreaterThan(0.001);
        expect(r.value.vcpuHour, `${name}.${kind}`).toBeLessThan(0.2);
        expect(r.value.gbHour, `${name}.${kind}`).toBeGreaterThan(0.0001);
        expect(r.value.gbHour, `${name}.${kind}`).toBeLessThan(0.02);
      }
    }
  });

  it("prices Spot below on-demand where it has a Spot price", () => {
    let spots = 0;
    for (const [name, ap] of archPrices(PRICES)) {
      if (!ap.spot) continue;
      spots++;
      expect(ap.spot.value.vcpuHour, name).toBeLessThan(ap.onDemand.value.vcpuHour);
      expect(ap.spot.value.gbHour, name).toBeLessThan(ap.onDemand.value.gbHour);
    }
    expect(spots).toBeGreaterThan(0);
  });

  it("prices ARM64 below x86 where it has both", () => {
    let both = 0;
    for (const [region, p] of Object.entries(PRICES.fargate)) {
      if (!p.arm64) continue;
      both++;
      expect(p.arm64.onDemand.value.vcpuHour, region).toBeLessThan(p.x86_64.onDemand.value.vcpuHour);
      expect(p.arm64.onDemand.value.gbHour, region).toBeLessThan(p.x86_64.onDemand.value.gbHour);
      if (p.arm64.spot && p.x86_64.spot) {
        expect(p.arm64.spot.value.vcpuHour, region).toBeLessThan(p.x86_64.spot.value.vcpuHour);
        expect(p.arm64.spot.value.gbHour, region).toBeLessThan(p.x86_64.spot.value.gbHour);
      }
    }
    expect(both).toBeGreaterThan(0);
  });

  it("prices a GB-hour below a vCPU-hour (a swapped pair would not be)", () => {
    for (const [name, ap] of archPrices(PRICES)) {
      expect(ap.onDemand.value.gbHour, name).toBeLessThan(ap.onDemand.value.vcpuHour);
      if (ap.spot) expect(ap.spot.value.gbHour, name).toBeLessThan(ap.spot.value.vcpuHour);
    }
  });

  it("is dated by its newest price", () => {
    expect(validDate(PRICES.asOf)).toBe(true);
    const newest = prices(PRICES)
      .map(([, s]) => s.asOf)
      .reduce((a, b) => (b > a ? b : a));
    expect(PRICES.asOf).toBe(newest);
  });

  it("has us-east-1 at its known list price", () => {
    const p = fargatePrices("us-east-1");
    expect(p?.x86_64.onDemand.value).toEqual({ vcpuHour: 0.04048, gbHour: 0.004445 });
    expect(p?.arm64?.onDemand.value).toEqual({ vcpuHour: 0.03238, gbHour: 0.00356 });
    // The Spot feed snapshot: about $0.0129 per vCPU-hour and $0.0014 per GB-hour.
    expect(p?.x86_64.spot?.value.vcpuHour).toBeCloseTo(0.0129, 4);
    expect(p?.x86_64.spot?.value.gbHour).toBeCloseTo(0.0014, 4);
  });

  it("prices only regions where Fargate runs, and lists the newer ones", () => {
    const documented = new Set(PRICES.fargateRegions.value);
    expect(documented.size).toBe(PRICES.fargateRegions.value.length);
    for (const r of Object.keys(PRICES.fargate)) expect(documented.has(r), r).toBe(true);
    for (const r of ["ca-west-1", "mx-central-1", "ap-northeast-3", "ap-south-2", "ap-southeast-3", "ap-southeast-4", "ap-southeast-5", "ap-southeast-7"]) {
      expect(documented.has(r), r).toBe(true);
    }
  });

  it("keeps request prices per 1,000 and GET below PUT", () => {
    const s3 = PRICES.extras.default.s3;
    expect(s3.getPer1000.value).toBeLessThan(s3.putPer1000.value);
    // Per request these would be millionths of a dollar; per 1,000 they are thousandths at most a cent.
    expect(s3.putPer1000.value).toBeLessThan(0.1);
    expect(s3.putPer1000.value).toBeGreaterThan(0.0001);
  });

  it("keeps per-GB transfer prices in cents", () => {
    for (const region of ["us-east-1", ...Object.keys(PRICES.extras.byRegion)]) {
      const e = regionExtras(region);
      for (const f of [e.internetEgressPerGb, e.interRegionPerGb, e.natPerGb, e.logsIngestionPerGb]) {
        expect(f.value, region).toBeGreaterThan(0.001);
        expect(f.value, region).toBeLessThan(1);
      }
      expect(e.publicIpv4Hour.value, region).toBeLessThan(0.1);
    }
  });
});

describe("fargatePrices", () => {
  it("is undefined for a region the table lacks, and for an object's own keys", () => {
    expect(fargatePrices("xx-nowhere-9")).toBeUndefined();
    expect(fargatePrices("constructor")).toBeUndefined();
    expect(fargatePrices("__proto__")).toBeUndefined();
    expect(fargatePrices("toString")).toBeUndefined();
    expect(fargatePrices("hasOwnProperty")).toBeUndefined();
  });

  it("reads the table it is given", () => {
    const table: PriceTable = { ...PRICES, fargate: { "zz-test-1": only } };
    expect(fargatePrices("zz-test-1", table)).toBe(only);
    expect(fargatePrices("us-east-1", table)).toBeUndefined();
  });
});

describe("fargateRuns", () => {
  it("is true for documented regions, priced or not", () => {
    expect(fargateRuns("us-east-1")).toBe(true);
    expect(fargateRuns("ca-west-1")).toBe(true);
    expect(fargateRuns("ap-southeast-5")).toBe(true);
  });

  it("is false for anything else", () => {
    expect(fargateRuns("xx-nowhere-9")).toBe(false);
    expect(fargateRuns("")).toBe(false);
    expect(fargateRuns("__proto__")).toBe(false);
    expect(fargateRuns("constructor")).toBe(false);
    expect(fargateRuns("US-EAST-1")).toBe(false);
  });

  it("reads the table it is given", () => {
    const table: PriceTable = { ...PRICES, fargateRegions: { ...PRICES.fargateRegions, value: ["zz-test-1"] } };
    expect(fargateRuns("zz-test-1", table)).toBe(true);
    expect(fargateRuns("us-east-1", table)).toBe(false);
  });
});

describe("regionExtras", () => {
  const fields = ["publicIpv4Hour", "s3", "logsIngestionPerGb", "internetEgressPerGb", "interRegionPerGb", "natPerGb"];

  it("gives us-east-1 its own figures, borrowing nothing", () => {
    const e = regionExtras("us-east-1");
    expect(e.borrowed).toEqual([]);
    expect(e.publicIpv4Hour).toBe(PRICES.extras.default.publicIpv4Hour);
  });

  it("borrows every field from the default for a region with no figures of its own", () => {
    for (const r of ["xx-nowhere-9", "__proto__", "constructor", "toString"]) {
      const e = regionExtras(r);
      expect([...e.borrowed].sort(), r).toEqual([...fields].sort());
      for (const f of fields) expect(e[f as keyof RegionExtras], `${r}.${f}`).toBe(PRICES.extras.default[f as keyof RegionExtras]);
    }
  });

  it("takes a region's own figures and names only the rest as borrowed", () => {
    const own: Sourced<number> = { value: 0.6, source: "https://example.test/logs", asOf: "2020-01-01" };
    const table: PriceTable = {
      ...PRICES,
      extras: { default: PRICES.extras.default, byRegion: { "zz-test-1": { logsIngestionPerGb: own } } },
    };
    const e = regionExtras("zz-test-1", table);
    expect(e.logsIngestionPerGb).toBe(own);
    expect(e.borrowed).not.toContain("logsIngestionPerGb");
    expect([...e.borrowed].sort()).toEqual(fields.filter((f) => f !== "logsIngestionPerGb").sort());
    expect(e.s3).toBe(PRICES.extras.default.s3);
    // The default table's own entries are untouched.
    expect(regionExtras("us-east-1", table).borrowed).toEqual(fields);
  });

  it("gives eu-west-2 its own price-list figures and borrows the rest", () => {
    const e = regionExtras("eu-west-2");
    expect(e.borrowed).toEqual(["interRegionPerGb"]);
    const d = PRICES.extras.default;
    // London is dearer than us-east-1 for S3 requests and log ingestion (about 6% and 20%).
    expect(e.s3.putPer1000.value).toBeGreaterThan(d.s3.putPer1000.value);
    expect(e.s3.getPer1000.value).toBeGreaterThan(d.s3.getPer1000.value);
    expect(e.logsIngestionPerGb.value).toBeGreaterThan(d.logsIngestionPerGb.value);
    expect(e.logsIngestionPerGb.value / d.logsIngestionPerGb.value).toBeCloseTo(1.2, 1);
    expect(e.interRegionPerGb).toBe(d.interRegionPerGb);
  });

  it("does not let an inherited key stand for a figure", () => {
    const byRegion = Object.create({ "zz-test-1": { natPerGb: { value: 9, source: "https://example.test/", asOf: "2020-01-01" } } });
    const table: PriceTable = { ...PRICES, extras: { default: PRICES.extras.default, byRegion } };
    const e = regionExtras("zz-test-1", table);
    expect(e.natPerGb).toBe(PRICES.extras.default.natPerGb);
    expect(e.borrowed).toContain("natPerGb");
  });
});

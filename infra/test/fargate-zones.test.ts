import { describe, expect, it } from "vitest";
import { FARGATE_ONLY_IN, MAX_ZONES, REGION_ZONE_IDS, fargateZoneIds, zoneNumber } from "../src/cdk/fargate-zones";

describe("the zone table", () => {
  it("names each region's zones by the region's one ID prefix, each zone once, at least two per region", () => {
    for (const [region, zones] of Object.entries(REGION_ZONE_IDS)) {
      const prefixes = new Set(zones.map((id) => id.replace(/-az\d+$/, "")));
      expect(prefixes.size, region).toBe(1);
      expect(new Set(zones).size, region).toBe(zones.length);
      expect(zones.length, region).toBeGreaterThanOrEqual(2);
      for (const id of zones) expect(id, region).toMatch(/^[a-z]+\d-az\d+$/);
    }
    // Spot checks of the documented prefixes.
    expect(REGION_ZONE_IDS["us-east-1"][0]).toBe("use1-az1");
    expect(REGION_ZONE_IDS["eu-central-1"][0]).toBe("euc1-az1");
    expect(REGION_ZONE_IDS["ap-southeast-2"][0]).toBe("apse2-az1");
  });

  it("restricts Fargate only to zones the region has", () => {
    for (const [region, zones] of Object.entries(FARGATE_ONLY_IN)) {
      expect(REGION_ZONE_IDS[region], region).toBeDefined();
      for (const id of zones) expect(REGION_ZONE_IDS[region], region).toContain(id);
    }
  });

  it("gives every zone a /20 of 10.0.0.0/16 beyond the two that older stacks' subnets hold", () => {
    for (const zones of Object.values(REGION_ZONE_IDS)) for (const id of zones) expect(zoneNumber(id) + 1).toBeLessThan(16);
  });
});

describe("fargateZoneIds", () => {
  it("picks the first three zones where Fargate runs", () => {
    expect(fargateZoneIds("eu-west-2")).toEqual(["euw2-az1", "euw2-az2", "euw2-az3"]);
    expect(fargateZoneIds("us-east-1")).toEqual(["use1-az1", "use1-az2", "use1-az4"]);
    expect(fargateZoneIds("us-west-1")).toEqual(["usw1-az1", "usw1-az3"]);
    expect(fargateZoneIds("ap-northeast-1")).toEqual(["apne1-az1", "apne1-az2", "apne1-az4"]);
    expect(fargateZoneIds("cn-north-1")).toEqual(["cnn1-az1", "cnn1-az2"]);
    expect(fargateZoneIds("ca-central-1")).toEqual(["cac1-az1", "cac1-az2", "cac1-az4"]);
    for (const region of Object.keys(REGION_ZONE_IDS)) expect(fargateZoneIds(region)!.length).toBeLessThanOrEqual(MAX_ZONES);
  });

  it("knows nothing of a region missing from the table (the VPC then keeps CDK's Fn::GetAZs choice)", () => {
    expect(fargateZoneIds("eu-nowhere-1")).toBeUndefined();
  });

  it("reads a zone's number from its ID, and refuses what is not a regional zone", () => {
    expect(zoneNumber("usw1-az3")).toBe(3);
    expect(() => zoneNumber("use1-bos1-az1x")).toThrow("use1-bos1-az1x is not a regional Availability Zone ID");
  });
});

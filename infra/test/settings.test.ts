import { RetentionDays } from "aws-cdk-lib/aws-logs";
import { describe, expect, it } from "vitest";
import { readAppSettings } from "../src/cdk/settings";
import { assertFargateSize } from "../src/contract";

const from = (context: Record<string, unknown>) => readAppSettings((key) => context[key]);

describe("readAppSettings", () => {
  it("defaults to a 4 vCPU / 8 GiB task, two weeks of logs, 30 days of runs, a kept bucket and no Container Insights", () => {
    const s = from({ regions: "eu-west-2, us-east-1" });
    expect(s.regions).toEqual(["eu-west-2", "us-east-1"]);
    expect(s.stack).toEqual({ arch: "x86_64", cpu: 4096, memoryMiB: 8192, logRetention: RetentionDays.TWO_WEEKS, resultsExpireDays: 30, destroyBucket: false, containerInsights: false, tags: {} });
    expect(s.vpcIdFor("eu-west-2")).toBeUndefined();
  });

  it("takes CLI strings and cdk.json JSON alike", () => {
    expect(from({ regions: ["sa-east-1"], cpu: 1024, memoryMiB: 2048, destroyBucket: true, tags: { team: "rt" } }).stack).toMatchObject({ cpu: 1024, memoryMiB: 2048, destroyBucket: true, tags: { team: "rt" } });
    expect(from({ regions: "sa-east-1", cpu: "1024", memoryMiB: "2048", destroyBucket: "false", tags: "team=rt,env=" }).stack).toMatchObject({ cpu: 1024, destroyBucket: false, tags: { team: "rt", env: "" } });
  });

  it("picks a VPC per region, the per-region key winning over the global one", () => {
    const s = from({ regions: "eu-west-2,us-east-1", vpcId: "vpc-11111111", "vpcId.us-east-1": "vpc-22222222" });
    expect(s.vpcIdFor("eu-west-2")).toBe("vpc-11111111");
    expect(s.vpcIdFor("us-east-1")).toBe("vpc-22222222");
    expect(() => from({ regions: "eu-west-2", "vpcId.eu-west-2": "default" }).vpcIdFor("eu-west-2")).toThrow("vpcId.eu-west-2: is not a VPC id");
  });

  it("names the bad context key", () => {
    expect(() => from({})).toThrow("invalid CDK context: regions: is required, e.g. -c regions=eu-west-2,us-east-1");
    expect(() => from({ regions: "" })).toThrow("regions: names no region");
    expect(() => from({ regions: "eu-west-2,Europe" })).toThrow("regions.1: is not an AWS region name");
    expect(() => from({ regions: "eu-west-2,eu-west-2" })).toThrow("regions: names a region twice");
    expect(() => from({ regions: "eu-west-2", logRetentionDays: "10" })).toThrow("logRetentionDays: must be a CloudWatch Logs retention");
    expect(() => from({ regions: "eu-west-2", destroyBucket: "yes" })).toThrow("destroyBucket: Expected boolean");
    expect(() => from({ regions: "eu-west-2", vpcId: "my-vpc" })).toThrow("vpcId: is not a VPC id");
    expect(() => from({ regions: "eu-west-2", cpu: "3000" })).toThrow("invalid CDK context: cpu: 3000 is not a Fargate CPU size");
    expect(() => from({ regions: "eu-west-2", cpu: "256", memoryMiB: "8192" })).toThrow("invalid CDK context: memoryMiB: 8192 does not fit cpu 256");
    expect(() => from({ regions: "eu-west-2", imageCompression: "lz4" })).toThrow("invalid CDK context: imageCompression: must be zstd or gzip");
  });

  it("takes the tasks' architecture, x86_64 by default, Docker's amd64 as x86_64, and names the two otherwise", () => {
    expect(from({ regions: "eu-west-2" }).stack.arch).toBe("x86_64");
    expect(from({ regions: "eu-west-2", arch: "arm64" }).stack.arch).toBe("arm64");
    expect(from({ regions: "eu-west-2", arch: "ARM64" }).stack.arch).toBe("arm64");
    expect(from({ regions: "eu-west-2", arch: "amd64" }).stack.arch).toBe("x86_64");
    expect(from({ regions: "eu-west-2", arch: "x86_64" }).stack.arch).toBe("x86_64");
    for (const bad of ["aarch64", "arm", "graviton", "", 64]) {
      expect(() => from({ regions: "eu-west-2", arch: bad })).toThrow("invalid CDK context: arch: must be x86_64 or arm64 (Graviton), e.g. -c arch=arm64");
    }
  });

  it("takes the image's layer compression, left to the builder's kind when unset", () => {
    expect(from({ regions: "eu-west-2", imageCompression: "gzip" }).stack.imageCompression).toBe("gzip");
    expect(from({ regions: "eu-west-2" }).stack).not.toHaveProperty("imageCompression");
  });
});

describe("assertFargateSize", () => {
  it("accepts Fargate's CPU/memory pairs and names the allowed range otherwise", () => {
    for (const [cpu, mem] of [[256, 512], [256, 2048], [1024, 8192], [4096, 30720], [8192, 20480], [16384, 122880]]) expect(() => assertFargateSize(cpu, mem)).not.toThrow();
    expect(() => assertFargateSize(256, 1536)).toThrow("memoryMiB: 1536 does not fit cpu 256 (Fargate allows 512, 1024, 2048 MiB)");
    expect(() => assertFargateSize(4096, 4096)).toThrow("memoryMiB: 4096 does not fit cpu 4096 (Fargate allows 8192–30720 in steps of 1024 MiB)");
    expect(() => assertFargateSize(8192, 18432)).toThrow("in steps of 4096");
    expect(() => assertFargateSize(3000, 8192)).toThrow("cpu: 3000 is not a Fargate CPU size (256, 512, 1024, 2048, 4096, 8192, 16384)");
  });
});

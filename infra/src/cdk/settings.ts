import { RetentionDays } from "aws-cdk-lib/aws-logs";
import { z } from "zod";
import { FargateSizeError, TASK_ARCHES, type TaskArch, assertFargateSize } from "../contract.js";
import { formatIssues } from "cable-worker/contract";
import type { ImageCompression } from "./image-build.js";

/**
 * Everything the app reads from CDK context (`-c key=value` or cdk.json "context"). CLI values arrive
 * as strings, cdk.json values as JSON, so both are accepted.
 */
export interface StackSettings {
  /** The tasks' CPU architecture: x86_64 (default) or arm64 (Graviton); the image is built for it. */
  arch: TaskArch;
  /** Task CPU units (1024 = 1 vCPU) and memory; a valid Fargate pair. */
  cpu: number;
  memoryMiB: number;
  logRetention: RetentionDays;
  /** Days after which everything under runs/ expires. */
  resultsExpireDays: number;
  /** Delete the bucket and its objects with the stack (otherwise it is retained). */
  destroyBucket: boolean;
  containerInsights: boolean;
  /** Extra tags on every resource. */
  tags: Record<string, string>;
  /** The image's layer compression (image-build.ts); undefined: zstd, except with Podman. */
  imageCompression?: ImageCompression;
}

export interface AppSettings {
  regions: string[];
  stack: StackSettings;
  /** An existing VPC to use in that region (`-c vpcId=…` for all, `-c vpcId.<region>=…` for one). */
  vpcIdFor: (region: string) => string | undefined;
  /** `-c githubRepo=owner/name`: add the GitHub Actions OIDC role for that repository. */
  github?: { repository: string; oidcProviderArn?: string };
}

export type ContextReader = (key: string) => unknown;

const REGION = /^[a-z]{2}(-[a-z]+)+-\d$/;
const VPC_ID = /^vpc-[0-9a-f]{8,17}$/;

const list = (value: unknown): unknown =>
  typeof value === "string" ? value.split(",").map((s) => s.trim()).filter(Boolean) : value;
const bool = (value: unknown): unknown => (value === "true" ? true : value === "false" ? false : value);
const tagPairs = (value: unknown): unknown =>
  typeof value === "string"
    ? Object.fromEntries(
        value
          .split(",")
          .filter(Boolean)
          .map((pair) => {
            const i = pair.indexOf("=");
            return i === -1 ? [pair, ""] : [pair.slice(0, i).trim(), pair.slice(i + 1).trim()];
          }),
      )
    : value;

/** `-c arch=`: Docker's name for x86_64 (`amd64`, as in linux/amd64) is taken too; any case. */
const archName = (value: unknown): unknown => {
  if (typeof value !== "string") return value;
  const name = value.trim().toLowerCase();
  return name === "amd64" ? "x86_64" : name;
};

const retentionValues = new Set<number>(Object.values(RetentionDays).filter((v): v is number => typeof v === "number"));

const schema = z.object({
  regions: z.preprocess(
    list,
    z
      .array(z.string().regex(REGION, "is not an AWS region name"), { required_error: "is required, e.g. -c regions=eu-west-2,us-east-1" })
      .nonempty("names no region")
      .refine((r) => new Set(r).size === r.length, "names a region twice"),
  ),
  arch: z.preprocess(archName, z.enum(TASK_ARCHES, { errorMap: () => ({ message: "must be x86_64 or arm64 (Graviton), e.g. -c arch=arm64" }) }).default("x86_64")),
  cpu: z.coerce.number().int().default(4096),
  memoryMiB: z.coerce.number().int().default(8192),
  logRetentionDays: z.coerce
    .number()
    .int()
    .default(14)
    .refine((d) => retentionValues.has(d), "must be a CloudWatch Logs retention (1, 3, 5, 7, 14, 30, 60, 90, …)"),
  resultsExpireDays: z.coerce.number().int().positive().default(30),
  destroyBucket: z.preprocess(bool, z.boolean().default(false)),
  containerInsights: z.preprocess(bool, z.boolean().default(false)),
  tags: z.preprocess(tagPairs, z.record(z.string().min(1, "tag keys must not be empty"), z.string()).default({})),
  imageCompression: z.enum(["zstd", "gzip"], { errorMap: () => ({ message: "must be zstd or gzip" }) }).optional(),
  vpcId: z.string().regex(VPC_ID, "is not a VPC id").optional(),
  githubRepo: z.string().regex(/^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/, "must be owner/name, e.g. -c githubRepo=acme/chat").optional(),
  githubOidcProviderArn: z.string().regex(/^arn:aws[a-z-]*:iam::\d{12}:oidc-provider\/token\.actions\.githubusercontent\.com$/, "is not the ARN of a token.actions.githubusercontent.com OIDC provider").optional(),
});

export function readAppSettings(context: ContextReader): AppSettings {
  const keys = Object.keys(schema.shape);
  const result = schema.safeParse(Object.fromEntries(keys.map((k) => [k, context(k)])));
  if (!result.success) throw new Error(`invalid CDK context: ${formatIssues(result.error)}`);
  const c = result.data;
  try {
    assertFargateSize(c.cpu, c.memoryMiB);
  } catch (err) {
    if (err instanceof FargateSizeError) throw new Error(`invalid CDK context: ${err.message}`);
    throw err;
  }
  const vpcIdFor = (region: string): string | undefined => {
    const perRegion = context(`vpcId.${region}`);
    if (perRegion === undefined) return c.vpcId;
    if (typeof perRegion !== "string" || !VPC_ID.test(perRegion)) throw new Error(`invalid CDK context: vpcId.${region}: is not a VPC id`);
    return perRegion;
  };
  return {
    regions: c.regions,
    stack: {
      arch: c.arch,
      cpu: c.cpu,
      memoryMiB: c.memoryMiB,
      logRetention: c.logRetentionDays as RetentionDays,
      resultsExpireDays: c.resultsExpireDays,
      destroyBucket: c.destroyBucket,
      containerInsights: c.containerInsights,
      tags: c.tags,
      ...(c.imageCompression ? { imageCompression: c.imageCompression } : {}),
    },
    vpcIdFor,
    ...(c.githubRepo ? { github: { repository: c.githubRepo, oidcProviderArn: c.githubOidcProviderArn } } : {}),
  };
}

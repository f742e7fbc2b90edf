// The AWS backend's end-to-end tests share one setting: moto, the synthesized stacks deployed in
// several regions with their policies as IAM holds them, and the local target with a known fault.
// Every S3 call moto recorded is then held, signer by signer, against the policy that signer holds
// (moto allows every call; the policy simulator is what decides).
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { startTarget, type LocalTarget, type TargetOptions } from "cable-local-target";
import { startMoto, type Moto } from "cable-test-servers";
import { afterAll, beforeAll, expect } from "vitest";
import type { RegionStack } from "../src/aws/discovery";
import { ACCOUNT, deployRegions, simulate, type PolicyDocument } from "./iam-policies";
import { holdTasksRunning, type RecordedRequest, signedBy } from "./moto";

// The tasks sign with their own key, so that moto's recording tells their calls from the runner's.
export const TASK_KEY = "TASKROLETESTING";
export const RUNNER_KEY = "testing";

export interface MotoRegions {
  moto: Moto;
  /** A scratch directory, removed after the file's tests. */
  work: string;
  target: LocalTarget;
  stacks: RegionStack[];
  taskPolicies: Map<string, PolicyDocument[]>;
  operatorPolicies: PolicyDocument[];
}

/**
 * moto recording every request, tasks held RUNNING until StopTask, the stacks of `regions` deployed,
 * and the local target with `faults`: set up before the file's tests (its fields are filled then)
 * and torn down after them.
 */
export function motoRegions(regions: string[], faults: TargetOptions["faults"], setupTimeoutMs: number): MotoRegions {
  const fixture = {} as MotoRegions;
  beforeAll(async () => {
    fixture.work = mkdtempSync(path.join(os.tmpdir(), "cable-moto-regions-"));
    fixture.moto = await startMoto({ recordTo: path.join(fixture.work, "moto-recording") });
    expect(await holdTasksRunning(fixture.moto)).toBe(true);
    fixture.target = await startTarget({ port: 0, faults });
    Object.assign(fixture, await deployRegions(regions));
  }, setupTimeoutMs);
  afterAll(async () => {
    await fixture.target?.close();
    await fixture.moto?.stop();
    if (fixture.work) rmSync(fixture.work, { recursive: true, force: true });
  });
  return fixture;
}

/** One recorded S3 request as IAM authorizes it, with the access key that signed it. */
export interface S3Call {
  signer: string;
  region: string;
  action: string;
  resource: string;
  context: Record<string, string>;
}

/** The S3 calls among moto's recorded requests, each mapped to its IAM action, resource and context. */
export function s3Calls(requests: RecordedRequest[], stacks: RegionStack[]): S3Call[] {
  const buckets = new Map(stacks.map((s) => [s.bucketName, s.region]));
  return requests.filter((r) => signedBy(r)?.service === "s3").map((r) => ({ signer: signedBy(r)!.accessKeyId, ...s3Request(r, buckets) }));
}

/**
 * Each distinct shape of call (period keys differ only by time) held against its signer's policy:
 * the task role of its region for TASK_KEY, the operator policies for RUNNER_KEY. Returns the
 * denied ones, with IAM's decision, and how many shapes were checked.
 */
export async function deniedCalls(calls: S3Call[], fixture: Pick<MotoRegions, "taskPolicies" | "operatorPolicies">): Promise<{ denied: string[]; shapes: number }> {
  const denied: string[] = [];
  const seen = new Set<string>();
  for (const r of calls) {
    const key = `${r.signer} ${r.action} ${r.resource.replace(/\/live\/\d+\//, "/live/N/")} ${JSON.stringify(r.context)}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const outcome =
      r.signer === TASK_KEY
        ? await simulate(fixture.taskPolicies.get(r.region)!, `arn:aws:iam::${ACCOUNT}:role/task`, r)
        : await simulate(fixture.operatorPolicies, `arn:aws:iam::${ACCOUNT}:role/operator`, r);
    if (outcome !== "Allowed") denied.push(`${key}: ${outcome}`);
  }
  return { denied, shapes: seen.size };
}

/** What IAM authorizes for one recorded S3 request (path-style: moto's endpoint is an IP address). */
function s3Request(request: RecordedRequest, buckets: Map<string, string>): Omit<S3Call, "signer"> {
  const url = new URL(request.url);
  const [bucket, ...keyParts] = url.pathname.slice(1).split("/");
  const region = buckets.get(bucket);
  if (!region) throw new Error(`S3 request outside the stacks' buckets: ${request.method} ${request.url}`);
  const key = keyParts.map(decodeURIComponent).join("/");
  if (request.method === "GET" && url.searchParams.get("list-type") === "2") {
    return { region, action: "s3:ListBucket", resource: `arn:aws:s3:::${bucket}`, context: { "s3:prefix": url.searchParams.get("prefix") ?? "" } };
  }
  if (request.method === "GET" && key) return { region, action: "s3:GetObject", resource: `arn:aws:s3:::${bucket}/${key}`, context: {} };
  if (request.method === "PUT" && key) return { region, action: "s3:PutObject", resource: `arn:aws:s3:::${bucket}/${key}`, context: {} };
  throw new Error(`no IAM mapping for the S3 request ${request.method} ${request.url}`);
}

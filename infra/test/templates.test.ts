import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { App, type Stack } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../src/cdk/app";
import { GITHUB_STACK_NAME } from "../src/contract";
import { EVERY_OPTION_CONTEXT } from "./helpers";

/**
 * The synthesized templates, pinned: every resource, property and logical id, for a set of contexts
 * that between them take every branch of the CDK code. A logical id is what CloudFormation knows a
 * resource by; one that changes makes `cdk deploy` replace the resource (a new bucket, VPC, cluster,
 * and a clash on the operator policy's fixed name), so a change here is a change for every deployed
 * stack. After a deliberate change to the stacks, rewrite the fixtures with
 * `npx vitest run infra/test/templates.test.ts -u` and read their diff.
 *
 * Normalized: asset hashes (the image's changes with every build of the worker; the custom resources'
 * handlers with aws-cdk-lib), and object keys sorted, so that the order in which constructs are
 * created, which CloudFormation ignores, does not count.
 */

const FIXTURES = path.join(__dirname, "fixtures/templates");
const ACCOUNT = "123456789012";
const VPC_ID = "vpc-0123456789abcdef0";

let imageDir: string;
let previousAccount: string | undefined;

beforeAll(() => {
  // Only the Dockerfile's presence matters to synthesis; the asset hash is normalized away.
  imageDir = mkdtempSync(path.join(os.tmpdir(), "cable-template-image-"));
  writeFileSync(path.join(imageDir, "Dockerfile"), "FROM scratch\n");
  previousAccount = process.env.CDK_DEFAULT_ACCOUNT;
  delete process.env.CDK_DEFAULT_ACCOUNT;
});
afterAll(() => {
  rmSync(imageDir, { recursive: true, force: true });
  if (previousAccount !== undefined) process.env.CDK_DEFAULT_ACCOUNT = previousAccount;
});

/** Every stack of the app built from this context, regional and GitHub alike. */
function synth(context: Record<string, unknown>, account?: string): Stack[] {
  if (account) process.env.CDK_DEFAULT_ACCOUNT = account;
  try {
    const app = new App({ context });
    const regional: Stack[] = buildApp(app, imageDir);
    const github = app.node.tryFindChild(GITHUB_STACK_NAME) as Stack | undefined;
    return github ? [...regional, github] : regional;
  } finally {
    delete process.env.CDK_DEFAULT_ACCOUNT;
  }
}

const ASSET_HASH = /\b[0-9a-f]{64}\b/g;

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([k, v]) => [k, sortKeys(v)]));
  }
  return value;
}

function normalizedTemplate(stack: Stack): string {
  const json = JSON.stringify(sortKeys(Template.fromStack(stack).toJSON()), null, 2);
  return `${json.replace(ASSET_HASH, "<asset-hash>")}\n`;
}

async function expectPinned(name: string, stacks: Stack[]): Promise<void> {
  for (const stack of stacks) {
    await expect(normalizedTemplate(stack)).toMatchFileSnapshot(path.join(FIXTURES, `${name}.${stack.stackName}.json`));
  }
}

/** A team VPC that has public subnets only, as `cdk synth` would have cached its lookup. */
function publicOnlyVpcContext(): Record<string, unknown> {
  // The lookup's context key, as this CDK version spells it: read from what a first synthesis misses.
  const first = new App({ context: { regions: "eu-west-2", vpcId: VPC_ID } });
  process.env.CDK_DEFAULT_ACCOUNT = ACCOUNT;
  try {
    buildApp(first, imageDir);
  } finally {
    delete process.env.CDK_DEFAULT_ACCOUNT;
  }
  const missing = first.synth().manifest.missing ?? [];
  expect(missing.map((m) => m.provider)).toEqual(["vpc-provider"]);
  return {
    [missing[0].key]: {
      vpcId: VPC_ID,
      vpcCidrBlock: "10.20.0.0/16",
      availabilityZones: [],
      subnetGroups: [
        {
          name: "Public",
          type: "Public",
          subnets: [
            { subnetId: "subnet-0aaaaaaaaaaaaaaaa", cidr: "10.20.0.0/20", availabilityZone: "eu-west-2a", routeTableId: "rtb-0aaaaaaaaaaaaaaaa" },
            { subnetId: "subnet-0bbbbbbbbbbbbbbbb", cidr: "10.20.16.0/20", availabilityZone: "eu-west-2b", routeTableId: "rtb-0bbbbbbbbbbbbbbbb" },
          ],
        },
      ],
    },
  };
}

describe("the synthesized templates are the pinned ones", () => {
  it("by default", async () => {
    await expectPinned("default", synth({ regions: "eu-west-2" }));
  });

  it("with every sizing, retention, bucket, insights and tag option set", async () => {
    await expectPinned("options", synth(EVERY_OPTION_CONTEXT));
  });

  // The regional stacks are the default ones: only the GitHub stack is pinned here.
  it("with the GitHub Actions role, creating the OIDC provider or reusing the account's", async () => {
    const github = (stacks: Stack[]) => stacks.filter((s) => s.stackName === GITHUB_STACK_NAME);
    await expectPinned("github", github(synth({ regions: "eu-west-2,us-east-1", githubRepo: "acme/chat" })));
    await expectPinned(
      "github-provider",
      github(synth({ regions: "eu-west-2", githubRepo: "acme/chat", githubOidcProviderArn: `arn:aws:iam::${ACCOUNT}:oidc-provider/token.actions.githubusercontent.com` })),
    );
  });

  it("in an existing VPC: with private subnets (CDK's stand-in before a lookup), and with public subnets only", async () => {
    await expectPinned("vpc-private", synth({ regions: "eu-west-2", "vpcId.eu-west-2": VPC_ID }, ACCOUNT));
    await expectPinned("vpc-public", synth({ regions: "eu-west-2", vpcId: VPC_ID, ...publicOnlyVpcContext() }, ACCOUNT));
  });
});

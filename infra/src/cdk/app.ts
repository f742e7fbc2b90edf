#!/usr/bin/env node
/**
 * The CDK app: one LoadtestStack per region named by `-c regions=…` (README.md, "Deploying").
 * Run through cdk.json, whose build hook builds the workspaces and stages the image first.
 */
import { App } from "aws-cdk-lib";
import { DEFAULT_IMAGE_DIR } from "../image/stage.js";
import { GITHUB_STACK_NAME, stackNameFor } from "../contract.js";
import { GitHubStack } from "./github-stack.js";
import { LoadtestStack } from "./loadtest-stack.js";
import { readAppSettings } from "./settings.js";

export function buildApp(app: App, imageDirectory: string = DEFAULT_IMAGE_DIR): LoadtestStack[] {
  const settings = readAppSettings((key) => app.node.tryGetContext(key));
  const stacks = settings.regions.map((region) => {
    const vpcId = settings.vpcIdFor(region);
    // Vpc.fromLookup needs a concrete account, which only credentials can tell; a stack that creates
    // its own VPC stays account-agnostic and synthesizes offline.
    const account = vpcId ? process.env.CDK_DEFAULT_ACCOUNT : undefined;
    if (vpcId && !account) throw new Error(`vpcId ${vpcId} for ${region} is looked up at synth time, which needs AWS credentials (no account found)`);
    return new LoadtestStack(app, stackNameFor(region), {
      stackName: stackNameFor(region),
      env: { region, account },
      description: `cable-loadtest load generator (Artillery + artillery-engine-cable on Fargate) in ${region}`,
      settings: settings.stack,
      vpcId,
      imageDirectory,
    });
  });
  if (settings.github) {
    const github = new GitHubStack(app, GITHUB_STACK_NAME, {
      stackName: GITHUB_STACK_NAME,
      env: { region: settings.regions[0] },
      description: `cable-loadtest: GitHub Actions OIDC role for ${settings.github.repository}`,
      repository: settings.github.repository,
      regions: settings.regions,
      oidcProviderArn: settings.github.oidcProviderArn,
    });
    // The role attaches the regional operator policies by name, so they must exist first.
    for (const stack of stacks) github.addDependency(stack);
  }
  return stacks;
}

if (require.main === module) {
  try {
    buildApp(new App());
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n`);
    process.exit(1);
  }
}

// The stacks' IAM policies as IAM holds them after a deploy to moto (CloudFormation has resolved
// every reference to a real ARN), and IAM's own decision on a request against them: moto allows
// every call, so the policy simulator is what proves a role may make the calls it made.
import { CloudFormationClient, ListStackResourcesCommand } from "@aws-sdk/client-cloudformation";
import { GetPolicyCommand, GetPolicyVersionCommand, GetRolePolicyCommand, IAMClient, ListPoliciesCommand, ListRolePoliciesCommand } from "@aws-sdk/client-iam";
import { runSimulation } from "@cloud-copilot/iam-simulate";
import { operatorPolicyNameFor, stackNameFor } from "cable-infra/contract";
import { expect } from "vitest";
import { describeRegionStack, type RegionStack } from "../src/aws/discovery";
import { deployStack, synthesizeTemplates } from "./moto";

export const ACCOUNT = "123456789012";

export type PolicyDocument = { name: string; policy: unknown };

const decode = (document: string) => JSON.parse(document.startsWith("%7B") ? decodeURIComponent(document) : document) as unknown;

/** Each region's task role policies, and the operator policies of all regions. */
export async function stackPolicies(stacks: RegionStack[]): Promise<{ taskPolicies: Map<string, PolicyDocument[]>; operatorPolicies: PolicyDocument[] }> {
  const iam = new IAMClient({ region: "us-east-1" });
  const taskPolicies = new Map<string, PolicyDocument[]>();
  for (const stack of stacks) {
    const { StackResourceSummaries = [] } = await new CloudFormationClient({ region: stack.region }).send(new ListStackResourcesCommand({ StackName: stackNameFor(stack.region) }));
    const roleName = StackResourceSummaries.find((r) => r.ResourceType === "AWS::IAM::Role" && r.LogicalResourceId!.startsWith("TaskDefinitionTaskRole"))?.PhysicalResourceId;
    expect(roleName, `task role of ${stack.region}`).toBeDefined();
    const { PolicyNames = [] } = await iam.send(new ListRolePoliciesCommand({ RoleName: roleName }));
    expect(PolicyNames.length, `inline policies of ${roleName}`).toBeGreaterThan(0);
    const documents: PolicyDocument[] = [];
    for (const name of PolicyNames) {
      const { PolicyDocument } = await iam.send(new GetRolePolicyCommand({ RoleName: roleName, PolicyName: name }));
      documents.push({ name, policy: decode(PolicyDocument!) });
    }
    taskPolicies.set(stack.region, documents);
  }
  const operatorPolicies: PolicyDocument[] = [];
  const { Policies = [] } = await iam.send(new ListPoliciesCommand({ Scope: "Local" }));
  for (const { region } of stacks) {
    const listed = Policies.find((p) => p.PolicyName === operatorPolicyNameFor(region));
    expect(listed, `operator policy of ${region}`).toBeDefined();
    const { Policy } = await iam.send(new GetPolicyCommand({ PolicyArn: listed!.Arn }));
    const { PolicyVersion } = await iam.send(new GetPolicyVersionCommand({ PolicyArn: listed!.Arn, VersionId: Policy!.DefaultVersionId }));
    operatorPolicies.push({ name: listed!.PolicyName!, policy: decode(PolicyVersion!.Document!) });
  }
  return { taskPolicies, operatorPolicies };
}

/** IAM's decision ("Allowed", "ExplicitlyDenied", "ImplicitlyDenied") on one request by `principal` under `policies`. */
export async function simulate(policies: PolicyDocument[], principal: string, r: { action: string; resource: string; context: Record<string, string> }) {
  const result = await runSimulation(
    {
      identityPolicies: policies as Parameters<typeof runSimulation>[0]["identityPolicies"],
      serviceControlPolicies: [],
      resourceControlPolicies: [],
      request: { action: r.action, principal, resource: { accountId: ACCOUNT, resource: r.resource }, contextVariables: r.context },
    },
    {},
  );
  if (result.resultType !== "single") throw new Error(`${r.action} on ${r.resource}: ${JSON.stringify(result)}`);
  return result.overallResult;
}

/** The stacks of `regions` deployed to moto, as the runner finds them, with their policies. */
export async function deployRegions(regions: string[]) {
  for (const [region, template] of synthesizeTemplates(regions)) expect(await deployStack(region, template)).toBe("CREATE_COMPLETE");
  const stacks = await Promise.all(regions.map((r) => describeRegionStack(new CloudFormationClient({ region: r }), r)));
  return { stacks, ...(await stackPolicies(stacks)) };
}

/**
 * With `-c githubRepo=owner/name`: a role GitHub Actions assumes through OIDC, only from that
 * repository, holding every region's operator policy (and nothing else). IAM is global, so one such
 * stack serves every region; it is deployed in the first region and after the regional stacks,
 * whose policies it attaches by name.
 */
import { CfnOutput, Duration, Stack, type StackProps } from "aws-cdk-lib";
import * as iam from "aws-cdk-lib/aws-iam";
import type { Construct } from "constructs";
import { GITHUB_ROLE_NAME, operatorPolicyNameFor } from "../contract.js";

export const GITHUB_OIDC_HOST = "token.actions.githubusercontent.com";

export interface GitHubStackProps extends StackProps {
  /** `owner/name`. */
  repository: string;
  regions: string[];
  /** The account's existing GitHub OIDC provider (an account has at most one per URL); created when absent. */
  oidcProviderArn?: string;
}

export class GitHubStack extends Stack {
  readonly role: iam.Role;

  constructor(scope: Construct, id: string, props: GitHubStackProps) {
    super(scope, id, props);
    const provider = props.oidcProviderArn
      ? iam.OpenIdConnectProvider.fromOpenIdConnectProviderArn(this, "GitHubOidc", props.oidcProviderArn)
      : new iam.OpenIdConnectProvider(this, "GitHubOidc", { url: `https://${GITHUB_OIDC_HOST}`, clientIds: ["sts.amazonaws.com"] });
    this.role = new iam.Role(this, "Role", {
      roleName: GITHUB_ROLE_NAME,
      description: `GitHub Actions in ${props.repository}: cable-fanout run | collect | stop`,
      assumedBy: new iam.WebIdentityPrincipal(provider.openIdConnectProviderArn, {
        StringEquals: { [`${GITHUB_OIDC_HOST}:aud`]: "sts.amazonaws.com" },
        // Any workflow, branch or pull request of this repository, and no other repository.
        StringLike: { [`${GITHUB_OIDC_HOST}:sub`]: `repo:${props.repository}:*` },
      }),
      // A run's credentials must outlast it (configure-aws-credentials: role-duration-seconds).
      maxSessionDuration: Duration.hours(6),
      managedPolicies: props.regions.map((region) => iam.ManagedPolicy.fromManagedPolicyName(this, `Operator-${region}`, operatorPolicyNameFor(region))),
    });
    new CfnOutput(this, "RoleArn", { value: this.role.roleArn });
  }
}

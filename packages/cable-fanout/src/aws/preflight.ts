// Before any task starts: every named secret exists in this region (tasks read secrets by name in
// their own region), and the run fits the region's Fargate vCPU quota. Each problem is one line
// naming the region and what to do; nothing here reads a secret's value.
import { DescribeSecretCommand, type SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import { GetServiceQuotaCommand, type ServiceQuotasClient } from "@aws-sdk/client-service-quotas";
import { DescribeParametersCommand, type SSMClient } from "@aws-sdk/client-ssm";
import { FARGATE_VCPU_QUOTA, SECRETS_MANAGER_SCHEME } from "cable-infra/contract";
import type { Preflight } from "../backend.js";

export interface PreflightClients {
  ssm: SSMClient;
  secretsManager: SecretsManagerClient;
  serviceQuotas: ServiceQuotasClient;
}

const ARN = /^arn:[^:]+:(ssm|secretsmanager):([^:]*):\d*:(?:parameter|secret:)(.+)$/;

type SecretRef = { service: "ssm" | "secretsmanager"; name: string; arnRegion?: string };

/** What a `--secret` reference names: service, name, and the region an ARN pins it to. */
export function parseSecretRef(ref: string): SecretRef {
  const arn = ARN.exec(ref);
  if (arn) {
    const service = arn[1] as "ssm" | "secretsmanager";
    return { service, name: service === "ssm" ? `/${arn[3].replace(/^\//, "")}` : arn[3], arnRegion: arn[2] };
  }
  if (ref.startsWith(SECRETS_MANAGER_SCHEME)) return { service: "secretsmanager", name: ref.slice(SECRETS_MANAGER_SCHEME.length) };
  return { service: "ssm", name: ref };
}

const AWS_MANAGED_KEYS = new Set(["alias/aws/ssm", "alias/aws/secretsmanager"]);

/** One line per secret this region lacks; `warn` gets secrets encrypted with a key the task role may not decrypt. */
export async function checkSecrets(clients: PreflightClients, region: string, refs: Record<string, string>, warn: (line: string) => void): Promise<string[]> {
  const problems: string[] = [];
  for (const [env, ref] of Object.entries(refs)) {
    const secret = parseSecretRef(ref);
    const what = `secret ${env} (${ref})`;
    if (secret.arnRegion !== undefined && secret.arnRegion !== region) {
      const byName = secret.service === "ssm" ? `ssm:${secret.name}` : `${SECRETS_MANAGER_SCHEME}${secret.name.replace(/-[A-Za-z0-9]{6}$/, "")}`;
      problems.push(`region ${region}: ${what} is an ARN in ${secret.arnRegion || "no region"}, and tasks read secrets in their own region only; name it (--secret ${env}=${byName}) and create it in every region`);
      continue;
    }
    try {
      if (secret.service === "ssm") {
        const out = await clients.ssm.send(new DescribeParametersCommand({ ParameterFilters: [{ Key: "Name", Option: "Equals", Values: [secret.name] }] }));
        const parameter = out.Parameters?.[0];
        if (!parameter) {
          problems.push(`region ${region}: ${what}: no SSM parameter ${secret.name} in ${region}; create it there: aws ssm put-parameter --region ${region} --name ${secret.name} --type SecureString --value …`);
        } else if (parameter.Type === "SecureString" && parameter.KeyId && !AWS_MANAGED_KEYS.has(parameter.KeyId)) {
          warn(`region ${region}: ${what} is encrypted with KMS key ${parameter.KeyId}: the task role needs kms:Decrypt on it (infra/README.md, "Secrets")`);
        }
      } else {
        const out = await clients.secretsManager.send(new DescribeSecretCommand({ SecretId: secret.name }));
        if (out.DeletedDate) problems.push(`region ${region}: ${what}: the secret ${secret.name} is scheduled for deletion in ${region}; restore it or create a new one`);
        else if (out.KmsKeyId && !AWS_MANAGED_KEYS.has(out.KmsKeyId)) warn(`region ${region}: ${what} is encrypted with KMS key ${out.KmsKeyId}: the task role needs kms:Decrypt on it (infra/README.md, "Secrets")`);
      }
    } catch (err) {
      const e = err as Error;
      if (e.name === "ResourceNotFoundException") {
        problems.push(`region ${region}: ${what}: no Secrets Manager secret ${secret.name} in ${region}; create it there: aws secretsmanager create-secret --region ${region} --name ${secret.name} --secret-string …`);
      } else {
        problems.push(`region ${region}: ${what} could not be checked: ${e.name}: ${e.message}`);
      }
    }
  }
  return problems;
}

/** The Fargate vCPU quota check: a problem line when the run asks for more vCPUs than the quota; unknown quotas only warn. */
export async function checkFargateQuota(client: ServiceQuotasClient, region: string, plan: Preflight, taskCpu: number | undefined, warn: (line: string) => void): Promise<string[]> {
  const cpu = plan.cpu ?? taskCpu;
  if (cpu === undefined) return [];
  const code = plan.spot ? FARGATE_VCPU_QUOTA.spot : FARGATE_VCPU_QUOTA.onDemand;
  const kind = plan.spot ? "Fargate Spot" : "Fargate On-Demand";
  const wanted = (plan.count * cpu) / 1024;
  let quota: number | undefined;
  try {
    quota = (await client.send(new GetServiceQuotaCommand({ ServiceCode: "fargate", QuotaCode: code }))).Quota?.Value;
  } catch (err) {
    warn(`region ${region}: could not read the ${kind} vCPU quota (${(err as Error).name}); RunTask will say if ${wanted} vCPU is too much`);
    return [];
  }
  if (quota === undefined || wanted <= quota) return [];
  return [
    `region ${region}: ${plan.count} task(s) × ${cpu / 1024} vCPU = ${wanted} vCPU exceed the ${kind} vCPU quota of ${quota} (tasks already running count too); ` +
      `ask for more: aws service-quotas request-service-quota-increase --region ${region} --service-code fargate --quota-code ${code} --desired-value ${Math.ceil(wanted)}, or run fewer or smaller tasks (--count, --cpu/--memory)`,
  ];
}

// Before any task starts: every named secret exists in this region (tasks read secrets by name in
// their own region), the run fits the region's Fargate vCPU quotas beside what already runs there,
// and its subnets have an address for every task. Each problem is one line
// naming the region and what to do; nothing here reads a secret's value.
import { DescribeSecretCommand, type SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import { type CloudWatchClient, GetMetricDataCommand } from "@aws-sdk/client-cloudwatch";
import { DescribeSubnetsCommand, type EC2Client } from "@aws-sdk/client-ec2";
import { GetAWSDefaultServiceQuotaCommand, GetServiceQuotaCommand, type ServiceQuotasClient } from "@aws-sdk/client-service-quotas";
import { DescribeParametersCommand, type SSMClient } from "@aws-sdk/client-ssm";
import { FARGATE_VCPU_QUOTA, SECRETS_MANAGER_SCHEME, stackNameFor } from "cable-infra/contract";
import type { Arch, QuotaFact, StackExpectations } from "../backend.js";

export interface PreflightClients {
  ssm: SSMClient;
  secretsManager: SecretsManagerClient;
  serviceQuotas: ServiceQuotasClient;
  cloudWatch: CloudWatchClient;
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

/** What the region says about its Fargate vCPUs: both quotas, each with its current use. */
export async function readQuotaFacts(clients: Pick<PreflightClients, "serviceQuotas" | "cloudWatch">, now: number = Date.now()): Promise<QuotaFact[]> {
  const usage = await readFargateUsage(clients.cloudWatch, now);
  return Promise.all(
    (["on-demand", "spot"] as const).map(async (kind): Promise<QuotaFact> => {
      const code = kind === "spot" ? FARGATE_VCPU_QUOTA.spot : FARGATE_VCPU_QUOTA.onDemand;
      const base = { kind, code, ...(usage.byKind ? { inUse: usage.byKind[kind] } : {}) };
      const unread = usage.error ? [`current use: ${usage.error}`] : [];
      try {
        const value = (await clients.serviceQuotas.send(new GetServiceQuotaCommand({ ServiceCode: "fargate", QuotaCode: code }))).Quota?.Value;
        if (value !== undefined) return { ...base, quota: value, from: "applied", ...(unread.length ? { unread: unread.join("; ") } : {}) };
      } catch (err) {
        // A quota never adjusted may have no applied value (NoSuchResourceException): its default is the quota.
        if ((err as Error).name !== "NoSuchResourceException") unread.push(`applied quota: ${(err as Error).name}`);
      }
      try {
        const value = (await clients.serviceQuotas.send(new GetAWSDefaultServiceQuotaCommand({ ServiceCode: "fargate", QuotaCode: code }))).Quota?.Value;
        if (value !== undefined) return { ...base, quota: value, from: "default", ...(unread.length ? { unread: unread.join("; ") } : {}) };
        unread.push("default quota: no value");
      } catch (err) {
        unread.push(`default quota: ${(err as Error).name}`);
      }
      return { ...base, from: "unknown", unread: unread.join("; ") };
    }),
  );
}

/** Fargate's usage metrics (Amazon ECS Developer Guide, "AWS Fargate usage metrics"): vCPUs running, by class. */
const USAGE_CLASS = { "on-demand": "Standard/OnDemand", spot: "Standard/Spot" } as const;

async function readFargateUsage(cloudWatch: CloudWatchClient, now: number): Promise<{ byKind?: Record<"on-demand" | "spot", number>; error?: string }> {
  const query = (id: string, cls: string) => ({
    Id: id,
    MetricStat: {
      Metric: {
        Namespace: "AWS/Usage",
        MetricName: "ResourceCount",
        Dimensions: [
          { Name: "Service", Value: "Fargate" },
          { Name: "Type", Value: "Resource" },
          { Name: "Resource", Value: "vCPU" },
          { Name: "Class", Value: cls },
        ],
      },
      Period: 60,
      Stat: "Maximum",
    },
  });
  try {
    const out = await cloudWatch.send(
      new GetMetricDataCommand({
        // The last ten minutes: the metric is published every minute, and a quiet account publishes nothing.
        StartTime: new Date(now - 10 * 60_000),
        EndTime: new Date(now),
        ScanBy: "TimestampDescending",
        MetricDataQueries: [query("ondemand", USAGE_CLASS["on-demand"]), query("spot", USAGE_CLASS.spot)],
      }),
    );
    const latest = (id: string) => out.MetricDataResults?.find((r) => r.Id === id)?.Values?.[0] ?? 0;
    return { byKind: { "on-demand": latest("ondemand"), spot: latest("spot") } };
  } catch (err) {
    return { error: (err as Error).name };
  }
}

export interface QuotaWant {
  tasks: number;
  /** Task CPU units. */
  cpu: number;
  capacity: "on-demand" | "spot" | "spot-only";
}

const free = (q: QuotaFact | undefined) => (q?.quota === undefined ? undefined : Math.max(0, q.quota - (q.inUse ?? 0)));
const kindName = (kind: QuotaFact["kind"]) => (kind === "spot" ? "Fargate Spot" : "Fargate On-Demand");
const raise = (region: string, q: QuotaFact, wanted: number) =>
  `aws service-quotas request-service-quota-increase --region ${region} --service-code fargate --quota-code ${q.code} --desired-value ${Math.ceil((q.inUse ?? 0) + wanted)}`;

/**
 * Whether the region's quotas hold the run: its vCPUs beside those already running. With --spot the
 * tasks Spot cannot place start on-demand, so both quotas together must hold them.
 */
export function judgeQuotas(region: string, quotas: QuotaFact[], want: QuotaWant): { problems: string[]; warnings: string[] } {
  const wanted = (want.tasks * want.cpu) / 1024;
  const onDemand = quotas.find((q) => q.kind === "on-demand");
  const spot = quotas.find((q) => q.kind === "spot");
  const what = `${want.tasks} task(s) × ${want.cpu / 1024} vCPU = ${wanted} vCPU`;
  const use = (q: QuotaFact) => `${q.inUse ?? 0} in use of ${q.quota}${q.from === "default" ? " (the default: never adjusted)" : ""}`;
  const fewer = "or run fewer or smaller tasks (--count, --cpu/--memory)";
  const problems: string[] = [];
  const warnings: string[] = [];
  const unknown = (q: QuotaFact | undefined, kind: QuotaFact["kind"]) =>
    warnings.push(`region ${region}: could not read the ${kindName(kind)} vCPU quota (${q?.unread ?? "no answer"}); RunTask will say if ${wanted} vCPU is too much`);
  const primary = want.capacity === "on-demand" ? onDemand : spot;
  const primaryFree = free(primary);
  if (primaryFree === undefined) {
    unknown(primary, want.capacity === "on-demand" ? "on-demand" : "spot");
    return { problems, warnings };
  }
  if (wanted <= primaryFree) return { problems, warnings };
  const p = primary!;
  if (want.capacity !== "spot") {
    problems.push(`region ${region}: ${what} exceed the ${kindName(p.kind)} vCPU quota's free ${primaryFree} (${use(p)}); ask for more: ${raise(region, p, wanted)}, ${fewer}`);
    return { problems, warnings };
  }
  const fallbackFree = free(onDemand);
  if (fallbackFree !== undefined && primaryFree + fallbackFree >= wanted) {
    warnings.push(`region ${region}: the Fargate Spot quota holds ${Math.floor(primaryFree / (want.cpu / 1024))} of ${want.tasks} task(s) (${use(p)}); the rest would start on-demand (${use(onDemand!)})`);
    return { problems, warnings };
  }
  if (fallbackFree === undefined) unknown(onDemand, "on-demand");
  problems.push(
    `region ${region}: ${what} exceed the free Fargate Spot vCPUs (${primaryFree}: ${use(p)})${fallbackFree === undefined ? "" : ` and the on-demand fallback's (${fallbackFree}: ${use(onDemand!)})`}; ask for more: ${raise(region, p, wanted)}, ${fewer}`,
  );
  return { problems, warnings };
}

/** Free addresses in the subnets the tasks take: every Fargate task holds one (awsvpc). */
export async function readFreeAddresses(ec2: EC2Client, subnetIds: string[]): Promise<{ free?: number; error?: string }> {
  try {
    const out = await ec2.send(new DescribeSubnetsCommand({ SubnetIds: subnetIds }));
    return { free: (out.Subnets ?? []).reduce((n, s) => n + (s.AvailableIpAddressCount ?? 0), 0) };
  } catch (err) {
    return { error: (err as Error).name };
  }
}

/**
 * The stack beside what the run expects of it (--arch, --subnets). ECS cannot override a task
 * definition's architecture at RunTask, so another architecture is a problem whose fix is a
 * redeploy; a stack that predates the TaskArch output is x86_64. Subnets of the other kind are only
 * a warning: the stack's are what the tasks use, and the plan prices what the stack says.
 */
export function judgeStack(region: string, stack: { taskArch?: Arch; assignPublicIp: "ENABLED" | "DISABLED" }, expected: StackExpectations): { problems: string[]; warnings: string[] } {
  const problems: string[] = [];
  const warnings: string[] = [];
  const arch = stack.taskArch ?? "x86_64";
  if (expected.arch !== undefined && expected.arch !== arch) {
    problems.push(
      `region ${region}: its stack runs ${arch} tasks${stack.taskArch ? "" : " (deployed before its TaskArch output: x86_64)"}, not ${expected.arch} (--arch), and RunTask cannot change a task definition's architecture; redeploy it with: cd infra && npx cdk deploy -c regions=${region} -c arch=${expected.arch} ${stackNameFor(region)}, or drop --arch to run on ${arch}`,
    );
  }
  const publicIp = stack.assignPublicIp === "ENABLED";
  if (expected.subnets === "private" && publicIp) {
    warnings.push(`region ${region}: --subnets private, but its stack's tasks run in public subnets with a public IP each (AssignPublicIp ENABLED); they use the stack's subnets`);
  } else if (expected.subnets === "public" && !publicIp) {
    warnings.push(`region ${region}: --subnets public, but its stack's tasks run in private subnets without a public IP (AssignPublicIp DISABLED), through a NAT gateway; they use the stack's subnets`);
  }
  return { problems, warnings };
}

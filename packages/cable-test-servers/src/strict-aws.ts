// moto's conscience: the documented request constraints of every AWS call the runner and the tasks
// make, checked before the SDK sends the call. moto accepts what AWS refuses (a ListTasks with two
// filters, a 300-character StopTask reason); with this installed, such a call fails in `npm test`
// with the error AWS would answer. Pure rules (`violations`), and one hook on the SDK's Client.send
// that every client (ECS, S3, SSM, …) goes through, installed in the test process and, through
// NODE_OPTIONS=--require, in every CLI and worker process a test spawns against moto.

export interface Constraint {
  /** `ECSClient.ListTasksCommand`. */
  call: string;
  /** What AWS answers when the rule is broken. */
  error: string;
  rule: string;
  source: string;
  /** The broken rule's detail, or undefined when the input keeps it. */
  check: (input: Record<string, any>) => string | undefined;
}

const API = {
  listTasks: "https://docs.aws.amazon.com/AmazonECS/latest/APIReference/API_ListTasks.html",
  runTask: "https://docs.aws.amazon.com/AmazonECS/latest/APIReference/API_RunTask.html",
  stopTask: "https://docs.aws.amazon.com/AmazonECS/latest/APIReference/API_StopTask.html",
  describeTasks: "https://docs.aws.amazon.com/AmazonECS/latest/APIReference/API_DescribeTasks.html",
  taskOverride: "https://docs.aws.amazon.com/AmazonECS/latest/APIReference/API_TaskOverride.html",
  runtimePlatform: "https://docs.aws.amazon.com/AmazonECS/latest/APIReference/API_RuntimePlatform.html",
  capacityProviderStrategyItem: "https://docs.aws.amazon.com/AmazonECS/latest/APIReference/API_CapacityProviderStrategyItem.html",
  cfnRuntimePlatform: "https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-properties-ecs-taskdefinition-runtimeplatform.html",
  s3Keys: "https://docs.aws.amazon.com/AmazonS3/latest/userguide/object-keys.html",
  s3Metadata: "https://docs.aws.amazon.com/AmazonS3/latest/userguide/UsingMetadata.html",
  getParameter: "https://docs.aws.amazon.com/systems-manager/latest/APIReference/API_GetParameter.html",
  parameterNames: "https://docs.aws.amazon.com/systems-manager/latest/userguide/sysman-paramstore-su-create.html",
  describeParameters: "https://docs.aws.amazon.com/systems-manager/latest/APIReference/API_DescribeParameters.html",
  secretNames: "https://docs.aws.amazon.com/secretsmanager/latest/apireference/API_CreateSecret.html",
  describeSecret: "https://docs.aws.amazon.com/secretsmanager/latest/apireference/API_DescribeSecret.html",
  describeStacks: "https://docs.aws.amazon.com/AWSCloudFormation/latest/APIReference/API_DescribeStacks.html",
  getServiceQuota: "https://docs.aws.amazon.com/servicequotas/2019-06-24/apireference/API_GetServiceQuota.html",
  getDefaultServiceQuota: "https://docs.aws.amazon.com/servicequotas/2019-06-24/apireference/API_GetAWSDefaultServiceQuota.html",
  getMetricData: "https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_GetMetricData.html",
  metricDataQuery: "https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_MetricDataQuery.html",
  describeSubnets: "https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeSubnets.html",
};

const utf8 = (s: string) => Buffer.byteLength(s, "utf8");
const present = (v: unknown) => v !== undefined && v !== null && v !== "";

const bareParameterName = (name: string) => (name.startsWith("arn:") ? name.slice(name.indexOf(":parameter") + ":parameter".length) : name);

/** SSM parameter names: a-zA-Z0-9_.-/, at most 15 levels, at most 1011 characters, not beginning with aws or ssm. */
function parameterName(name: unknown): string | undefined {
  if (typeof name !== "string" || name.length === 0) return "a parameter name is required";
  const bare = bareParameterName(name);
  if (bare.length > 1011) return `the name is ${bare.length} characters (at most 1011)`;
  if (!/^[a-zA-Z0-9_.\-/]+$/.test(bare)) return `"${bare}" has characters other than a-zA-Z0-9_.-/`;
  if (bare.split("/").filter(Boolean).length > 15) return `"${bare}" is more than 15 levels deep`;
  if (/^(aws|ssm)/i.test(bare)) return `"${bare}" begins with aws or ssm, which are reserved`;
  return undefined;
}

const CPU_ARCHITECTURES = ["X86_64", "ARM64"];
const OS_FAMILIES = [
  "LINUX",
  "WINDOWS_SERVER_2016_FULL",
  "WINDOWS_SERVER_2019_FULL",
  "WINDOWS_SERVER_2019_CORE",
  "WINDOWS_SERVER_2004_CORE",
  "WINDOWS_SERVER_20H2_CORE",
  "WINDOWS_SERVER_2022_CORE",
  "WINDOWS_SERVER_2022_FULL",
  "WINDOWS_SERVER_2025_CORE",
  "WINDOWS_SERVER_2025_FULL",
];

/**
 * A task definition's runtime platform (RuntimePlatform: cpuArchitecture X86_64 or ARM64, an
 * operating system family of the list; ARM64 runs Linux tasks only), as RegisterTaskDefinition takes
 * it (camelCase) or a template's AWS::ECS::TaskDefinition (PascalCase).
 */
function runtimePlatform(platform: Record<string, unknown> | undefined, keys: { cpu: string; os: string }): string | undefined {
  if (!platform) return undefined;
  const cpu = platform[keys.cpu];
  const os = platform[keys.os];
  if (cpu !== undefined && !CPU_ARCHITECTURES.includes(String(cpu))) return `${keys.cpu} "${cpu}" (X86_64 or ARM64)`;
  if (os !== undefined && !OS_FAMILIES.includes(String(os))) return `${keys.os} "${os}"`;
  if (cpu === "ARM64" && os !== undefined && os !== "LINUX") return `${keys.cpu} ARM64 with ${keys.os} ${os} (ARM64 runs Linux tasks only)`;
  return undefined;
}

/** The AWS::ECS::TaskDefinition resources of a CreateStack/UpdateStack TemplateBody (JSON; YAML and TemplateURL are not read). */
function templateTaskDefinitions(body: unknown): Array<[string, Record<string, unknown>]> {
  if (typeof body !== "string") return [];
  let template: { Resources?: Record<string, { Type?: string; Properties?: Record<string, unknown> }> };
  try {
    template = JSON.parse(body);
  } catch {
    return [];
  }
  return Object.entries(template.Resources ?? {}).flatMap(([id, r]) => (r?.Type === "AWS::ECS::TaskDefinition" ? [[id, r.Properties ?? {}] as [string, Record<string, unknown>]] : []));
}

/** "1.3.0" → [1, 3, 0]; LATEST and anything else → undefined. */
const platformVersion = (v: unknown): number[] | undefined => (typeof v === "string" && /^\d+\.\d+\.\d+$/.test(v) ? v.split(".").map(Number) : undefined);
const before = (v: number[], [a, b, c]: number[]) => v[0] < a || (v[0] === a && (v[1] < b || (v[1] === b && v[2] < c)));

export const CONSTRAINTS: Constraint[] = [
  {
    call: "ECSClient.RegisterTaskDefinitionCommand",
    error: "ClientException",
    rule: "runtimePlatform: cpuArchitecture is X86_64 or ARM64, operatingSystemFamily LINUX or a listed Windows Server; ARM64 runs Linux tasks only",
    source: API.runtimePlatform,
    check: (i) => runtimePlatform(i.runtimePlatform, { cpu: "cpuArchitecture", os: "operatingSystemFamily" }),
  },
  ...["CreateStackCommand", "UpdateStackCommand"].map(
    (command): Constraint => ({
      call: `CloudFormationClient.${command}`,
      // CloudFormation takes the call and then fails the resource (CREATE_FAILED, ECS's ClientException);
      // the double refuses the call instead, so that a test sees the template's fault at once.
      error: "ValidationError",
      rule: "an AWS::ECS::TaskDefinition's RuntimePlatform: CpuArchitecture X86_64 or ARM64, OperatingSystemFamily LINUX or a listed Windows Server; ARM64 runs Linux tasks only",
      source: API.cfnRuntimePlatform,
      check: (i) => {
        for (const [id, properties] of templateTaskDefinitions(i.TemplateBody)) {
          const bad = runtimePlatform(properties.RuntimePlatform as Record<string, unknown> | undefined, { cpu: "CpuArchitecture", os: "OperatingSystemFamily" });
          if (bad) return `${id}: ${bad}`;
        }
        return undefined;
      },
    }),
  ),
  {
    call: "ECSClient.RunTaskCommand",
    error: "InvalidParameterException",
    // The task definition's architecture is not in RunTask's input: the stricter ARM64 bound (1.4.0)
    // cannot be told from it, and the runner gives no platformVersion (LATEST, 1.4.0) anyway.
    rule: "FARGATE_SPOT runs Linux tasks on platform version 1.3.0 or later (X86_64; ARM64 1.4.0 or later)",
    source: API.capacityProviderStrategyItem,
    check: (i) => {
      const spot = ((i.capacityProviderStrategy ?? []) as Array<{ capacityProvider?: string }>).some((p) => p.capacityProvider === "FARGATE_SPOT");
      const version = platformVersion(i.platformVersion);
      return spot && version && before(version, [1, 3, 0]) ? `FARGATE_SPOT with platformVersion ${i.platformVersion}` : undefined;
    },
  },
  {
    call: "ECSClient.ListTasksCommand",
    error: "InvalidParameterException",
    // AWS answers "cannot specify startedBy with other arguments" (seen with family, launchType and
    // serviceName; the reference says "it must be the only filter that you use").
    rule: "startedBy must be the only filter: not with desiredStatus, family, serviceName, containerInstance or launchType",
    source: API.listTasks,
    check: (i) => {
      const others = ["desiredStatus", "family", "serviceName", "containerInstance", "launchType"].filter((k) => present(i[k]));
      return present(i.startedBy) && others.length > 0 ? `startedBy given with ${others.join(", ")}` : undefined;
    },
  },
  {
    call: "ECSClient.ListTasksCommand",
    error: "InvalidParameterException",
    rule: "maxResults is 1–100",
    source: API.listTasks,
    check: (i) => (i.maxResults !== undefined && (i.maxResults < 1 || i.maxResults > 100) ? `maxResults ${i.maxResults}` : undefined),
  },
  {
    call: "ECSClient.RunTaskCommand",
    error: "InvalidParameterException",
    rule: "count is 1–10 per call",
    source: API.runTask,
    check: (i) => (i.count !== undefined && (i.count < 1 || i.count > 10) ? `count ${i.count}` : undefined),
  },
  {
    call: "ECSClient.RunTaskCommand",
    error: "InvalidParameterException",
    // Today's RunTask reference allows 128; StartTask's and RunTask's older one 36 ("startedBy longer
    // than 36." was AWS's answer): the stricter holds everywhere, and a run id is 22.
    rule: "startedBy is at most 36 letters, digits, hyphens, slashes and underscores",
    source: API.runTask,
    check: (i) => (present(i.startedBy) && !/^[a-zA-Z0-9_/-]{1,36}$/.test(i.startedBy) ? `startedBy "${i.startedBy}"` : undefined),
  },
  {
    call: "ECSClient.RunTaskCommand",
    error: "InvalidParameterException",
    rule: "launchType and capacityProviderStrategy are exclusive",
    source: API.runTask,
    check: (i) => (present(i.launchType) && Array.isArray(i.capacityProviderStrategy) && i.capacityProviderStrategy.length > 0 ? "both launchType and capacityProviderStrategy" : undefined),
  },
  {
    call: "ECSClient.RunTaskCommand",
    error: "InvalidParameterException",
    rule: "the overrides are at most 8192 characters, JSON formatting included (\"Container Overrides length must be at most 8192\")",
    source: API.taskOverride,
    check: (i) => {
      const size = i.overrides === undefined ? 0 : JSON.stringify(i.overrides).length;
      return size > 8192 ? `overrides of ${size} characters` : undefined;
    },
  },
  {
    call: "ECSClient.StopTaskCommand",
    error: "InvalidParameterException",
    // From the reference's older revisions (today's page drops it); the runner cuts its reasons to it.
    rule: "reason is at most 255 characters",
    source: API.stopTask,
    check: (i) => (typeof i.reason === "string" && i.reason.length > 255 ? `a reason of ${i.reason.length} characters` : undefined),
  },
  {
    call: "ECSClient.DescribeTasksCommand",
    error: "InvalidParameterException",
    rule: "at most 100 tasks per call",
    source: API.describeTasks,
    check: (i) => (Array.isArray(i.tasks) && i.tasks.length > 100 ? `${i.tasks.length} tasks` : undefined),
  },
  ...["PutObjectCommand", "GetObjectCommand"].map(
    (command): Constraint => ({
      call: `S3Client.${command}`,
      error: "KeyTooLongError",
      rule: "an object key is at most 1,024 bytes of UTF-8",
      source: API.s3Keys,
      check: (i) => (typeof i.Key === "string" && utf8(i.Key) > 1024 ? `a key of ${utf8(i.Key)} bytes` : undefined),
    }),
  ),
  {
    call: "S3Client.PutObjectCommand",
    error: "MetadataTooLarge",
    rule: "user-defined metadata is at most 2 KB (names and values, UTF-8)",
    source: API.s3Metadata,
    check: (i) => {
      const size = Object.entries((i.Metadata ?? {}) as Record<string, string>).reduce((n, [k, v]) => n + utf8(k) + utf8(String(v)), 0);
      return size > 2048 ? `${size} bytes of metadata` : undefined;
    },
  },
  {
    call: "SSMClient.GetParameterCommand",
    error: "ValidationException",
    rule: "a parameter name: a-zA-Z0-9_.-/, at most 15 levels, not beginning with aws or ssm",
    source: API.parameterNames,
    check: (i) => parameterName(i.Name),
  },
  {
    call: "SSMClient.GetParameterCommand",
    error: "AccessDeniedException",
    rule: "names under /aws/ are AWS's own (\"No access to reserved parameter name\")",
    source: API.parameterNames,
    check: (i) => (typeof i.Name === "string" && /^\/aws\//i.test(bareParameterName(i.Name)) ? `"${i.Name}" is under /aws/` : undefined),
  },
  {
    call: "SSMClient.DescribeParametersCommand",
    error: "ValidationException",
    rule: "MaxResults is 1–50; ParameterFilters Key Name takes Option Equals or BeginsWith, 1–50 values",
    source: API.describeParameters,
    check: (i) => {
      if (i.MaxResults !== undefined && (i.MaxResults < 1 || i.MaxResults > 50)) return `MaxResults ${i.MaxResults}`;
      for (const f of (i.ParameterFilters ?? []) as Array<{ Key: string; Option?: string; Values?: string[] }>) {
        if (f.Key === "Name" && f.Option !== undefined && !["Equals", "BeginsWith"].includes(f.Option)) return `filter Name with Option ${f.Option}`;
        if (f.Values !== undefined && (f.Values.length < 1 || f.Values.length > 50)) return `a filter with ${f.Values.length} values`;
      }
      return undefined;
    },
  },
  ...["DescribeSecretCommand", "GetSecretValueCommand"].map(
    (command): Constraint => ({
      call: `SecretsManagerClient.${command}`,
      error: "ValidationException",
      rule: "SecretId is a name or ARN of at most 2,048 characters; a name is at most 512 of a-zA-Z0-9/_+=.@-",
      source: API.describeSecret,
      check: (i) => {
        const id = String(i.SecretId ?? "");
        if (id.length < 1 || id.length > 2048) return `a SecretId of ${id.length} characters`;
        if (!id.startsWith("arn:") && (id.length > 512 || !/^[a-zA-Z0-9/_+=.@-]+$/.test(id))) return `"${id}" is not a secret name`;
        return undefined;
      },
    }),
  ),
  {
    call: "CloudFormationClient.DescribeStacksCommand",
    error: "ValidationError",
    rule: "StackName is a name (a letter, then letters, digits and hyphens, at most 128) or a stack id",
    source: API.describeStacks,
    check: (i) => (present(i.StackName) && !String(i.StackName).startsWith("arn:") && !/^[a-zA-Z][-a-zA-Z0-9]{0,127}$/.test(i.StackName) ? `StackName "${i.StackName}"` : undefined),
  },
  ...([
    ["GetServiceQuotaCommand", API.getServiceQuota],
    ["GetAWSDefaultServiceQuotaCommand", API.getDefaultServiceQuota],
  ] as const).map(
    ([command, source]): Constraint => ({
      call: `ServiceQuotasClient.${command}`,
      error: "ValidationException",
      rule: "ServiceCode and QuotaCode match the documented patterns",
      source,
      check: (i) => {
        if (!/^[a-zA-Z][a-zA-Z0-9-]{1,63}$/.test(String(i.ServiceCode))) return `ServiceCode "${i.ServiceCode}"`;
        if (!/^[a-zA-Z][a-zA-Z0-9-]{1,128}$/.test(String(i.QuotaCode))) return `QuotaCode "${i.QuotaCode}"`;
        return undefined;
      },
    }),
  ),
  {
    call: "CloudWatchClient.GetMetricDataCommand",
    error: "ValidationError",
    rule: "1–500 queries, each Id a lowercase letter then letters, digits and underscores; StartTime before EndTime",
    source: API.getMetricData,
    check: (i) => {
      const queries = (i.MetricDataQueries ?? []) as Array<{ Id?: string }>;
      if (queries.length < 1 || queries.length > 500) return `${queries.length} queries`;
      const bad = queries.find((q) => !/^[a-z][a-zA-Z0-9_]{0,254}$/.test(String(q.Id)));
      if (bad) return `query Id "${bad.Id}"`;
      if (!(i.StartTime instanceof Date) || !(i.EndTime instanceof Date) || i.StartTime >= i.EndTime) return "StartTime is not before EndTime";
      return undefined;
    },
  },
  {
    call: "CloudWatchClient.GetMetricDataCommand",
    error: "ValidationError",
    rule: "a query has exactly one of MetricStat and Expression; a MetricStat's Period is at least 1 s, a multiple of 60 from 60 s on, and it has a Stat",
    source: API.metricDataQuery,
    check: (i) => {
      for (const q of (i.MetricDataQueries ?? []) as Array<{ Id?: string; MetricStat?: { Period?: number; Stat?: string }; Expression?: string }>) {
        if (Boolean(q.MetricStat) === Boolean(q.Expression)) return `query ${q.Id} has ${q.MetricStat ? "both" : "neither"} MetricStat and Expression`;
        const period = q.MetricStat?.Period;
        if (q.MetricStat && (period === undefined || period < 1 || (period >= 60 && period % 60 !== 0))) return `query ${q.Id} has Period ${period}`;
        if (q.MetricStat && !q.MetricStat.Stat) return `query ${q.Id} has no Stat`;
      }
      return undefined;
    },
  },
  {
    call: "EC2Client.DescribeSubnetsCommand",
    error: "InvalidParameterValue",
    rule: "MaxResults is 5–1000; SubnetIds are subnet ids",
    source: API.describeSubnets,
    check: (i) => {
      if (i.MaxResults !== undefined && (i.MaxResults < 5 || i.MaxResults > 1000)) return `MaxResults ${i.MaxResults}`;
      const bad = ((i.SubnetIds ?? []) as string[]).find((id) => !/^subnet-[0-9a-f]{8,17}$/.test(id));
      return bad === undefined ? undefined : `SubnetIds has "${bad}"`;
    },
  },
];

export interface Violation {
  constraint: Constraint;
  detail: string;
}

/** Pure: what AWS would refuse in this call. */
export function violations(client: string, command: string, input: Record<string, any>): Violation[] {
  const call = `${client}.${command}`;
  return CONSTRAINTS.filter((c) => c.call === call).flatMap((constraint) => {
    const detail = constraint.check(input ?? {});
    return detail === undefined ? [] : [{ constraint, detail }];
  });
}

/** The error the SDK would throw for AWS's 400 answer. */
export class StrictAwsError extends Error {
  readonly $fault = "client";
  readonly $metadata = { httpStatusCode: 400 };
  constructor(readonly violation: Violation, call: string) {
    super(`${call}: ${violation.detail} (strict AWS double: ${violation.constraint.rule}; ${violation.constraint.source})`);
    this.name = violation.constraint.error;
  }
}

const PATCHED = Symbol.for("cable.strictAws");

/**
 * Hooks Client.send of the SDK's copy of @smithy/core (resolved from `from`, default this process's
 * working directory and this package): a call that breaks a rule rejects before anything is sent.
 * Idempotent. Returns false where no SDK can be found from there.
 */
export function installStrictAws(from: string[] = [process.cwd(), __dirname]): boolean {
  let mod: { Client?: { prototype: Record<string | symbol, any> } };
  try {
    mod = require(require.resolve("@smithy/core/client", { paths: from }));
  } catch {
    return false;
  }
  const proto = mod.Client?.prototype;
  if (!proto || proto[PATCHED]) return Boolean(proto);
  const send = proto.send as (...args: any[]) => any;
  proto.send = function strictSend(this: { constructor: { name: string } }, command: { constructor: { name: string }; input: Record<string, any> }, ...rest: any[]) {
    const client = this.constructor.name;
    const found = violations(client, command.constructor.name, command.input);
    if (found.length > 0) {
      const error = new StrictAwsError(found[0], `${client}.${command.constructor.name}`);
      const callback = rest.find((r) => typeof r === "function");
      if (callback) return void callback(error);
      return Promise.reject(error);
    }
    return send.call(this, command, ...rest);
  };
  proto[PATCHED] = true;
  return true;
}

/** NODE_OPTIONS that make every process spawned with them strict (keeps whatever options were there). */
export function strictAwsNodeOptions(existing = process.env.NODE_OPTIONS ?? ""): string {
  // The built file (a spawned `node` runs JavaScript), also when this module runs from its TypeScript source.
  const preload = require.resolve("cable-test-servers/dist/strict-aws-preload.js");
  return existing.includes(preload) ? existing : `${existing} --require=${preload}`.trim();
}

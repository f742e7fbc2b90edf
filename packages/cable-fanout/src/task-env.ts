// What a task's environment holds, and what the scenario reads from it. `--env NAME` (this shell's
// value) and `--env NAME=value` give every task a plain, non-secret variable (RunTask's container
// overrides on Fargate, the worker's environment with --local); `--secret` gives secrets, by
// reference. Before any task starts, every `{{ $env.X }}` and `{{ $processEnvironment.X }}` the
// scenario templates (config after -e and --overrides, the flows, before and after) must name a
// variable some task will have: on Fargate nothing else reaches a task, so a scenario that works
// with --local because its workers inherit this shell is refused alike (docs/fanout.md).
import { readFileSync } from "node:fs";
import path from "node:path";
import { SECRETS_PATH } from "cable-infra/contract";
import { FanoutInputError } from "./errors.js";
import { mergeLikeArtillery } from "./payloads.js";
import type { BackendKind } from "./region-names.js";
import type { Scenario } from "./scenario.js";

type Json = Record<string, unknown>;
const isRecord = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value);

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * What every task has without being given it: the worker's own variables (CABLE_RUN_ID, CABLE_REGION,
 * CABLE_TASK_ID, CABLE_STORE: set on Fargate by the task definition and RunTask, locally by the
 * backend), the region (AWS_REGION from the task definition, AWS_DEFAULT_REGION from ECS), and what
 * the image sets (infra/docker/Dockerfile: NODE_ENV, ARTILLERY_DISABLE_TELEMETRY; HOME, PATH and
 * HOSTNAME from the base image and the container).
 */
export const TASK_RUNTIME_ENV: readonly string[] = [
  "CABLE_RUN_ID",
  "CABLE_REGION",
  "CABLE_TASK_ID",
  "CABLE_STORE",
  "AWS_REGION",
  "AWS_DEFAULT_REGION",
  "NODE_ENV",
  "ARTILLERY_DISABLE_TELEMETRY",
  "HOME",
  "PATH",
  "HOSTNAME",
];

/** Names --env may not set: the worker's contract (CABLE_*), and the task's AWS settings, which come from its role and region. */
function reservedProblem(name: string): string | undefined {
  if (name.startsWith("CABLE_")) return `names beginning with CABLE_ are the task runtime's own (the worker reads its run, region and store from them)`;
  if (name.startsWith("AWS_") || name.startsWith("ECS_")) return `the task's AWS settings (credentials, region, metadata) come from its task role and region, not from --env`;
  return undefined;
}

/**
 * `--env NAME` passes this shell's $NAME, `--env NAME=value` the value given; repeatable. Plain
 * values, not secrets (--secret is for those): they travel in RunTask's overrides and may be seen
 * there, so only their names are ever printed.
 */
export function parseTaskEnv(specs: readonly string[], env: NodeJS.ProcessEnv): Record<string, string> {
  const values: Record<string, string> = {};
  for (const spec of specs) {
    const eq = spec.indexOf("=");
    const name = eq === -1 ? spec : spec.slice(0, eq);
    // The value is never echoed: one from NAME=value may still be something its owner would rather not see in a CI log.
    const shown = eq === -1 ? name : `${name}=…`;
    if (!ENV_NAME.test(name)) throw new FanoutInputError(`--env ${eq === -1 ? spec : shown}: "${name}" is not an environment variable name`);
    const reserved = reservedProblem(name);
    if (reserved) throw new FanoutInputError(`--env ${shown}: ${reserved}`);
    if (Object.hasOwn(values, name)) throw new FanoutInputError(`--env ${name} is given twice`);
    if (eq === -1) {
      const value = env[name];
      if (value === undefined) throw new FanoutInputError(`--env ${name}: $${name} is not set in this shell; export it first, or give the value: --env ${name}=<value>`);
      values[name] = value;
    } else {
      values[name] = spec.slice(eq + 1);
    }
  }
  return values;
}

/** A variable is a plain value (--env) or a secret (--secret), never both: which one a task would get is no guess to leave. */
export function refuseEnvAndSecret(taskEnv: Record<string, string>, secretNames: readonly string[]): void {
  const both = secretNames.filter((name) => Object.hasOwn(taskEnv, name));
  if (both.length > 0) {
    throw new FanoutInputError(`${both.map((n) => `--env ${n} and --secret ${n}`).join(", ")}: give a variable one way: --secret when it is a secret (resolved in each task, redacted from every output), --env when it is not`);
  }
}

/** One read of the task's environment: which variable, as the scenario writes it, and where. */
export interface EnvRead {
  name: string;
  /** `{{ $env.X }}`, `{{ $processEnvironment.X }}`, or `process.env.X` in a processor. */
  as: string;
  /** `config.engines.cable.pusher.key`, `scenarios[0].flow[2].connect.headers.X-Token`, `processors/auth.js`. */
  where: string;
}

/** One `{{ … }}` (or Artillery's `{{{ … }}}`), as the engine's template.ts and Artillery match them. */
const TOKEN = /\{\{\{?([^{}]*)\}\}\}?/g;
/** `$env.NAME`, `$env['NAME']`, `$processEnvironment.NAME` inside a template. */
const TEMPLATE_READ = /(?<![\w$])\$(env|processEnvironment)\s*(?:\.\s*([A-Za-z_][A-Za-z0-9_]*)|\[\s*(['"])([^'"\]]+)\3\s*\])/g;

/** Every variable the templates in `value` (any depth, keys too) read, with its path from `where`. */
export function templateEnvReads(value: unknown, where: string): EnvRead[] {
  const reads: EnvRead[] = [];
  const walk = (v: unknown, at: string) => {
    if (typeof v === "string") {
      for (const token of v.matchAll(TOKEN)) {
        for (const m of token[1].matchAll(TEMPLATE_READ)) {
          const name = m[2] ?? m[4];
          reads.push({ name, as: `{{ $${m[1]}.${name} }}`, where: at });
        }
      }
    } else if (Array.isArray(v)) {
      v.forEach((item, i) => walk(item, `${at}[${i}]`));
    } else if (isRecord(v)) {
      for (const [key, item] of Object.entries(v)) {
        const child = /^[A-Za-z_$][\w$-]*$/.test(key) ? `${at}.${key}` : `${at}[${JSON.stringify(key)}]`;
        walk(key, child);
        walk(item, child);
      }
    }
  };
  walk(value, where);
  return reads;
}

/** `process.env.X`, `process.env["X"]` and `const { X, Y } = process.env` in a processor's source. */
export function processorEnvReads(source: string, where: string): EnvRead[] {
  const reads: EnvRead[] = [];
  for (const m of source.matchAll(/\bprocess\.env\s*(?:\.\s*([A-Za-z_][A-Za-z0-9_]*)|\[\s*(['"`])([A-Za-z_][A-Za-z0-9_]*)\2\s*\])/g)) {
    const name = m[1] ?? m[3];
    reads.push({ name, as: `process.env.${name}`, where });
  }
  for (const m of source.matchAll(/\{([^{}]*)\}\s*=\s*process\.env\b/g)) {
    for (const part of m[1].split(",")) {
      const name = /^\s*([A-Za-z_][A-Za-z0-9_]*)/.exec(part)?.[1];
      if (name) reads.push({ name, as: `process.env.${name}`, where });
    }
  }
  return reads;
}

/** How Artillery applies --overrides to the script: maps merged key by key, a list replaces a list (lodash mergeWith). */
function mergeOverrides(base: unknown, over: unknown): unknown {
  if (over === undefined) return base;
  if (!isRecord(over) || !isRecord(base)) return over;
  const merged: Json = { ...base };
  for (const [key, value] of Object.entries(over)) merged[key] = mergeOverrides(base[key], value);
  return merged;
}

/**
 * The script as each task's Artillery will template it: the config with `-e`'s environment merged
 * in (lodash merge, as Artillery does), then --overrides (with --target, -v and -k); its flows,
 * before and after, as --overrides leave them. Other environments are not read.
 */
export function templatedScript(scenario: Pick<Scenario, "config" | "scenarios" | "hooks">, overrides: Json | undefined, environment: string | undefined): Json {
  const { environments, ...config } = scenario.config;
  const env = environment !== undefined && isRecord(environments) ? environments[environment] : undefined;
  const withEnv = isRecord(env) ? (mergeLikeArtillery(config, env) as Json) : config;
  const script: Json = { config: withEnv, scenarios: scenario.scenarios, ...scenario.hooks };
  const merged = mergeOverrides(script, overrides) as Json;
  if (isRecord(merged.config)) delete merged.config.environments;
  return merged;
}

export interface TaskEnvCheck {
  /** Names every task gets: --env, --secret and the task runtime's own. */
  given: { env: string[]; secrets: string[] };
  /** Template reads of a variable no task will have: the run is refused. */
  missing: EnvRead[];
  /** A processor's reads of a variable no task will have: said, not refused (a processor may read one optionally). */
  processorMissing: EnvRead[];
}

export interface TaskEnvInput {
  /** --env, names and values (the values are not read here). */
  taskEnv?: Record<string, string>;
  secretRefs?: Record<string, string>;
  secretValues?: Record<string, string>;
}

/** What the scenario reads from the tasks' environment that no task will have. */
export function checkTaskEnv(
  scenario: Pick<Scenario, "config" | "scenarios" | "hooks"> & Partial<Pick<Scenario, "file">>,
  overrides: Json | undefined,
  environment: string | undefined,
  given: TaskEnvInput,
): TaskEnvCheck {
  const env = Object.keys(given.taskEnv ?? {}).sort();
  const secrets = [...new Set([...Object.keys(given.secretRefs ?? {}), ...Object.keys(given.secretValues ?? {})])].sort();
  const has = new Set([...env, ...secrets, ...TASK_RUNTIME_ENV]);
  const script = templatedScript(scenario, overrides, environment);
  const reads = (["config", "before", "scenarios", "after"] as const).flatMap((section) => (script[section] === undefined ? [] : templateEnvReads(script[section], section)));
  const processorReads: EnvRead[] = [];
  const processor = isRecord(script.config) ? script.config.processor : undefined;
  if (scenario.file && typeof processor === "string" && processor.length > 0 && !processor.includes("{{")) {
    const file = path.resolve(path.dirname(scenario.file), processor);
    try {
      processorReads.push(...processorEnvReads(readFileSync(file, "utf8"), path.relative(process.cwd(), file)));
    } catch {
      // loadScenario has said what is wrong with the processor's path.
    }
  }
  // Each variable once, where it is first read.
  const firstOf = (list: EnvRead[]) => {
    const first = new Map<string, EnvRead>();
    for (const r of list) if (!has.has(r.name) && !first.has(r.name)) first.set(r.name, r);
    return [...first.values()];
  };
  const missing = firstOf(reads);
  const processorMissing = firstOf(processorReads).filter((r) => !missing.some((m) => m.name === r.name));
  return { given: { env, secrets }, missing, processorMissing };
}

/** The remedy for a missing variable: --env, or --secret in the backend's own form. */
function remedy(name: string, kind: BackendKind): string {
  const secret = kind === "aws" ? `--secret ${name}=ssm:/${SECRETS_PATH}/${name.toLowerCase()}` : `--secret ${name}`;
  return `--env ${name} (this shell's value) or --env ${name}=<value>; ${secret} if it is a secret`;
}

/** The refusal for `check.missing`, one line per variable; undefined when nothing is missing. */
export function missingEnvProblem(check: TaskEnvCheck, kind: BackendKind): string | undefined {
  if (check.missing.length === 0) return undefined;
  const lines = check.missing.map((r) => `  ${r.name}: ${r.as} in ${r.where}; give it with ${remedy(r.name, kind)}`);
  const local = kind === "local" ? "\n(--local workers would inherit this shell, but Fargate tasks have only what they are given: the fan-out refuses both alike, so a run that passes here passes there)" : "";
  return `the scenario reads ${check.missing.length === 1 ? "a variable" : `${check.missing.length} variables`} no task will have:\n${lines.join("\n")}${local}`;
}

/** The plan's lines about the tasks' environment: what they get (names only), and what a processor reads that they do not get. */
export function taskEnvLines(check: TaskEnvCheck): string[] {
  const lines: string[] = [];
  const parts = [...(check.given.env.length > 0 ? [`${check.given.env.join(", ")} (--env; values not shown)`] : []), ...(check.given.secrets.length > 0 ? [`${check.given.secrets.join(", ")} (--secret)`] : [])];
  if (parts.length > 0) lines.push(`  environment: every task gets ${parts.join(" and ")}`);
  for (const r of check.processorMissing) lines.push(`  warning: ${r.where} reads ${r.as}, which no task is given (--env ${r.name} gives it; --local workers inherit it from this shell, Fargate tasks do not)`);
  return lines;
}

// What the fan-out needs to know about an Artillery script: the files it reads (to bundle them, each
// checked against the bundle root) and how long its phases last (for progress and the default
// --max-duration). Nothing is rewritten.
import { existsSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { parse as parseYaml } from "yaml";
import { verdictCheckProblems } from "artillery-plugin-cable-report";
import { type BundleRoot, checkBundled, findBundleRoot } from "./run/bundle-root.js";
import { FanoutInputError } from "./errors.js";

export interface Scenario {
  /** Absolute path of the script. */
  file: string;
  /** Absolute paths of the other files it reads: `config.processor`, `config.payload[].path`, `config.includeFiles`, `config.tls` files. */
  dependencies: string[];
  /** The folder every one of them lies in (bundle-root.ts). */
  root: BundleRoot;
  /** The phases after `--overrides`; `undefined` when some duration is not a plain number or unit string. */
  durationMs: number | undefined;
  /**
   * The most phases a task may run (after `--overrides`, in any environment): the live feed reads a
   * task's phases until that many have started. Undefined without a phase list.
   */
  phaseCount: number | undefined;
  /** The script's `config` section as written (payloads.ts reads its payloads). */
  config: Record<string, unknown>;
  /** The script's `scenarios` (the plan reads how long a user stays and whether it sends). */
  scenarios: unknown[];
  /** The script's `before` and `after` sections, where present (task-env.ts reads what they template). */
  hooks?: { before?: unknown; after?: unknown };
}

type Json = Record<string, unknown>;
const isRecord = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value);

/** `bundleRoot`: --bundle-root, the folder the scenario's files must lie in (default: its project's, bundle-root.ts). */
export function loadScenario(file: string, overrides?: Json, bundleRoot?: string): Scenario {
  const absolute = path.resolve(file);
  if (!existsSync(absolute) || !statSync(absolute).isFile()) throw new FanoutInputError(`${file}: scenario file not found`);
  const root = findBundleRoot(absolute, bundleRoot);
  checkBundled(root, absolute, `${file}: the scenario`);
  let script: unknown;
  try {
    script = parseYaml(readFileSync(absolute, "utf8"));
  } catch (err) {
    throw new FanoutInputError(`${file}: not valid YAML or JSON: ${(err as Error).message}`);
  }
  if (!isRecord(script) || !isRecord(script.config)) throw new FanoutInputError(`${file}: has no config section (not an Artillery script)`);
  const config = script.config;
  refuseFileOverrides(file, overrides);
  const dir = path.dirname(absolute);
  // cable-report's own ensure conditions are judged after the merge: a typo must stop the run before any task starts.
  const pluginOptions = (section: unknown) => (isRecord(section) && isRecord(section.plugins) ? section.plugins["cable-report"] : undefined);
  const problems = [...verdictCheckProblems(pluginOptions(config)), ...verdictCheckProblems(pluginOptions(isRecord(overrides?.config) ? overrides.config : undefined))];
  if (problems.length > 0) throw new FanoutInputError(`${file}: ${problems.join("; ")}`);

  const referenced: Array<{ field: string; value: unknown }> = [];
  const collect = (section: Json, prefix: string) => {
    if (section.processor !== undefined) referenced.push({ field: `${prefix}.processor`, value: section.processor });
    const payloads = Array.isArray(section.payload) ? section.payload : section.payload === undefined ? [] : [section.payload];
    payloads.forEach((p, i) => referenced.push({ field: `${prefix}.payload${Array.isArray(section.payload) ? `[${i}]` : ""}.path`, value: isRecord(p) ? p.path : undefined }));
    // config.tls's CA, client certificate and key, where they name files rather than hold PEM text.
    const tls = section.tls;
    if (isRecord(tls)) {
      for (const field of ["ca", "cert", "key"] as const) {
        const values = ([] as unknown[]).concat(tls[field] ?? []);
        values.forEach((value, i) => {
          if (typeof value !== "string" || !value.includes("-----BEGIN ")) referenced.push({ field: `${prefix}.tls.${field}${Array.isArray(tls[field]) ? `[${i}]` : ""}`, value });
        });
      }
    }
    const includes = section.includeFiles;
    if (includes !== undefined) {
      if (!Array.isArray(includes)) throw new FanoutInputError(`${file}: ${prefix}.includeFiles must be a list of paths`);
      includes.forEach((value, i) => referenced.push({ field: `${prefix}.includeFiles[${i}]`, value }));
    }
  };
  collect(config, "config");
  if (isRecord(config.environments)) {
    for (const [name, env] of Object.entries(config.environments)) if (isRecord(env)) collect(env, `config.environments.${name}`);
  }

  const dependencies = referenced.map(({ field, value }) => {
    if (typeof value !== "string" || value.length === 0) throw new FanoutInputError(`${file}: ${field} must be a file path`);
    if (value.includes("{{")) throw new FanoutInputError(`${file}: ${field} is templated ("${value}"); the fan-out bundles files by their literal path`);
    const resolved = path.resolve(dir, value);
    if (!existsSync(resolved) || !statSync(resolved).isFile()) throw new FanoutInputError(`${file}: ${field} names ${value}, which is not a file (looked at ${resolved})`);
    checkBundled(root, resolved, `${file}: ${field} names ${value}`);
    return resolved;
  });

  const overridden = isRecord(overrides?.config) && Array.isArray(overrides.config.phases) ? overrides.config.phases : config.phases;
  const phaseLists = [overridden, ...(isRecord(config.environments) ? Object.values(config.environments).map((env) => (isRecord(env) ? env.phases : undefined)) : [])].filter(Array.isArray);
  const phaseCount = phaseLists.length > 0 ? Math.max(...phaseLists.map((phases) => phases.length)) : undefined;
  const hooks = { ...(script.before !== undefined ? { before: script.before } : {}), ...(script.after !== undefined ? { after: script.after } : {}) };
  return {
    file: absolute,
    dependencies: [...new Set(dependencies)],
    root,
    durationMs: phasesDurationMs(overridden),
    phaseCount,
    config,
    scenarios: Array.isArray(script.scenarios) ? script.scenarios : [],
    ...(Object.keys(hooks).length > 0 ? { hooks } : {}),
  };
}

/**
 * `--overrides` that name files or environments, refused: Artillery (2.0.34, lib/util/
 * prepare-test-execution-plan.ts) merges `-e`'s environment and resolves the payload paths against
 * the script's folder before it applies --overrides, so in `artillery run` a `config.payload` map
 * there is ignored, a list is read relative to the working directory instead, and
 * `config.environments` changes nothing; and the fan-out bundles the files the script itself names,
 * so a processor or file named only in --overrides would reach no task. Never silently ignored.
 */
function refuseFileOverrides(file: string, overrides: Json | undefined): void {
  const over = isRecord(overrides?.config) ? overrides.config : undefined;
  if (!over) return;
  const instead = `write it into ${file} itself, or into a config.environments.<name> section there and choose it with -e <name> (the fan-out bundles and slices the files an environment names)`;
  if (over.payload !== undefined) {
    throw new FanoutInputError(
      `--overrides sets config.payload, which Artillery does not apply as given: it reads payload paths before it applies --overrides (a payload map there is ignored, a list is read from the working directory, not the scenario's folder), and no task would have the file; ${instead}`,
    );
  }
  if (over.environments !== undefined) {
    throw new FanoutInputError(`--overrides sets config.environments, which Artillery merges before it applies --overrides, so it would change nothing; put the change into --overrides' config directly (it applies whatever environment -e picks)`);
  }
  for (const field of ["processor", "includeFiles"] as const) {
    if (over[field] !== undefined) throw new FanoutInputError(`--overrides sets config.${field}: the fan-out bundles the files the scenario itself names, so no task would have it; ${instead}`);
  }
}

/** The config a task's Artillery runs with: the script's, then `-e`'s environment, then --overrides' (Artillery's order). */
export function effectiveConfig(scenario: Pick<Scenario, "config">, overrides?: Json, environment?: string): Json {
  const env = environment && isRecord(scenario.config.environments) ? scenario.config.environments[environment] : undefined;
  const over = isRecord(overrides?.config) ? overrides.config : {};
  const merged: Json = { ...scenario.config, ...(isRecord(env) ? env : {}), ...over };
  const variables = { ...(isRecord(scenario.config.variables) ? scenario.config.variables : {}), ...(isRecord(env) && isRecord(env.variables) ? env.variables : {}), ...(isRecord(over.variables) ? over.variables : {}) };
  return { ...merged, variables };
}

/** Sum of the phases' `duration` and `pause`; undefined if any is not a number or a unit string. */
export function phasesDurationMs(phases: unknown): number | undefined {
  if (!Array.isArray(phases)) return undefined;
  let total = 0;
  for (const phase of phases) {
    if (!isRecord(phase)) return undefined;
    const value = phase.duration ?? phase.pause;
    const ms = durationToMs(value);
    if (ms === undefined) return undefined;
    total += ms;
  }
  return total;
}

const UNITS: Record<string, number> = { ms: 1, s: 1_000, sec: 1_000, second: 1_000, seconds: 1_000, m: 60_000, min: 60_000, minute: 60_000, minutes: 60_000, h: 3_600_000, hour: 3_600_000, hours: 3_600_000 };

/** Artillery reads a bare number as seconds; strings may carry a unit ("90s", "2m", "1h"). */
export function durationToMs(value: unknown): number | undefined {
  if (typeof value === "number" && Number.isFinite(value) && value >= 0) return value * 1_000;
  if (typeof value !== "string") return undefined;
  const match = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(value);
  if (!match) return undefined;
  const unit = match[2].toLowerCase() || "s";
  return UNITS[unit] === undefined ? undefined : Number(match[1]) * UNITS[unit];
}

import { readFileSync } from "node:fs";
import { readTls } from "./tls.js";
import { isMainThread } from "node:worker_threads";
import { z } from "zod";
import { closest } from "./did-you-mean.js";
import { ScenarioError } from "./errors.js";
import { JUDGED_BY_RUNNER_ENV } from "./failed-users.js";
import { configSchema, parseConfig, type CableConfig } from "./config.js";
import { cableSection } from "./per-user-config.js";
import { stepSchemas, validateScript } from "./schema.js";
import type { Script } from "./script.js";

// Checks a script before any load starts and stops the run cleanly when it is wrong.
//
// Where: Artillery 2.0.34 imports an engine only where VUs run: in each worker thread (runner.ts
// loadEngines, from platform/local/worker.ts `prepare`), and in the main thread only to run a
// `before`/`after` hook. It has no main-thread hook an engine could register, and what it does with
// a failing engine is wrong for a scenario mistake:
//   - a constructor that throws is caught by loadEngines, printed with its stack as "engine cable
//     specified but module artillery-engine-cable could not be loaded", and the phase starts anyway
//     (every VU then throws a TypeError in runner.js);
//   - an async `init()` that rejects is sent to the main thread as a buffered `workerError`, but the
//     main thread waits for the worker's `readyWaiting` with no time limit: the run hangs.
//   - an uncaught exception in the worker thread is the one failure Artillery treats as fatal: the
//     main thread's ArtilleryWorker prints "worker error, id: N <the thrown value>" and
//     PlatformLocal exits the process with code 11. This happens during `prepare`, before the main
//     thread sends `run`, so no phase starts and no VU is created.
// So: the constructor checks the whole script (every problem at once) and, when it is wrong, does
// not throw; in a worker thread it throws the report as a plain string (no stack to print) from
// process.nextTick, and in the main thread (a `before` hook) it prints the report and exits 1.

/** Every problem of the script's cable scenarios, the config and what they reference, or none. */
export function findProblems(script: Script, env: NodeJS.ProcessEnv = process.env): { problems: string[]; settings?: CableConfig } {
  const problems: string[] = [];
  let settings: CableConfig | undefined;
  try {
    settings = parseConfig(cableSection(script), env);
  } catch (err) {
    if (!(err instanceof ScenarioError)) throw err;
    problems.push(...err.problems);
  }
  if (settings) {
    try {
      validateScript(script, settings);
    } catch (err) {
      if (!(err instanceof ScenarioError)) throw err;
      problems.push(...err.problems);
    }
  }
  problems.push(...readTls(script.config.tls, script._scriptPath ?? script._configPath).problems);
  problems.push(...targetProblems(script));
  problems.push(...envProblems(script, env));
  if (settings) problems.push(...failureLineProblems(script, settings, env));
  return { problems: problems.map(suggest), settings };
}

/** Reads the settings or stops the run with one message; `undefined` when the run is being stopped. */
export function checkScript(script: Script, env: NodeJS.ProcessEnv = process.env): CableConfig | undefined {
  const { problems, settings } = findProblems(script, env);
  if (problems.length === 0) return settings;
  stopBeforeLoad(new ScenarioError(problems).message);
  return undefined;
}

function stopBeforeLoad(report: string): void {
  if (isMainThread) {
    process.stderr.write(`${report}\n`);
    process.exit(1);
  }
  // A string, not an Error: Artillery prints the thrown value as is, with no stack.
  process.nextTick(() => {
    throw `\n${report}\n`;
  });
}

/** The cable flows of a script, each with the name messages give it. */
function cableFlows(script: Script, engineName = "cable"): { where: string; flow: unknown }[] {
  const flows: { where: string; flow: unknown }[] = [];
  (script.scenarios ?? []).forEach((scenario, i) => {
    if ((scenario.engine ?? script.config.engine) !== engineName) return;
    flows.push({ where: `scenario ${scenario.name ? `"${scenario.name}"` : `#${i + 1}`}`, flow: scenario.flow });
  });
  for (const hook of ["before", "after"] as const) {
    const spec = script[hook];
    if (spec && spec.engine === engineName) flows.push({ where: `${hook} hook`, flow: spec.flow });
  }
  return flows;
}

const WS_SCHEMES = new Set(["ws:", "wss:", "http:", "https:"]);

/** A target, or a connect step's url, that no socket can open. Templated URLs are checked at run time. */
function urlProblem(url: unknown, field: string): string | undefined {
  if (typeof url !== "string" || url.includes("{{")) return undefined;
  // `localhost:3000/cable` parses as the scheme "localhost:": say what it lacks.
  if (/^[\w.-]+:\d+(\/|$)/.test(url)) return `${field}: "${url}" has no scheme; did you mean "ws://${url}"?`;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return `${field}: "${url}" is not a URL (expected ws://host/path or wss://host/path)`;
  }
  if (!WS_SCHEMES.has(parsed.protocol)) return `${field}: "${url}" has the scheme ${parsed.protocol.replace(/:$/, "")}; a cable target is ws:// or wss:// (http:// and https:// are also taken)`;
  return undefined;
}

function targetProblems(script: Script): string[] {
  const flows = cableFlows(script);
  if (flows.length === 0) return [];
  const problems: string[] = [];
  const target = script.config.target;
  const connects = flows.flatMap(({ where, flow }) => connectSteps(flow, where));
  if (target === undefined || target === "") {
    for (const c of connects) if (c.url === undefined) problems.push(`${c.at} (connect): no "url" and config.target is not set (set config.target or pass --target)`);
  } else {
    const p = urlProblem(target, "config.target");
    if (p) problems.push(p);
  }
  for (const c of connects) {
    const p = urlProblem(c.url, `${c.at} (connect): field "url"`);
    if (p) problems.push(p);
  }
  return problems;
}

function connectSteps(flow: unknown, where: string, path = "step"): { at: string; url: unknown }[] {
  if (!Array.isArray(flow)) return [];
  return flow.flatMap((step, i) => {
    if (!step || typeof step !== "object") return [];
    const s = step as Record<string, unknown>;
    const at = `${where}, ${path} ${i + 1}`;
    if ("connect" in s) return [{ at, url: (s.connect as Record<string, unknown> | null)?.url }];
    if (Array.isArray(s.loop)) return connectSteps(s.loop, where, `${path} ${i + 1} loop step`);
    return [];
  });
}

/** `{{ $env.NAME }}` and `{{ $processEnvironment.NAME }}`: Artillery's ways to read the environment. */
const ENV_REF = /\{\{\s*\$(?:env|processEnvironment)\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g;

function envRefs(text: string): string[] {
  return [...text.matchAll(ENV_REF)].map((m) => m[1]);
}

/**
 * Environment variables the script refers to but the environment lacks. Artillery renders a
 * missing one as "undefined" (a header `Bearer undefined`, a room `room-undefined`): a run that
 * tests the wrong thing. Steps are templated per VU, so their references are still in the script;
 * `config` was rendered by Artillery before the engine sees it, so its references are read from
 * the scenario files themselves.
 */
function envProblems(script: Script, env: NodeJS.ProcessEnv): string[] {
  const problems: string[] = [];
  const reported = new Set<string>();
  const missing = (name: string) => env[name] === undefined && !reported.has(name);
  for (const { where, flow } of cableFlows(script)) {
    walkSteps(flow, where, (at, step) => {
      for (const name of envRefs(JSON.stringify(step))) {
        if (!missing(name)) continue;
        reported.add(name);
        problems.push(`${at}: refers to the environment variable ${name} ({{ $env.${name} }}), which is not set`);
      }
    });
  }
  if (cableFlows(script).length === 0) return problems;
  for (const file of new Set([script._scriptPath, script._configPath])) {
    if (!file) continue;
    let text: string;
    try {
      text = readFileSync(file, "utf8");
    } catch {
      continue;
    }
    const lines = text.split("\n").filter((line) => !/^\s*#/.test(line));
    for (const name of envRefs(lines.join("\n"))) {
      if (!missing(name)) continue;
      reported.add(name);
      problems.push(`${file}: refers to the environment variable ${name} ({{ $env.${name} }}), which is not set`);
    }
  }
  return problems;
}

function walkSteps(flow: unknown, where: string, visit: (at: string, step: unknown) => void, path = "step"): void {
  if (!Array.isArray(flow)) return;
  flow.forEach((step, i) => {
    const at = `${where}, ${path} ${i + 1}`;
    const s = step as Record<string, unknown> | null;
    if (s && typeof s === "object" && Array.isArray(s.loop)) {
      const { loop, ...modifiers } = s;
      visit(at, modifiers);
      walkSteps(loop, where, visit, `${path} ${i + 1} loop step`);
    } else {
      visit(at, step);
    }
  });
}

/** Every field name the engine knows, in config.cable and in steps, for "did you mean". */
const KNOWN_FIELDS: string[] = (() => {
  const names = new Set<string>();
  const walk = (schema: z.ZodTypeAny, depth: number): void => {
    if (depth > 6) return;
    const def = schema._def as { typeName?: string; [k: string]: any };
    switch (def.typeName) {
      case "ZodObject":
        for (const [key, value] of Object.entries((schema as z.AnyZodObject).shape)) {
          names.add(key);
          walk(value as z.ZodTypeAny, depth + 1);
        }
        break;
      case "ZodEffects":
        walk(def.schema, depth + 1);
        break;
      case "ZodOptional":
      case "ZodNullable":
      case "ZodDefault":
        walk(def.innerType, depth + 1);
        break;
      case "ZodUnion":
        for (const option of def.options) walk(option, depth + 1);
        break;
      case "ZodArray":
        walk(def.type, depth + 1);
        break;
    }
  };
  walk(configSchema, 0);
  for (const schema of Object.values(stepSchemas)) walk(schema as z.ZodTypeAny, 0);
  return [...names];
})();

/** Adds "did you mean" to an unknown field, when a known one is within two edits. */
function suggest(problem: string): string {
  const m = /unknown field "([^"]+)"(?!,)/.exec(problem);
  if (!m || problem.includes("did you mean")) return problem;
  const guess = closest(m[1], KNOWN_FIELDS);
  return guess ? `${problem}; did you mean "${guess}"?` : problem;
}

/** The report plugin's name in `config.plugins` (artillery-plugin-cable-report). */
export const REPORT_PLUGIN = "cable-report";

/**
 * A line other than none or 0 adds up every worker thread's users, which only the report plugin in
 * the main thread sees; without it the line would hold per thread, and 3 + 3 failures pass a line
 * of 5.
 */
function failureLineProblems(script: Script, settings: CableConfig, env: NodeJS.ProcessEnv): string[] {
  const max = settings.maxFailedUsers;
  if (max === false || max === 0 || env[JUDGED_BY_RUNNER_ENV] || script.config.plugins?.[REPORT_PLUGIN] !== undefined) return [];
  return [`config.cable: field "maxFailedUsers": ${JSON.stringify(max)} is judged on every worker's users together, by the report plugin: add \`plugins: { ${REPORT_PLUGIN}: {} }\` to config (or use 0 or false)`];
}

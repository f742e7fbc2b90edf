import { type ChildProcess, spawn } from "node:child_process";
import { appendFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { Evaluator, Lexer, Parser, data } from "@actions/expressions";
import { parse } from "yaml";

/**
 * Runs a composite action's steps as the GitHub runner does, without GitHub: `if:` and `${{ }}` are
 * evaluated with GitHub's own expression library (@actions/expressions), `run:` steps go to
 * `bash --noprofile --norc -eo pipefail <file>` with the GITHUB_* variables and files the runner sets
 * (a fresh GITHUB_OUTPUT, GITHUB_ENV and GITHUB_PATH per step, applied to the steps after it; one
 * GITHUB_STEP_SUMMARY), and `uses:` steps are recorded with their evaluated `with:` (they are other
 * repositories' actions: checkout, setup-node, upload-artifact), not run; a test may answer for them
 * with the outputs they would set (upload-artifact's artifact-url). A cancel sends SIGINT to
 * the running step, SIGTERM 7.5 s later, then SIGKILL, and the remaining steps see cancelled().
 */
export interface ActionStep {
  name?: string;
  id?: string;
  if?: string;
  uses?: string;
  run?: string;
  shell?: string;
  env?: Record<string, string>;
  with?: Record<string, string>;
}

export interface StepRecord {
  name: string;
  id?: string;
  /** skipped: its `if:` was false. */
  outcome: "success" | "failure" | "skipped" | "cancelled";
  uses?: string;
  with?: Record<string, string>;
  exitCode?: number | null;
  durationMs?: number;
  stdout: string;
  stderr: string;
  outputs: Record<string, string>;
}

export interface CompositeRun {
  steps: StepRecord[];
  /** The action's outputs, evaluated after its steps. */
  outputs: Record<string, string>;
  /** What the calling job sees: failure when a step failed. */
  conclusion: "success" | "failure" | "cancelled";
  summary: string;
}

export interface JobContext {
  /** The user's repository (GITHUB_WORKSPACE, the job's working directory). */
  workspace: string;
  /** The action's checkout (github.action_path). */
  actionPath: string;
  runnerTemp: string;
  toolCache: string;
  /** GITHUB_* variables (GITHUB_EVENT_NAME, GITHUB_REPOSITORY, GITHUB_API_URL, …) and the job's env. */
  env: NodeJS.ProcessEnv;
  /** The `github` context: event_name, token, repository, … (event comes from GITHUB_EVENT_PATH). */
  github: Record<string, unknown>;
  inputs: Record<string, string>;
  /** Called when a step starts; returning true cancels the job while that step runs (after the delay). */
  cancelDuring?: (step: ActionStep) => { afterMs: number; when?: () => boolean } | undefined;
  /** The outputs a `uses:` step would set, given its evaluated `with:` (called when it "runs"). */
  usesOutputs?: (step: { id?: string; uses: string; with: Record<string, string> }) => Record<string, string> | undefined;
  stepTimeoutMs?: number;
}

interface ActionFile {
  inputs?: Record<string, { default?: string; required?: boolean }>;
  outputs?: Record<string, { value: string }>;
  runs: { using: string; steps: ActionStep[] };
}

const STATUS_FUNCTIONS = ["success", "failure", "cancelled", "always"] as const;

export function loadAction(file: string): ActionFile {
  const action = parse(readFileSync(file, "utf8")) as ActionFile;
  if (action.runs.using !== "composite") throw new Error(`${file} is not a composite action`);
  return action;
}

function evaluate(expression: string, context: Record<string, unknown>, status: { failed: boolean; cancelled: boolean }): data.ExpressionData {
  const lexed = new Lexer(expression).lex();
  const expr = new Parser(lexed.tokens, Object.keys(context), STATUS_FUNCTIONS.map((name) => ({ name, minArgs: 0, maxArgs: 0 }))).parse();
  const fn = (value: boolean) => () => new data.BooleanData(value);
  const functions = new Map([
    ["success", { name: "success", minArgs: 0, maxArgs: 0, call: fn(!status.failed && !status.cancelled) }],
    ["failure", { name: "failure", minArgs: 0, maxArgs: 0, call: fn(status.failed) }],
    ["cancelled", { name: "cancelled", minArgs: 0, maxArgs: 0, call: fn(status.cancelled) }],
    ["always", { name: "always", minArgs: 0, maxArgs: 0, call: fn(true) }],
  ]);
  const dictionary = JSON.parse(JSON.stringify(context), data.reviver) as data.Dictionary;
  return new Evaluator(expr, dictionary, functions).evaluate();
}

const truthy = (value: data.ExpressionData): boolean => {
  switch (value.kind) {
    case data.Kind.Null:
      return false;
    case data.Kind.Boolean:
      return (value as data.BooleanData).value;
    case data.Kind.Number:
      return (value as data.NumberData).value !== 0;
    case data.Kind.String:
      return (value as data.StringData).value !== "";
    default:
      return true;
  }
};

/** `${{ a }} and ${{ b }}` → the string GitHub would pass. */
function template(text: string, context: Record<string, unknown>, status: { failed: boolean; cancelled: boolean }): string {
  return text.replace(/\$\{\{([\s\S]*?)\}\}/g, (_, expression: string) => evaluate(expression.trim(), context, status).coerceString());
}

/** The runner's rule: a step's `if:` without a status function means `success() && (…)`. */
function condition(expression: string | undefined, context: Record<string, unknown>, status: { failed: boolean; cancelled: boolean }): boolean {
  const bare = (expression ?? "success()").trim().replace(/^\$\{\{([\s\S]*)\}\}$/, "$1").trim();
  const withStatus = /\b(success|failure|cancelled|always)\s*\(/.test(bare) ? bare : `success() && (${bare})`;
  return truthy(evaluate(withStatus, context, status));
}

/** GITHUB_OUTPUT / GITHUB_ENV syntax: `name=value` lines and `name<<DELIM … DELIM` blocks. */
export function parseCommandFile(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (!line) continue;
    const heredoc = /^([^=<]+)<<(.+)$/.exec(line);
    if (heredoc) {
      const end = lines.indexOf(heredoc[2], i + 1);
      if (end < 0) throw new Error(`unterminated ${heredoc[2]} block for ${heredoc[1]}`);
      out[heredoc[1]] = lines.slice(i + 1, end).join("\n");
      i = end;
      continue;
    }
    const eq = line.indexOf("=");
    if (eq < 1) throw new Error(`invalid command-file line: ${JSON.stringify(line)}`);
    out[line.slice(0, eq)] = line.slice(eq + 1);
  }
  return out;
}

export async function runComposite(actionFile: string, job: JobContext): Promise<CompositeRun> {
  const action = loadAction(actionFile);
  const status = { failed: false, cancelled: false };
  const stepsContext: Record<string, { outputs: Record<string, string>; outcome: string; conclusion: string }> = {};
  const fileDir = path.join(job.runnerTemp, "_runner_file_commands");
  mkdirSync(fileDir, { recursive: true });
  const summaryFile = path.join(fileDir, "step_summary");
  writeFileSync(summaryFile, "");
  const jobEnv: Record<string, string> = {};
  const extraPath: string[] = [];
  const records: StepRecord[] = [];

  const baseContext = () => ({
    github: { ...job.github, action_path: job.actionPath, workspace: job.workspace },
    runner: { temp: job.runnerTemp, tool_cache: job.toolCache, os: "Linux", arch: "X64" },
    env: { ...jobEnv },
    steps: stepsContext,
  });
  const inputsContext: Record<string, string> = {};
  for (const [name, spec] of Object.entries(action.inputs ?? {})) {
    const given = job.inputs[name];
    if (given === undefined && spec.required) throw new Error(`input ${name} is required`);
    inputsContext[name] = given ?? template(String(spec.default ?? ""), baseContext(), status);
  }
  for (const name of Object.keys(job.inputs)) if (!(name in inputsContext)) throw new Error(`input ${name} is not defined by the action`);
  const context = () => ({ ...baseContext(), inputs: inputsContext });

  for (const [index, step] of action.runs.steps.entries()) {
    const name = step.name ?? step.uses ?? `step ${index + 1}`;
    const record: StepRecord = { name, id: step.id, outcome: "skipped", stdout: "", stderr: "", outputs: {} };
    records.push(record);
    if (!condition(step.if, context(), status)) {
      if (step.id) stepsContext[step.id] = { outputs: {}, outcome: "skipped", conclusion: "skipped" };
      continue;
    }
    if (step.uses) {
      record.uses = step.uses;
      record.with = Object.fromEntries(Object.entries(step.with ?? {}).map(([k, v]) => [k, template(String(v), context(), status)]));
      record.outcome = "success";
      record.outputs = job.usesOutputs?.({ id: step.id, uses: step.uses, with: record.with }) ?? {};
      if (step.id) stepsContext[step.id] = { outputs: record.outputs, outcome: "success", conclusion: "success" };
      continue;
    }
    if (step.shell !== "bash") throw new Error(`step ${name}: shell ${step.shell} (composite run steps must name their shell)`);

    const files = { output: path.join(fileDir, `output_${index}`), env: path.join(fileDir, `env_${index}`), path: path.join(fileDir, `path_${index}`) };
    for (const file of Object.values(files)) writeFileSync(file, "");
    const script = path.join(job.runnerTemp, `step_${index}.sh`);
    writeFileSync(script, template(step.run ?? "", context(), status));
    const stepEnv = Object.fromEntries(Object.entries(step.env ?? {}).map(([k, v]) => [k, template(String(v), context(), status)]));
    const env: NodeJS.ProcessEnv = {
      ...job.env,
      ...jobEnv,
      ...stepEnv,
      PATH: [...extraPath, job.env.PATH ?? process.env.PATH].join(path.delimiter),
      GITHUB_WORKSPACE: job.workspace,
      GITHUB_ACTION_PATH: job.actionPath,
      RUNNER_TEMP: job.runnerTemp,
      RUNNER_TOOL_CACHE: job.toolCache,
      GITHUB_OUTPUT: files.output,
      GITHUB_ENV: files.env,
      GITHUB_PATH: files.path,
      GITHUB_STEP_SUMMARY: summaryFile,
    };
    const startedAt = Date.now();
    const child = spawn("bash", ["--noprofile", "--norc", "-eo", "pipefail", script], { cwd: job.workspace, env, stdio: ["ignore", "pipe", "pipe"] });
    child.stdout.on("data", (d) => (record.stdout += d));
    child.stderr.on("data", (d) => (record.stderr += d));
    const cancel = job.cancelDuring?.(step);
    const timers: NodeJS.Timeout[] = [];
    let cancelledHere = false;
    if (cancel) timers.push(scheduleCancel(child, cancel, () => (status.cancelled = cancelledHere = true), timers));
    const stepTimeout = setTimeout(() => child.kill("SIGKILL"), job.stepTimeoutMs ?? 240_000);
    const exitCode = await new Promise<number | null>((resolve) => child.once("close", (code) => resolve(code)));
    clearTimeout(stepTimeout);
    for (const timer of timers) clearTimeout(timer);

    record.exitCode = exitCode;
    record.durationMs = Date.now() - startedAt;
    record.outputs = parseCommandFile(readFileSync(files.output, "utf8"));
    Object.assign(jobEnv, parseCommandFile(readFileSync(files.env, "utf8")));
    extraPath.unshift(...readFileSync(files.path, "utf8").split("\n").filter(Boolean).reverse());
    // The runner marks a step it signalled as cancelled, whatever its exit status.
    record.outcome = cancelledHere ? "cancelled" : exitCode === 0 ? "success" : "failure";
    if (record.outcome === "failure") status.failed = true;
    if (step.id) stepsContext[step.id] = { outputs: record.outputs, outcome: record.outcome, conclusion: record.outcome };
    appendFileSync(path.join(job.runnerTemp, "steps.log"), `${name}: ${record.outcome} in ${record.durationMs} ms\n${record.stdout}${record.stderr}\n`);
  }

  const outputs = Object.fromEntries(Object.entries(action.outputs ?? {}).map(([k, v]) => [k, template(v.value, context(), status)]));
  return { steps: records, outputs, conclusion: status.cancelled ? "cancelled" : status.failed ? "failure" : "success", summary: readFileSync(summaryFile, "utf8") };
}

/** As the runner cancels a step: SIGINT, SIGTERM after 7.5 s, SIGKILL after 10 s. */
function scheduleCancel(child: ChildProcess, cancel: { afterMs: number; when?: () => boolean }, markCancelled: () => void, timers: NodeJS.Timeout[]): NodeJS.Timeout {
  const fire = () => {
    markCancelled();
    child.kill("SIGINT");
    timers.push(setTimeout(() => child.kill("SIGTERM"), 7_500), setTimeout(() => child.kill("SIGKILL"), 10_000));
  };
  const poll = (): NodeJS.Timeout =>
    setTimeout(() => {
      if (!cancel.when || cancel.when()) fire();
      else timers.push(poll());
    }, cancel.afterMs);
  return poll();
}

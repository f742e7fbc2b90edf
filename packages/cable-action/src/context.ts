import { readFileSync } from "node:fs";

/**
 * What a step of a GitHub Actions job knows about its run, read from the variables and the event
 * file the runner sets (https://docs.github.com/actions/reference/variables-reference).
 */
export interface RunnerContext {
  token: string;
  /** GITHUB_API_URL: https://api.github.com, or a GitHub Enterprise Server's /api/v3. */
  apiUrl: string;
  owner: string;
  repo: string;
  /** The workflow file's name (`loadtest.yml`), from GITHUB_WORKFLOW_REF: the baseline comes from its runs. */
  workflowFile: string;
  /** This run's id: never its own baseline. */
  runId?: number;
  eventName: string;
  defaultBranch?: string;
  /** The pull request's number on pull_request and pull_request_target events. */
  pullRequest?: number;
}

export class ContextError extends Error {
  override name = "ContextError";
}

interface EventPayload {
  repository?: { default_branch?: string };
  pull_request?: { number?: number };
}

const required = (env: NodeJS.ProcessEnv, name: string): string => {
  const value = env[name];
  if (!value) throw new ContextError(`${name} is not set: run this inside a GitHub Actions job (or set it as the runner does)`);
  return value;
};

export function readRunnerContext(env: NodeJS.ProcessEnv): RunnerContext {
  const token = env.GITHUB_TOKEN ?? "";
  if (!token) throw new ContextError("GITHUB_TOKEN is not set: pass the action's github-token input (default: the job's token)");
  const [owner, repo, ...rest] = required(env, "GITHUB_REPOSITORY").split("/");
  if (!owner || !repo || rest.length > 0) throw new ContextError(`GITHUB_REPOSITORY must be owner/name, got ${JSON.stringify(env.GITHUB_REPOSITORY)}`);
  return {
    token,
    apiUrl: env.GITHUB_API_URL || "https://api.github.com",
    owner,
    repo,
    workflowFile: workflowFileOf(required(env, "GITHUB_WORKFLOW_REF")),
    runId: env.GITHUB_RUN_ID ? Number(env.GITHUB_RUN_ID) : undefined,
    eventName: required(env, "GITHUB_EVENT_NAME"),
    ...eventFacts(readEvent(env.GITHUB_EVENT_PATH)),
  };
}

/** `octo/app/.github/workflows/loadtest.yml@refs/pull/7/merge` → `loadtest.yml`. */
export function workflowFileOf(workflowRef: string): string {
  const match = /\/\.github\/workflows\/([^/@]+)@/.exec(workflowRef);
  if (!match) throw new ContextError(`GITHUB_WORKFLOW_REF does not name a workflow file: ${JSON.stringify(workflowRef)}`);
  return match[1];
}

function readEvent(file: string | undefined): EventPayload {
  if (!file) return {};
  try {
    return JSON.parse(readFileSync(file, "utf8")) as EventPayload;
  } catch (err) {
    throw new ContextError(`GITHUB_EVENT_PATH ${file} is not a readable JSON event (${(err as NodeJS.ErrnoException).code ?? "invalid JSON"})`);
  }
}

function eventFacts(event: EventPayload): Pick<RunnerContext, "defaultBranch" | "pullRequest"> {
  return { defaultBranch: event.repository?.default_branch, pullRequest: event.pull_request?.number };
}

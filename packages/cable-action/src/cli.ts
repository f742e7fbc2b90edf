// `cable-action baseline | comment`: the GitHub side of the action (action.yml at the repository's root).
import { appendFileSync, readFileSync } from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import { downloadBaseline } from "./baseline.js";
import { GitHubApiError, createClient } from "./client.js";
import { upsertComment } from "./comment.js";
import { ContextError, type RunnerContext, readRunnerContext } from "./context.js";

const USAGE = `Usage:
  cable-action baseline --artifact <name> --out <dir> [--file merged.json] [--branch <name>]
      the default branch's newest successful run of this workflow that has the artifact:
      writes <dir>/<file> and the step output "path"; no baseline is not an error
  cable-action comment --body-file <report.md> [--header <name>] [--issue <n>]
      posts or updates one comment on the pull request (found again by its header), step output "url"

Reads the runner's GITHUB_TOKEN, GITHUB_API_URL, GITHUB_REPOSITORY, GITHUB_WORKFLOW_REF, GITHUB_RUN_ID,
GITHUB_EVENT_NAME, GITHUB_EVENT_PATH and GITHUB_OUTPUT.
Exit status: 0 done (or nothing to do); 1 GitHub refused; 2 usage or not in a GitHub Actions job.`;

export const EXIT = { ok: 0, api: 1, usage: 2 } as const;

class UsageError extends Error {}

/** A workflow command's message: the runner reads one line, so %, CR and LF are escaped. */
const escape = (message: string) => message.replace(/%/g, "%25").replace(/\r/g, "%0D").replace(/\n/g, "%0A");

export interface Io {
  out: (line: string) => void;
  err: (line: string) => void;
}

const processIo: Io = { out: (line) => process.stdout.write(`${line}\n`), err: (line) => process.stderr.write(`${line}\n`) };

export async function main(argv: string[], env: NodeJS.ProcessEnv, io: Io = processIo): Promise<number> {
  const [command, ...rest] = argv;
  try {
    if (command === "baseline") return await baseline(rest, env, io);
    if (command === "comment") return await comment(rest, env, io);
    if (command === "-h" || command === "--help") {
      io.out(USAGE);
      return EXIT.ok;
    }
    throw new UsageError(command ? `unknown command ${JSON.stringify(command)}` : "no command");
  } catch (err) {
    if (err instanceof UsageError || err instanceof ContextError || (err instanceof TypeError && "code" in err && String(err.code).startsWith("ERR_PARSE_ARGS"))) {
      io.err(`cable-action: ${err.message}`);
      if (!command || !["baseline", "comment"].includes(command)) io.err(USAGE);
      return EXIT.usage;
    }
    if (err instanceof GitHubApiError) {
      io.out(`::error title=cable-action::${escape(err.message)}`);
      return EXIT.api;
    }
    throw err;
  }
}

function setOutput(env: NodeJS.ProcessEnv, name: string, value: string): void {
  if (env.GITHUB_OUTPUT) appendFileSync(env.GITHUB_OUTPUT, `${name}=${value}\n`);
}

const client = (context: RunnerContext) => createClient({ token: context.token, baseUrl: context.apiUrl });

async function baseline(argv: string[], env: NodeJS.ProcessEnv, io: Io): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { artifact: { type: "string" }, out: { type: "string" }, file: { type: "string" }, branch: { type: "string" } }, strict: true });
  if (!values.artifact || !values.out) throw new UsageError("baseline needs --artifact and --out");
  const context = readRunnerContext(env);
  const branch = values.branch ?? context.defaultBranch;
  if (!branch) throw new UsageError("the event names no default branch: pass --branch");
  const result = await downloadBaseline(
    client(context),
    { owner: context.owner, repo: context.repo, workflowFile: context.workflowFile, branch, artifact: values.artifact, file: values.file, excludeRunId: context.runId },
    path.resolve(values.out),
  );
  if (!result.found) {
    io.err(`no baseline: ${result.reason}`);
    return EXIT.ok;
  }
  io.err(`baseline: ${values.artifact} of ${result.runUrl}`);
  setOutput(env, "path", result.file);
  setOutput(env, "run-url", result.runUrl);
  return EXIT.ok;
}

function readBody(file: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch (err) {
    throw new UsageError(`cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? "error"})`);
  }
}

async function comment(argv: string[], env: NodeJS.ProcessEnv, io: Io): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { "body-file": { type: "string" }, header: { type: "string" }, issue: { type: "string" } }, strict: true });
  if (!values["body-file"]) throw new UsageError("comment needs --body-file");
  const context = readRunnerContext(env);
  const issue = values.issue ? Number(values.issue) : context.pullRequest;
  if (!issue || !Number.isInteger(issue) || issue < 1) throw new UsageError(`no pull request to comment on (event ${context.eventName}): pass --issue`);
  const body = readBody(values["body-file"]);
  try {
    const result = await upsertComment(client(context), { owner: context.owner, repo: context.repo, issue, header: values.header ?? "cable-loadtest", body });
    io.err(`comment ${result.action}: ${result.url}`);
    setOutput(env, "url", result.url);
    return EXIT.ok;
  } catch (err) {
    // A fork's pull request gets a read-only token: the report stays in the job summary, the job goes on.
    if (err instanceof GitHubApiError && err.status === 403) {
      io.out(`::warning title=cable-action::${escape(err.message)}`);
      return EXIT.ok;
    }
    throw err;
  }
}

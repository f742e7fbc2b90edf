import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { unzipSync } from "fflate";
import { type GitHub, GitHubApiError, apiMessage, statusOf } from "./client.js";

export interface BaselineQuery {
  owner: string;
  repo: string;
  /** The workflow file whose runs hold the artifact (`loadtest.yml`). */
  workflowFile: string;
  branch: string;
  /** The artifact's name (`loadtest-merged`) and the file in it. */
  artifact: string;
  file?: string;
  /** Bounds the search: successful runs looked at, newest first. */
  maxRuns?: number;
  /** Never take this run (the one asking). */
  excludeRunId?: number;
}

export type BaselineResult =
  | { found: true; runId: number; runUrl: string; artifactId: number; file: string }
  | { found: false; reason: string };

const DEFAULT_FILE = "merged.json";
const PER_PAGE = 30;

/**
 * Downloads `file` from the artifact of the newest successful run of the workflow on the default
 * branch that still has it (artifacts expire), into `outDir`. "No baseline" is a normal answer
 * (first run, workflow not on the default branch yet, artifacts expired); a 403 is not: it names
 * the permission the workflow must grant.
 */
export async function downloadBaseline(github: GitHub, query: BaselineQuery, outDir: string): Promise<BaselineResult> {
  const file = query.file ?? DEFAULT_FILE;
  const maxRuns = query.maxRuns ?? 10;
  const repository = `${query.owner}/${query.repo}`;
  let seen = 0;
  try {
    const runs = github.paginate.iterator(github.rest.actions.listWorkflowRuns, {
      owner: query.owner,
      repo: query.repo,
      workflow_id: query.workflowFile,
      branch: query.branch,
      status: "success",
      per_page: Math.min(PER_PAGE, maxRuns),
    });
    for await (const page of runs) {
      for (const run of page.data) {
        if (seen++ >= maxRuns) return { found: false, reason: `none of the last ${maxRuns} successful runs on ${query.branch} has an unexpired ${query.artifact} artifact` };
        // A fork's pull request can come from a branch named like the default one: not a baseline.
        if (run.id === query.excludeRunId || run.head_repository?.full_name !== repository) continue;
        const artifact = await findArtifact(github, query, run.id);
        if (!artifact) continue;
        const target = await download(github, query, artifact, file, outDir);
        return { found: true, runId: run.id, runUrl: run.html_url, artifactId: artifact, file: target };
      }
    }
  } catch (err) {
    if (err instanceof GitHubApiError) throw err;
    const status = statusOf(err);
    if (status === 404) return { found: false, reason: `no runs of ${query.workflowFile} on ${query.branch} (is the workflow on the default branch yet?)` };
    if (status === 403) throw new GitHubApiError(`listing the runs of ${query.workflowFile}`, 403, `${apiMessage(err)}; the workflow needs \`permissions: actions: read\``);
    throw new GitHubApiError(`listing the runs of ${query.workflowFile}`, status ?? 0, apiMessage(err));
  }
  return seen === 0
    ? { found: false, reason: `no successful run of ${query.workflowFile} on ${query.branch} yet` }
    : { found: false, reason: `no successful run of ${query.workflowFile} on ${query.branch} has an unexpired ${query.artifact} artifact` };
}

async function findArtifact(github: GitHub, query: BaselineQuery, runId: number): Promise<number | undefined> {
  try {
    // Bounded: a run has a handful of artifacts; the name filter leaves one or none.
    const pages = github.paginate.iterator(github.rest.actions.listWorkflowRunArtifacts, { owner: query.owner, repo: query.repo, run_id: runId, name: query.artifact, per_page: 100 });
    let pagesSeen = 0;
    for await (const page of pages) {
      const artifact = page.data.find((a) => a.name === query.artifact && !a.expired);
      if (artifact) return artifact.id;
      if (++pagesSeen >= 10) break;
    }
    return undefined;
  } catch (err) {
    const status = statusOf(err);
    if (status === 404) return undefined;
    if (status === 403) throw new GitHubApiError(`listing the artifacts of run ${runId}`, 403, `${apiMessage(err)}; the workflow needs \`permissions: actions: read\``);
    throw new GitHubApiError(`listing the artifacts of run ${runId}`, status ?? 0, apiMessage(err));
  }
}

async function download(github: GitHub, query: BaselineQuery, artifactId: number, file: string, outDir: string): Promise<string> {
  let zip: ArrayBuffer;
  try {
    // The API answers 302 to a short-lived blob URL; fetch follows it (without the token).
    const response = await github.rest.actions.downloadArtifact({ owner: query.owner, repo: query.repo, artifact_id: artifactId, archive_format: "zip" });
    zip = response.data as ArrayBuffer;
  } catch (err) {
    const status = statusOf(err);
    const detail = status === 403 ? `${apiMessage(err)}; the workflow needs \`permissions: actions: read\`` : apiMessage(err);
    throw new GitHubApiError(`downloading artifact ${artifactId} (${query.artifact})`, status ?? 0, detail);
  }
  let entries: Record<string, Uint8Array>;
  try {
    entries = unzipSync(new Uint8Array(zip));
  } catch {
    throw new GitHubApiError(`downloading artifact ${artifactId} (${query.artifact})`, 200, "the answer is not a zip archive");
  }
  const name = Object.keys(entries).find((entry) => entry === file || entry.endsWith(`/${file}`));
  if (!name) throw new GitHubApiError(`downloading artifact ${artifactId} (${query.artifact})`, 200, `the archive has no ${file} (it holds ${Object.keys(entries).join(", ") || "nothing"})`);
  mkdirSync(outDir, { recursive: true });
  const target = path.join(outDir, path.basename(file));
  writeFileSync(target, entries[name]);
  return target;
}

import { type GitHub, GitHubApiError, apiMessage, statusOf } from "./client.js";

export interface StickyComment {
  owner: string;
  repo: string;
  /** The pull request (an issue number for the comments API). */
  issue: number;
  /** Names the comment among the others: one sticky comment per header (per scenario). */
  header: string;
  body: string;
}

export interface CommentResult {
  action: "created" | "updated";
  id: number;
  url: string;
}

/** GitHub refuses comment bodies above 65,536 characters. */
export const MAX_BODY = 65_536;
/** Bounds the search for our comment: 100 per page, 30 pages (3,000 comments). */
const MAX_PAGES = 30;

export const markerOf = (header: string): string => `<!-- cable-loadtest:${header.replace(/-->/g, "")} -->`;

/**
 * Posts the body as one comment on the pull request, or updates the one this token posted before
 * (found by its hidden marker and its author), so a pull request has a single report that follows
 * its pushes. Anyone who can comment can write the marker: a comment by anyone else is never ours.
 */
export async function upsertComment(github: GitHub, comment: StickyComment): Promise<CommentResult> {
  const marker = markerOf(comment.header);
  const body = fit(`${marker}\n${comment.body}`);
  const existing = await findComment(github, comment, marker, await ownLogin(github));
  try {
    if (existing !== undefined) {
      const { data } = await github.rest.issues.updateComment({ owner: comment.owner, repo: comment.repo, comment_id: existing, body });
      return { action: "updated", id: data.id, url: data.html_url };
    }
    const { data } = await github.rest.issues.createComment({ owner: comment.owner, repo: comment.repo, issue_number: comment.issue, body });
    return { action: "created", id: data.id, url: data.html_url };
  } catch (err) {
    throw commentError(existing === undefined ? `commenting on pull request #${comment.issue}` : `updating comment ${existing}`, err);
  }
}

/**
 * The login this token's comments carry: `github-actions[bot]` for the job's GITHUB_TOKEN,
 * `<app>[bot]` for a GitHub App's installation token, the user's own for a personal token.
 * GraphQL's `viewer` answers for all three (REST's `GET /user` refuses installation tokens, and
 * `GET /app` needs the app's JWT); it is what the widely used sticky-comment actions ask too.
 */
export async function ownLogin(github: GitHub): Promise<string> {
  try {
    const { viewer } = await github.graphql<{ viewer: { login: string } }>("query { viewer { login } }");
    return viewer.login;
  } catch (err) {
    throw commentError("asking GitHub which account this token is", err);
  }
}

async function findComment(github: GitHub, comment: StickyComment, marker: string, login: string): Promise<number | undefined> {
  try {
    const pages = github.paginate.iterator(github.rest.issues.listComments, { owner: comment.owner, repo: comment.repo, issue_number: comment.issue, per_page: 100 });
    let pagesSeen = 0;
    for await (const page of pages) {
      const mine = page.data.find((c) => c.user?.login === login && c.body?.startsWith(marker));
      if (mine) return mine.id;
      if (++pagesSeen >= MAX_PAGES) break;
    }
    return undefined;
  } catch (err) {
    throw commentError(`listing the comments of pull request #${comment.issue}`, err);
  }
}

function commentError(what: string, err: unknown): GitHubApiError {
  const status = statusOf(err);
  if (status === 403)
    return new GitHubApiError(what, 403, `${apiMessage(err)}; the workflow needs \`permissions: pull-requests: write\` (a pull request from a fork gets a read-only token: the report is in the job summary)`);
  if (status === 404) return new GitHubApiError(what, 404, `${apiMessage(err)}; is ${what.replace(/^\w+ /, "")} in this repository?`);
  return new GitHubApiError(what, status ?? 0, apiMessage(err));
}

/** Cuts a body GitHub would refuse, saying so (report.md stays under 60 KB, so this is a guard). */
function fit(body: string): string {
  if (body.length <= MAX_BODY) return body;
  const note = "\n\n… cut: the full report is in the job summary.";
  return body.slice(0, MAX_BODY - note.length) + note;
}

import { Octokit } from "@octokit/rest";

export interface ClientOptions {
  token: string;
  baseUrl: string;
  /** Bounds every request of one command (a hung API never hangs the job). */
  timeoutMs?: number;
}

export type GitHub = Octokit;

export function createClient(options: ClientOptions): GitHub {
  return new Octokit({
    auth: options.token,
    baseUrl: options.baseUrl,
    userAgent: "cable-action",
    request: { signal: AbortSignal.timeout(options.timeoutMs ?? 60_000) },
    // Octokit logs deprecations and failed requests itself; the commands say what failed, once.
    log: { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} },
  });
}

/**
 * A GitHub API answer the user can act on: what was asked, the status, and what to change
 * (a 403 is almost always a permission the workflow did not grant).
 */
export class GitHubApiError extends Error {
  override name = "GitHubApiError";
  constructor(
    readonly what: string,
    readonly status: number,
    detail: string,
  ) {
    super(`GitHub answered ${status} to ${what}: ${detail}`);
  }
}

interface HttpError extends Error {
  name: "HttpError";
  status: number;
  response?: { data?: unknown };
}

/** Octokit's RequestError (duck-typed: @octokit/request-error is Octokit's own dependency). */
const isHttpError = (err: unknown): err is HttpError =>
  err instanceof Error && err.name === "HttpError" && typeof (err as Partial<HttpError>).status === "number";

/** The HTTP status of a failed call; undefined when no answer came (network, timeout). */
export const statusOf = (err: unknown): number | undefined => (isHttpError(err) && err.status >= 100 && !isNoAnswer(err) ? err.status : undefined);

/** Octokit reports a request that got no answer (refused, reset, aborted by the timeout) as status 500. */
const isNoAnswer = (err: Error): boolean => /abort|timeout|fetch failed|ECONN|socket/i.test(err.message) && !(isHttpError(err) && err.response);

/** The API's own message (`Resource not accessible by integration`), never a stack. */
export function apiMessage(err: unknown): string {
  if (isHttpError(err) && err.response) {
    const data = err.response.data as { message?: unknown } | undefined;
    return typeof data?.message === "string" ? data.message : `HTTP ${err.status}`;
  }
  if (err instanceof Error && isNoAnswer(err)) return "no answer (network error or timeout)";
  return err instanceof Error ? err.message : String(err);
}

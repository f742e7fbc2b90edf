import { type IncomingMessage, type Server, type ServerResponse, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { strToU8, zipSync } from "fflate";

/**
 * A local HTTP server that answers like the GitHub REST endpoints the action uses (list workflow
 * runs, list a run's artifacts, download an artifact through a 302 to blob storage on another
 * origin, list/create/update issue comments), with GitHub's pagination (`Link: <…>; rel="next"`),
 * and any route made to answer 403 or 404 as GitHub does.
 */
export interface FakeArtifact {
  id: number;
  name: string;
  expired?: boolean;
  /** Files in the artifact's zip. */
  files: Record<string, string>;
}

export interface FakeRun {
  id: number;
  branch: string;
  conclusion: "success" | "failure";
  /** owner/name the run's head commit came from (a fork's pull request differs). */
  headRepository: string;
  workflow: string;
  artifacts: FakeArtifact[];
}

export interface FakeComment {
  id: number;
  body: string;
  user: string;
}

/** The job's GITHUB_TOKEN acts as this account (REST's `user.login`, GraphQL's `viewer.login`). */
export const ACTIONS_BOT = "github-actions[bot]";

export type Route = "runs" | "artifacts" | "download" | "blob" | "comments" | "create" | "update" | "graphql";

export interface RecordedRequest {
  route: Route | "unknown";
  method: string;
  url: string;
  authorization?: string;
  body?: unknown;
}

export class FakeGitHub {
  runs: FakeRun[] = [];
  comments = new Map<number, FakeComment[]>();
  /** Route → status to answer instead (403, 404, or "hang": never answer). */
  failures = new Map<Route, 403 | 404 | "hang">();
  requests: RecordedRequest[] = [];
  /** GitHub honours per_page up to 100; a small cap here makes pagination happen with few items. */
  maxPerPage = 100;
  /** Token → the account it acts as; any other token acts as the Actions bot. */
  logins = new Map<string, string>();
  private nextCommentId = 1000;
  private api?: Server;
  private blob?: Server;
  apiUrl = "";
  private blobUrl = "";

  constructor(readonly owner = "octo", readonly repo = "app") {}

  async start(): Promise<this> {
    this.api = await listen((req, res) => this.handleApi(req, res));
    this.blob = await listen((req, res) => this.handleBlob(req, res));
    this.apiUrl = `http://127.0.0.1:${(this.api.address() as AddressInfo).port}`;
    this.blobUrl = `http://127.0.0.1:${(this.blob.address() as AddressInfo).port}`;
    return this;
  }

  async close(): Promise<void> {
    for (const server of [this.api, this.blob]) {
      server?.closeAllConnections();
      await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    }
  }

  addComment(issue: number, body: string, user = "someone"): FakeComment {
    const comment = { id: this.nextCommentId++, body, user };
    this.comments.set(issue, [...(this.comments.get(issue) ?? []), comment]);
    return comment;
  }

  private loginOf(req: IncomingMessage): string {
    const token = (req.headers.authorization ?? "").replace(/^(token|bearer) /i, "");
    return this.logins.get(token) ?? ACTIONS_BOT;
  }

  private commentJson(issue: number, c: FakeComment) {
    return { id: c.id, body: c.body, user: { login: c.user, type: c.user.endsWith("[bot]") ? "Bot" : "User" }, html_url: `https://github.com/${this.owner}/${this.repo}/pull/${issue}#issuecomment-${c.id}` };
  }

  private async handleApi(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", this.apiUrl);
    const body = await readBody(req);
    const prefix = `/repos/${this.owner}/${this.repo}`;
    const p = url.pathname;
    let m: RegExpExecArray | null;
    const record = (route: Route | "unknown") => this.requests.push({ route, method: req.method ?? "", url: p + url.search, authorization: req.headers.authorization, body });
    const failed = (route: Route): boolean => {
      const failure = this.failures.get(route);
      if (failure === "hang") return true;
      if (failure) {
        const message = failure === 403 ? "Resource not accessible by integration" : "Not Found";
        json(res, failure, { message, documentation_url: "https://docs.github.com/rest", status: String(failure) });
        return true;
      }
      return false;
    };

    if (req.method === "GET" && (m = new RegExp(`^${prefix}/actions/workflows/([^/]+)/runs$`).exec(p))) {
      record("runs");
      if (failed("runs")) return;
      const workflow = decodeURIComponent(m[1]);
      if (!this.runs.some((r) => r.workflow === workflow)) return json(res, 404, { message: "Not Found" });
      const branch = url.searchParams.get("branch");
      const status = url.searchParams.get("status");
      const runs = this.runs
        .filter((r) => r.workflow === workflow && (!branch || r.branch === branch) && (!status || r.conclusion === status))
        .sort((a, b) => b.id - a.id)
        .map((r) => ({
          id: r.id,
          head_branch: r.branch,
          conclusion: r.conclusion,
          status: "completed",
          head_repository: { full_name: r.headRepository },
          html_url: `https://github.com/${this.owner}/${this.repo}/actions/runs/${r.id}`,
        }));
      return this.page(res, url, runs, (items, total) => ({ total_count: total, workflow_runs: items }));
    }
    if (req.method === "GET" && (m = new RegExp(`^${prefix}/actions/runs/(\\d+)/artifacts$`).exec(p))) {
      record("artifacts");
      if (failed("artifacts")) return;
      const run = this.runs.find((r) => r.id === Number(m![1]));
      if (!run) return json(res, 404, { message: "Not Found" });
      const name = url.searchParams.get("name");
      const artifacts = run.artifacts.filter((a) => !name || a.name === name).map((a) => ({ id: a.id, name: a.name, expired: Boolean(a.expired), size_in_bytes: 1 }));
      return this.page(res, url, artifacts, (items, total) => ({ total_count: total, artifacts: items }));
    }
    if (req.method === "GET" && (m = new RegExp(`^${prefix}/actions/artifacts/(\\d+)/zip$`).exec(p))) {
      record("download");
      if (failed("download")) return;
      const artifact = this.runs.flatMap((r) => r.artifacts).find((a) => a.id === Number(m![1]));
      if (!artifact || artifact.expired) return json(res, 410, { message: "Artifact has expired" });
      res.writeHead(302, { location: `${this.blobUrl}/blob/${artifact.id}?sig=signed` }).end();
      return;
    }
    if ((m = new RegExp(`^${prefix}/issues/(\\d+)/comments$`).exec(p))) {
      const issue = Number(m[1]);
      if (req.method === "GET") {
        record("comments");
        if (failed("comments")) return;
        const list = this.comments.get(issue);
        if (!list) return json(res, 404, { message: "Not Found" });
        return this.page(res, url, list.map((c) => this.commentJson(issue, c)), (items) => items);
      }
      if (req.method === "POST") {
        record("create");
        if (failed("create")) return;
        if (!this.comments.has(issue)) return json(res, 404, { message: "Not Found" });
        const comment = this.addComment(issue, String((body as { body?: unknown }).body), this.loginOf(req));
        return json(res, 201, this.commentJson(issue, comment));
      }
    }
    if (req.method === "PATCH" && (m = new RegExp(`^${prefix}/issues/comments/(\\d+)$`).exec(p))) {
      record("update");
      if (failed("update")) return;
      for (const [issue, list] of this.comments) {
        const comment = list.find((c) => c.id === Number(m![1]));
        if (comment) {
          comment.body = String((body as { body?: unknown }).body);
          return json(res, 200, this.commentJson(issue, comment));
        }
      }
      return json(res, 404, { message: "Not Found" });
    }
    // GraphQL: only the question the action asks, who the token is.
    if (req.method === "POST" && p === "/graphql") {
      record("graphql");
      if (failed("graphql")) return;
      const query = String((body as { query?: unknown } | undefined)?.query ?? "");
      if (!/^query\s*\{\s*viewer\s*\{\s*login\s*\}\s*\}$/.test(query.trim())) return json(res, 200, { errors: [{ message: `the fake answers only viewer { login }, not ${query}` }] });
      return json(res, 200, { data: { viewer: { login: this.loginOf(req) } } });
    }
    record("unknown");
    json(res, 404, { message: "Not Found", documentation_url: "https://docs.github.com/rest" });
  }

  private handleBlob(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? "/", this.blobUrl);
    this.requests.push({ route: "blob", method: req.method ?? "", url: url.pathname + url.search, authorization: req.headers.authorization });
    const artifact = this.runs.flatMap((r) => r.artifacts).find((a) => `/blob/${a.id}` === url.pathname);
    if (!artifact || url.searchParams.get("sig") !== "signed") return void res.writeHead(403).end("AuthenticationFailed");
    const zip = zipSync(Object.fromEntries(Object.entries(artifact.files).map(([name, text]) => [name, strToU8(text)])));
    res.writeHead(200, { "content-type": "application/zip", "content-length": zip.length }).end(Buffer.from(zip));
  }

  /** GitHub's pagination: page/per_page, and a Link header with rel="next" and rel="last". */
  private page<T>(res: ServerResponse, url: URL, all: T[], wrap: (items: T[], total: number) => unknown): void {
    const perPage = Math.min(Number(url.searchParams.get("per_page") ?? 30), this.maxPerPage);
    const page = Number(url.searchParams.get("page") ?? 1);
    const items = all.slice((page - 1) * perPage, page * perPage);
    const last = Math.max(1, Math.ceil(all.length / perPage));
    const link = (n: number) => {
      const next = new URL(url);
      next.searchParams.set("page", String(n));
      return `<${this.apiUrl}${next.pathname}${next.search}>`;
    };
    const headers: Record<string, string> = {};
    if (page < last) headers.link = `${link(page + 1)}; rel="next", ${link(last)}; rel="last"`;
    json(res, 200, wrap(items, all.length), headers);
  }
}

function listen(handler: (req: IncomingMessage, res: ServerResponse) => void | Promise<void>): Promise<Server> {
  const server = createServer((req, res) => void handler(req, res));
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

async function readBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString("utf8");
  return text ? JSON.parse(text) : undefined;
}

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { "content-type": "application/json; charset=utf-8", ...headers }).end(JSON.stringify(body));
}

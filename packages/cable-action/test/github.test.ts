import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { downloadBaseline } from "../src/baseline.js";
import { GitHubApiError, createClient } from "../src/client.js";
import { main } from "../src/cli.js";
import { markerOf, ownLogin, upsertComment } from "../src/comment.js";
import { ContextError, readRunnerContext, workflowFileOf } from "../src/context.js";
import { ACTIONS_BOT, FakeGitHub, type FakeRun } from "./fake-github.js";

const TOKEN = "ghs_test-token";
const merged = (label: string) => JSON.stringify({ label });

let gh: FakeGitHub;
let work: string;

beforeEach(async () => {
  gh = await new FakeGitHub("octo", "app").start();
  work = mkdtempSync(path.join(os.tmpdir(), "cable-action-"));
});
afterEach(async () => {
  await gh.close();
  rmSync(work, { recursive: true, force: true });
});

const client = (timeoutMs?: number) => createClient({ token: TOKEN, baseUrl: gh.apiUrl, timeoutMs });
const run = (id: number, over: Partial<FakeRun> = {}): FakeRun => ({
  id,
  branch: "main",
  conclusion: "success",
  headRepository: "octo/app",
  workflow: "loadtest.yml",
  artifacts: [{ id: id * 10, name: "loadtest-merged", files: { "merged.json": merged(`run ${id}`) } }],
  ...over,
});
const query = { owner: "octo", repo: "app", workflowFile: "loadtest.yml", branch: "main", artifact: "loadtest-merged" };

describe("baseline: the default branch's newest successful run with the artifact", () => {
  it("pages through runs, skipping forks, failures, other branches, expired and missing artifacts, and the asking run", async () => {
    gh.maxPerPage = 2;
    gh.runs = [
      run(9, { id: 9 }), // the run asking: never its own baseline
      run(8, { headRepository: "fork/app" }), // a fork's pull request from a branch named main
      run(7, { conclusion: "failure" }),
      run(6, { branch: "feature" }),
      run(5, { artifacts: [{ id: 50, name: "loadtest-merged", expired: true, files: { "merged.json": merged("expired") } }] }),
      run(4, { artifacts: [{ id: 40, name: "other", files: { "merged.json": merged("other artifact") } }] }),
      run(3, { artifacts: [{ id: 30, name: "loadtest-merged", files: { "loadtest/merged.json": merged("run 3") } }] }),
      run(2),
    ];
    const result = await downloadBaseline(client(), { ...query, excludeRunId: 9 }, path.join(work, "baseline"));
    expect(result).toMatchObject({ found: true, runId: 3, artifactId: 30, runUrl: "https://github.com/octo/app/actions/runs/3" });
    expect(readFileSync(path.join(work, "baseline/merged.json"), "utf8")).toBe(merged("run 3"));

    const runPages = gh.requests.filter((r) => r.route === "runs").map((r) => new URL(r.url, gh.apiUrl).searchParams.get("page") ?? "1");
    expect(runPages).toEqual(["1", "2", "3"]); // 6 successful runs on main, 2 per page, found on the third page
    expect(gh.requests.find((r) => r.route === "runs")!.url).toContain("status=success");
    // The token goes to the API, never to the blob storage the download redirects to.
    expect(gh.requests.filter((r) => r.route !== "blob").every((r) => r.authorization === `token ${TOKEN}`)).toBe(true);
    expect(gh.requests.filter((r) => r.route === "blob")).toEqual([expect.objectContaining({ authorization: undefined })]);
  });

  it("is no baseline, without error, when no run has one, the workflow has no runs (404), or the search bound is reached", async () => {
    gh.runs = [run(2, { artifacts: [] }), run(1, { conclusion: "failure" })];
    expect(await downloadBaseline(client(), query, work)).toEqual({ found: false, reason: "no successful run of loadtest.yml on main has an unexpired loadtest-merged artifact" });
    expect(await downloadBaseline(client(), { ...query, branch: "trunk" }, work)).toEqual({ found: false, reason: "no successful run of loadtest.yml on trunk yet" });
    expect(await downloadBaseline(client(), { ...query, workflowFile: "new.yml" }, work)).toMatchObject({ found: false, reason: expect.stringContaining("no runs of new.yml on main") });

    gh.maxPerPage = 5;
    gh.requests = [];
    gh.runs = Array.from({ length: 40 }, (_, i) => run(100 - i, { artifacts: [] }));
    expect(await downloadBaseline(client(), { ...query, maxRuns: 12 }, work)).toMatchObject({ found: false, reason: expect.stringContaining("last 12 successful runs") });
    expect(gh.requests.filter((r) => r.route === "artifacts").length).toBe(12);
  });

  it("names the missing permission on a 403, from the runs, the artifacts or the download", async () => {
    gh.runs = [run(1)];
    for (const route of ["runs", "artifacts", "download"] as const) {
      gh.failures.clear();
      gh.failures.set(route, 403);
      const err = await downloadBaseline(client(), query, work).catch((e: unknown) => e);
      expect(err, route).toBeInstanceOf(GitHubApiError);
      expect((err as GitHubApiError).status).toBe(403);
      expect((err as Error).message).toMatch(/^GitHub answered 403 to (listing|downloading) .*: Resource not accessible by integration; the workflow needs `permissions: actions: read`$/);
    }
  });

  it("a run whose artifacts are gone (404) is skipped; an API that does not answer fails in bounded time", async () => {
    gh.runs = [run(2), run(1)];
    gh.failures.set("artifacts", 404);
    expect(await downloadBaseline(client(), query, work)).toMatchObject({ found: false });

    gh.failures.set("runs", "hang");
    const started = Date.now();
    const err = await downloadBaseline(client(500), query, work).catch((e: unknown) => e);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect((err as Error).message).toBe("GitHub answered 0 to listing the runs of loadtest.yml: no answer (network error or timeout)");
  });
});

describe("sticky comment", () => {
  const sticky = { owner: "octo", repo: "app", issue: 7, header: "loadtest", body: "## Load test\n| a | b |" };

  it("creates one comment, then updates that same comment, found again across pages among others", async () => {
    gh.maxPerPage = 2;
    for (let i = 0; i < 3; i++) gh.addComment(7, `review ${i}`);
    gh.addComment(7, `${markerOf("other-scenario")}\nanother report`);

    const created = await upsertComment(client(), sticky);
    expect(created.action).toBe("created");
    for (let i = 0; i < 3; i++) gh.addComment(7, `later ${i}`);
    const updated = await upsertComment(client(), { ...sticky, body: "## Load test, again" });
    expect(updated).toMatchObject({ action: "updated", id: created.id, url: `https://github.com/octo/app/pull/7#issuecomment-${created.id}` });

    const ours = gh.comments.get(7)!.filter((c) => c.body.startsWith(markerOf("loadtest")));
    expect(ours.map((c) => c.body)).toEqual([`${markerOf("loadtest")}\n## Load test, again`]);
    expect(gh.comments.get(7)!.find((c) => c.body.includes("another report"))!.body).toBe(`${markerOf("other-scenario")}\nanother report`);
    const pages = gh.requests.filter((r) => r.route === "comments").map((r) => new URL(r.url, gh.apiUrl).searchParams.get("page") ?? "1");
    expect(pages).toEqual(["1", "2", "1", "2", "3"]); // 4 comments, then 8 with ours the 5th; 2 per page
  });

  it("is ours: a comment by anyone else that starts with the marker is left alone, never updated", async () => {
    // Anyone who can comment on the pull request can write the marker, before or after our comment.
    const forged = gh.addComment(7, `${markerOf("loadtest")}\n## Load test\nall green ✅`, "mallory");
    const created = await upsertComment(client(), sticky);
    expect(created.action).toBe("created");
    gh.addComment(7, `${markerOf("loadtest")}\nall green, again`, "mallory");
    const updated = await upsertComment(client(), { ...sticky, body: "## Load test, again" });
    expect(updated).toMatchObject({ action: "updated", id: created.id });

    const comments = gh.comments.get(7)!;
    expect(comments.find((c) => c.id === forged.id)!.body).toBe(`${markerOf("loadtest")}\n## Load test\nall green ✅`);
    expect(comments.filter((c) => c.user === ACTIONS_BOT).map((c) => c.body)).toEqual([`${markerOf("loadtest")}\n## Load test, again`]);
    expect(gh.requests.filter((r) => r.route === "update").map((r) => r.url)).toEqual([`/repos/octo/app/issues/comments/${created.id}`]);
  });

  it("knows its own account from GraphQL's viewer, for the job's token, an app's or a person's", async () => {
    expect(await ownLogin(client())).toBe(ACTIONS_BOT);
    gh.logins.set(TOKEN, "cable-bot[bot]");
    expect(await ownLogin(client())).toBe("cable-bot[bot]");
    // The Actions bot's comment is not this app's.
    gh.addComment(7, `${markerOf("loadtest")}\nold`, ACTIONS_BOT);
    expect((await upsertComment(client(), sticky)).action).toBe("created");
    expect(gh.comments.get(7)!.map((c) => c.user)).toEqual([ACTIONS_BOT, "cable-bot[bot]"]);
    gh.failures.set("graphql", 403);
    await expect(upsertComment(client(), sticky)).rejects.toThrow("GitHub answered 403 to asking GitHub which account this token is: Resource not accessible by integration");
  });

  it("names the permission on a 403 and the pull request on a 404", async () => {
    gh.comments.set(7, []);
    gh.failures.set("create", 403);
    await expect(upsertComment(client(), sticky)).rejects.toThrow(
      "GitHub answered 403 to commenting on pull request #7: Resource not accessible by integration; the workflow needs `permissions: pull-requests: write` (a pull request from a fork gets a read-only token: the report is in the job summary)",
    );
    gh.failures.clear();
    await expect(upsertComment(client(), { ...sticky, issue: 8 })).rejects.toThrow("GitHub answered 404 to listing the comments of pull request #8: Not Found");
    gh.addComment(7, `${markerOf("loadtest")}\nold`, ACTIONS_BOT);
    gh.failures.set("update", 403);
    await expect(upsertComment(client(), sticky)).rejects.toThrow(/^GitHub answered 403 to updating comment \d+: Resource not accessible/);
  });

  it("keeps the body under GitHub's 65,536 characters", async () => {
    gh.comments.set(7, []);
    await upsertComment(client(), { ...sticky, body: "x".repeat(70_000) });
    const [comment] = gh.comments.get(7)!;
    expect(comment.body.length).toBe(65_536);
    expect(comment.body.endsWith("… cut: the full report is in the job summary.")).toBe(true);
  });
});

describe("the runner's context and the CLI", () => {
  let events = 0;
  const event = (payload: unknown) => {
    const file = path.join(work, `event-${++events}.json`);
    writeFileSync(file, JSON.stringify(payload));
    return file;
  };
  const env = (over: Record<string, string> = {}): NodeJS.ProcessEnv => ({
    GITHUB_TOKEN: TOKEN,
    GITHUB_API_URL: gh.apiUrl,
    GITHUB_REPOSITORY: "octo/app",
    GITHUB_WORKFLOW_REF: "octo/app/.github/workflows/loadtest.yml@refs/pull/7/merge",
    GITHUB_RUN_ID: "99",
    GITHUB_EVENT_NAME: "pull_request",
    GITHUB_EVENT_PATH: event({ repository: { default_branch: "main" }, pull_request: { number: 7 } }),
    GITHUB_OUTPUT: path.join(work, "output"),
    ...over,
  });
  const io = () => {
    const lines = { out: [] as string[], err: [] as string[] };
    return { lines, io: { out: (l: string) => lines.out.push(l), err: (l: string) => lines.err.push(l) } };
  };

  it("reads the workflow file, the default branch and the pull request as the runner sets them", () => {
    expect(readRunnerContext(env())).toMatchObject({ owner: "octo", repo: "app", workflowFile: "loadtest.yml", defaultBranch: "main", pullRequest: 7, runId: 99, apiUrl: gh.apiUrl });
    expect(workflowFileOf("octo/app/.github/workflows/load test.yaml@refs/heads/main")).toBe("load test.yaml");
    expect(() => readRunnerContext(env({ GITHUB_TOKEN: "" }))).toThrow(ContextError);
    expect(() => readRunnerContext(env({ GITHUB_REPOSITORY: "octo" }))).toThrow('GITHUB_REPOSITORY must be owner/name, got "octo"');
  });

  it("baseline writes the file and the step output; comment posts and sets the url; a 403 comment is a warning", async () => {
    gh.runs = [run(5)];
    gh.comments.set(7, []);
    const out = io();
    expect(await main(["baseline", "--artifact", "loadtest-merged", "--out", path.join(work, "b")], env(), out.io)).toBe(0);
    writeFileSync(path.join(work, "report.md"), "## report");
    expect(await main(["comment", "--body-file", path.join(work, "report.md"), "--header", "loadtest"], env(), out.io)).toBe(0);
    const outputs = readFileSync(path.join(work, "output"), "utf8");
    expect(outputs).toBe(
      `path=${path.join(work, "b", "merged.json")}\nrun-url=https://github.com/octo/app/actions/runs/5\nurl=https://github.com/octo/app/pull/7#issuecomment-${gh.comments.get(7)![0].id}\n`,
    );

    gh.failures.set("update", 403);
    const warned = io();
    expect(await main(["comment", "--body-file", path.join(work, "report.md"), "--header", "loadtest"], env(), warned.io)).toBe(0);
    expect(warned.lines.out).toEqual([expect.stringMatching(/^::warning title=cable-action::GitHub answered 403 to updating comment \d+: .*pull-requests: write/)]);

    gh.failures.set("runs", 403);
    const failed = io();
    expect(await main(["baseline", "--artifact", "loadtest-merged", "--out", path.join(work, "b")], env(), failed.io)).toBe(1);
    expect(failed.lines.out).toEqual([expect.stringMatching(/^::error title=cable-action::GitHub answered 403 to listing the runs of loadtest.yml: .*actions: read`$/)]);

    const usage = io();
    expect(await main(["comment", "--body-file", "x"], env({ GITHUB_EVENT_PATH: event({ repository: { default_branch: "main" } }), GITHUB_EVENT_NAME: "push" }), usage.io)).toBe(2);
    expect(usage.lines.err[0]).toBe("cable-action: no pull request to comment on (event push): pass --issue");
    expect(await main(["comment", "--body-file", path.join(work, "missing.md")], env(), usage.io)).toBe(2);
    expect(usage.lines.err[1]).toMatch(/^cable-action: cannot read .*missing.md \(ENOENT\)/);
    expect(await main(["nope"], env(), usage.io)).toBe(2);
  });
});

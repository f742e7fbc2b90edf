import { execFileSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { type LocalTarget, startTarget } from "cable-local-target";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse, stringify } from "yaml";
import { markerOf } from "../src/comment.js";
import { type CompositeRun, type StepRecord, runComposite } from "./composite-runner.js";
import { FakeGitHub } from "./fake-github.js";
import { chatScenario } from "./user-scenario.js";

// The action's `history: branch` input: every run kept as one file under <name>/ in the branch
// cable-loadtest-history of the user's own repository, pushed from the default branch's runs only,
// read by every run (a pull request's too) for the band and the trend. The action's steps as a user's
// job runs them (composite-runner.ts), in a temporary user repository that is a shallow clone of a
// bare "origin" (as actions/checkout leaves it), the local backend against the local target, with
// one change: "Install the tool" puts this repository's built cable-fanout, cable-report and
// cable-action on the PATH (action.test.ts covers the install).

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
const HISTORY_BRANCH = "cable-loadtest-history";
const BOT = "github-actions[bot] <41898282+github-actions[bot]@users.noreply.github.com>";

// 10 users, 30 round trips: a short run that still has the gated latency.
const SCENARIO = chatScenario({ duration: 2, arrivalRate: 5 });

let work: string;
let action: string;
let origin: string;
let userRepo: string;
let gitConfig: string;
let target: LocalTarget;
let gh: FakeGitHub;
let jobs = 0;
let headCommit = "";

const git = (cwd: string, ...args: string[]) =>
  execFileSync("git", args, { cwd, encoding: "utf8", env: { ...process.env, GIT_CONFIG_GLOBAL: gitConfig, GIT_CONFIG_NOSYSTEM: "1" } }).trim();

beforeAll(async () => {
  work = mkdtempSync(path.join(os.tmpdir(), "cable-action-history-"));
  gitConfig = path.join(work, "gitconfig");
  writeFileSync(gitConfig, "");
  const bin = path.join(work, "bin");
  mkdirSync(bin);
  for (const [name, file] of [
    ["cable-fanout", "packages/cable-fanout/bin/cable-fanout.js"],
    ["cable-report", "packages/cable-report/bin/cable-report.js"],
    ["cable-action", "packages/cable-action/bin/cable-action.js"],
  ]) {
    writeFileSync(path.join(bin, name), `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(path.join(ROOT, file))} "$@"\n`);
    chmodSync(path.join(bin, name), 0o755);
  }
  // action.yml as it is, but for the install step.
  const yaml = parse(readFileSync(path.join(ROOT, "action.yml"), "utf8")) as { runs: { steps: Array<{ name?: string; run?: string }> } };
  const install = yaml.runs.steps.find((s) => s.name === "Install the tool")!;
  install.run = `echo ${JSON.stringify(bin)} >> "$GITHUB_PATH"\necho "ARTILLERY_DISABLE_TELEMETRY=true" >> "$GITHUB_ENV"\n`;
  action = path.join(work, "action.yml");
  writeFileSync(action, stringify(yaml));

  // The user's repository on "GitHub" (a bare origin), and the job's checkout of it: a shallow clone.
  origin = path.join(work, "origin.git");
  git(work, "init", "-q", "--bare", "-b", "main", origin);
  const seed = path.join(work, "seed");
  mkdirSync(path.join(seed, "loadtest"), { recursive: true });
  writeFileSync(path.join(seed, "package.json"), "{}\n");
  writeFileSync(path.join(seed, "loadtest/chat.yml"), SCENARIO);
  git(seed, "init", "-q", "-b", "main");
  git(seed, "add", ".");
  git(seed, "-c", "user.name=Dev", "-c", "user.email=dev@example.com", "commit", "-q", "-m", "the app");
  git(seed, "push", "-q", origin, "main");
  headCommit = git(seed, "rev-parse", "HEAD");
  userRepo = path.join(work, "app");
  git(work, "clone", "-q", "--depth=1", `file://${origin}`, userRepo);

  target = await startTarget({ port: 0 });
  gh = await new FakeGitHub("octo", "app").start();
  gh.comments.set(7, []);
}, 120_000);

afterAll(async () => {
  await Promise.all([target?.close(), gh?.close()]);
  await rm(work, { recursive: true, force: true });
});

type Event = { name: "push" } | { name: "pull_request"; number: number; head: string };

/** The URL upload-artifact@v4 answers with (its artifact-url output). */
const artifactUrl = (runId: number, name: string) => `https://github.com/octo/app/actions/runs/${runId}/artifacts/${name}`;

/** One job of the user's workflow: a fresh RUNNER_TEMP, the runner's GITHUB_* variables for the event. */
function job(event: Event, inputs: Record<string, string>, onUpload?: (name: string) => void): Promise<CompositeRun> {
  const runId = 300 + ++jobs;
  const runnerTemp = path.join(work, `job-${runId}`, "_temp");
  mkdirSync(runnerTemp, { recursive: true });
  const eventPath = path.join(runnerTemp, "event.json");
  const pr = event.name === "pull_request";
  const payload = pr ? { repository: { default_branch: "main" }, pull_request: { number: event.number } } : { repository: { default_branch: "main" }, ref: "refs/heads/main" };
  writeFileSync(eventPath, JSON.stringify(payload));
  const ref = pr ? `refs/pull/${event.number}/merge` : "refs/heads/main";
  return runComposite(action, {
    workspace: userRepo,
    actionPath: ROOT,
    runnerTemp,
    toolCache: path.join(work, "toolcache"),
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      // This machine's git configuration stays out of the job (a runner's has none).
      GIT_CONFIG_GLOBAL: gitConfig,
      GIT_CONFIG_NOSYSTEM: "1",
      CI: "true",
      GITHUB_ACTIONS: "true",
      GITHUB_EVENT_NAME: event.name,
      GITHUB_EVENT_PATH: eventPath,
      GITHUB_REPOSITORY: "octo/app",
      GITHUB_REF: ref,
      GITHUB_REF_NAME: pr ? `${event.number}/merge` : "main",
      GITHUB_HEAD_REF: pr ? event.head : "",
      GITHUB_SHA: headCommit,
      GITHUB_WORKFLOW_REF: `octo/app/.github/workflows/loadtest.yml@${ref}`,
      GITHUB_RUN_ID: String(runId),
      GITHUB_API_URL: gh.apiUrl,
      GITHUB_SERVER_URL: "https://github.com",
      RUNNER_OS: "Linux",
    },
    github: { event_name: event.name, token: "ghs_job-token", repository: "octo/app", ref, run_id: String(runId), event: payload },
    inputs: { scenario: "loadtest/chat.yml", target: target.cableUrl, history: "branch", ...inputs },
    usesOutputs: (s) => {
      if (s.uses !== "actions/upload-artifact@v4") return undefined;
      onUpload?.(s.with.name);
      return { "artifact-url": artifactUrl(runId, s.with.name) };
    },
    stepTimeoutMs: 120_000,
  });
}

const step = (run: CompositeRun, id: string): StepRecord => {
  const found = run.steps.find((s) => s.id === id || s.name === id);
  if (!found) throw new Error(`no step ${id}`);
  return found;
};
const log = (run: CompositeRun) => run.steps.map((s) => `--- ${s.name}: ${s.outcome}\n${s.stdout}${s.stderr}`).join("\n");

/**
 * The job did all it should: every step succeeded (or was skipped), the gate included. These runs
 * are judged at the action's default 20% against the runs before them (A/A on the local target);
 * the file is one of the timed ones (vitest.config.ts), which have the machine to themselves.
 */
function passedOrRegressed(run: CompositeRun): void {
  for (const s of run.steps) expect(s.outcome, `${s.name}\n${log(run)}`).not.toBe("failure");
  expect(run.outputs["exit-code"], log(run)).toBe("0");
  expect(run.conclusion, log(run)).toBe("success");
}

/** The history branch on origin: its tip, and the files of its tip's tree. */
function branchOnOrigin(): { tip: string; files: string[] } | undefined {
  const tip = git(origin, "for-each-ref", "--format=%(objectname)", `refs/heads/${HISTORY_BRANCH}`);
  if (!tip) return undefined;
  return { tip, files: git(origin, "ls-tree", "-r", "--name-only", tip).split("\n").filter(Boolean) };
}

/** What the user's checkout is: its refs, HEAD, index and working tree (the action must leave it alone). */
const checkoutState = () => ({
  refs: git(userRepo, "for-each-ref", "--format=%(refname) %(objectname)"),
  head: git(userRepo, "rev-parse", "HEAD"),
  status: git(userRepo, "status", "--porcelain", "--untracked-files=all"),
});

describe("history: branch (the local backend, a user repository with a bare origin)", () => {
  let before: ReturnType<typeof checkoutState>;
  let firstRecord = "";

  it("a push to main starts the branch: an orphan commit by github-actions[bot] with one record under <name>/", async () => {
    before = checkoutState();
    const run = await job({ name: "push" }, {});
    passedOrRegressed(run);
    expect(step(run, "history").stdout).toContain(`history: no branch ${HISTORY_BRANCH} on origin yet: this run starts the history`);
    expect(step(run, "baseline").outcome).toBe("skipped");
    expect(step(run, "history-push").outcome).toBe("success");
    const branch = branchOnOrigin();
    expect(branch?.files).toHaveLength(1);
    expect(branch!.files[0]).toMatch(/^loadtest\/\d{8}T\d{6}Z-.+\.json$/);
    expect(git(origin, "log", "--format=%an <%ae>|%cn <%ce>|%P|%s", branch!.tip)).toBe(`${BOT}|${BOT}||cable-loadtest history: loadtest, run ${run.outputs["run-id"]} of ${headCommit.slice(0, 12)} [skip ci]`);
    // The file is the run's own record (results/<runId>/history.json), as cable-fanout kept it.
    firstRecord = git(origin, "show", `${branch!.tip}:${branch!.files[0]}`);
    expect(`${firstRecord}\n`).toBe(readFileSync(path.join(run.outputs.results, "history.json"), "utf8"));
    expect(JSON.parse(firstRecord).run).toMatchObject({ branch: "main", commit: headCommit });
    // The folder the branch's records of this name were fetched into, beside the run's results.
    expect(run.outputs.history).toBe(path.join(path.dirname(path.dirname(run.outputs.results)), "cable-loadtest-history-loadtest", "loadtest"));
    expect(readdirSync(run.outputs.history)).toEqual([path.basename(branch!.files[0])]);
    expect(readFileSync(run.outputs.report, "utf8")).toContain("### Against the history");
    // The user's checkout: same refs, HEAD, index and working tree.
    expect(checkoutState()).toEqual(before);
  }, 120_000);

  it("a second push adds its own file on top; the trend of main is drawn and kept as the NAME-trend artifact", async () => {
    const first = branchOnOrigin()!;
    const run = await job({ name: "push" }, {});
    passedOrRegressed(run);
    expect(step(run, "history").stdout).toContain(`history: 1 record(s) of loadtest in the branch ${HISTORY_BRANCH} (${first.tip.slice(0, 12)})`);
    const branch = branchOnOrigin()!;
    expect(branch.files).toHaveLength(2);
    expect(branch.files).toContain(first.files[0]);
    expect(git(origin, "rev-parse", `${branch.tip}^`)).toBe(first.tip);
    expect(readFileSync(run.outputs.report, "utf8")).toContain("- **Baseline:** the newest comparable run in the history");
    // trend.md and trend.html, of main's runs.
    expect(run.outputs.trend).toMatch(/cable-loadtest-trend-loadtest\/trend\.md$/);
    expect(readFileSync(run.outputs.trend, "utf8")).toContain("main");
    const page = step(run, "trend-page");
    expect(page.uses).toBe("actions/upload-artifact@v4");
    expect(page.with).toMatchObject({ name: "loadtest-trend", path: path.join(path.dirname(run.outputs.trend), "trend.html") });
    expect(readFileSync(page.with!.path, "utf8")).toContain("<!doctype html>");
    expect(checkoutState()).toEqual(before);
  }, 120_000);

  it("a pull request reads the branch, is judged against main's newest run, comments with both links, and pushes nothing", async () => {
    const tip = branchOnOrigin()!.tip;
    const run = await job({ name: "pull_request", number: 7, head: "feature" }, {});
    passedOrRegressed(run);
    expect(step(run, "history").stdout).toContain("history: this run's record stays on this runner");
    expect(step(run, "baseline").outcome).toBe("skipped");
    expect(step(run, "history-push").outcome).toBe("skipped");
    const report = readFileSync(run.outputs.report, "utf8");
    expect(report).toContain("### Against the history");
    // Judged (--fail-on-regression 20%) against the newest of main's two runs.
    expect(report).toMatch(/- \*\*Baseline:\*\* the newest comparable run in the history \(run [^)]+\) — no regression beyond 20%/);
    expect(report).toContain("2 comparable runs");
    // Nothing pushed: the branch still has main's two runs; this run's record is in the folder only.
    expect(branchOnOrigin()).toEqual({ tip, files: expect.any(Array) });
    expect(branchOnOrigin()!.files).toHaveLength(2);
    expect(readdirSync(run.outputs.history)).toHaveLength(3);
    expect(JSON.parse(readFileSync(path.join(run.outputs.results, "history.json"), "utf8")).run.branch).toBe("feature");

    const comments = gh.comments.get(7)!;
    expect(comments).toHaveLength(1);
    expect(comments[0].body).toBe(
      `${markerOf("loadtest")}\n${report}\n` +
        `📈 [report.html](${artifactUrl(300 + jobs, "loadtest-report")}): every table and interactive charts over time (download, unzip, open; works offline)\n\n` +
        `📉 [trend.html](${artifactUrl(300 + jobs, "loadtest-trend")}): the last runs of \`main\`, per region, with the band and change points\n`,
    );
    expect(checkoutState()).toEqual(before);
  }, 120_000);

  it("another run that pushed in between: the push is refused as not a fast-forward, and made again on the new tip", async () => {
    // While this job runs (at its first upload), another scenario's job pushes its own record.
    const other = path.join(work, "other");
    git(work, "clone", "-q", "--branch", HISTORY_BRANCH, `file://${origin}`, other);
    const racer = () => {
      if (existsSync(path.join(other, "other"))) return;
      mkdirSync(path.join(other, "other"));
      writeFileSync(path.join(other, "other/20250101T000000Z-x.json"), "{}\n");
      git(other, "add", ".");
      git(other, "-c", "user.name=Other", "-c", "user.email=o@example.com", "commit", "-q", "-m", "another scenario's run");
      git(other, "push", "-q", "origin", HISTORY_BRANCH);
    };
    const run = await job({ name: "push" }, {}, racer);
    passedOrRegressed(run);
    const racerTip = git(other, "rev-parse", "HEAD");
    const branch = branchOnOrigin()!;
    expect(branch.files).toHaveLength(4);
    expect(branch.files).toContain("other/20250101T000000Z-x.json");
    expect(git(origin, "rev-parse", `${branch.tip}^`)).toBe(racerTip);
    expect(step(run, "history-push").stdout).not.toContain("::warning");
    expect(checkoutState()).toEqual(before);
  }, 120_000);

  it("a push the remote refuses (a protected branch) is a warning naming contents: write, and the job passes", async () => {
    const hook = path.join(origin, "hooks/pre-receive");
    writeFileSync(hook, `#!/bin/sh\nwhile read old new ref; do\n  if [ "$ref" = refs/heads/${HISTORY_BRANCH} ]; then echo "protected branch: ${HISTORY_BRANCH}" >&2; exit 1; fi\ndone\n`);
    chmodSync(hook, 0o755);
    const tip = branchOnOrigin()!.tip;
    // Not gated: the job's own outcome is the point here.
    const run = await job({ name: "push" }, { "fail-on-regression": "" });
    expect(run.conclusion, log(run)).toBe("success");
    expect(run.outputs["exit-code"]).toBe("0");
    const push = step(run, "history-push");
    expect(push.outcome).toBe("success");
    expect(push.stdout).toMatch(/::warning title=cable-loadtest::history: could not push to the branch cable-loadtest-history \(git: .*protected branch: cable-loadtest-history.*\): the job's token needs contents: write/);
    expect(branchOnOrigin()!.tip).toBe(tip);
  }, 120_000);

  it("refuses, before anything is installed or run, a history it cannot keep: stack without AWS, an unknown form, a bad branch name", async () => {
    for (const [history, message] of [
      ["stack", "history: stack keeps the runs in the first region's results bucket, which only the AWS backend has (aws-role-arn)"],
      ["gh-pages", "history must be empty, branch, branch:NAME, s3://bucket/prefix or stack, got 'gh-pages'"],
      ["branch:bad..name", "history: 'bad..name' is not a branch name git accepts"],
    ]) {
      const run = await job({ name: "push" }, { history });
      expect(run.conclusion).toBe("failure");
      const plan = step(run, "plan");
      expect(plan.exitCode).toBe(2);
      expect(plan.stdout).toContain(`::error title=cable-loadtest::${message}`);
      expect(step(run, "fanout").outcome).toBe("skipped");
    }
  }, 60_000);
});

import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { type LocalTarget, startTarget } from "cable-local-target";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { markerOf } from "../src/comment.js";
import { type CompositeRun, type JobContext, type StepRecord, loadAction, runComposite } from "./composite-runner.js";
import { FakeGitHub } from "./fake-github.js";
import { chatScenario } from "./user-scenario.js";

// The action's steps (action.yml at the repository's root) as a user's job runs them: a temporary
// "user repository" with its own scenario, the runner's GITHUB_* variables and files, the tool
// installed from this repository's packed tarballs (`tool-source`), the local backend against the
// local target, and GitHub's REST API answered by the local fake (baseline artifact, sticky comment).
//
// The action's install step is `npm install --prefer-offline artillery@2.0.34 <tarballs>` into a new
// project in the runner's tool cache, outside this repository: the packaging test proper. The
// first job's fan-out runs the installed `cable-fanout run --local`; the next test runs the installed
// `artillery run` (engine: cable, the report plugin) and `cable-report` there. One install for both
// (Artillery's tree is ~480 MB). Static tarball checks: test/packaging.test.ts at the root.
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
const ACTION = path.join(ROOT, "action.yml");
const WORKSPACES = ["artillery-engine-cable", "artillery-plugin-cable-report", "cable-worker", "cable-infra", "cable-fanout", "cable-action"];
// 20 users per task: 120 rtt samples in all, enough for the regression gate's p50 and p95 tests.
const SHORT = JSON.stringify({ config: { phases: [{ duration: 4, arrivalRate: 5 }] } });
const LONG = JSON.stringify({ config: { phases: [{ duration: 120, arrivalRate: 1 }] } });

const SCENARIO = chatScenario({ duration: 60, arrivalRate: 5 }, "The user's own scenario, in their repository.");

let work: string;
let packs: string;
let toolCache: string;
let userRepo: string;
let target: LocalTarget;
let slowTarget: LocalTarget;
let gh: FakeGitHub;
let jobs = 0;
/** The project the action's install step made: artillery@2.0.34 and the tarballs, outside the repository. */
let toolDir = "";

beforeAll(async () => {
  work = mkdtempSync(path.join(os.tmpdir(), "cable-action-job-"));
  packs = path.join(work, "packs");
  toolCache = path.join(work, "toolcache");
  mkdirSync(packs);
  // Asynchronously: a blocked worker misses vitest's RPC deadline on a busy machine.
  const pack = await runIn(ROOT, "npm", ["pack", "--pack-destination", packs, ...WORKSPACES.flatMap((w) => ["-w", w])], process.env);
  if (pack.status !== 0) throw new Error(`npm pack failed: ${pack.stderr}`);
  userRepo = path.join(work, "user-app");
  mkdirSync(path.join(userRepo, "loadtest"), { recursive: true });
  writeFileSync(path.join(userRepo, "loadtest/chat.yml"), SCENARIO);
  target = await startTarget({ port: 0 });
  // The same server, slow on purpose: every broadcast held back 150 ms (the regression).
  slowTarget = await startTarget({ port: 0, faults: { broadcastDelayMs: 150 } });
  gh = await new FakeGitHub("octo", "app").start();
  gh.comments.set(7, []);
}, 300_000);

afterAll(async () => {
  await Promise.all([target?.close(), slowTarget?.close(), gh?.close()]);
  // Asynchronously: the tool cache holds Artillery's ~480 MB; a synchronous delete blocks the worker
  // past vitest's RPC deadline on a busy machine.
  await rm(work, { recursive: true, force: true });
}, 300_000);

type Event = { name: "push" } | { name: "pull_request"; number: number };

/** What a runner's environment says about reaching the network: CAs to trust and proxies. */
const MACHINE_NETWORK_ENV = ["NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "npm_config_cafile", "HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy"];

/** One job of the user's workflow: a fresh RUNNER_TEMP, the shared tool cache, the event's files. */
function job(event: Event, inputs: Record<string, string>, extra: Partial<JobContext> = {}): Promise<CompositeRun> {
  const runId = 100 + ++jobs;
  const runnerTemp = path.join(work, `job-${runId}`, "_temp");
  mkdirSync(runnerTemp, { recursive: true });
  const eventPath = path.join(runnerTemp, "_github_workflow", "event.json");
  mkdirSync(path.dirname(eventPath), { recursive: true });
  const payload = event.name === "pull_request" ? { repository: { default_branch: "main" }, pull_request: { number: event.number } } : { repository: { default_branch: "main" }, ref: "refs/heads/main" };
  writeFileSync(eventPath, JSON.stringify(payload));
  const ref = event.name === "pull_request" ? `refs/pull/${event.number}/merge` : "refs/heads/main";
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    // The machine's own trust and proxy settings, which a runner's jobs inherit: where the registry
    // is reached through a proxy with its own CA, npm on setup-node's Node (whose npmrc has no
    // cafile) trusts it only through these (without them: SELF_SIGNED_CERT_IN_CHAIN, then ERESOLVE).
    ...Object.fromEntries(MACHINE_NETWORK_ENV.filter((name) => process.env[name]).map((name) => [name, process.env[name]])),
    CI: "true",
    GITHUB_ACTIONS: "true",
    GITHUB_EVENT_NAME: event.name,
    GITHUB_EVENT_PATH: eventPath,
    GITHUB_REPOSITORY: "octo/app",
    GITHUB_REF: ref,
    GITHUB_WORKFLOW_REF: `octo/app/.github/workflows/loadtest.yml@${ref}`,
    GITHUB_RUN_ID: String(runId),
    GITHUB_API_URL: gh.apiUrl,
    GITHUB_SERVER_URL: "https://github.com",
    RUNNER_OS: "Linux",
    // npm on this machine's Node 20 once stalled for good mid-install (every thread idle, the main
    // one in epoll_wait beside libuv's io_uring rings; lost io_uring completions are a known libuv
    // hang) and the job hit its timeout. libuv's own switch keeps io_uring out of the job's
    // processes; the action itself is unchanged.
    UV_USE_IO_URING: "0",
    // The job's env: the local backend passes secrets named in `secrets:` from here.
    PUSHER_APP_SECRET: "local-secret",
  };
  return runComposite(ACTION, {
    workspace: userRepo,
    actionPath: ROOT,
    runnerTemp,
    toolCache,
    env,
    github: { event_name: event.name, token: "ghs_job-token", repository: "octo/app", ref, run_id: String(runId), event: payload },
    inputs: { scenario: "loadtest/chat.yml", regions: "local-a,local-b", "tool-source": packs, ...inputs },
    // The install step copies Artillery's ~480 MB tree: on a 2-core machine busy with another test
    // file it has taken minutes, and a step killed mid-install leaves no tool for the next job.
    stepTimeoutMs: 480_000,
    ...extra,
  });
}

function runIn(cwd: string, command: string, args: string[], env: NodeJS.ProcessEnv): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    const timer = setTimeout(() => child.kill("SIGKILL"), 180_000);
    child.once("close", (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
  });
}

/** The run record lists started tasks in both regions. */
function startedEverywhere(out: string): boolean {
  if (!existsSync(out)) return false;
  for (const dir of readdirSync(out)) {
    const record = path.join(out, dir, "fanout.json");
    if (!dir.startsWith(".") && existsSync(record)) {
      try {
        const started = (JSON.parse(readFileSync(record, "utf8")) as { started?: Record<string, unknown[]> }).started ?? {};
        return ["local-a", "local-b"].every((r) => (started[r] ?? []).length > 0);
      } catch {
        return false; // being written
      }
    }
  }
  return false;
}

const step = (run: CompositeRun, name: string): StepRecord => {
  const found = run.steps.find((s) => s.name === name || s.id === name);
  if (!found) throw new Error(`no step ${name}`);
  return found;
};
const outcomes = (run: CompositeRun) => Object.fromEntries(run.steps.map((s) => [s.id ?? s.name, s.outcome]));
const log = (run: CompositeRun) => run.steps.map((s) => `--- ${s.name}: ${s.outcome}\n${s.stdout}${s.stderr}`).join("\n");

describe("the action in a user's job (local backend)", () => {
  let pushRun: CompositeRun;

  it("on a push to main: installs the tool, runs the fan-out, fills the job summary, keeps merged.json", async () => {
    pushRun = await job({ name: "push" }, { target: target.cableUrl, overrides: SHORT, secrets: "PUSHER_APP_SECRET\n" });
    expect(pushRun.conclusion, log(pushRun)).toBe("success");
    expect(outcomes(pushRun)).toEqual({
      plan: "success",
      "actions/setup-node@v4": "success",
      "Install the tool": "success",
      "AWS credentials": "skipped",
      history: "skipped",
      baseline: "skipped",
      fanout: "success",
      "Keep merged.json (the next baseline)": "success",
      html: "success",
      "history-push": "skipped",
      trend: "skipped",
      "trend-page": "skipped",
      comment: "skipped",
      "Stop the run's tasks (job cancelled)": "skipped",
      "Verdict": "success",
    });
    const { report, merged, "run-id": runId, "exit-code": exitCode } = pushRun.outputs;
    expect(exitCode).toBe("0");
    expect(report).toBe(path.join(path.dirname(merged), "report.md"));
    expect(path.basename(path.dirname(report))).toBe(runId);
    expect(pushRun.outputs.results).toBe(path.dirname(report));
    expect(readdirSync(pushRun.outputs.results).sort()).toEqual(["fanout.json", "local-a", "local-b", "merged.json", "report.html", "report.md"]);
    // report.html is kept as an artifact of its own, which the comment links to.
    const page = step(pushRun, "html");
    expect(page.uses).toBe("actions/upload-artifact@v4");
    expect(page.with).toMatchObject({ name: "loadtest-report", path: path.join(pushRun.outputs.results, "report.html") });
    expect(pushRun.outputs.html).toBe(page.with!.path);
    expect(readFileSync(pushRun.outputs.html, "utf8")).toContain("<!doctype html>");

    // The summary is report.md; the artifact step uploads files that exist.
    const reportText = readFileSync(report, "utf8");
    expect(pushRun.summary).toBe(reportText);
    expect(reportText).toContain("| Metric | local-a | local-b | **all regions** |");
    expect(reportText).toMatch(/\| Created \| 20 \| 20 \| 40 \|/);
    const upload = step(pushRun, "Keep merged.json (the next baseline)");
    expect(upload.uses).toBe("actions/upload-artifact@v4");
    expect(upload.with!.name).toBe("loadtest-merged");
    const files = upload.with!.path.split("\n").filter(Boolean);
    expect(files).toEqual([merged, report]);
    for (const file of files) expect(existsSync(file), file).toBe(true);
    expect(JSON.parse(readFileSync(merged, "utf8")).all.counters["vusers.created"]).toBe(40);
    // The tool came from the tarballs, into the runner's tool cache, pinned Artillery.
    const installs = readdirSync(path.join(toolCache, "cable-loadtest")).filter((d) => !d.endsWith(".complete"));
    expect(installs).toHaveLength(1);
    toolDir = path.join(toolCache, "cable-loadtest", installs[0]);
    expect(JSON.parse(readFileSync(path.join(toolDir, "node_modules/artillery/package.json"), "utf8")).version).toBe("2.0.34");
    // The fan-out step found cable-fanout through GITHUB_PATH: the installed tarball's bin.
    expect(execFileSync("bash", ["-c", "command -v cable-fanout"], { env: { PATH: `${path.join(toolDir, "node_modules/.bin")}:/usr/bin:/bin` }, encoding: "utf8" }).trim()).toBe(path.join(toolDir, "node_modules/.bin/cable-fanout"));

    // What the upload keeps becomes the default branch's run, with its artifact, on the fake API.
    gh.runs.push({ id: 101, branch: "main", conclusion: "success", headRepository: "octo/app", workflow: "loadtest.yml", artifacts: [{ id: 5001, name: "loadtest-merged", files: { "merged.json": readFileSync(merged, "utf8"), "report.md": reportText } }] });
  }, 600_000);

  it("the installed tarballs work in that fresh project: npx artillery run with engine: cable and the report plugin, npx cable-report", async () => {
    // Asynchronously: the target runs in this process.
    const npx = (args: string[]) => runIn(toolDir, "npx", ["--no", ...args], { ...process.env, ARTILLERY_DISABLE_TELEMETRY: "true" });
    expect(path.relative(ROOT, toolDir).startsWith("..")).toBe(true);
    writeFileSync(path.join(toolDir, "chat.yml"), SCENARIO.replace("  engines:\n    cable: {}\n", "  engines:\n    cable: {}\n  plugins:\n    cable-report: {}\n"));
    mkdirSync(path.join(toolDir, "results/local"), { recursive: true });
    const artillery = await npx(["artillery", "run", "--target", target.cableUrl, "--overrides", SHORT, "-o", "results/local/report.json", "chat.yml"]);
    expect(artillery.status, artillery.stderr + artillery.stdout).toBe(0);
    expect(artillery.stdout).toMatch(/cable\.rtt:/);
    expect(artillery.stdout).toMatch(/vusers\.completed: \.+ 20\n/);
    // The report plugin, loaded by Artillery from the tarball, wrote its sidecar.
    expect(existsSync(path.join(toolDir, "results/local/report.json.sketches.json"))).toBe(true);
    const report = await npx(["cable-report", "results", "--out", "report.md", "--json", "merged.json"]);
    expect(report.status, report.stderr).toBe(0);
    expect(readFileSync(path.join(toolDir, "report.md"), "utf8")).toMatch(/\| Created \| 20 \| 20 \|/);
    expect(JSON.parse(readFileSync(path.join(toolDir, "merged.json"), "utf8")).all.counters["cable.connections"]).toBe(20);
  }, 300_000);

  it("on a pull request, the same server (A/A): the baseline's deltas, one sticky comment, success", async () => {
    const run = await job({ name: "pull_request", number: 7 }, { target: target.cableUrl, overrides: SHORT, secrets: "PUSHER_APP_SECRET", "fail-on-regression": "20%" });
    expect(run.conclusion, log(run)).toBe("success");
    expect(step(run, "baseline").outcome).toBe("success");
    expect(step(run, "baseline").outputs.path).toMatch(/cable-loadtest-baseline-loadtest\/merged\.json$/);
    expect(step(run, "baseline").stderr).toContain("baseline: loadtest-merged of https://github.com/octo/app/actions/runs/101");
    expect(run.outputs["exit-code"]).toBe("0");
    expect(run.summary).toContain("- **Baseline:**");

    const comments = gh.comments.get(7)!;
    expect(comments).toHaveLength(1);
    expect(comments[0].body).toBe(`${markerOf("loadtest")}\n${readFileSync(run.outputs.report, "utf8")}`);
    expect(run.outputs["comment-url"]).toBe(`https://github.com/octo/app/pull/7#issuecomment-${comments[0].id}`);
    // The job's token, never another, went to the API.
    expect(new Set(gh.requests.map((r) => r.route !== "blob" && r.authorization).filter(Boolean))).toEqual(new Set(["token ghs_job-token"]));
  }, 300_000);

  it("on a pull request against another server, the baseline is refused before any task starts: exit 2, naming both targets", async () => {
    const run = await job({ name: "pull_request", number: 7 }, { target: slowTarget.cableUrl, overrides: SHORT, secrets: "PUSHER_APP_SECRET", "fail-on-regression": "20%" });
    expect(run.conclusion, log(run)).toBe("failure");
    expect(run.outputs["exit-code"]).toBe("2");
    expect(step(run, "fanout").stderr).toContain(`not starting any task: baseline is of another target: ${target.cableUrl}, this run ${slowTarget.cableUrl}; --baseline-any compares anyway`);
    expect(step(run, "comment").outcome).toBe("skipped");
    expect(step(run, "Verdict").stdout).toContain("::error title=cable-loadtest::bad input, or a baseline of another scenario or target (baseline-any: true compares anyway)");
  }, 300_000);

  it("on a pull request against a slower server, with baseline-any: a regression fails the job, the comment is updated in place", async () => {
    const before = gh.comments.get(7)![0].id;
    const run = await job({ name: "pull_request", number: 7 }, { target: slowTarget.cableUrl, overrides: SHORT, secrets: "PUSHER_APP_SECRET", "fail-on-regression": "20%", "baseline-any": "true" });
    expect(run.conclusion, log(run)).toBe("failure");
    expect(run.outputs["exit-code"]).toBe("1");
    expect(step(run, "fanout").outcome).toBe("success");
    expect(step(run, "comment").outcome).toBe("success");
    const verdict = step(run, "Verdict");
    expect(verdict.outcome).toBe("failure");
    expect(verdict.exitCode).toBe(1);
    expect(verdict.stdout).toContain("::error title=cable-loadtest::a metric regressed by more than 20% against the default branch's baseline");
    const comments = gh.comments.get(7)!;
    expect(comments.map((c) => c.id)).toEqual([before]);
    expect(comments[0].body).toContain("Round-trip time (rtt)");
    expect(comments[0].body).toContain("- **Baseline note:** compared across targets (--baseline-any): baseline is of another target");
    expect(run.summary).toBe(readFileSync(run.outputs.report, "utf8"));
  }, 300_000);

  it("a cancelled job stops its tasks: SIGINT reaches cable-fanout, then the cancelled() step runs cable-fanout stop", async () => {
    let out = "";
    const started = Date.now();
    const run = await job(
      { name: "push" },
      { target: target.cableUrl, overrides: LONG, secrets: "PUSHER_APP_SECRET", name: "cancel-me" },
      {
        cancelDuring: (s) => {
          if (s.id !== "fanout") return undefined;
          out = path.join(work, `job-${100 + jobs}`, "_temp", "cable-loadtest-cancel-me");
          // Cancel once every region's task has started.
          return { afterMs: 500, when: () => startedEverywhere(out) };
        },
      },
    );
    expect(Date.now() - started).toBeLessThan(90_000); // the phase lasts 120 s
    expect(run.conclusion, log(run)).toBe("cancelled");
    expect(step(run, "fanout").outcome, log(run)).toBe("cancelled");
    expect(step(run, "fanout").stderr).toContain("stopping every task");
    const stop = step(run, "Stop the run's tasks (job cancelled)");
    expect(stop.outcome, log(run)).toBe("success");
    expect(stop.stderr).toMatch(/\d+ task\(s\) stopped/);
    expect(step(run, "Verdict").outcome).toBe("skipped");
    expect(step(run, "Keep merged.json (the next baseline)").outcome).toBe("skipped");
    // No worker of the run is left (the local backend's tasks are processes under <out>/.local-store).
    const ps = execFileSync("ps", ["-eo", "args"], { encoding: "utf8" });
    expect(ps.split("\n").filter((line) => line.includes(out))).toEqual([]);
  }, 300_000);
});

describe("action.yml", () => {
  it("reads its inputs in scripts only through env (no ${{ }} inside run:), and every run step names bash", () => {
    const action = loadAction(ACTION);
    for (const s of action.runs.steps.filter((s) => s.run)) {
      expect(s.run, s.name).not.toMatch(/\$\{\{/);
      expect(s.shell).toBe("bash");
    }
  });

  it("asks for AWS credentials that last as long as the GitHub role allows (6 h), not configure-aws-credentials' 1 h", () => {
    const action = loadAction(ACTION);
    const creds = action.runs.steps.find((s) => s.name === "AWS credentials")! as { with?: Record<string, string> };
    expect(creds.with!["role-duration-seconds"]).toBe("${{ inputs.aws-session-duration }}");
    const github = readFileSync(path.join(ROOT, "infra/src/cdk/github-stack.ts"), "utf8");
    const hours = Number(/maxSessionDuration: Duration\.hours\((\d+)\)/.exec(github)![1]);
    expect(Number(action.inputs!["aws-session-duration"].default)).toBe(hours * 3600);
  });

  it("installs the version the packages are at, and the Artillery this repository pins", () => {
    const action = loadAction(ACTION);
    const versions = new Set(WORKSPACES.map((w) => JSON.parse(readFileSync(path.join(ROOT, w === "cable-infra" ? "infra" : `packages/${w === "artillery-plugin-cable-report" ? "cable-report" : w}`, "package.json"), "utf8")).version));
    expect([...versions]).toEqual([action.inputs!.version.default]);
    const artillery = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")).devDependencies.artillery;
    const install = action.runs.steps.find((s) => s.name === "Install the tool")!;
    expect(install.env!.ARTILLERY).toBe(artillery);
  });
});

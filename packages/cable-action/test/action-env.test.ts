import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { type LocalTarget, startTarget } from "cable-local-target";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse, stringify } from "yaml";
import { type CompositeRun, runComposite } from "./composite-runner.js";

// The action's `env` input: one line per variable, NAME (the job's own $NAME, as a user sets it
// with `env:` on the step) or NAME=value, handed to `cable-fanout run --env`. The action's steps as
// a user's job runs them (composite-runner.ts), the local backend against the local target, with
// one change: "Install the tool" puts this repository's built cable-fanout on the PATH instead of
// installing the packed tarballs (action.test.ts covers the install; this covers the input).

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
const SHELL_VALUE = "j0b-env-v4lue";

const SCENARIO = `config:
  target: ws://localhost:3000/cable
  engines:
    cable: {}
  phases:
    - duration: 2
      arrivalRate: 2
scenarios:
  - engine: cable
    flow:
      - connect:
          cookies: { uid: "{{ $env.APP_USER }}", tenant: "{{ $env.TENANT }}" }
      - think: 1
`;

let work: string;
let action: string;
let target: LocalTarget;
let jobs = 0;

beforeAll(async () => {
  work = mkdtempSync(path.join(os.tmpdir(), "cable-action-env-"));
  const bin = path.join(work, "bin");
  mkdirSync(bin);
  const fanout = path.join(bin, "cable-fanout");
  writeFileSync(fanout, `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(path.join(ROOT, "packages/cable-fanout/bin/cable-fanout.js"))} "$@"\n`);
  chmodSync(fanout, 0o755);
  // action.yml as it is, but for the install step.
  const yaml = parse(readFileSync(path.join(ROOT, "action.yml"), "utf8")) as { runs: { steps: Array<{ name?: string; run?: string }> } };
  const install = yaml.runs.steps.find((s) => s.name === "Install the tool")!;
  install.run = `echo ${JSON.stringify(bin)} >> "$GITHUB_PATH"\necho "ARTILLERY_DISABLE_TELEMETRY=true" >> "$GITHUB_ENV"\n`;
  action = path.join(work, "action.yml");
  writeFileSync(action, stringify(yaml));
  mkdirSync(path.join(work, "app/loadtest"), { recursive: true });
  writeFileSync(path.join(work, "app/package.json"), "{}");
  writeFileSync(path.join(work, "app/loadtest/env.yml"), SCENARIO);
  target = await startTarget({ port: 0 });
});

afterAll(async () => {
  await target?.close();
  rmSync(work, { recursive: true, force: true });
});

function job(inputs: Record<string, string>, env: Record<string, string>): Promise<CompositeRun> {
  const runnerTemp = path.join(work, `job-${++jobs}`, "_temp");
  mkdirSync(runnerTemp, { recursive: true });
  const eventPath = path.join(runnerTemp, "event.json");
  writeFileSync(eventPath, JSON.stringify({ repository: { default_branch: "main" }, ref: "refs/heads/main" }));
  return runComposite(action, {
    workspace: path.join(work, "app"),
    actionPath: ROOT,
    runnerTemp,
    toolCache: path.join(work, "toolcache"),
    env: { PATH: process.env.PATH, HOME: process.env.HOME, CI: "true", GITHUB_ACTIONS: "true", GITHUB_EVENT_NAME: "push", GITHUB_EVENT_PATH: eventPath, GITHUB_REPOSITORY: "octo/app", GITHUB_REF: "refs/heads/main", ...env },
    github: { event_name: "push", token: "ghs_job-token", repository: "octo/app", ref: "refs/heads/main", run_id: String(jobs), event: {} },
    inputs: { scenario: "loadtest/env.yml", regions: "local-a", target: target.cableUrl, comment: "false", ...inputs },
    stepTimeoutMs: 120_000,
  });
}

const fanoutStep = (run: CompositeRun) => run.steps.find((s) => s.id === "fanout")!;

describe("the action's env input (local backend)", () => {
  it("without it, a scenario reading {{ $env.X }} is refused before any task starts: exit 2, naming the variables", async () => {
    const run = await job({}, { TENANT: SHELL_VALUE });
    expect(run.conclusion).toBe("failure");
    expect(run.outputs["exit-code"]).toBe("2");
    expect(fanoutStep(run).stderr).toMatch(/the scenario reads 2 variables no task will have:\n {2}APP_USER: .*\n {2}TENANT: /);
  }, 120_000);

  it("NAME=value and NAME (from the job's env) reach every task; the names are printed, the job's value never", async () => {
    const run = await job({ env: "APP_USER=bob\nTENANT\n" }, { TENANT: SHELL_VALUE });
    const step = fanoutStep(run);
    expect(run.conclusion, `${step.stdout}${step.stderr}`).toBe("success");
    expect(run.outputs["exit-code"]).toBe("0");
    expect(step.stderr).toContain("environment: every task gets APP_USER, TENANT (--env; values not shown)");
    expect(run.steps.map((s) => `${s.stdout}${s.stderr}`).join("") + run.summary).not.toContain(SHELL_VALUE);
    // The local target refuses a connection without a uid cookie: every user connected with APP_USER's value.
    const counters = (JSON.parse(readFileSync(run.outputs.merged, "utf8")) as { all: { counters: Record<string, number> } }).all.counters;
    expect(counters["vusers.completed"]).toBeGreaterThan(0);
    expect(counters["vusers.failed"] ?? 0).toBe(0);
  }, 120_000);
});

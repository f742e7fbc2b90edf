import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";

// actionlint (installed by scripts/setup-test-servers.sh) on this repository's workflows and on the
// copy-paste workflow of docs/fanout.md ("The GitHub Action") as a user's repository has it;
// shellcheck on the action's scripts.
const ROOT = path.resolve(__dirname, "..");
const CACHE = process.env.CABLE_CACHE ?? path.join(os.homedir(), ".cache/cable");
const ACTIONLINT = path.join(CACHE, "actionlint/v1.7.7/actionlint");
const ACTION_REF = "cable-loadtest/cable-loadtest@v0.1.0";

let work: string;
beforeAll(() => {
  if (!existsSync(ACTIONLINT)) throw new Error(`${ACTIONLINT} is missing: run bash scripts/setup-test-servers.sh`);
  work = mkdtempSync(path.join(os.tmpdir(), "cable-actionlint-"));
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

const lint = (cwd: string, files: string[]) => spawnSync(ACTIONLINT, ["-no-color", ...files], { cwd, encoding: "utf8" });

/** docs/fanout.md's workflow for a Rails app: the yaml block after the "user-workflow" marker. */
function readmeWorkflow(): string {
  const readme = readFileSync(path.join(ROOT, "docs/fanout.md"), "utf8");
  const match = /<!-- user-workflow -->\s*```yaml\n([\s\S]*?)```/.exec(readme);
  if (!match) throw new Error("docs/fanout.md has no <!-- user-workflow --> yaml block");
  return match[1];
}

describe("actionlint", () => {
  it("passes this repository's workflows, loadtest.yml's use of the action (`uses: ./`) checked against action.yml", () => {
    const workflows = readdirSync(path.join(ROOT, ".github/workflows")).map((f) => `.github/workflows/${f}`);
    expect(workflows).toContain(".github/workflows/loadtest.yml");
    const result = lint(ROOT, workflows);
    expect(result.stdout + result.stderr).toBe("");
    expect(result.status).toBe(0);
  });

  it("passes docs/fanout.md's workflow for a Rails app (at most 20 lines), its inputs checked against action.yml", () => {
    const workflow = readmeWorkflow();
    expect(workflow.trimEnd().split("\n").length).toBeLessThanOrEqual(20);
    expect(workflow).toContain(`uses: ${ACTION_REF}`);
    // A user's repository, with this action checked out locally so actionlint can read its inputs.
    const repo = path.join(work, "user-app");
    mkdirSync(path.join(repo, ".github/workflows"), { recursive: true });
    writeFileSync(path.join(repo, "action.yml"), readFileSync(path.join(ROOT, "action.yml")));
    writeFileSync(path.join(repo, ".github/workflows/loadtest.yml"), workflow.replace(ACTION_REF, "./"));
    execFileSync("git", ["init", "-q", repo]);
    const result = lint(repo, [".github/workflows/loadtest.yml"]);
    expect(result.stdout + result.stderr).toBe("");
    expect(result.status).toBe(0);

    // …and actionlint would catch a wrong input name there.
    writeFileSync(path.join(repo, ".github/workflows/loadtest.yml"), workflow.replace(ACTION_REF, "./").replace("scenario:", "scenarios:"));
    const typo = lint(repo, [".github/workflows/loadtest.yml"]);
    expect(typo.status).toBe(1);
    expect(typo.stdout).toContain('input "scenarios" is not defined in action');
  });

  it("shellcheck passes every run: step of action.yml, as the runner runs it (bash -eo pipefail)", () => {
    const action = parse(readFileSync(path.join(ROOT, "action.yml"), "utf8")) as { runs: { steps: Array<{ name?: string; run?: string }> } };
    const scripts = action.runs.steps.filter((s) => s.run);
    expect(scripts.length).toBeGreaterThanOrEqual(6);
    for (const [i, step] of scripts.entries()) {
      const file = path.join(work, `step-${i}.sh`);
      writeFileSync(file, `#!/usr/bin/env bash\nset -eo pipefail\n${step.run}`);
      const result = spawnSync("shellcheck", ["--shell=bash", file], { encoding: "utf8" });
      expect(result.error, "shellcheck is missing: run bash scripts/setup-test-servers.sh").toBeUndefined();
      expect(result.stdout, step.name).toBe("");
      expect(result.status, step.name).toBe(0);
    }
  });
});

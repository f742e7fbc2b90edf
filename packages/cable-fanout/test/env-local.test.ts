import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { type LocalTarget, startTarget } from "cable-local-target";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "./cli";

// --local behaves as Fargate does (env-moto.test.ts): the workers would inherit this shell, yet a
// scenario reading {{ $env.APP_USER }} is refused without --env, so that what passes here passes
// there; with --env NAME=value and --env NAME the workers' users send the values (the local target
// refuses a connection without a uid cookie, and none is refused).

const SHELL_VALUE = "sh3ll-only-v4lue";

describe("--env with --local", () => {
  let work: string;
  let target: LocalTarget;
  let scenario: string;
  beforeAll(async () => {
    work = mkdtempSync(path.join(os.tmpdir(), "cable-env-local-"));
    target = await startTarget({ port: 0 });
    const app = path.join(work, "app");
    mkdirSync(app, { recursive: true });
    writeFileSync(path.join(app, "package.json"), "{}");
    scenario = path.join(app, "env.yml");
    writeFileSync(
      scenario,
      [
        "config:",
        "  target: ws://127.0.0.1:1/cable",
        "  engines: { cable: {} }",
        "  phases: [{ duration: 2, arrivalRate: 2 }]",
        "scenarios:",
        "  - engine: cable",
        "    flow:",
        '      - connect: { cookies: { uid: "{{ $env.APP_USER }}", tenant: "{{ $env.TENANT }}" } }',
        "      - think: 1",
        "",
      ].join("\n"),
    );
  });
  afterAll(async () => {
    await target?.close();
    rmSync(work, { recursive: true, force: true });
  });

  it("refuses without --env though the workers would inherit the shell, and runs with it", async () => {
    const out = path.join(work, "results");
    const env = { APP_USER: "alice", TENANT: SHELL_VALUE };
    const refused = await runCli(["run", scenario, "--local", "--regions", "local", "--target", target.cableUrl, "--out", out], { cwd: work, env });
    expect(refused.code, refused.stderr).toBe(2);
    expect(refused.stderr).toMatch(/the scenario reads 2 variables no task will have:\n {2}APP_USER: .*\n {2}TENANT: .*--secret TENANT if it is a secret\n\(--local workers would inherit this shell, but Fargate tasks have only what they are given/);

    const ran = await runCli(["run", scenario, "--local", "--regions", "local-a,local-b", "--target", target.cableUrl, "--env", "APP_USER=bob", "--env", "TENANT", "--start-delay", "1", "--out", out], {
      cwd: work,
      // APP_USER only through --env: a worker that inherited the shell and nothing more would send no uid.
      env: { TENANT: SHELL_VALUE },
      timeoutMs: 120_000,
    });
    expect(ran.code, ran.stderr).toBe(0);
    expect(ran.stderr).toContain("environment: every task gets APP_USER, TENANT (--env; values not shown)");
    expect(ran.stdout + ran.stderr).not.toContain(SHELL_VALUE);
    const [runId] = readdirSync(out).filter((d) => !d.startsWith("."));
    const counters = (JSON.parse(readFileSync(path.join(out, runId, "merged.json"), "utf8")) as { all: { counters: Record<string, number> } }).all.counters;
    expect(counters["vusers.completed"]).toBeGreaterThan(0);
    expect(counters["vusers.failed"] ?? 0).toBe(0);
  }, 150_000);
});

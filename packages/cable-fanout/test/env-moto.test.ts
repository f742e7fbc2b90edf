import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { DescribeTasksCommand, ECSClient, type KeyValuePair } from "@aws-sdk/client-ecs";
import { describe, expect, it } from "vitest";
import { runCli } from "./cli";
import { emulateEcs } from "./ecs-emulator";
import { motoRecorder, type RecordedRequest } from "./moto";
import { motoRegions } from "./moto-regions";

// What works with --local reaches Fargate: a scenario that reads {{ $env.APP_USER }} (as the
// README's Laravel recipe reads REVERB_APP_KEY), on the AWS path against moto, through the real CLI
// (its AWS calls held to AWS's limits by the strict double: RunTask overrides at most 8192
// characters among them). Without --env the run is refused before any RunTask; with --env
// NAME=value and --env NAME (this shell's value) the RunTask container override moto received
// holds both, and the workers playing the Fargate tasks (test/ecs-emulator.ts) run with them. The
// same with --local: env-local.test.ts.

const SHELL_VALUE = "sh3ll-only-v4lue";

/** A scenario whose users send two variables of the tasks' environment as cookies. */
function writeScenario(dir: string): string {
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, "package.json"), "{}");
  const file = path.join(dir, "env.yml");
  writeFileSync(
    file,
    [
      "config:",
      "  target: ws://127.0.0.1:1/cable",
      "  engines: { cable: {} }",
      "  phases: [{ duration: 2, arrivalRate: 1 }]",
      "scenarios:",
      "  - engine: cable",
      "    flow:",
      '      - connect: { cookies: { uid: "{{ $env.APP_USER }}", tenant: "{{ $processEnvironment.TENANT }}" } }',
      "      - think: 1",
      "",
    ].join("\n"),
  );
  return file;
}

const isRunTask = (r: RecordedRequest) => /\.RunTask$/.test(Object.entries(r.headers).find(([name]) => name.toLowerCase() === "x-amz-target")?.[1] ?? "");

describe("--env on the AWS path (moto)", () => {
  const aws = motoRegions(["eu-west-2"], {}, 240_000);

  it("refuses a scenario reading $env.X without --env X before any RunTask, also when --env is too large for RunTask's overrides", async () => {
    const { moto, target } = aws;
    const dir = path.join(aws.work, "refused");
    const scenario = writeScenario(path.join(dir, "app"));
    const out = path.join(dir, "results");
    const recorder = motoRecorder(moto);
    await recorder.start();
    let missing: Awaited<ReturnType<typeof runCli>>;
    let oversize: Awaited<ReturnType<typeof runCli>>;
    try {
      missing = await runCli(["run", scenario, "--regions", "eu-west-2", "--target", target.cableUrl, "--env", "APP_USER=alice", "--out", out], { cwd: dir, env: moto.env });
      oversize = await runCli(["run", scenario, "--regions", "eu-west-2", "--target", target.cableUrl, "--env", "APP_USER=alice", "--env", `TENANT=${"t".repeat(9_000)}`, "--out", out], { cwd: dir, env: moto.env });
    } finally {
      await recorder.stop();
    }
    expect(missing.code, missing.stderr).toBe(2);
    expect(missing.stderr).toContain(
      "cable-fanout: not starting any task: the scenario reads a variable no task will have:\n  TENANT: {{ $processEnvironment.TENANT }} in scenarios[0].flow[0].connect.cookies.tenant; give it with --env TENANT (this shell's value) or --env TENANT=<value>; --secret TENANT=ssm:/cable-loadtest/tenant if it is a secret",
    );
    expect(missing.stderr).not.toMatch(/APP_USER:/);
    expect(oversize.code, oversize.stderr).toBe(2);
    expect(oversize.stderr).toMatch(/cable-fanout: each task's RunTask overrides would be up to \d+ characters of JSON, over ECS's limit of 8192: --env takes \d+ of them \(the longest values, in characters: TENANT 9000, APP_USER 5\)/);
    expect(oversize.stderr).not.toContain("InvalidParameterException");
    // Nothing was started, nothing was left behind.
    expect((await recorder.requests()).filter(isRunTask)).toEqual([]);
    expect(existsSync(out) ? readdirSync(out).filter((d) => !d.startsWith(".")) : []).toEqual([]);
  }, 120_000);

  it("with --env NAME=value and --env NAME, the RunTask override moto received holds both values, and the tasks run with them", async () => {
    const { moto, stacks, target } = aws;
    const dir = path.join(aws.work, "given");
    const scenario = writeScenario(path.join(dir, "app"));
    const out = path.join(dir, "results");
    const ecs = await emulateEcs(stacks, moto.env, dir);
    let result: Awaited<ReturnType<typeof runCli>>;
    try {
      result = await runCli(["run", scenario, "--regions", "eu-west-2", "--target", target.cableUrl, "--env", "APP_USER=alice", "--env", "TENANT", "--start-delay", "1", "--out", out], {
        cwd: dir,
        env: { ...moto.env, TENANT: SHELL_VALUE },
        timeoutMs: 180_000,
      });
      await ecs.settled(30_000);
    } finally {
      await ecs.stop();
    }
    const tasks = [...ecs.tasks.values()];
    expect(tasks, result.stderr).toHaveLength(1);
    expect(result.code, `${result.stderr}\n${tasks[0].output.slice(-2_000)}`).toBe(0);
    expect(result.stderr).toContain("environment: every task gets APP_USER, TENANT (--env; values not shown)");
    // A value from this shell is never printed.
    expect(result.stdout + result.stderr).not.toContain(SHELL_VALUE);

    const { tasks: described = [] } = await new ECSClient({ region: "eu-west-2" }).send(new DescribeTasksCommand({ cluster: stacks[0].clusterArn, tasks: [tasks[0].arn] }));
    const environment = described[0]?.overrides?.containerOverrides?.[0]?.environment ?? [];
    const byName = (list: KeyValuePair[]) => Object.fromEntries(list.map((e) => [e.name, e.value]));
    expect(byName(environment)).toMatchObject({ APP_USER: "alice", TENANT: SHELL_VALUE, CABLE_RUN_ID: tasks[0].runId });
    // The task's users sent them: the local target refuses a connection without a uid cookie, and none was refused.
    const [runId] = readdirSync(out).filter((d) => !d.startsWith("."));
    expect(runId).toBe(tasks[0].runId);
    const counters = (JSON.parse(readFileSync(path.join(out, runId, "merged.json"), "utf8")) as { all: { counters: Record<string, number> } }).all.counters;
    expect(counters["vusers.completed"]).toBeGreaterThan(0);
    expect(counters["vusers.failed"] ?? 0).toBe(0);
  }, 300_000);
});

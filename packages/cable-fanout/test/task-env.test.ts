import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { AwsRegion, defaultClients } from "../src/aws/aws-backend";
import type { RegionStack } from "../src/aws/discovery";
import { overridesSizeProblem, RUN_TASK_OVERRIDES_MAX } from "../src/aws/overrides-size";
import type { StartOptions } from "../src/backend";
import { capacityOptions, compareOptions, planOptions, runOptions } from "../src/cli-options";
import { main } from "../src/cli";
import { FanoutInputError } from "../src/errors";
import { guardCost, makePlan, planInput, refuseUnrunnable } from "../src/plan/launch";
import { loadScenario } from "../src/scenario";
import { checkTaskEnv, missingEnvProblem, parseTaskEnv, processorEnvReads, templateEnvReads } from "../src/task-env";

// --env and the pre-flight of what the scenario reads from the tasks' environment: the flags, the
// scanner, the plan's refusal, the RunTask overrides and their size, --overrides on files; and the
// real CLI's `plan` saying it. The AWS path end to end (moto): env-moto.test.ts.

let dir: string;
const write = (name: string, text: string) => {
  const file = path.join(dir, name);
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, text);
  return file;
};

beforeAll(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), "fanout-task-env-"));
  write("package.json", "{}");
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The message of the FanoutInputError `run` throws (exit 2). */
function inputError(run: () => unknown): string {
  try {
    run();
  } catch (err) {
    expect(err).toBeInstanceOf(FanoutInputError);
    return (err as Error).message;
  }
  throw new Error("no error");
}

describe("--env", () => {
  it("takes NAME from this shell and NAME=value as given (an empty value, and = inside it, too)", () => {
    expect(parseTaskEnv(["KEY", "MODE=fast", "EMPTY=", "URL=http://x/?a=b"], { KEY: "from-shell" })).toEqual({ KEY: "from-shell", MODE: "fast", EMPTY: "", URL: "http://x/?a=b" });
  });

  it("refuses an unset NAME, a bad name, a name given twice, and the runtime's own names, never echoing a value", () => {
    expect(inputError(() => parseTaskEnv(["REVERB_APP_KEY"], {}))).toBe("--env REVERB_APP_KEY: $REVERB_APP_KEY is not set in this shell; export it first, or give the value: --env REVERB_APP_KEY=<value>");
    expect(inputError(() => parseTaskEnv(["1X=v4lue"], {}))).toBe('--env 1X=…: "1X" is not an environment variable name');
    expect(inputError(() => parseTaskEnv(["A=1", "A=2"], {}))).toBe("--env A is given twice");
    expect(inputError(() => parseTaskEnv(["CABLE_RUN_ID=x"], {}))).toMatch(/^--env CABLE_RUN_ID=…: names beginning with CABLE_ are the task runtime's own/);
    expect(inputError(() => parseTaskEnv(["AWS_REGION=eu-west-1"], {}))).toMatch(/^--env AWS_REGION=…: the task's AWS settings .* come from its task role and region/);
    expect(inputError(() => parseTaskEnv(["ECS_CONTAINER_METADATA_URI_V4"], { ECS_CONTAINER_METADATA_URI_V4: "x" }))).toMatch(/^--env ECS_CONTAINER_METADATA_URI_V4: the task's AWS settings/);
  });

  const RUN = { out: "results", local: true, regions: "local", count: "1" };
  it("reaches the backend and the run from one parse, in run, compare, plan and capacity", () => {
    vi.stubEnv("FROM_SHELL", "shell-value");
    try {
      const run = runOptions({ ...RUN, env: ["FROM_SHELL", "MODE=fast"] });
      expect(run.backend.taskEnv).toEqual({ FROM_SHELL: "shell-value", MODE: "fast" });
      expect(run.scenarioRun.taskEnv).toEqual({ FROM_SHELL: "shell-value", MODE: "fast" });
      const compare = compareOptions({ ...RUN, pause: "1s", target: ["a=ws://x", "b=ws://y"], env: ["MODE=x"] });
      expect([compare.backend.taskEnv, compare.scenarioRun.taskEnv]).toEqual([{ MODE: "x" }, { MODE: "x" }]);
      expect(planOptions({ ...RUN, env: ["MODE=x"] }).scenarioRun.taskEnv).toEqual({ MODE: "x" });
      const capacity = capacityOptions({ ...RUN, start: "10", step: "10", max: "20", hold: "30", climb: "10", vary: "users", slo: ["errors<1%"], env: ["MODE=x"] });
      expect([capacity.backend.taskEnv, capacity.task.taskEnv]).toEqual([{ MODE: "x" }, { MODE: "x" }]);
      // Not given: nothing, and the backend gives nothing.
      expect(runOptions(RUN).backend.taskEnv).toEqual({});
    } finally {
      vi.unstubAllEnvs();
    }
  });

  it("refuses a name given by --env and by --secret", () => {
    expect(inputError(() => runOptions({ ...RUN, env: ["TOKEN=abc"], secret: ["TOKEN=ssm:/cable-loadtest/token"] }))).toBe(
      "--env TOKEN and --secret TOKEN: give a variable one way: --secret when it is a secret (resolved in each task, redacted from every output), --env when it is not",
    );
  });

  it("refuses values that would not fit in RunTask's overrides (8192 characters), with --local too, naming the longest", () => {
    const big = "x".repeat(RUN_TASK_OVERRIDES_MAX);
    const message = inputError(() => runOptions({ ...RUN, env: [`CERT=${big}`, "MODE=fast"] }));
    expect(message).toMatch(/^each task's RunTask overrides would be up to \d+ characters of JSON, over ECS's limit of 8192: --env takes \d+ of them \(the longest values, in characters: CERT 8192, MODE 4\); keep long values out of the environment/);
    expect(message).not.toContain("xxxx");
    // What just fits, fits: the largest task's overrides (a 36-character run id, a slice) at 8192 exactly.
    const fixed = JSON.stringify(overridesSizeFor({})).length;
    expect(overridesSizeProblem({ containerName: "loadgen", secretRefs: {}, env: { V: "y".repeat(RUN_TASK_OVERRIDES_MAX - fixed - JSON.stringify({ name: "V", value: "" }).length - 1) } })).toBeUndefined();
  });
});

/** The overrides' JSON for the largest task with this env, as the size check builds it. */
function overridesSizeFor(env: Record<string, string>) {
  const region = new AwsRegion(STACK, defaultClients("eu-west-2"), { sleep: async () => undefined, log: () => undefined }, env);
  return region.runTaskInput("r".repeat(36), [0], startOptions({ slices: { first: 999_999_998, total: 999_999_999 } })).overrides;
}

const STACK: RegionStack = {
  region: "eu-west-2",
  clusterArn: "arn:aws:ecs:eu-west-2:123456789012:cluster/c",
  taskDefinitionArn: "arn:aws:ecs:eu-west-2:123456789012:task-definition/CableLoadtest-eu-west-2:1",
  containerName: "loadgen",
  subnetIds: ["subnet-0a1b2c3d"],
  securityGroupId: "sg-1",
  assignPublicIp: "ENABLED",
  bucketName: "bucket",
  logGroupName: "logs",
  logStreamPrefix: "loadgen",
  taskCpu: 4096,
};
const startOptions = (extra: Partial<StartOptions> = {}): StartOptions => ({ spot: false, secretRefs: {}, secretValues: {}, abort: new AbortController().signal, ...extra });

describe("RunTask's container environment", () => {
  it("holds the run's own variables, the secrets' names, then --env (the backend's, and a start's own over them)", () => {
    const region = new AwsRegion(STACK, defaultClients("eu-west-2"), { sleep: async () => undefined, log: () => undefined }, { REVERB_APP_KEY: "app-key", MODE: "backend" });
    const input = region.runTaskInput("run-1", [0], startOptions({ secretRefs: { S: "/cable-loadtest/s" }, env: { MODE: "start" }, slices: { first: 1, total: 2 } }));
    expect(input.overrides?.containerOverrides?.[0].environment).toEqual([
      { name: "CABLE_RUN_ID", value: "run-1" },
      { name: "CABLE_SLICE", value: "1/2" },
      { name: "CABLE_SECRETS", value: JSON.stringify({ S: "/cable-loadtest/s" }) },
      { name: "REVERB_APP_KEY", value: "app-key" },
      { name: "MODE", value: "start" },
    ]);
  });
});

describe("what the scenario reads from the tasks' environment", () => {
  it("finds $env and $processEnvironment in templates, dotted and bracketed, at any depth, keys too, and nothing outside {{ }}", () => {
    const reads = templateEnvReads(
      {
        target: "wss://{{ $env.HOST }}/app",
        engines: { cable: { pusher: { key: "{{ $env.REVERB_APP_KEY }}", cluster: "{{{ $processEnvironment.CLUSTER }}}" } } },
        list: ["plain $env.NOT_A_TEMPLATE", { deep: ["{{ $env['BRACKETED'] }} and {{ $env[\"DOUBLE\"] }}"] }],
        "{{ $env.IN_KEY }}": 1,
        other: "{{ $environment }} {{ user.$env }} {{ $envelope.X }}",
      },
      "config",
    );
    expect(reads).toEqual([
      { name: "HOST", as: "{{ $env.HOST }}", where: "config.target" },
      { name: "REVERB_APP_KEY", as: "{{ $env.REVERB_APP_KEY }}", where: "config.engines.cable.pusher.key" },
      { name: "CLUSTER", as: "{{ $processEnvironment.CLUSTER }}", where: "config.engines.cable.pusher.cluster" },
      { name: "BRACKETED", as: "{{ $env.BRACKETED }}", where: "config.list[1].deep[0]" },
      { name: "DOUBLE", as: "{{ $env.DOUBLE }}", where: "config.list[1].deep[0]" },
      { name: "IN_KEY", as: "{{ $env.IN_KEY }}", where: 'config["{{ $env.IN_KEY }}"]' },
    ]);
  });

  it("finds process.env in a processor's source: dotted, bracketed, destructured", () => {
    const source = 'const a = process.env.ALPHA; const b = process.env["BETA"]; const { GAMMA, DELTA: d = 1 } = process.env;';
    expect(processorEnvReads(source, "p.js").map((r) => r.name)).toEqual(["ALPHA", "BETA", "GAMMA", "DELTA"]);
  });

  const scenario = {
    file: "",
    config: {
      target: "ws://h",
      variables: { key: "{{ $env.REVERB_APP_KEY }}" },
      environments: {
        staging: { target: "wss://{{ $env.STAGING_HOST }}", engines: { cable: { headers: { Authorization: "{{ $processEnvironment.STAGING_TOKEN }}" } } } },
        prod: { target: "wss://{{ $env.PROD_HOST }}" },
      },
    },
    scenarios: [{ flow: [{ connect: { cookies: { session: "{{ $env.SESSION }}", region: "{{ $env.CABLE_REGION }}" } } }] }],
    hooks: { before: { flow: [{ get: { url: "/{{ $env.BEFORE }}" } }] } },
  };

  it("reads the config after -e and --overrides, the flows and before/after; other environments are not read", () => {
    const check = checkTaskEnv(scenario, { config: { variables: { extra: "{{ $env.FROM_OVERRIDES }}" } } }, "staging", { taskEnv: { SESSION: "s" }, secretValues: {}, secretRefs: {} });
    expect(check.missing.map((r) => `${r.name} ${r.where}`)).toEqual([
      "STAGING_HOST config.target",
      "REVERB_APP_KEY config.variables.key",
      "FROM_OVERRIDES config.variables.extra",
      "STAGING_TOKEN config.engines.cable.headers.Authorization",
      "BEFORE before.flow[0].get.url",
    ]);
    // The runtime's own (CABLE_REGION) and the secrets count as given.
    const given = checkTaskEnv(scenario, undefined, undefined, { taskEnv: { SESSION: "s" }, secretRefs: { REVERB_APP_KEY: "/cable-loadtest/k" }, secretValues: { BEFORE: "b" } });
    expect(given.missing).toEqual([]);
    expect(given.given).toEqual({ env: ["SESSION"], secrets: ["BEFORE", "REVERB_APP_KEY"] });
  });

  it("follows --overrides that replace the flows (a list replaces a list, as Artillery merges them)", () => {
    const replaced = checkTaskEnv(scenario, { scenarios: [{ flow: [{ think: "{{ $env.THINK }}" }] }] }, undefined, { taskEnv: { REVERB_APP_KEY: "k", BEFORE: "b" } });
    expect(replaced.missing.map((r) => r.name)).toEqual(["THINK"]);
  });

  it("is refused with the remedy in the backend's own form, once per variable", () => {
    const check = checkTaskEnv({ config: { target: "{{ $env.X }}", variables: { again: "{{ $env.X }}" } }, scenarios: [] }, undefined, undefined, {});
    expect(missingEnvProblem(check, "aws")).toBe(
      "the scenario reads a variable no task will have:\n  X: {{ $env.X }} in config.target; give it with --env X (this shell's value) or --env X=<value>; --secret X=ssm:/cable-loadtest/x if it is a secret",
    );
    expect(missingEnvProblem(check, "local")).toMatch(/--secret X if it is a secret\n\(--local workers would inherit this shell, but Fargate tasks have only what they are given: the fan-out refuses both alike/);
  });

  it("says what a processor reads that no task is given, without refusing (it may read it optionally)", () => {
    write("p/auth.js", "module.exports = { f(c, e, n) { c.vars.t = process.env.AUTH_TOKEN || 'x'; c.vars.h = process.env.HOME; n(); } };");
    const file = write("p/s.yml", "config:\n  target: ws://h\n  processor: ./auth.js\nscenarios:\n  - flow: [{ function: f }]\n");
    const check = checkTaskEnv(loadScenario(file), undefined, undefined, {});
    expect(check.missing).toEqual([]);
    expect(check.processorMissing).toEqual([{ name: "AUTH_TOKEN", as: "process.env.AUTH_TOKEN", where: path.relative(process.cwd(), path.join(dir, "p/auth.js")) }]);
  });
});

describe("the plan and the guard before the first task", () => {
  const LIMITS = { maxDurationMs: 60_000, startDelayMs: 2_000 };
  const laravel = () =>
    write("laravel.yml", ["config:", "  target: ws://127.0.0.1:8080/app", "  engines: { cable: { protocol: pusher, pusher: { key: '{{ $env.REVERB_APP_KEY }}' } } }", "  phases: [{ duration: 10, arrivalRate: 1 }]", "scenarios:", "  - engine: cable", "    flow: [{ think: 1 }]", ""].join("\n"));

  it("names the variable in the plan's refusals and refuses the run in the guard (exit 2), before any task", async () => {
    const scenario = loadScenario(laravel());
    const flags = { regions: ["local"], count: 1, spot: false, taskEnv: {}, secretRefs: {}, secretValues: {} };
    const plan = makePlan(planInput(flags, "local", scenario, undefined, LIMITS, new Map()));
    expect(plan.refusals).toEqual([expect.stringMatching(/^the scenario reads a variable no task will have:\n {2}REVERB_APP_KEY: \{\{ \$env\.REVERB_APP_KEY \}\} in config\.engines\.cable\.pusher\.key; give it with --env REVERB_APP_KEY/)]);
    await expect(guardCost(plan, { yes: true })).rejects.toThrow(/^not starting any task: the scenario reads a variable no task will have/);
    const given = makePlan(planInput({ ...flags, taskEnv: { REVERB_APP_KEY: "k3y-value" } }, "local", scenario, undefined, LIMITS, new Map()));
    expect(given.refusals).toBeUndefined();
    expect(given.lines).toContain("  environment: every task gets REVERB_APP_KEY (--env; values not shown)");
    expect(given.lines.join("\n")).not.toContain("k3y-value");
    await expect(guardCost(given, {})).resolves.toBeUndefined();
  });

  it("refuses once, before compare's and capacity's first run (each run's own failure is outlived)", () => {
    const file = laravel();
    expect(inputError(() => refuseUnrunnable({ scenarioFile: file }, "aws"))).toMatch(/^not starting any task: the scenario reads a variable no task will have:\n {2}REVERB_APP_KEY: .*--secret REVERB_APP_KEY=ssm:\/cable-loadtest\/reverb_app_key/);
    expect(() => refuseUnrunnable({ scenarioFile: file, taskEnv: { REVERB_APP_KEY: "k" } }, "aws")).not.toThrow();
    expect(() => refuseUnrunnable({ scenarioFile: file, secretRefs: { REVERB_APP_KEY: "/cable-loadtest/k" } }, "aws")).not.toThrow();
    // -v values are templated too.
    expect(inputError(() => refuseUnrunnable({ scenarioFile: file, taskEnv: { REVERB_APP_KEY: "k" }, variables: { room: "{{ $env.ROOM }}" } }, "local"))).toMatch(/ROOM: \{\{ \$env\.ROOM \}\} in config\.variables\.room/);
  });
});

describe("--overrides on the files", () => {
  const scenarioFile = () => {
    write("data/users.csv", "email,password\na,1\n");
    return write("data/s.yml", "config:\n  target: ws://h\n  payload: { path: users.csv, fields: [email, password], skipHeader: true }\nscenarios:\n  - flow: [{ think: 1 }]\n");
  };

  it("refuses config.payload, naming it and what to do instead, whether a map or a list", () => {
    for (const payload of [{ path: "other.csv" }, [{ path: "other.csv", order: "sequence" }], { order: "sequence" }]) {
      expect(inputError(() => loadScenario(scenarioFile(), { config: { payload } }))).toMatch(
        /^--overrides sets config\.payload, which Artillery does not apply as given: it reads payload paths before it applies --overrides .*; write it into .*s\.yml itself, or into a config\.environments\.<name> section there and choose it with -e <name>/,
      );
    }
  });

  it("refuses config.environments, config.processor and config.includeFiles; the rest (phases, -k's tls, -v) still passes", () => {
    expect(inputError(() => loadScenario(scenarioFile(), { config: { environments: { x: { phases: [] } } } }))).toMatch(/^--overrides sets config\.environments, which Artillery merges before it applies --overrides/);
    expect(inputError(() => loadScenario(scenarioFile(), { config: { processor: "p.js" } }))).toMatch(/^--overrides sets config\.processor: the fan-out bundles the files the scenario itself names/);
    expect(inputError(() => loadScenario(scenarioFile(), { config: { includeFiles: ["a"] } }))).toMatch(/^--overrides sets config\.includeFiles/);
    expect(() => loadScenario(scenarioFile(), { config: { phases: [{ duration: 1, arrivalRate: 1 }], tls: { rejectUnauthorized: false }, variables: { a: 1 } } })).not.toThrow();
  });
});

describe("through the CLI", () => {
  let out: string[];
  beforeEach(() => {
    out = [];
    vi.spyOn(process.stderr, "write").mockImplementation((chunk) => (out.push(String(chunk)), true));
    vi.spyOn(process.stdout, "write").mockImplementation((chunk) => (out.push(String(chunk)), true));
  });
  afterEach(() => vi.restoreAllMocks());

  it("plan --local names what the scenario reads and no task has (exit 2), and passes with --env", async () => {
    const file = write("cli/reverb.yml", ["config:", "  target: ws://127.0.0.1:9/app", "  engines: { cable: { protocol: pusher, pusher: { key: '{{ $env.REVERB_APP_KEY }}' } } }", "  phases: [{ duration: 10, arrivalRate: 1 }]", "scenarios:", "  - engine: cable", "    flow: [{ think: 1 }]", ""].join("\n"));
    const args = ["plan", file, "--local", "--regions", "local", "--out", path.join(dir, "cli/out")];
    expect(await main(args)).toBe(2);
    expect(out.join("")).toMatch(/would not start: the scenario reads a variable no task will have:\n {2}REVERB_APP_KEY: \{\{ \$env\.REVERB_APP_KEY \}\} in config\.engines\.cable\.pusher\.key; give it with --env REVERB_APP_KEY/);
    out.length = 0;
    vi.stubEnv("REVERB_APP_KEY", "shell-k3y");
    try {
      expect(await main([...args, "--env", "REVERB_APP_KEY"])).toBe(0);
    } finally {
      vi.unstubAllEnvs();
    }
    expect(out.join("")).toContain("environment: every task gets REVERB_APP_KEY (--env; values not shown)");
    expect(out.join("")).not.toContain("shell-k3y");
  });

  it("run refuses --overrides on config.payload (exit 2) with the message", async () => {
    const file = write("cli/pay.yml", "config:\n  target: ws://127.0.0.1:9\n  phases: [{ duration: 1, arrivalRate: 1 }]\nscenarios:\n  - flow: [{ think: 1 }]\n");
    expect(await main(["run", file, "--local", "--regions", "local", "--out", path.join(dir, "cli/out2"), "--overrides", JSON.stringify({ config: { payload: { path: "x.csv" } } })])).toBe(2);
    expect(out.join("")).toMatch(/cable-fanout: --overrides sets config\.payload/);
  });
});

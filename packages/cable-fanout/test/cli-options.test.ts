import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ZodError } from "zod";
import {
  backendFlags,
  capacityOptions,
  capacitySearchFlags,
  collectFlags,
  compareFlags,
  compareOptions,
  compareTargetFlags,
  parseArch,
  planOptions,
  reportFlags,
  runFlags,
  runOptions,
  scenarioRunFlags,
  secretsFlags,
  stopFlags,
  taskFlags,
} from "../src/cli-options";
import { main } from "../src/cli";
import { inputError, RUN } from "./helpers";
import { parseAbortOn } from "../src/live/abort";
import { parseSlo } from "../src/slo";

// What the commands hand on is checked through the real CLI too: commander's option keys must be the schemas'.
const calls = vi.hoisted(() => ({ runFanout: [] as unknown[], runCapacity: [] as unknown[], backends: [] as unknown[] }));
vi.mock("../src/run/runner", async (importOriginal) => ({
  ...(await importOriginal<typeof import("../src/run/runner")>()),
  runFanout: async (options: { outDir: string }, deps: { backend: unknown }) => {
    calls.runFanout.push(options);
    calls.backends.push(deps.backend);
    return { exitCode: 0, failedRegions: [], runDir: options.outDir };
  },
}));
vi.mock("../src/capacity/controller", async (importOriginal) => ({
  ...(await importOriginal<typeof import("../src/capacity/controller")>()),
  runCapacity: async (options: unknown) => {
    calls.runCapacity.push(options);
    return { exitCode: 0, markdownFile: "capacity.md" };
  },
}));



describe("backend flags", () => {
  it("read --out, --local and --store, and the backend they name", () => {
    expect(backendFlags.parse({ out: "results" })).toEqual({ out: "results", local: false, store: undefined, kind: "aws" });
    expect(backendFlags.parse({ out: "o", local: true, store: "s", regions: "x" })).toEqual({ out: "o", local: true, store: "s", kind: "local" });
  });

  it("call a value commander never gives a bug, not bad input", () => {
    expect(() => backendFlags.parse({})).toThrow(ZodError);
    expect(() => scenarioRunFlags("local").parse({ ...RUN, count: 2 })).toThrow(ZodError);
  });
});

describe("secrets", () => {
  it("pass references, and locally this environment's values", () => {
    expect(secretsFlags("aws").parse({})).toEqual({ secretRefs: {}, secretValues: {} });
    expect(secretsFlags("local", { TOKEN: "t" }).parse({ secret: ["TOKEN", "KEY=ssm:/cable-loadtest/key"] })).toEqual({ secretRefs: { KEY: "/cable-loadtest/key" }, secretValues: { TOKEN: "t" } });
  });

  it("refuse a bad name, and a bare name on AWS", () => {
    expect(inputError(() => secretsFlags("local", {}).parse({ secret: ["1BAD"] }))).toBe('--secret 1BAD: "1BAD" is not an environment variable name');
    expect(inputError(() => secretsFlags("aws", {}).parse({ secret: ["FOO"] }))).toBe("--secret FOO: Fargate tasks take secrets by reference only, e.g. --secret FOO=ssm:/cable-loadtest/foo");
    expect(inputError(() => secretsFlags("local", {}).parse({ secret: ["FOO_UNSET"] }))).toBe("--secret FOO_UNSET: $FOO_UNSET is not set in this environment");
  });
});

describe("the scenario-run flags (run, compare, plan)", () => {
  it("parse into the run's options", () => {
    const raw = {
      ...RUN,
      regions: "local-a, local-b",
      count: "3",
      bundleRoot: "proj",
      overrides: '{"config":{"phases":[]}}',
      variables: '{"room":"r"}',
      insecure: true,
      environment: "staging",
      spotOnly: true,
      cpu: "1024",
      memory: "2048",
      startDelay: "5s",
      startTimeout: "2m",
      maxDuration: "1h",
      maxCost: "$12.50",
      yes: true,
      minReady: "90%",
      readyTimeout: "30",
      heartbeatTimeout: "45s",
    };
    expect(scenarioRunFlags("local").parse(raw)).toEqual({
      regions: ["local-a", "local-b"],
      count: 3,
      bundleRoot: "proj",
      overrides: { config: { phases: [] } },
      variables: { room: "r" },
      insecure: true,
      environment: "staging",
      spot: true,
      spotOnly: true,
      cpu: 1024,
      memory: 2048,
      startDelayMs: 5_000,
      startTimeoutMs: 120_000,
      maxDurationMs: 3_600_000,
      maxCostUsd: 12.5,
      yes: true,
      minReadyPct: 90,
      readyTimeoutMs: 30_000,
      heartbeatTimeoutMs: 45_000,
    });
  });

  it("leave out what was not given (no task size, no cost ceiling, no --yes)", () => {
    const parsed = scenarioRunFlags("aws").parse({ out: "results", regions: "eu-west-2", count: "1" });
    expect(parsed).toEqual({ regions: ["eu-west-2"], count: 1, insecure: false, spot: false, spotOnly: false });
    expect(Object.keys(parsed)).not.toContain("maxCostUsd");
    expect(Object.keys(parsed)).not.toContain("yes");
    expect(Object.keys(parsed)).not.toContain("cpu");
  });

  it("refuse each bad value with its message", () => {
    const bad = (extra: Record<string, unknown>, kind: "aws" | "local" = "local") => inputError(() => scenarioRunFlags(kind).parse({ ...RUN, ...extra }));
    expect(bad({ regions: " , " })).toBe("--regions names no region");
    expect(bad({ regions: "local,local" })).toBe("--regions names local twice");
    expect(bad({ regions: "local" }, "aws")).toBe('--regions: "local" is a local region name: add --local, or name AWS regions such as eu-west-2');
    expect(bad({ count: "0" })).toBe('--count wants a positive whole number, not "0"');
    expect(bad({ overrides: "[]" })).toBe("--overrides must be a JSON object");
    expect(bad({ variables: "x" })).toMatch(/^--variables is not valid JSON: /);
    expect(bad({ cpu: "1024" })).toBe("--cpu needs --memory too: a Fargate task size is a CPU/memory pair");
    expect(bad({ memory: "2048" })).toBe("--memory needs --cpu too: a Fargate task size is a CPU/memory pair");
    expect(bad({ cpu: "abc", memory: "2048" })).toBe('--cpu wants a positive whole number, not "abc"');
    expect(bad({ cpu: "256", memory: "4096" })).toBe("--memory: 4096 does not fit --cpu 256 (Fargate allows 512, 1024, 2048 MiB)");
    expect(bad({ startDelay: "0" })).toBe('--start-delay wants a duration such as 900, 90s, 15m or 1h, not "0"');
    expect(bad({ startTimeout: "x" })).toBe('--start-timeout wants a duration such as 900, 90s, 15m or 1h, not "x"');
    expect(bad({ maxDuration: "x" })).toBe('--max-duration wants a duration such as 900, 90s, 15m or 1h, not "x"');
    expect(bad({ maxCost: "abc" })).toBe('--max-cost wants an amount in US dollars such as 40 or 12.50, not "abc"');
    expect(bad({ minReady: "150" })).toBe('--min-ready wants a percentage above 0 and at most 100%, not "150"');
    expect(bad({ minReady: "abc" })).toBe('--min-ready wants a percentage such as 10%, not "abc"');
    expect(bad({ readyTimeout: "x" })).toBe('--ready-timeout wants a duration such as 900, 90s, 15m or 1h, not "x"');
    expect(bad({ heartbeatTimeout: "-1" })).toBe('--heartbeat-timeout wants a duration such as 900, 90s, 15m or 1h, not "-1"');
  });

  it("name the first bad flag in the order the commands have always checked them", () => {
    const first = (extra: Record<string, unknown>) => inputError(() => scenarioRunFlags("local").parse({ ...RUN, ...extra }));
    expect(first({ regions: "", count: "0" })).toBe("--regions names no region");
    expect(first({ count: "0", overrides: "[]" })).toMatch(/^--count /);
    expect(first({ cpu: "abc", startDelay: "x" })).toBe("--cpu needs --memory too: a Fargate task size is a CPU/memory pair");
    expect(first({ startTimeout: "x", maxDuration: "x" })).toMatch(/^--start-timeout /);
    expect(first({ maxCost: "x", minReady: "0" })).toMatch(/^--max-cost /);
    expect(first({ heartbeatTimeout: "x", minReady: "0" })).toMatch(/^--min-ready /);
  });
});

describe("--arch and --subnets (run, compare, plan, capacity)", () => {
  const AWS = { out: "results", regions: "eu-west-2", count: "1" };

  it("take x86_64 or arm64 (any case, amd64 as x86_64) and public or private, for the run and for the backend", () => {
    expect(["x86_64", "X86_64", "amd64", "arm64", "ARM64", " arm64 "].map((t) => parseArch(t))).toEqual(["x86_64", "x86_64", "x86_64", "arm64", "arm64", "arm64"]);
    expect(taskFlags.parse({ arch: "arm64", subnets: "Private" })).toMatchObject({ arch: "arm64", subnets: "private" });
    const run = runOptions({ ...AWS, arch: "arm64", subnets: "public" });
    expect(run.scenarioRun).toMatchObject({ arch: "arm64", subnets: "public" });
    expect(run.backend.expected).toEqual({ arch: "arm64", subnets: "public" });
    expect(planOptions({ ...AWS, subnets: "private" }).backend.expected).toEqual({ subnets: "private" });
    expect(compareOptions({ ...AWS, pause: "10s", target: ["a=ws://127.0.0.1:1", "b=ws://127.0.0.1:2"], arch: "x86_64" }).backend.expected).toEqual({ arch: "x86_64" });
    const capacity = capacityOptions({ ...AWS, start: "10", step: "10", max: "20", hold: "30", climb: "10", vary: "users", slo: ["errors<1%"], arch: "arm64" });
    expect(capacity.task.arch).toBe("arm64");
    expect(capacity.backend.expected).toEqual({ arch: "arm64" });
  });

  it("are absent when not given: each stack's own architecture, and nothing held against it", () => {
    const run = runOptions(AWS);
    expect(run.scenarioRun).not.toHaveProperty("arch");
    expect(run.scenarioRun).not.toHaveProperty("subnets");
    expect(run.backend).not.toHaveProperty("expected");
  });

  it("refuse another value naming the two allowed, and --local (no stack to hold them to)", () => {
    for (const bad of ["aarch64", "arm", "graviton", ""]) expect(inputError(() => taskFlags.parse({ arch: bad }))).toBe(`--arch wants x86_64 or arm64 (Graviton), not "${bad}"`);
    expect(inputError(() => taskFlags.parse({ subnets: "nat" }))).toBe('--subnets wants public (a public IP per task) or private (through a NAT gateway), not "nat"');
    expect(inputError(() => runOptions({ ...RUN, arch: "arm64" }))).toBe("--arch applies to Fargate tasks (the stack's architecture), not to --local");
    expect(inputError(() => planOptions({ ...RUN, subnets: "private" }))).toBe("--subnets applies to Fargate tasks (the stack's subnets), not to --local");
    expect(inputError(() => compareOptions({ ...RUN, pause: "10s", target: ["a=ws://127.0.0.1:1", "b=ws://127.0.0.1:2"], arch: "arm64" }))).toMatch(/^--arch applies to Fargate tasks/);
    expect(inputError(() => capacityOptions({ ...RUN, start: "10", step: "10", max: "20", hold: "30", climb: "10", vary: "users", slo: ["errors<1%"], arch: "arm64" }))).toMatch(/^--arch applies to Fargate tasks/);
  });
});

describe("the report flags", () => {
  it("parse into the report's options", () => {
    expect(reportFlags.parse({})).toEqual({ baseline: undefined, regressionThreshold: undefined, baselineAny: false, title: undefined });
    expect(reportFlags.parse({ baseline: "b", failOnRegression: "10%", baselineAny: true, title: "T" })).toEqual({ baseline: "b", regressionThreshold: 10, baselineAny: true, title: "T" });
  });

  it("refuse a gate without a baseline, after the threshold's own check", () => {
    expect(inputError(() => reportFlags.parse({ failOnRegression: "5" }))).toBe("--fail-on-regression needs --baseline or --history");
    expect(inputError(() => reportFlags.parse({ baselineAny: true }))).toBe("--baseline-any needs --baseline");
    expect(inputError(() => reportFlags.parse({ failOnRegression: "abc" }))).toBe('--fail-on-regression wants a percentage such as 10%, not "abc"');
  });

  it("take --history (a folder, s3://bucket/prefix or stack) and the band's branch", () => {
    expect(reportFlags.parse({ history: "hist", failOnRegression: "5%" })).toMatchObject({ regressionThreshold: 5, history: { location: "hist", branch: "main" } });
    expect(reportFlags.parse({ history: "stack", historyBranch: "trunk" }).history).toEqual({ location: "stack", branch: "trunk" });
    expect(reportFlags.parse({ history: "s3://b-1/p", historyBranch: "*" }).history).toEqual({ location: "s3://b-1/p", branch: null });
    expect(inputError(() => reportFlags.parse({ historyBranch: "main" }))).toBe("--history-branch needs --history");
    expect(inputError(() => reportFlags.parse({ history: "s3://Bad_Bucket/x" }))).toMatch(/^--history "s3:\/\/Bad_Bucket\/x": an S3 location is s3:\/\/bucket\/prefix/);
    expect(inputError(() => reportFlags.parse({ history: "h", historyBranch: " " }))).toBe("--history-branch wants a branch name, or * for every branch");
  });
});

describe("run's own flags", () => {
  it("parse the run id, the abort conditions and the metrics endpoint", () => {
    expect(runFlags.parse({})).toEqual({ target: undefined, runId: undefined, abortOn: [], serverMetricsUrl: undefined });
    const parsed = runFlags.parse({ target: "ws://h", runId: "ci-42", abortOn: ["errors>5%", "cable.broadcast_latency.p95>2000 for 30s"], serverMetrics: "http://127.0.0.1:9090" });
    expect(parsed).toEqual({ target: "ws://h", runId: "ci-42", abortOn: [parseAbortOn("errors>5%"), parseAbortOn("cable.broadcast_latency.p95>2000 for 30s")], serverMetricsUrl: "http://127.0.0.1:9090/" });
    expect(parsed.abortOn[1].forMs).toBe(30_000);
  });

  it("refuse each bad value with its message", () => {
    expect(inputError(() => runFlags.parse({ runId: "bad id" }))).toBe('--run-id wants 1–36 letters, digits, ".", "_" or "-" (starting with a letter or digit), not "bad id"');
    expect(inputError(() => runFlags.parse({ abortOn: ["nonsense"] }))).toMatch(/^--abort-on "nonsense": write <metric><op><bound> \[for <duration>\]/);
    expect(inputError(() => runFlags.parse({ serverMetrics: "ftp://x" }))).toBe('--server-metrics wants an http(s) URL, not "ftp://x"');
    expect(inputError(() => runFlags.parse({ serverMetrics: "notaurl" }))).toBe('--server-metrics wants an http(s) URL such as http://127.0.0.1:8080/metrics, not "notaurl"');
  });

  it("come after the scenario-run flags and before the report's", () => {
    expect(inputError(() => runOptions({ ...RUN, secret: ["1BAD"], regions: "" }))).toMatch(/^--secret 1BAD/);
    expect(inputError(() => runOptions({ ...RUN, heartbeatTimeout: "x", runId: "bad id" }))).toMatch(/^--heartbeat-timeout /);
    expect(inputError(() => runOptions({ ...RUN, failOnRegression: "x", runId: "bad id" }))).toMatch(/^--run-id /);
    expect(inputError(() => runOptions({ ...RUN, failOnRegression: "5", abortOn: ["nonsense"] }))).toMatch(/^--abort-on /);
  });
});

describe("compare's flags", () => {
  const TWO = { target: ["a=ws://127.0.0.1:1", "b=ws://127.0.0.1:2"] };

  it("parse the servers and the comparison's own flags", () => {
    expect(compareTargetFlags.parse({ ...TWO, serverMetrics: ["a=http://m/metrics"], serverPid: ["b=12,13"] })).toEqual([
      { name: "a", url: "ws://127.0.0.1:1", serverMetricsUrl: "http://m/metrics" },
      { name: "b", url: "ws://127.0.0.1:2", serverPids: [12, 13] },
    ]);
    expect(compareFlags.parse({ pause: "10s" })).toEqual({ title: undefined, pauseMs: 10_000, compareId: undefined, regressionThreshold: undefined });
    expect(compareFlags.parse({ pause: "1m", compareId: "c1", failOnRegression: "7.5%", title: "T" })).toEqual({ title: "T", pauseMs: 60_000, compareId: "c1", regressionThreshold: 7.5 });
  });

  it("refuse each bad value with its message", () => {
    expect(inputError(() => compareTargetFlags.parse({ target: ["soketi=ws://x"] }))).toBe("compare wants two --target NAME=URL or more, got 1");
    expect(inputError(() => compareTargetFlags.parse({ ...TWO, serverPid: ["c=12"] }))).toBe("--server-pid names c, which no --target is (a, b)");
    expect(inputError(() => compareFlags.parse({ pause: "x" }))).toBe('--pause wants a duration such as 900, 90s, 15m or 1h, not "x"');
    // --compare-id has always been worded as --run-id.
    expect(inputError(() => compareFlags.parse({ pause: "10s", compareId: "bad id" }))).toMatch(/^--run-id wants /);
    expect(inputError(() => compareFlags.parse({ pause: "10s", failOnRegression: "x" }))).toBe('--fail-on-regression wants a percentage such as 10%, not "x"');
  });

  it("check the secrets, then the servers, then the run's flags, then its own", () => {
    const raw = { ...RUN, pause: "10s" };
    expect(inputError(() => compareOptions({ ...raw, target: ["a=ws://x"], secret: ["1BAD"] }))).toMatch(/^--secret 1BAD/);
    expect(inputError(() => compareOptions({ ...raw, target: ["a=ws://x"], regions: "" }))).toBe("compare wants two --target NAME=URL or more, got 1");
    expect(inputError(() => compareOptions({ ...raw, ...TWO, pause: "x", minReady: "0" }))).toMatch(/^--min-ready /);
    const parsed = compareOptions({ ...raw, ...TWO, compareId: "c1" });
    expect(parsed.targets.map((t) => t.name)).toEqual(["a", "b"]);
    expect(parsed.compare.compareId).toBe("c1");
    expect(parsed.scenarioRun).not.toHaveProperty("target");
  });
});

describe("plan's flags", () => {
  it("are the scenario-run flags and --target", () => {
    const parsed = planOptions({ ...RUN, target: "ws://h", count: "2" });
    expect(parsed.scenarioRun).toMatchObject({ regions: ["local"], count: 2, target: "ws://h", secretRefs: {}, secretValues: {} });
    expect(inputError(() => planOptions({ ...RUN, secret: ["1BAD"], count: "0" }))).toMatch(/^--secret 1BAD/);
  });
});

describe("collect's and stop's flags", () => {
  it("default to the run's own regions and count, an empty value too", () => {
    expect(collectFlags("local").parse({})).toEqual({ regions: undefined, count: undefined });
    expect(collectFlags("local").parse({ regions: "", count: "" })).toEqual({ regions: undefined, count: undefined });
    expect(collectFlags("local").parse({ regions: "local-a,local-b", count: "2" })).toEqual({ regions: ["local-a", "local-b"], count: 2 });
    expect(stopFlags("aws").parse({ regions: "eu-west-2" })).toEqual({ regions: ["eu-west-2"] });
  });

  it("refuse each bad value with its message", () => {
    expect(inputError(() => collectFlags("local").parse({ regions: "local,local" }))).toBe("--regions names local twice");
    expect(inputError(() => collectFlags("local").parse({ count: "0" }))).toBe('--count wants a positive whole number, not "0"');
    expect(inputError(() => stopFlags("aws").parse({ regions: "local" }))).toMatch(/^--regions: "local" is a local region name/);
  });
});

describe("capacity's flags", () => {
  const STAIR = { start: "10", step: "10", max: "20", hold: "30", climb: "10", vary: "users", slo: ["errors<1%"] };
  const CAPACITY = { ...RUN, ...STAIR };

  it("parse the stair, the axis and the SLOs", () => {
    expect(capacitySearchFlags(1).parse(STAIR)).toEqual({ stair: { start: 10, step: 10, max: 20, holdS: 30, climbS: 10 }, vary: "users", users: undefined, refine: undefined, slos: [parseSlo("errors<1%")] });
    const byRate = capacitySearchFlags(2).parse({ ...STAIR, vary: "rate", users: "100", start: "100", step: "100", max: "1000", refine: "25" });
    expect(byRate).toMatchObject({ vary: "rate", users: 100, refine: 25, stair: { start: 100, step: 100, max: 1000 } });
  });

  it("refuse each bad value with its message", () => {
    const bad = (extra: Record<string, unknown>, tasks = 1) => inputError(() => capacitySearchFlags(tasks).parse({ ...STAIR, ...extra }));
    expect(bad({ vary: "rate" })).toBe("--vary rate needs --users N: how many users send the levels' messages (all regions together)");
    expect(bad({ users: "20" })).toBe("--users is the fixed user count of --vary rate; by users, the levels are the users (--start, --step, --max)");
    // By users, --users is refused for being there at all, whatever its value.
    expect(bad({ users: "abc" })).toMatch(/^--users is the fixed user count/);
    expect(bad({ vary: "rate", users: "abc" })).toBe('--users wants a positive whole number, not "abc"');
    expect(bad({ start: "0" })).toBe('--start wants a positive whole number, not "0"');
    expect(bad({ start: "30" })).toBe("--start 30 is above --max 20");
    expect(bad({ hold: "5" })).toBe("--hold 5: hold at least 20 s, so that each hold contains a whole 10 s metrics period of Artillery's");
    expect(bad({ climb: "0" })).toBe('--climb wants a positive whole number, not "0"');
    expect(bad({ refine: "10" })).toBe("--refine 10 is not finer than --step 10: give a resolution below the step, e.g. --refine 2");
    expect(bad({ refine: "5", step: "6", start: "6", max: "18" }, 2)).toMatch(/^--refine 5 does not split evenly over 2 task\(s\)/);
    expect(bad({ refine: "x" })).toBe('--refine wants a positive whole number, not "x"');
    expect(bad({ slo: ["bogus"] })).toMatch(/^--slo "bogus": write <metric><op><bound>/);
  });

  it("parse the task flags and the limits after the search's, every flag before any region is opened", () => {
    const parsed = capacityOptions({ ...CAPACITY, count: "2", target: "ws://h", spot: true, maxCost: "40", minCapacity: "15", serverMetrics: "http://m:1/metrics" });
    expect(parsed.placement).toEqual({ regions: ["local"], count: 2 });
    expect(parsed.task).toMatchObject({ target: "ws://h", spot: true, spotOnly: false, maxCostUsd: 40, minCapacity: 15, serverMetricsUrl: "http://m:1/metrics", secretRefs: {} });
    const first = (extra: Record<string, unknown>) => inputError(() => capacityOptions({ ...CAPACITY, ...extra }));
    expect(first({ count: "0", slo: ["bogus"] })).toMatch(/^--count /);
    expect(first({ slo: ["bogus"], secret: ["1BAD"] })).toMatch(/^--slo /);
    expect(first({ secret: ["1BAD"], overrides: "{" })).toMatch(/^--secret /);
    expect(first({ startDelay: "x", minCapacity: "0" })).toMatch(/^--start-delay /);
    expect(first({ maxCost: "x", serverMetrics: "ftp://x" })).toMatch(/^--max-cost /);
    expect(first({ minCapacity: "0", serverMetrics: "ftp://x" })).toMatch(/^--min-capacity /);
  });

  it("share the task flags' schema with run", () => {
    const raw = { bundleRoot: "p", overrides: "{}", variables: "{}", insecure: true, environment: "e", spot: true, cpu: "512", memory: "1024", startDelay: "3s", startTimeout: "9s" };
    expect(taskFlags.parse(raw)).toEqual({ bundleRoot: "p", overrides: {}, variables: {}, insecure: true, environment: "e", spot: true, spotOnly: false, cpu: 512, memory: 1024, startDelayMs: 3_000, startTimeoutMs: 9_000 });
  });
});

describe("through the CLI", () => {
  const work = mkdtempSync(path.join(os.tmpdir(), "cli-options-"));
  afterAll(() => rmSync(work, { recursive: true, force: true }));
  beforeEach(() => {
    calls.runFanout.length = 0;
    calls.runCapacity.length = 0;
    calls.backends.length = 0;
    vi.spyOn(process.stderr, "write").mockImplementation(() => true);
    vi.spyOn(process.stdout, "write").mockImplementation(() => true);
  });
  afterEach(() => vi.restoreAllMocks());

  it("hands run's flags, as commander names them, to the run", async () => {
    const out = path.join(work, "out");
    const code = await main(["run", "s.yml", "--local", "--regions", "local-a,local-b", "--count", "2", "--out", out, "-k", "--spot-only", "-v", '{"a":1}', "-e", "stage", "--target", "ws://h", "--secret", "K=ssm:/cable-loadtest/k", "--max-cost", "40", "-y", "--min-ready", "50", "--run-id", "r1", "--abort-on", "errors>5%", "--baseline", "b", "--fail-on-regression", "10", "--baseline-any", "--title", "T"]);
    expect(code).toBe(0);
    expect(calls.runFanout).toEqual([
      expect.objectContaining({
        scenarioFile: "s.yml",
        outDir: out,
        store: path.join(out, ".local-store"),
        regions: ["local-a", "local-b"],
        count: 2,
        insecure: true,
        spot: true,
        spotOnly: true,
        variables: { a: 1 },
        environment: "stage",
        target: "ws://h",
        secretRefs: { K: "/cable-loadtest/k" },
        secretValues: {},
        maxCostUsd: 40,
        yes: true,
        minReadyPct: 50,
        runId: "r1",
        abortOn: [parseAbortOn("errors>5%")],
        baseline: "b",
        regressionThreshold: 10,
        baselineAny: true,
        title: "T",
      }),
    ]);
  });

  it("hands --arch and --subnets, as commander names them, to the run and to the AWS backend (which holds every stack to them)", async () => {
    const out = path.join(work, "arch");
    expect(await main(["run", "s.yml", "--regions", "eu-west-2", "--out", out, "--arch", "ARM64", "--subnets", "private"])).toBe(0);
    expect(calls.runFanout).toEqual([expect.objectContaining({ regions: ["eu-west-2"], arch: "arm64", subnets: "private" })]);
    expect(calls.backends).toEqual([expect.objectContaining({ kind: "aws", options: expect.objectContaining({ expected: { arch: "arm64", subnets: "private" } }) })]);
  });

  it("hands capacity's flags, as commander names them, to the search", async () => {
    const out = path.join(work, "cap");
    const code = await main(["capacity", "s.yml", "--local", "--regions", "local", "--out", out, "--slo", "errors<1%", "--vary", "rate", "--users", "50", "--start", "10", "--step", "10", "--max", "40", "--refine", "5", "--hold", "20", "--climb", "5", "-k", "--spot", "--cpu", "1024", "--memory", "2048", "--min-capacity", "20", "--server-metrics", "http://m:1/metrics", "--target", "ws://h"]);
    expect(code).toBe(0);
    expect(calls.runCapacity).toEqual([
      expect.objectContaining({
        scenarioFile: "s.yml",
        outDir: out,
        store: path.resolve(out, ".local-store"),
        regions: ["local"],
        count: 1,
        slos: [parseSlo("errors<1%")],
        stair: { start: 10, step: 10, max: 40, holdS: 20, climbS: 5 },
        vary: "rate",
        users: 50,
        refine: 5,
        insecure: true,
        spot: true,
        cpu: 1024,
        memory: 2048,
        minCapacity: 20,
        serverMetricsUrl: "http://m:1/metrics",
        target: "ws://h",
      }),
    ]);
  });
});

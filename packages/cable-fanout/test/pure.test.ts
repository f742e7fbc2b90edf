import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { TaskStatus } from "cable-worker/contract";
import { decideBarrier, defaultMinReadyPct, goMarker, tasksNeeded } from "../src/run/barrier";
import { taskNotes } from "../src/run/collect";
import { parseMinReady, parseRunId } from "../src/options";
import { renderStartSection, summarizeStart } from "../src/run/start-report";
import { buildBundle, commonDirectory } from "../src/run/bundle";
import { FanoutInputError } from "../src/errors";
import { parseDuration, parseSecrets, parseTaskSize } from "../src/options";
import { isRetryableFailure, isThrottling } from "../src/retry";
import { effectiveOverrides } from "../src/run/run-options";
import { newRunId } from "../src/run/runner";
import { loadScenario, phasesDurationMs } from "../src/scenario";
import { backoffSchedule, batches, RUN_TASK_BACKOFF } from "../src/schedule";
import { throttling } from "./helpers";
import { parseCompareTargets } from "../src/compare/targets";
import { processTree, sampleProcess } from "../src/compare/process-meter";

const ROOT = path.resolve(__dirname, "../../..");

describe("scheduling", () => {
  it("splits tasks into RunTask calls of at most 10", () => {
    expect(batches(23)).toEqual([10, 10, 3]);
    expect(batches(10)).toEqual([10]);
    expect(batches(1)).toEqual([1]);
    expect(batches(0)).toEqual([]);
    expect(() => batches(2.5)).toThrow(RangeError);
  });

  it("doubles the RunTask backoff up to its cap", () => {
    expect(backoffSchedule(RUN_TASK_BACKOFF)).toEqual([2_000, 4_000, 8_000, 16_000, 30_000]);
  });

  it("tells throttling and capacity failures from lasting ones", () => {
    expect(isThrottling(throttling())).toBe(true);
    expect(isThrottling(Object.assign(new Error("nope"), { name: "InvalidParameterException" }))).toBe(false);
    expect(isRetryableFailure("Capacity is unavailable at this time. Please try again later or in a different availability zone")).toBe(true);
    expect(isRetryableFailure("RESOURCE:MEMORY")).toBe(true);
    expect(isRetryableFailure("MISSING")).toBe(false);
  });
});

describe("scenarios and bundles", () => {
  it("bundles pubsub-rooms with its processor at their common root, rewriting nothing", () => {
    const scenario = loadScenario(path.join(ROOT, "scenarios/pubsub-rooms.yml"));
    expect(scenario.dependencies).toEqual([path.join(ROOT, "processors/rooms.js")]);
    expect(scenario.durationMs).toBe(90_000);
    const bundle = buildBundle(scenario, { startAt: 123, overrides: { config: { target: "ws://x" } } });
    expect(bundle.files.map((f) => f.key)).toEqual(["scenarios/pubsub-rooms.yml", "processors/rooms.js"]);
    expect(bundle.manifest).toEqual({ scenario: "scenarios/pubsub-rooms.yml", startAt: 123, overrides: { config: { target: "ws://x" } } });
  });

  it("takes the phases from --overrides for the expected duration", () => {
    const scenario = loadScenario(path.join(ROOT, "scenarios/chat.yml"), { config: { phases: [{ duration: "2m", arrivalRate: 1 }, { pause: 5 }] } });
    expect(scenario.durationMs).toBe(125_000);
    expect(phasesDurationMs([{ duration: "{{ $env.D }}" }])).toBeUndefined();
  });

  it("bundles config.tls's CA, client certificate and key where they name files, not where they hold PEM text", () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "fanout-tls-"));
    try {
      writeFileSync(path.join(dir, "ca.pem"), "-----BEGIN CERTIFICATE-----\n");
      writeFileSync(path.join(dir, "scenario.yml"), "config:\n  target: wss://staging.example/cable\n  tls:\n    ca: ./ca.pem\n    cert: \"-----BEGIN CERTIFICATE-----\"\nscenarios: []\n");
      expect(loadScenario(path.join(dir, "scenario.yml")).dependencies).toEqual([path.join(dir, "ca.pem")]);
      writeFileSync(path.join(dir, "scenario.yml"), "config:\n  tls:\n    ca: [./ca.pem, ./other-ca.pem]\nscenarios: []\n");
      expect(() => loadScenario(path.join(dir, "scenario.yml"))).toThrow(/config\.tls\.ca\[1\] names \.\/other-ca\.pem, which is not a file/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("names the field and file of a missing payload", () => {
    const file = path.join(ROOT, "packages/cable-fanout/test/fixtures/missing-payload.yml");
    expect(() => loadScenario(file)).toThrow(/config\.payload\[1\]\.path names \.\.\/data\/nope\.csv, which is not a file/);
  });

  it("names a typo in cable-report's ensure conditions before any task starts, in the script or in --overrides", () => {
    const spike = path.join(ROOT, "scenarios/spike.yml");
    expect(() => loadScenario(spike, { config: { plugins: { "cable-report": { ensure: ["recovery < 30s", "recovery < 30"] } } } })).toThrow(
      /spike\.yml: config\.plugins\.cable-report\.ensure\[1\]: "recovery < 30": write one of recovery < 30s/,
    );
    expect(loadScenario(spike, { config: { plugins: { "cable-report": { ensure: ["recovery < 30s", "drift.memory < 5%/h"] } } } }).durationMs).toBe(90_000);
  });

  it("finds the deepest common directory", () => {
    expect(commonDirectory(["/a/b/c", "/a/b/d", "/a/b"])).toBe("/a/b");
    expect(commonDirectory(["/a", "/b"])).toBe("/");
  });

  it("turns --target and -v into overrides", () => {
    expect(effectiveOverrides({ target: "ws://t", variables: { rooms: 2 }, overrides: { config: { phases: [] } } })).toEqual({
      config: { phases: [], target: "ws://t", variables: { rooms: 2 } },
    });
    expect(effectiveOverrides({})).toBeUndefined();
    // --insecure, as Artillery's: keeps a CA the scenario or --overrides give, and turns the check off.
    expect(effectiveOverrides({ insecure: true, overrides: { config: { tls: { ca: "./ca.pem" } } } })).toEqual({ config: { tls: { ca: "./ca.pem", rejectUnauthorized: false } } });
  });

  it("makes run ids that fit ECS startedBy", () => {
    const id = newRunId(Date.UTC(2025, 0, 2, 3, 4, 5));
    expect(id).toMatch(/^20250102-030405-[0-9a-f]{6}$/);
    expect(id.length).toBeLessThanOrEqual(36);
  });
});

describe("flags", () => {
  it("passes secrets to Fargate by reference only", () => {
    expect(parseSecrets(["PUSHER_APP_SECRET=ssm:/cable-loadtest/pusher"], "aws", {})).toEqual({ refs: { PUSHER_APP_SECRET: "/cable-loadtest/pusher" }, values: {} });
    expect(() => parseSecrets(["PUSHER_APP_SECRET"], "aws", { PUSHER_APP_SECRET: "s3cr3t" })).toThrow(/by reference only/);
    expect(() => parseSecrets(["PUSHER_APP_SECRET=s3cr3t"], "aws", {})).toThrow(/never the value itself/);
    expect(() => parseSecrets(["X=ssm:/other/x"], "aws", {})).toThrow(/under cable-loadtest\//);
    const arn = "arn:aws:secretsmanager:eu-west-2:123456789012:secret:cable-loadtest/pusher-AbCdEf";
    expect(parseSecrets([`S=${arn}`], "aws", {}).refs).toEqual({ S: arn });
  });

  it("passes a local secret's value from the environment, and refuses an unset one", () => {
    expect(parseSecrets(["PUSHER_APP_SECRET"], "local", { PUSHER_APP_SECRET: "s3cr3t" })).toEqual({ refs: {}, values: { PUSHER_APP_SECRET: "s3cr3t" } });
    expect(() => parseSecrets(["NOPE"], "local", {})).toThrow(FanoutInputError);
  });

  it("takes --cpu and --memory only as a Fargate pair, checked before anything starts", () => {
    expect(parseTaskSize(undefined, undefined)).toEqual({});
    expect(parseTaskSize("2048", "8192")).toEqual({ cpu: 2048, memory: 8192 });
    expect(() => parseTaskSize("2048", undefined)).toThrow("--cpu needs --memory too");
    expect(() => parseTaskSize(undefined, "8192")).toThrow("--memory needs --cpu too");
    expect(() => parseTaskSize("3000", "8192")).toThrow(new FanoutInputError("--cpu: 3000 is not a Fargate CPU size (256, 512, 1024, 2048, 4096, 8192, 16384)"));
    expect(() => parseTaskSize("256", "4096")).toThrow(new FanoutInputError("--memory: 4096 does not fit --cpu 256 (Fargate allows 512, 1024, 2048 MiB)"));
    expect(() => parseTaskSize("2 vCPU", "8192")).toThrow(/--cpu wants a positive whole number/);
  });

  it("reads durations in seconds or with units", () => {
    expect(parseDuration("--max-duration", "90")).toBe(90_000);
    expect(parseDuration("--max-duration", "15m")).toBe(900_000);
    expect(() => parseDuration("--max-duration", "soon")).toThrow(/--max-duration wants a duration/);
  });
});

describe("compare's --server-pid", () => {
  it("takes one pid or several (anycable-go and its RPC app), and names a bad one", () => {
    const targets = parseCompareTargets(["a=ws://127.0.0.1:1", "b=ws://127.0.0.1:2"], [], ["a=12", "b=34, 56"]);
    expect(targets.map((t) => [t.name, t.serverPids])).toEqual([["a", [12]], ["b", [34, 56]]]);
    expect(() => parseCompareTargets(["a=ws://x", "b=ws://y"], [], ["b=34,x"])).toThrow('--server-pid b: "x" is not a process id');
  });

  it("sums the process trees of several roots, each process once", () => {
    const pids = (roots: number | number[]) => processTree(roots).map((s) => s.pid).sort((a, b) => a - b);
    const both = pids([process.pid, process.ppid]);
    // The parent's tree holds this process too: counted once.
    expect(both).toEqual(pids(process.ppid));
    expect(new Set(both).size).toBe(both.length);
    expect(both).toEqual(expect.arrayContaining([process.pid, process.ppid]));
    expect(sampleProcess([process.pid, process.ppid]).rssBytes!).toBeGreaterThan(sampleProcess(process.pid).rssBytes! / 2);
  });
});

describe("the ready barrier", () => {
  const state = (over: Partial<Parameters<typeof decideBarrier>[0]>) => ({ expected: 10, needed: 10, ready: 0, pending: 10, allStarted: true, now: 0, deadline: 1_000, ...over });

  it("needs --min-ready of every task asked for, rounded up, at least one", () => {
    expect(tasksNeeded(10, 100)).toBe(10);
    expect(tasksNeeded(10, 90)).toBe(9);
    expect(tasksNeeded(10, 85)).toBe(9);
    expect(tasksNeeded(3, 1)).toBe(1);
    expect(tasksNeeded(200, 99.5)).toBe(199);
  });

  it("waits for every task up to 50 in all by default, then for 98% of them, rounded up", () => {
    const neededByDefault = (expected: number) => tasksNeeded(expected, defaultMinReadyPct(expected));
    expect([1, 50, 51, 500, 1500].map((n) => [n, defaultMinReadyPct(n), neededByDefault(n)])).toEqual([
      [1, 100, 1],
      [50, 100, 50],
      [51, 98, 50],
      [500, 98, 490],
      [1500, 98, 1470],
    ]);
  });

  it("goes once enough are ready, waits while they can be, and fails at the deadline or when too many are lost", () => {
    expect(decideBarrier(state({ ready: 10, pending: 0 }))).toEqual({ kind: "go" });
    expect(decideBarrier(state({ needed: 9, ready: 9, pending: 1 }))).toEqual({ kind: "go" });
    expect(decideBarrier(state({ ready: 4, pending: 6, now: 999 }))).toEqual({ kind: "wait" });
    expect(decideBarrier(state({ ready: 4, pending: 6, now: 1_000 }))).toEqual({ kind: "fail", reason: "only 4 of 10 task(s) were ready within --ready-timeout, 10 needed (--min-ready)" });
    // Two tasks stopped before they were ready: 100% can no longer be reached, so there is no point waiting.
    expect(decideBarrier(state({ ready: 4, pending: 4 }))).toEqual({ kind: "fail", reason: "only 8 of 10 task(s) could still become ready, 10 needed (--min-ready)" });
    // While RunTask is still starting tasks elsewhere, a shortfall is not final.
    expect(decideBarrier(state({ ready: 4, pending: 4, allStarted: false }))).toEqual({ kind: "wait" });
  });

  it("names the ready tasks in the go marker as <region>/<taskId>", () => {
    expect(goMarker(123, new Map([["us-east-1", ["b", "a"]], ["eu-west-2", ["c"]]]))).toEqual({ startAt: 123, tasks: ["eu-west-2/c", "us-east-1/a", "us-east-1/b"] });
  });

  it("parses --min-ready and --run-id, naming the flag", () => {
    expect(parseMinReady("90%")).toBe(90);
    expect(parseMinReady("100")).toBe(100);
    expect(() => parseMinReady("0%")).toThrow("--min-ready wants a percentage above 0 and at most 100%");
    expect(() => parseMinReady("120%")).toThrow("--min-ready wants a percentage above 0 and at most 100%");
    expect(parseRunId("gh-123-1")).toBe("gh-123-1");
    expect(() => parseRunId("no spaces")).toThrow("--run-id wants 1–36 letters");
    expect(() => parseRunId("x".repeat(37))).toThrow("--run-id wants 1–36 letters");
  });

  it("takes secretsmanager:<name> references, read by name in each task's region", () => {
    expect(parseSecrets(["COOKIE=secretsmanager:cable-loadtest/cookie"], "aws", {}).refs).toEqual({ COOKIE: "secretsmanager:cable-loadtest/cookie" });
    expect(() => parseSecrets(["COOKIE=secretsmanager:prod/cookie"], "aws", {})).toThrow(/under cable-loadtest\//);
  });
});

describe("the start section of report.md", () => {
  const status = (region: string, taskId: string, firstMetricAt: number | null, loadStartedAt: number | null) =>
    ({ runId: "r", region, taskId, exitCode: 0, reason: null, startedAt: "", endedAt: "", startLagMs: 0, artilleryExitCode: 0, firstMetricAt, loadStartedAt }) as TaskStatus;

  it("gives the skew across all tasks and each region's first and last start, from the first metric (else the spawn), and marks a missed barrier", () => {
    const summary = summarizeStart({
      startAt: 10_000,
      count: 2,
      regions: ["eu-west-2", "us-east-1"],
      statuses: new Map([
        ["eu-west-2", [status("eu-west-2", "a", 10_040, 10_001), status("eu-west-2", "b", 10_090, 10_002)]],
        ["us-east-1", [status("us-east-1", "c", null, 10_300), status("us-east-1", "d", null, null)]],
      ]),
      barrier: { outcome: "go", minReadyPct: 50, readyTimeoutMs: 600_000, expected: 4, ready: 3, waitedMs: 42_000, missed: { "us-east-1": ["d"] } },
    });
    expect(summary.skewMs).toBe(260);
    expect(summary.regions).toEqual([
      { region: "eu-west-2", started: 2, expected: 2, firstMs: 40, lastMs: 90, missed: 0, clockBoundMs: null },
      { region: "us-east-1", started: 1, expected: 2, firstMs: 300, lastMs: 300, missed: 1, clockBoundMs: null },
    ]);
    expect(renderStartSection(summary)).toBe(
      [
        "",
        "### Start",
        "",
        "Ready barrier: 3 of 4 task(s) ready after 42 s (--min-ready 50%, --ready-timeout 600 s).",
        "Common start: 1970-01-01T00:00:10.000Z (go marker, S3's clock).",
        "Start skew across all tasks and regions: **260 ms** (latest minus earliest first virtual user, by Artillery's first metric).",
        "Clock error bound: unknown here (no Fargate metadata, no chrony, no synchronized kernel clock): cross-task latencies are only as good as the machines' clocks.",
        "",
        "| Region | Tasks started | First start | Last start | Skew | Missed the barrier | Clock error bound |",
        "|---|---|---|---|---|---|---|",
        "| eu-west-2 | 2/2 | +40 ms | +90 ms | 50 ms | – | unknown |",
        "| us-east-1 | 1/2 | +300 ms | +300 ms | 0 ms | **1 task(s): no load** | unknown |",
        "",
      ].join("\n"),
    );
  });

  it("says plainly when the run never started", () => {
    const text = renderStartSection(
      summarizeStart({ startAt: null, count: 1, regions: ["eu-west-2"], statuses: new Map(), barrier: { outcome: "failed", minReadyPct: 100, readyTimeoutMs: 60_000, expected: 1, ready: 0, waitedMs: 60_000, reason: "only 0 of 1 task(s) were ready within --ready-timeout, 1 needed (--min-ready)", missed: {} } }),
    );
    expect(text).toContain("**The run did not start:** only 0 of 1 task(s) were ready within --ready-timeout, 1 needed (--min-ready) (0 of 1 task(s) ready after 60 s");
    expect(text).toContain("| eu-west-2 | 0/1 | – | – | – | 1 task(s) did not start | – |");
    expect(text).not.toContain("Clock error bound:");
  });
});

describe("taskNotes", () => {
  const task = (region: string, n: number, state: "aborted" | "failed", reason: string | null = null) => ({ region, taskId: `task-${n}`, state, reason, log: `log/${n}` });

  it("lists a few tasks one by one, and sums up a region's many tasks that ended alike in one note", () => {
    const tasks = [
      ...Array.from({ length: 500 }, (_, i) => task("eu-west-2", i, "aborted")),
      task("eu-west-2", 900, "failed", "CannotPullContainerError: pull failed"),
      ...Array.from({ length: 3 }, (_, i) => task("us-east-1", i, "aborted")),
      { region: "us-east-1", taskId: "task-9", state: "ok" as const, reason: null },
    ];
    expect(taskNotes(tasks)).toEqual([
      "eu-west-2: 500 tasks: stopped by --abort-on (task-0, task-1, task-2, task-3, task-4, …; fanout.json lists every task and its log)",
      "eu-west-2 task-900: CannotPullContainerError: pull failed (log: log/900)",
      "us-east-1 task-0: stopped by --abort-on (log: log/0)",
      "us-east-1 task-1: stopped by --abort-on (log: log/1)",
      "us-east-1 task-2: stopped by --abort-on (log: log/2)",
    ]);
  });
});

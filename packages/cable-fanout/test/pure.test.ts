import path from "node:path";
import { describe, expect, it } from "vitest";
import { buildBundle, commonDirectory } from "../src/bundle";
import { FanoutInputError } from "../src/errors";
import { parseDuration, parseSecrets, parseTaskSize } from "../src/options";
import { isRetryableFailure, isThrottling } from "../src/retry";
import { effectiveOverrides, newRunId } from "../src/runner";
import { loadScenario, phasesDurationMs } from "../src/scenario";
import { backoffSchedule, batches, RUN_TASK_BACKOFF } from "../src/schedule";
import { throttling } from "./helpers";

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

  it("names the field and file of a missing payload", () => {
    const file = path.join(ROOT, "packages/cable-fanout/test/fixtures/missing-payload.yml");
    expect(() => loadScenario(file)).toThrow(/config\.payload\[1\]\.path names \.\.\/data\/nope\.csv, which is not a file/);
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

// The task's clock error bound in status.json: from a stand-in for Fargate's task metadata endpoint
// (JSON shaped like AWS's documented v4 response), from `chronyc -c tracking` lines, or unknown;
// never slower than its timeout, never a throw.
import http from "node:http";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cleanEnv } from "cable-test-servers";
import { parseAdjtimex, parseChronyTracking, parseClockDrift, readClockBound, worseClock } from "../src/clock-bound";
import { taskStatusSchema } from "../src/status";
import { requireBuiltWorker, runWorker } from "./helpers";

/** The v4 task metadata of a Fargate task, as AWS documents it (trimmed), with its ClockDrift. */
function fargateTaskMetadata(clockDrift: Record<string, unknown> | undefined) {
  return {
    Cluster: "arn:aws:ecs:us-west-2:111122223333:cluster/default",
    TaskARN: "arn:aws:ecs:us-west-2:111122223333:task/default/e9028f8d5d8e4f258373e7b93ce9a3c3",
    Family: "cable-worker",
    Revision: "3",
    DesiredStatus: "RUNNING",
    KnownStatus: "RUNNING",
    Limits: { CPU: 1, Memory: 2048 },
    PullStartedAt: "2021-09-07T16:56:43.054216183Z",
    PullStoppedAt: "2021-09-07T16:56:52.283473598Z",
    AvailabilityZone: "us-west-2a",
    LaunchType: "FARGATE",
    Containers: [],
    ...(clockDrift ? { ClockDrift: clockDrift } : {}),
    EphemeralStorageMetrics: { Utilized: 261, Reserved: 20496 },
  };
}

const SYNCHRONIZED = { ClockErrorBound: 0.5458234999999999, ReferenceTimestamp: "2021-09-07T16:57:44Z", ClockSynchronizationStatus: "SYNCHRONIZED" };

/** A stand-in for `${ECS_CONTAINER_METADATA_URI_V4}`: `/<name>/task` answers `answers[name]`; "hang" never answers; "500" fails. */
async function metadataDouble(answers: Record<string, unknown>) {
  const requests: string[] = [];
  const server = http.createServer((req, res) => {
    requests.push(req.url ?? "");
    const name = (req.url ?? "").split("/")[1];
    const answer = answers[name];
    if (answer === "hang") return;
    if (answer === "500" || !(req.url ?? "").endsWith("/task")) return void res.writeHead(500).end("no");
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(answer));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    uri: (name: string) => `http://127.0.0.1:${port}/${name}`,
    requests,
    close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}

const noChrony = async () => undefined;
const noAdjtimex = async () => undefined;
/** Debian's `adjtimex --print`, as it prints on a machine whose clock ntpd keeps (status 0x2001: STA_PLL | STA_NANO) and on one nothing keeps (0x40: STA_UNSYNC). */
const adjtimexPrint = (status: number, maxerror: number) =>
  `         mode: 0\n       offset: 0\n    frequency: 0\n     maxerror: ${maxerror}\n     esterror: 16000000\n       status: ${status}\ntime_constant: 2\n    precision: 1\n    tolerance: 32768000\n         tick: 10000\n     raw time:  1795865542s 613689us = 1795865542.613689\n return value = 5\n`;

describe("readClockBound on Fargate (task metadata endpoint v4)", () => {
  let double: Awaited<ReturnType<typeof metadataDouble>>;
  beforeAll(async () => {
    double = await metadataDouble({
      synced: fargateTaskMetadata(SYNCHRONIZED),
      unsynced: fargateTaskMetadata({ ClockErrorBound: 48.2, ReferenceTimestamp: "2021-09-07T16:57:44Z", ClockSynchronizationStatus: "NOT_SYNCHRONIZED" }),
      nodrift: fargateTaskMetadata(undefined),
      broken: "500",
      hang: "hang",
    });
  });
  afterAll(() => double.close());

  it("reads ClockDrift: ClockErrorBound in ms, and whether the clock is synchronized", async () => {
    expect(await readClockBound({ ECS_CONTAINER_METADATA_URI_V4: double.uri("synced") }, { chronyc: noChrony, adjtimex: noAdjtimex })).toEqual({ errorBoundMs: 0.5458234999999999, source: "fargate", synchronized: true });
    expect(double.requests).toContain("/synced/task");
    expect(await readClockBound({ ECS_CONTAINER_METADATA_URI_V4: double.uri("unsynced") }, { chronyc: noChrony, adjtimex: noAdjtimex })).toEqual({ errorBoundMs: 48.2, source: "fargate", synchronized: false });
  });

  it("falls back to chrony, then unknown, when the metadata has no ClockDrift or fails", async () => {
    const chrony = async () => "A9FEA97B,169.254.169.123,4,1700000000.123,0.000012,0.000003,0.000010,-1.2,0.001,0.02,0.000400,0.000250,64.0,Normal\n";
    expect(await readClockBound({ ECS_CONTAINER_METADATA_URI_V4: double.uri("nodrift") }, { chronyc: chrony, adjtimex: noAdjtimex })).toEqual({ errorBoundMs: 0.462, source: "chrony", synchronized: true });
    expect(await readClockBound({ ECS_CONTAINER_METADATA_URI_V4: double.uri("broken") }, { chronyc: noChrony, adjtimex: noAdjtimex })).toEqual({ errorBoundMs: null, source: "unknown" });
  });

  it("gives up on an endpoint that does not answer within its timeout", async () => {
    const started = Date.now();
    expect(await readClockBound({ ECS_CONTAINER_METADATA_URI_V4: double.uri("hang") }, { chronyc: noChrony, adjtimex: noAdjtimex, timeoutMs: 300 })).toEqual({ errorBoundMs: null, source: "unknown" });
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it("never throws: a fetch or chronyc that throws is unknown", async () => {
    const throwing = (() => {
      throw new Error("boom");
    }) as unknown as typeof fetch;
    expect(await readClockBound({ ECS_CONTAINER_METADATA_URI_V4: "http://x" }, { fetchFn: throwing, chronyc: () => Promise.reject(new Error("boom")), adjtimex: () => Promise.reject(new Error("boom")) })).toEqual({ errorBoundMs: null, source: "unknown" });
  });
});

describe("readClockBound elsewhere", () => {
  it("is unknown without the metadata endpoint and without chrony", async () => {
    expect(await readClockBound({}, { chronyc: noChrony, adjtimex: noAdjtimex })).toEqual({ errorBoundMs: null, source: "unknown" });
  });

  it("falls back to the kernel's NTP state without chrony: maxerror the bound, none while STA_UNSYNC", async () => {
    expect(await readClockBound({}, { chronyc: noChrony, adjtimex: async () => adjtimexPrint(0x2001, 15_250) })).toEqual({ errorBoundMs: 15.25, source: "kernel", synchronized: true });
    expect(await readClockBound({}, { chronyc: noChrony, adjtimex: async () => adjtimexPrint(0x40, 16_000_000) })).toEqual({ errorBoundMs: null, source: "kernel", synchronized: false });
    expect(await readClockBound({}, { chronyc: noChrony, adjtimex: async () => "adjtimex: Operation not permitted" })).toEqual({ errorBoundMs: null, source: "unknown" });
  });

  it("on this machine: chrony's bound if chronyd runs here, else the kernel's if adjtimex is installed, else unknown, within about a second", async () => {
    const started = Date.now();
    const clock = await readClockBound({});
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(["chrony", "kernel", "unknown"]).toContain(clock.source);
    if (clock.source === "unknown") expect(clock.errorBoundMs).toBeNull();
  });
});

describe("parseChronyTracking", () => {
  it("bounds the error by |system time offset| + root dispersion + root delay / 2, in ms", () => {
    // chrony 4.x, 14 fields: reference id and name, stratum, ref time, system time, last offset, RMS
    // offset, frequency, residual freq, skew, root delay, root dispersion, update interval, leap status.
    expect(parseChronyTracking("A9FEA97B,169.254.169.123,4,1700000000.123,-0.000100,0.000003,0.000010,-1.2,0.001,0.02,0.001000,0.000300,64.0,Normal")).toEqual({
      errorBoundMs: 0.9,
      source: "chrony",
      synchronized: true,
    });
    // Without the reference name column (older chrony): read from the end, the same figures.
    expect(parseChronyTracking("A9FEA97B,4,1700000000.123,-0.000100,0.000003,0.000010,-1.2,0.001,0.02,0.001000,0.000300,64.0,Normal")?.errorBoundMs).toBe(0.9);
  });

  it("gives no bound for an unsynchronised chronyd, and nothing for output that is not a tracking line", () => {
    expect(parseChronyTracking("00000000,,0,0.000000000,0.000000000,0.000000000,0.000000000,0.000,0.000,0.000,0.000000000,0.000000000,0.0,Not synchronised")).toEqual({ errorBoundMs: null, source: "chrony", synchronized: false });
    expect(parseChronyTracking("506 Cannot talk to daemon")).toBeUndefined();
    expect(parseChronyTracking("")).toBeUndefined();
  });
});

describe("parseClockDrift and worseClock", () => {
  it("takes only what ClockDrift says", () => {
    expect(parseClockDrift(fargateTaskMetadata({ ClockErrorBound: 1.5 }))).toEqual({ errorBoundMs: 1.5, source: "fargate" });
    expect(parseClockDrift(fargateTaskMetadata({ ClockSynchronizationStatus: "NOT_SYNCHRONIZED" }))).toEqual({ errorBoundMs: null, source: "fargate", synchronized: false });
    expect(parseClockDrift(fargateTaskMetadata({ ClockErrorBound: "1.5" }))).toBeUndefined();
    expect(parseClockDrift(null)).toBeUndefined();
  });

  it("keeps the larger of a task's two readings, synchronized only if both were", () => {
    expect(worseClock({ errorBoundMs: 0.4, source: "fargate", synchronized: true }, { errorBoundMs: 0.9, source: "fargate", synchronized: false })).toEqual({ errorBoundMs: 0.9, source: "fargate", synchronized: false });
    expect(worseClock({ errorBoundMs: 0.4, source: "fargate", synchronized: true }, { errorBoundMs: null, source: "unknown" })).toEqual({ errorBoundMs: 0.4, source: "fargate", synchronized: true });
    expect(worseClock({ errorBoundMs: null, source: "chrony", synchronized: false }, { errorBoundMs: 2, source: "chrony", synchronized: true })).toEqual({ errorBoundMs: null, source: "chrony", synchronized: false });
  });
});

describe("status.json's clock, from the real entrypoint", () => {
  let store: string;
  let double: Awaited<ReturnType<typeof metadataDouble>>;
  beforeAll(async () => {
    requireBuiltWorker();
    store = await mkdtemp(path.join(os.tmpdir(), "cable-clock-"));
    double = await metadataDouble({ v4: fargateTaskMetadata(SYNCHRONIZED) });
  });
  afterAll(async () => {
    await double.close();
    await rm(store, { recursive: true, force: true });
  });

  it("writes the metadata endpoint's bound, even for a task that failed (no bundle), in the contract's shape", async () => {
    const env = cleanEnv({ CABLE_RUN_ID: "clock", CABLE_REGION: "eu-west-2", CABLE_TASK_ID: "task-1", CABLE_STORE: store, CABLE_WORK_DIR: path.join(store, ".work"), ECS_CONTAINER_METADATA_URI_V4: double.uri("v4") });
    const run = await runWorker(env);
    expect(run.code).toBe(2);
    const status = taskStatusSchema.parse(JSON.parse(await readFile(path.join(store, "runs/clock/eu-west-2/task-1/status.json"), "utf8")));
    expect(status.clock).toEqual({ errorBoundMs: 0.5458234999999999, source: "fargate", synchronized: true });
    // Read twice: at the start and at the end.
    expect(double.requests.filter((r) => r === "/v4/task")).toHaveLength(2);
  });
});

describe("parseAdjtimex", () => {
  it("reads status and maxerror (µs) and nothing else; not that output is undefined", () => {
    expect(parseAdjtimex(adjtimexPrint(1, 500))).toEqual({ errorBoundMs: 0.5, source: "kernel", synchronized: true });
    expect(parseAdjtimex(adjtimexPrint(64 | 1, 500))).toEqual({ errorBoundMs: null, source: "kernel", synchronized: false });
    expect(parseAdjtimex("status: 0\n")).toBeUndefined();
    expect(parseAdjtimex("maxerror: -1\nstatus: 0\n")).toBeUndefined();
    expect(parseAdjtimex("")).toBeUndefined();
  });
});

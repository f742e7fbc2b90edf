// --live[=PORT], --live-host and --detach, parsed: through the schemas, and through the real CLI
// (commander's option keys must be the schemas') with runFanout replaced by a recorder.
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeEach, describe, expect, it, vi } from "vitest";
import { attachOptions, compareOptions, liveFlags, runOptions, statusOptions } from "../src/cli-options";
import { main } from "../src/cli";
import { inputError, RUN } from "./helpers";
import { parseLive } from "../src/options";

const calls = vi.hoisted(() => ({ runFanout: [] as unknown[] }));
vi.mock("../src/run/runner", async (importOriginal) => ({
  ...(await importOriginal<typeof import("../src/run/runner")>()),
  runFanout: async (options: { outDir: string; detach?: boolean }) => {
    calls.runFanout.push(options);
    return { exitCode: 0, failedRegions: [], runDir: options.outDir, runId: "r1", ...(options.detach ? { detached: true } : {}) };
  },
}));



describe("--live and --live-host", () => {
  it("--live alone is any free port on loopback; --live=8080 that port; absent, no page", () => {
    expect(liveFlags.parse({ live: true })).toEqual({ live: { port: 0, host: "127.0.0.1" } });
    expect(liveFlags.parse({ live: "8080" })).toEqual({ live: { port: 8080, host: "127.0.0.1" } });
    expect(liveFlags.parse({ live: "0" })).toEqual({ live: { port: 0, host: "127.0.0.1" } });
    expect(liveFlags.parse({})).toEqual({});
  });

  it("refuses a port that is no port, naming --live", () => {
    for (const bad of ["http", "-1", "65536", "80a", "scenarios/chat.yml"]) expect(inputError(() => liveFlags.parse({ live: bad }))).toMatch(/^--live wants a port number from 0 to 65535/);
  });

  it("--live-host: loopback without a warning, any other address with one; needs --live", () => {
    expect(liveFlags.parse({ live: true, liveHost: "localhost" })).toEqual({ live: { port: 0, host: "localhost" } });
    expect(liveFlags.parse({ live: true, liveHost: "::1" })).toEqual({ live: { port: 0, host: "::1" } });
    expect(liveFlags.parse({ live: "9000", liveHost: "127.0.0.2" })).toEqual({ live: { port: 9000, host: "127.0.0.2" } });
    const open = parseLive("9000", "0.0.0.0", "127.0.0.1");
    expect(open.live).toEqual({ port: 9000, host: "0.0.0.0" });
    expect(open.warning).toMatch(/^warning: --live-host 0\.0\.0\.0 is not a loopback address: the live page is then reachable by anyone who can reach 0\.0\.0\.0 on that port and has the printed URL \(the token is in it\)$/);
    expect(inputError(() => liveFlags.parse({ liveHost: "0.0.0.0" }))).toBe("--live-host needs --live: it says where the live page listens");
    expect(inputError(() => liveFlags.parse({ live: true, liveHost: "a b" }))).toMatch(/^--live-host wants a host name or an address/);
  });

  it("reach run's, compare's and attach's options; the warning is the command's to print", () => {
    const run = runOptions({ ...RUN, live: "8080", liveHost: "0.0.0.0" });
    expect(run.run.live).toEqual({ port: 8080, host: "0.0.0.0" });
    expect(run.warnings).toHaveLength(1);
    expect(runOptions(RUN).run).not.toHaveProperty("live");
    expect(runOptions(RUN).warnings).toEqual([]);
    const compare = compareOptions({ ...RUN, target: ["a=ws://a", "b=ws://b"], pause: "10s", live: true });
    expect(compare.scenarioRun.live).toEqual({ port: 0, host: "127.0.0.1" });
    expect(attachOptions({ out: "results", live: true })).toMatchObject({ live: { port: 0, host: "127.0.0.1" }, warnings: [] });
  });
});

describe("--detach", () => {
  it("reaches the run's options", () => {
    expect(runOptions({ ...RUN, detach: true }).run.detach).toBe(true);
    expect(runOptions(RUN).run).not.toHaveProperty("detach");
  });

  it("is refused beside what needs a runner watching to the end, naming both flags", () => {
    expect(inputError(() => runOptions({ ...RUN, detach: true, abortOn: ["errors>5%"] }))).toBe("--detach with --abort-on: --abort-on needs a runner that watches the run to its end; drop one of them");
    expect(inputError(() => runOptions({ ...RUN, detach: true, serverMetrics: "http://m:1/metrics" }))).toMatch(/^--detach with --server-metrics: /);
    expect(inputError(() => runOptions({ ...RUN, detach: true, live: true }))).toMatch(/^--detach with --live: .*cable-fanout attach <runId> --live/);
    expect(inputError(() => runOptions({ ...RUN, detach: true, baseline: "b.json" }))).toMatch(/^--detach with --baseline: a detached run writes no report; give --baseline to `cable-fanout attach` or `cable-fanout collect`$/);
    expect(inputError(() => runOptions({ ...RUN, detach: true, title: "T" }))).toMatch(/^--detach with --title: /);
  });

  it("is refused by compare, which must stay to start the next server", () => {
    expect(inputError(() => compareOptions({ ...RUN, target: ["a=ws://a", "b=ws://b"], pause: "10s", detach: true }))).toMatch(/^--detach does not apply to compare: /);
  });
});

describe("status", () => {
  it("needs --regions on AWS, not with --local", () => {
    expect(inputError(() => statusOptions({ out: "results" }))).toMatch(/^status needs --regions on AWS/);
    expect(statusOptions({ out: "results", local: true }).regions).toBeUndefined();
    expect(statusOptions({ out: "results", regions: "eu-west-2" }).regions).toEqual(["eu-west-2"]);
  });
});

describe("through the CLI", () => {
  const out = mkdtempSync(path.join(os.tmpdir(), "live-options-"));
  afterAll(() => rmSync(out, { recursive: true, force: true }));
  beforeEach(() => void (calls.runFanout.length = 0));

  it("run --live=8080 --live-host 127.0.0.1 and run --detach hand runFanout their values", async () => {
    expect(await main(["run", "s.yml", "--local", "--regions", "local", "--out", out, "--live=8080", "--live-host", "127.0.0.1"])).toBe(0);
    expect(await main(["run", "s.yml", "--local", "--regions", "local", "--out", out, "--live"])).toBe(0);
    expect(await main(["run", "s.yml", "--local", "--regions", "local", "--out", out, "--detach"])).toBe(0);
    expect(calls.runFanout).toMatchObject([{ live: { port: 8080, host: "127.0.0.1" } }, { live: { port: 0, host: "127.0.0.1" } }, { detach: true }]);
  });

  it("exits 2 on --detach --abort-on and on a bad --live port, starting nothing", async () => {
    expect(await main(["run", "s.yml", "--local", "--regions", "local", "--out", out, "--detach", "--abort-on", "errors>5%"])).toBe(2);
    expect(await main(["run", "s.yml", "--local", "--regions", "local", "--out", out, "--live=http"])).toBe(2);
    expect(calls.runFanout).toEqual([]);
  });
});

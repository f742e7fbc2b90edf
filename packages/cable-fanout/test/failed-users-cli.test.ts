import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { freePort, runArtillery } from "cable-test-servers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "./cli";

// A run in which users failed is never green (issue 51): through the real `artillery run` and the
// real `cable-fanout run --local`, against a port nothing listens on, every user fails at the
// handshake. By default (config.cable.maxFailedUsers: 0) both exit non-zero and the headline says
// so; with the line turned off they exit 0 and the headline still says so.

const scenario = (target: string, cable: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) => ({
  config: {
    target,
    engines: { cable: {} },
    cable: { timeout: 2, ...cable },
    phases: [{ duration: 2, arrivalRate: 2 }],
    ...extra,
  },
  scenarios: [{ name: "chat", engine: "cable", flow: [{ connect: {} }, { subscribe: { channel: "ChatChannel" } }] }],
});

describe("never green when users failed", () => {
  let work: string;
  let closed: string;

  beforeAll(async () => {
    work = mkdtempSync(path.join(os.tmpdir(), "failed-users-"));
    // freePort binds and releases a port: nothing listens there afterwards.
    closed = `ws://127.0.0.1:${await freePort()}/cable`;
  });
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it("artillery run exits 1 by default, says why once, and exits 0 with the line off", async () => {
    const failing = await runArtillery({ script: scenario(closed), timeoutMs: 60_000 });
    expect(failing.report?.aggregate.counters["vusers.failed"]).toBe(failing.report?.aggregate.counters["vusers.created"]);
    expect(failing.code, failing.output).toBe(1);
    expect(failing.output).toMatch(/cable: 1 virtual user failed, more than config\.cable\.maxFailedUsers \(0\): artillery run will exit 1\./);

    const off = await runArtillery({ script: scenario(closed, { maxFailedUsers: false }), timeoutMs: 60_000 });
    expect(off.report?.aggregate.counters["vusers.failed"]).toBeGreaterThan(0);
    expect(off.code, off.output).toBe(0);
    expect(off.output).not.toContain("maxFailedUsers (");
  });

  it("with the report plugin: a share is judged on every worker's users together, and a check that tested nothing is named", async () => {
    const plugins = { plugins: { "cable-report": {}, ensure: {} }, ensure: { conditions: [{ expression: "cable.failed_subscriptions == 0" }] } };
    const share = await runArtillery({ script: scenario(closed, { maxFailedUsers: "50%" }, plugins), timeoutMs: 60_000 });
    expect(share.code, share.output).toBe(1);
    expect(share.output).toMatch(/cable-report: (\d+) of \1 virtual users failed, more than config\.cable\.maxFailedUsers \(50%\): artillery run exits 1\./);
    expect(share.output).toContain('cable-report: ensure "cable.failed_subscriptions == 0" was not evaluated: no subscription was attempted; it passed without testing anything');

    // A share without the plugin could only be judged per worker thread: refused before any load.
    const bare = await runArtillery({ script: scenario(closed, { maxFailedUsers: "50%" }), timeoutMs: 60_000 });
    expect(bare.code).not.toBe(0);
    expect(bare.output).toContain('config.cable: field "maxFailedUsers": "50%" is judged on every worker\'s users together, by the report plugin');
    expect(bare.report).toBeUndefined();
  });

  it("cable-fanout run --local exits 6 with a red headline, and 0 with the line off, the headline still amber", async () => {
    const file = path.join(work, "closed.yml");
    writeFileSync(file, JSON.stringify(scenario(closed)));
    const out = path.join(work, "results");
    const failing = await runCli(["run", file, "--local", "--regions", "local-a", "--count", "1", "--start-delay", "2", "--out", out], { cwd: work });
    expect(failing.code, failing.stderr).toBe(6);
    expect(failing.stderr).toMatch(/(\d+) of \1 virtual users failed, more than config\.cable\.maxFailedUsers \(0\): cable-fanout exits 6\./);
    expect(failing.stderr).toMatch(/❌ local-a ended · \d+ users \(0 completed, \d+ failed\)/);
    const [runId] = readdirSync(out).filter((d) => !d.startsWith("."));
    const report = readFileSync(path.join(out, runId, "report.md"), "utf8");
    expect(report).toMatch(/> \*\*❌ Complete, (\d+) of \1 virtual users failed \(more than `maxFailedUsers: 0`\)\*\*/);
    // The task itself was not failed for its users: the runner judged the merged run.
    expect(report).not.toMatch(/artillery exited with code/);

    writeFileSync(file, JSON.stringify(scenario(closed, { maxFailedUsers: false })));
    const offOut = path.join(work, "results-off");
    const off = await runCli(["run", file, "--local", "--regions", "local-a", "--count", "1", "--start-delay", "2", "--out", offOut], { cwd: work });
    expect(off.code, off.stderr).toBe(0);
    const [offId] = readdirSync(offOut).filter((d) => !d.startsWith("."));
    expect(readFileSync(path.join(offOut, offId, "report.md"), "utf8")).toMatch(/> \*\*⚠️ Complete, (\d+) of \1 virtual users failed \(within `maxFailedUsers: off`\)\*\*/);
  });
});

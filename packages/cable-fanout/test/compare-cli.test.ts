// `cable-fanout compare` through the real CLI against two real servers on this machine, Soketi and
// Reverb, with the seed's Pusher broadcast scenario: one column per server, every user ended, and
// the servers' own memory and CPU read from /proc.
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { startReverb, startSoketi, type ReverbServer, type SoketiServer } from "cable-test-servers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "./cli";

const ROOT = path.resolve(__dirname, "../../..");

describe("cable-fanout compare", () => {
  let work: string;
  let soketi: SoketiServer;
  let reverb: ReverbServer;
  beforeAll(async () => {
    work = mkdtempSync(path.join(os.tmpdir(), "cable-fanout-compare-"));
    [soketi, reverb] = await Promise.all([startSoketi(), startReverb()]);
  });
  afterAll(async () => {
    await Promise.all([soketi?.stop(), reverb?.stop()]);
    rmSync(work, { recursive: true, force: true });
  });

  it("runs the scenario against each server in turn and writes one report with a column per server and their memory", async () => {
    const out = path.join(work, "results");
    const overrides = { config: { cable: { pusher: { key: soketi.key, appId: soketi.appId } }, phases: [{ name: "connect", duration: 3, arrivalRate: 10 }] } };
    const result = await runCli(
      [
        "compare", path.join(ROOT, "scenarios/pusher-broadcast.yml"), "--local", "--regions", "local",
        "--target", `soketi=${soketi.url}`, "--target", `reverb=${reverb.url}`,
        "--server-pid", `soketi=${soketi.pid()}`, "--server-pid", `reverb=${reverb.pid()}`,
        "--overrides", JSON.stringify(overrides), "--variables", JSON.stringify({ lifetime: 5, sends: 25 }),
        "--pause", "2s", "--compare-id", "pusher-servers", "--out", out,
      ],
      { cwd: work, env: { PUSHER_APP_SECRET: soketi.secret }, timeoutMs: 240_000 },
    );
    expect(result.code, result.stderr).toBe(0);
    const dir = path.join(out, "pusher-servers");
    const merged = JSON.parse(readFileSync(path.join(dir, "merged.json"), "utf8"));
    expect(merged.regions.map((r: { name: string }) => r.name)).toEqual(["soketi", "reverb"]);
    for (const column of merged.regions) {
      expect(column.tasks, column.name).toBe(1);
      expect(column.counters["vusers.created"], column.name).toBe(30);
      expect(column.counters["vusers.completed"], column.name).toBe(30);
      expect(column.histograms["cable.broadcast_latency"].count, column.name).toBeGreaterThan(0);
    }
    // Each server's run keeps its own report, as `run` writes it.
    for (const name of ["soketi", "reverb"]) expect(existsSync(path.join(dir, name, "report.md")), name).toBe(true);
    const md = readFileSync(path.join(dir, "report.md"), "utf8");
    expect(md).toMatch(/\| Metric \| soketi \| reverb \|/);
    expect(md).not.toContain("all regions");
    expect(result.stdout).toContain("| Metric | soketi | reverb |");
    for (const server of merged.servers as { name: string; process: { memoryIdleMb: number; memoryPeakMb: number; memoryAfterMb: number; cpuPeakPct: number } }[]) {
      expect(server.process.memoryIdleMb, server.name).toBeGreaterThan(5);
      expect(server.process.memoryPeakMb, server.name).toBeGreaterThanOrEqual(server.process.memoryIdleMb * 0.9);
      expect(server.process.memoryAfterMb, server.name).toBeGreaterThan(5);
      expect(server.process.cpuPeakPct, server.name).toBeGreaterThan(0);
    }
    expect(md).toMatch(/\| soketi \| \d+ MB → \d+ MB → \d+ MB \| \d+ % \| \d+ % \| process \d+ and its children \|/);
    expect(md).toMatch(/\| reverb \| \d+ MB → \d+ MB → \d+ MB \|/);
    expect(md).toContain("### Against soketi, the first server");
    expect(merged.againstFirst.threshold).toBe(10);
  });

  it("names a bad flag before anything starts", async () => {
    const one = await runCli(["compare", path.join(ROOT, "scenarios/pusher-broadcast.yml"), "--local", "--regions", "local", "--target", "soketi=ws://127.0.0.1:1"], { cwd: work });
    expect(one.code).toBe(2);
    expect(one.stderr).toContain("compare wants two --target NAME=URL or more, got 1");
    const stray = await runCli(
      ["compare", path.join(ROOT, "scenarios/pusher-broadcast.yml"), "--local", "--regions", "local", "--target", "a=ws://127.0.0.1:1", "--target", "b=ws://127.0.0.1:2", "--server-pid", "c=12"],
      { cwd: work },
    );
    expect(stray.code).toBe(2);
    expect(stray.stderr).toContain("--server-pid names c, which no --target is (a, b)");
  });
});

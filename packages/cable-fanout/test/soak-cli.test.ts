import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { freePort, spawnServer, type RunningServer } from "cable-test-servers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "./cli";

// Soak drift through the real CLI, compressed to fit CI (the A/B): scenarios/soak.yml for
// 2.5 minutes against two local targets in processes of their own (their /metrics is their own
// memory, not this test's), with --server-metrics and the plugin's soakMinimum at 2m. A: a flat
// target must not be called drifting. B: the same target with its known leak sped up (20 MiB and
// 30 ms more per broadcast a minute) must be, in memory and in latency. The 30-minute soak against
// real anycable-go and the 10-of-10 repeats are manual runs (bench/verdicts.mjs, docs/verdicts.md).
const ROOT = path.resolve(__dirname, "../../..");
const SOAK = path.join(ROOT, "scenarios/soak.yml");
const TARGET_CLI = path.join(ROOT, "packages/cable-local-target/dist/cli.js");
// Everyone at once, staying the whole run (15 turns of 10 s): a steady load, so that a ramp of
// connections is not read as a trend.
const OVERRIDES = JSON.stringify({
  config: {
    plugins: { "cable-report": { soakMinimum: "2m" } },
    phases: [{ name: "soak", duration: 2, arrivalRate: 10 }],
    variables: { stay_messages: 15 },
  },
});
export const LEAK = ["--leak-mb-per-minute", "20", "--leak-delay-ms-per-minute", "30"];

const json = (file: string) => JSON.parse(readFileSync(file, "utf8"));
const runDirOf = (out: string) => path.join(out, readdirSync(out).filter((d) => !d.startsWith("."))[0]);

async function startTargetProcess(args: string[]): Promise<RunningServer & { cableUrl: string; metricsUrl: string }> {
  const port = await freePort();
  const server = await spawnServer({ command: process.execPath, args: [TARGET_CLI, "--port", String(port), ...args], port });
  return { ...server, cableUrl: `ws://127.0.0.1:${port}/cable`, metricsUrl: `http://127.0.0.1:${port}/metrics` };
}

describe("a compressed soak through cable-fanout run --local", () => {
  let work: string;
  const targets: RunningServer[] = [];
  beforeAll(() => {
    work = mkdtempSync(path.join(os.tmpdir(), "cable-fanout-soak-"));
  });
  afterAll(async () => {
    await Promise.all(targets.map((t) => t.stop()));
    rmSync(work, { recursive: true, force: true });
  });

  it("calls the flat target flat and the leaking one drifting, in memory and in p95", async () => {
    const soak = async (name: string, targetArgs: string[]) => {
      const target = await startTargetProcess(targetArgs);
      targets.push(target);
      const out = path.join(work, name);
      const result = await runCli(["run", SOAK, "--local", "--regions", "local", "--target", target.cableUrl, "--overrides", OVERRIDES, "--out", out, "--server-metrics", target.metricsUrl], { cwd: work, timeoutMs: 300_000 });
      expect(result.code, result.stderr).toBe(0);
      return { merged: json(path.join(runDirOf(out), "merged.json")), stderr: result.stderr, report: readFileSync(path.join(runDirOf(out), "report.md"), "utf8") };
    };
    const [flat, leak] = await Promise.all([soak("flat", []), soak("leak", LEAK)]);

    const kinds = (merged: { verdicts: { drift: { latency: Record<string, { kind: string }>; memory: { kind: string } | null } } }) => ({
      latency: Object.values(merged.verdicts.drift.latency).map((d) => d.kind),
      memory: merged.verdicts.drift.memory?.kind,
    });
    expect(flat.merged.verdicts.drift.metric).toBe("cable.broadcast_latency");
    expect(kinds(flat.merged), JSON.stringify(flat.merged.verdicts.drift, null, 1)).toEqual({ latency: ["flat", "flat"], memory: "flat" });
    expect(kinds(leak.merged), JSON.stringify(leak.merged.verdicts.drift, null, 1)).toEqual({ latency: ["drifting", "drifting"], memory: "drifting" });
    // The leak's memory slope, per hour: 20 MiB a minute is 1,200 MiB/h (the target's bound is 512 MiB, not reached in 2.5 min).
    const memory = leak.merged.verdicts.drift.memory;
    expect(memory.perHour).toBeGreaterThan(600);
    expect(memory.perHour).toBeLessThan(1800);
    expect(leak.stderr).toMatch(/soak drift, server memory: drifting: /);
    expect(leak.report).toMatch(/- server memory: ❌ drifting: /);
    expect(flat.report).toMatch(/- server memory: ✅ flat: /);
  }, 400_000);
});

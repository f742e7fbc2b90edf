import type { ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { startTarget, type LocalTarget } from "cable-local-target";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "./cli";

// The whole pipeline with no AWS: the real CLI, the real worker entrypoint as child processes, the
// real Artillery with the cable engine against the local target, and cable-report's merge.
const ROOT = path.resolve(__dirname, "../../..");
const CHAT = path.join(ROOT, "scenarios/chat.yml");
const SHORT = JSON.stringify({ config: { phases: [{ duration: 2, arrivalRate: 2 }] } });
const LONG = JSON.stringify({ config: { phases: [{ duration: 120, arrivalRate: 1 }] } });

const cli = (args: string[], cwd: string, onSpawn?: (child: ChildProcess) => void) => runCli(args, { cwd, onSpawn });

const json = (file: string) => JSON.parse(readFileSync(file, "utf8"));
const onlyRun = (out: string) => readdirSync(out).filter((d) => !d.startsWith("."));

/** Waits (bounded) until the run record lists started tasks for every region and their load has begun (the go's start passed). */
async function waitForStarted(out: string, regions: string[], deadlineMs = 60_000): Promise<string> {
  const until = Date.now() + deadlineMs;
  while (Date.now() < until) {
    const [runId] = existsSync(out) ? onlyRun(out) : [];
    const record = runId && existsSync(path.join(out, runId, "fanout.json")) ? json(path.join(out, runId, "fanout.json")) : undefined;
    if (record && regions.every((r) => (record.started[r] ?? []).length > 0) && record.startAt !== null && Date.now() > record.startAt + 1_500) return runId;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`no run started in ${out} within ${deadlineMs} ms`);
}

describe("cable-fanout run --local", () => {
  let target: LocalTarget;
  let work: string;

  beforeAll(async () => {
    target = await startTarget({ port: 0 });
    work = mkdtempSync(path.join(os.tmpdir(), "cable-fanout-e2e-"));
  });
  afterAll(async () => {
    await target.close();
    rmSync(work, { recursive: true, force: true });
  });

  it("runs chat.yml from two local regions, 2 tasks each, and writes the results tree and the report", async () => {
    const out = path.join(work, "results");
    const result = await cli(["run", CHAT, "--local", "--regions", "local-a,local-b", "--count", "2", "--target", target.cableUrl, "--overrides", SHORT, "--start-delay", "3", "--out", out], work);
    expect(result.code, result.stderr).toBe(0);

    const [runId] = onlyRun(out);
    const runDir = path.join(out, runId);
    expect(result.stdout.trim()).toBe(path.relative(work, path.join(runDir, "report.md")));
    expect(readdirSync(runDir).sort()).toEqual(["fanout.json", "local-a", "local-b", "merged.json", "report.html", "report.md"]);
    let created = 0;
    for (const region of ["local-a", "local-b"]) {
      expect(readdirSync(path.join(runDir, region)).sort()).toEqual(["task-1", "task-2"]);
      for (const task of ["task-1", "task-2"]) {
        const dir = path.join(runDir, region, task);
        expect(readdirSync(dir).sort()).toEqual(["artillery.log", "live", "report.json", "report.json.sketches.json"]);
        created += json(path.join(dir, "report.json")).aggregate.counters["vusers.created"];
      }
    }
    // Every task ran its 2 s × 2/s phase: 4 users each.
    expect(created).toBe(16);

    const merged = json(path.join(runDir, "merged.json"));
    expect(merged.regions.map((r: { name: string; tasks: number }) => [r.name, r.tasks])).toEqual([["local-a", 2], ["local-b", 2]]);
    expect(merged.all.counters["vusers.created"]).toBe(16);
    expect(merged.all.counters["vusers.failed"] ?? 0).toBe(0);
    const report = readFileSync(path.join(runDir, "report.md"), "utf8");
    expect(report).toContain(`## chat.yml from local-a, local-b (run ${runId})`);
    expect(report).toContain("| Metric | local-a | local-b | **all regions** |");
    expect(report).toMatch(/\| Created \| 8 \| 8 \| 16 \|/);
    expect(report).toMatch(/\| Completed \| 8 \| 8 \| 16 \|/);
    expect(report).toContain("| **Round-trip time (rtt) (ms)** |");

    const record = json(path.join(runDir, "fanout.json"));
    expect(record.tasks.map((t: { region: string; taskId: string; state: string }) => `${t.region}/${t.taskId}:${t.state}`)).toEqual([
      "local-a/task-1:ok",
      "local-a/task-2:ok",
      "local-b/task-1:ok",
      "local-b/task-2:ok",
    ]);
    // The ready barrier let the run go once all four tasks had Artillery loaded; the start gate then
    // released every Artillery at the common start, so the first virtual users came close together
    // (what remains is Artillery creating its worker threads after the gate, on a busy 2-core box).
    expect(record.barrier).toMatchObject({ outcome: "go", expected: 4, ready: 4, minReadyPct: 100, missed: {} });
    for (const t of record.tasks) expect(t.startLagMs).toBeLessThan(1_000);
    expect(record.start.skewMs).toBeGreaterThanOrEqual(0);
    expect(record.start.skewMs).toBeLessThan(5_000);
    expect(report).toContain("### Start");
    expect(report).toContain("Ready barrier: 4 of 4 task(s) ready after");
    expect(report).toMatch(/Start skew across all tasks and regions: \*\*[\d,]+ ms\*\*/);
    expect(report).toMatch(/\| local-a \| 2\/2 \| \+[\d,]+ ms \| \+[\d,]+ ms \| [\d,]+ ms \| – \|/);

    // collect fetches and merges again, and a baseline adds the deltas.
    const again = await cli(["collect", runId, "--local", "--out", out, "--baseline", path.join(runDir, "merged.json"), "--fail-on-regression", "50%"], work);
    expect(again.code, again.stderr).toBe(0);
    const withBaseline = readFileSync(path.join(runDir, "report.md"), "utf8");
    expect(withBaseline).toContain("| Created | 8 ±0% | 8 ±0% | 16 ±0% |");
    expect(withBaseline).toContain("no regression beyond 50%");
  }, 120_000);

  it("on Ctrl-C stops every task, still collects what exists, and exits 4", async () => {
    const out = path.join(work, "interrupted");
    let child: ChildProcess | undefined;
    const running = cli(["run", CHAT, "--local", "--regions", "local-a,local-b", "--target", target.cableUrl, "--overrides", LONG, "--start-delay", "1", "--out", out], work, (c) => (child = c));
    const runId = await waitForStarted(out, ["local-a", "local-b"]);
    await new Promise((r) => setTimeout(r, 6_000)); // Artillery is sending load by now
    child!.kill("SIGINT");
    const result = await running;

    expect(result.code, result.stderr).toBe(4);
    expect(result.stderr).toContain("stopping every task");
    const record = json(path.join(out, runId, "fanout.json"));
    expect(record.tasks.map((t: { state: string; reason: string }) => [t.state, t.reason])).toEqual([
      ["failed", expect.stringContaining("the task was stopped (SIGTERM) before artillery finished")],
      ["failed", expect.stringContaining("the task was stopped (SIGTERM) before artillery finished")],
    ]);
    // The workers' logs were collected even though the run was cut short.
    expect(existsSync(path.join(out, runId, "local-a/task-1/artillery.log"))).toBe(true);
  }, 120_000);

  it("`stop <runId>` from another process stops a run's workers", async () => {
    const out = path.join(work, "stopped");
    const running = cli(["run", CHAT, "--local", "--regions", "local-a", "--count", "2", "--target", target.cableUrl, "--overrides", LONG, "--start-delay", "1", "--out", out], work);
    const runId = await waitForStarted(out, ["local-a"]);
    const stop = await cli(["stop", runId, "--local", "--out", out], work);
    expect(stop.code, stop.stderr).toBe(0);
    expect(stop.stderr).toContain("local-a: stopped 2 task(s): task-1, task-2");
    const result = await running;
    expect(result.code).toBe(4);
    const record = json(path.join(out, runId, "fanout.json"));
    expect(record.tasks.every((t: { state: string }) => t.state === "failed")).toBe(true);
  }, 120_000);

  it("shows the barrier's flags in run --help", async () => {
    const help = await cli(["run", "--help"], work);
    expect(help.code).toBe(0);
    for (const flag of ["--min-ready <pct>", "--ready-timeout <duration>", "--heartbeat-timeout <duration>", "--run-id <id>"]) expect(help.stdout).toContain(flag);
  });

  it("calls the run off when too few tasks are ready in time, and says so", async () => {
    const out = path.join(work, "not-ready");
    const result = await cli(["run", CHAT, "--local", "--regions", "local-a", "--target", target.cableUrl, "--overrides", SHORT, "--ready-timeout", "0.2s", "--out", out], work);
    expect(result.code).toBe(4);
    expect(result.stderr).toMatch(/local-a: the run did not start: only 0 of 1 task\(s\) were ready within --ready-timeout, 1 needed \(--min-ready\)/);
    const [runId] = onlyRun(out);
    const record = json(path.join(out, runId, "fanout.json"));
    expect(record.barrier).toMatchObject({ outcome: "failed", ready: 0, expected: 1 });
    expect(record.startAt).toBeNull();
    // Stopped (or called off by the cancelling go marker) before any load.
    expect(record.tasks).toEqual([expect.objectContaining({ state: "failed", reason: expect.stringMatching(/SIGTERM|called off/) })]);
  });

  it("refuses an unknown scenario file with exit 2, naming it", async () => {
    const result = await cli(["run", "nope.yml", "--local", "--regions", "a", "--out", path.join(work, "none")], work);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("cable-fanout: nope.yml: scenario file not found");
  });
});

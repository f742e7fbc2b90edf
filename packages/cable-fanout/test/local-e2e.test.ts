import type { ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { SERVER_SOFTWARE, startTarget, type LocalTarget } from "cable-local-target";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "./cli";

// The whole pipeline with no AWS: the real CLI, the real worker entrypoint as child processes, the
// real Artillery with the cable engine against the local target, and cable-report's merge.
const ROOT = path.resolve(__dirname, "../../..");
const CHAT = path.join(ROOT, "scenarios/chat.yml");
const SIGN_IN = path.join(__dirname, "fixtures/payload-slices/sign-in.yml");
const SHORT = JSON.stringify({ config: { phases: [{ duration: 2, arrivalRate: 2 }] } });
const LONG = JSON.stringify({ config: { phases: [{ duration: 120, arrivalRate: 1 }] } });

const cli = (args: string[], cwd: string, onSpawn?: (child: ChildProcess) => void, env?: Record<string, string>) => runCli(args, { cwd, onSpawn, env });

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
    // `--out` was absolute: the report's path is printed as the user named it, not as ../../tmp/….
    expect(result.stdout.trim()).toBe(path.join(runDir, "report.md"));
    expect(result.stderr).toContain(`collecting results into ${runDir}`);
    expect(readdirSync(runDir).sort()).toEqual(["fanout.json", "local-a", "local-b", "merged.json", "report.html", "report.md"]);
    let created = 0;
    for (const region of ["local-a", "local-b"]) {
      expect(readdirSync(path.join(runDir, region)).sort()).toEqual(["task-1", "task-2"]);
      for (const task of ["task-1", "task-2"]) {
        const dir = path.join(runDir, region, task);
        // Its live files are not downloaded: its report has every figure they have.
        expect(readdirSync(dir).sort()).toEqual(["artillery.log", "report.json", "report.json.sketches.json"]);
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

    // The run names its target: fanout.json (from --target), merged.json (from the tasks, with what the server said it is).
    expect(record.target).toBe(target.cableUrl);
    expect(merged.target).toEqual({ url: target.cableUrl, server: SERVER_SOFTWARE });
    // Artillery names the test after the script's file: `run` checks a baseline's test name by it before any task starts.
    expect(merged.test.name).toBe("chat.yml");
    // A baseline of another target: refused by the gate (exit 2, the report without the comparison)…
    const staging = path.join(work, "staging.json");
    writeFileSync(staging, JSON.stringify({ ...merged, target: { url: "ws://staging.example:8080/cable", server: SERVER_SOFTWARE } }));
    const refused = await cli(["collect", runId, "--local", "--out", out, "--baseline", staging, "--fail-on-regression", "50%"], work);
    expect(refused.code, refused.stderr).toBe(2);
    expect(refused.stderr).toContain(`baseline is of another target: ws://staging.example:8080/cable, this run ${target.cableUrl}; --baseline-any compares anyway`);
    expect(readFileSync(path.join(runDir, "report.md"), "utf8")).toMatch(/- \*\*Baseline:\*\* .* — not compared: baseline is of another target/);
    // …compared with --baseline-any, and said so;
    const across = await cli(["collect", runId, "--local", "--out", out, "--baseline", staging, "--fail-on-regression", "50%", "--baseline-any"], work);
    expect(across.code, across.stderr).toBe(0);
    expect(readFileSync(path.join(runDir, "report.md"), "utf8")).toContain("- **Baseline note:** compared across targets (--baseline-any): baseline is of another target");
    // and `run` refuses it before any task starts.
    const early = await cli(["run", CHAT, "--local", "--regions", "local-a", "--target", target.cableUrl, "--overrides", SHORT, "--out", path.join(work, "never"), "--baseline", staging, "--fail-on-regression", "50%"], work);
    expect(early.code, early.stderr).toBe(2);
    expect(early.stderr).toContain(`not starting any task: baseline is of another target: ws://staging.example:8080/cable, this run ${target.cableUrl}; --baseline-any compares anyway`);
    expect(existsSync(path.join(work, "never"))).toBe(false);
  }, 180_000);

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
    // The runner's record says it stopped every task for the interrupt.
    expect(Object.values(record.stops).flatMap((byTask) => Object.values(byTask as object))).toEqual([{ by: "interrupt" }, { by: "interrupt" }]);
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

  it("gives every task its own slice of a sequence payload: 2 regions × 2 tasks sign in as disjoint users, all 12 together", async () => {
    const out = path.join(work, "slices");
    const rows = path.join(work, "slice-rows");
    mkdirSync(rows);
    const result = await cli(["run", SIGN_IN, "--local", "--regions", "local-a,local-b", "--count", "2", "--target", target.cableUrl, "--start-delay", "2", "--out", out], work, undefined, { ROWS_DIR: rows });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).not.toContain("rows reused");

    const all = readFileSync(path.join(__dirname, "fixtures/payload-slices/users.csv"), "utf8").match(/^user\d+@example\.com/gm)!;
    expect(all).toHaveLength(12);
    const used = new Map<string, Array<{ email: string; password: string }>>();
    for (const region of ["local-a", "local-b"]) {
      for (const task of ["task-1", "task-2"]) {
        const lines = readFileSync(path.join(rows, `${region}.${task}.jsonl`), "utf8").trim().split("\n");
        used.set(`${region}/${task}`, lines.map((line) => JSON.parse(line)));
      }
    }
    // Slice k of 4, k = the region's place in --regions × 2 + the task's place in its region: the rows whose index % 4 is k.
    const emails = (task: string) => [...new Set(used.get(task)!.map((row) => row.email))].sort();
    expect(emails("local-a/task-1")).toEqual([all[0], all[4], all[8]]);
    expect(emails("local-a/task-2")).toEqual([all[1], all[5], all[9]]);
    expect(emails("local-b/task-1")).toEqual([all[2], all[6], all[10]]);
    expect(emails("local-b/task-2")).toEqual([all[3], all[7], all[11]]);
    // Disjoint, and together the whole file; each task's 6 users went through its 3 rows in sequence, twice.
    const everyTask = [...used.keys()].flatMap(emails);
    expect(new Set(everyTask).size).toBe(everyTask.length);
    expect(everyTask.sort()).toEqual([...all].sort());
    for (const rowsUsed of used.values()) expect(rowsUsed.map((row) => row.email)).toEqual([...rowsUsed.slice(0, 3), ...rowsUsed.slice(0, 3)].map((row) => row.email));
    // Quoted fields came through the cut as Artillery read them from the whole file.
    expect(used.get("local-b/task-2")!.find((row) => row.email === all[3])!.password).toBe("pw, three\nline two");
    expect(used.get("local-b/task-1")!.find((row) => row.email === all[6])!.password).toBe('say "hi"');

    // Each worker said how it cut the file: sizes, never a row.
    const [runId] = onlyRun(out);
    const log = readFileSync(path.join(out, ".local-store/logs", runId, "local-b", "task-2.log"), "utf8");
    expect(log).toContain("payload users.csv: 12 row(s), slice 3/4 keeps 3");
    expect(log).not.toContain("pw-");
  }, 120_000);

  it("warns before launch when a sequence payload has fewer rows than the run has tasks", async () => {
    const out = path.join(work, "few-rows");
    // The environment's payload replaces the file; the run is called off at once, after the warning.
    const result = await cli(["run", SIGN_IN, "--environment", "few", "--local", "--regions", "local-a,local-b", "--count", "2", "--target", target.cableUrl, "--ready-timeout", "0.2s", "--out", out], work);
    expect(result.code).toBe(4);
    const shown = path.relative(work, path.join(__dirname, "fixtures/payload-slices/few-users.csv"));
    expect(result.stderr).toContain(`warning: payload ${shown} has 3 row(s) for 4 task(s) (2 per region × 2 region(s)): rows reused: some users will be signed in by two tasks at once`);
    expect(result.stderr.indexOf("rows reused")).toBeLessThan(result.stderr.indexOf("ready: "));
  }, 120_000);

  it("refuses an unknown scenario file with exit 2, naming it", async () => {
    const result = await cli(["run", "nope.yml", "--local", "--regions", "local-a", "--out", path.join(work, "none")], work);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("cable-fanout: nope.yml: scenario file not found");
  });
});

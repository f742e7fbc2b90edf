// A run that outlives its runner, with --local: `run --detach` returns once the go is given and its
// process exits; the workers go on past a 3 s heartbeat timeout (they watch no heartbeat) to their
// phases' end; `status` lists the run; an `attach` that gets Ctrl-C leaves it going; a second
// `attach`, from a fresh results directory, prints the live lines and ends with the report; `collect`
// from a third writes the same figures; both agree with a run of the same load watched throughout.
// `stop` from a fresh directory stops a detached run. Real CLI processes, real workers, real Artillery.
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { startTarget, type LocalTarget } from "cable-local-target";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "./cli";

const ROOT = path.resolve(__dirname, "../../..");
const CHAT = path.join(ROOT, "scenarios/chat.yml");
// 15 s of load, five times the heartbeat timeout below: a task watching the heartbeat would stop.
const LOAD = JSON.stringify({ config: { phases: [{ duration: 15, arrivalRate: 1 }] } });
const LONG = JSON.stringify({ config: { phases: [{ duration: 120, arrivalRate: 1 }] } });
const REGIONS = "local-a,local-b";

type Json = Record<string, any>;
const json = (file: string) => JSON.parse(readFileSync(file, "utf8")) as Json;

/** The rows of report.md's tables that count (users, messages, errors): they must match across runs of the same load. */
function countRows(report: string): string[] {
  return report.split("\n").filter((l) => /^\| (Created|Completed|Failed) \|/.test(l));
}

describe("cable-fanout run --detach, attach, status, collect, stop (--local)", () => {
  let target: LocalTarget;
  let work: string;
  let store: string;
  const cli = (args: string[], timeoutMs = 90_000) => runCli(args, { cwd: work, timeoutMs });

  beforeAll(async () => {
    target = await startTarget({ port: 0 });
    work = mkdtempSync(path.join(os.tmpdir(), "cable-detach-"));
    store = path.join(work, "store");
  });
  afterAll(async () => {
    await target.close();
    rmSync(work, { recursive: true, force: true });
  });

  it("detaches at the go; the tasks outlive the runner and the heartbeat timeout; attach (after a Ctrl-C'd attach) and collect write the report a watched run writes", async () => {
    const common = ["--local", "--store", store, "--regions", REGIONS, "--count", "1", "--target", target.cableUrl, "--overrides", LOAD, "--start-delay", "2", "--heartbeat-timeout", "3s"];
    const started = Date.now();
    const detached = await cli(["run", CHAT, ...common, "--out", path.join(work, "detached"), "--detach"]);
    expect(detached.code, detached.stderr).toBe(0);
    const runId = detached.stdout.trim();
    expect(runId).toMatch(/^\d{8}-\d{6}-[0-9a-f]{6}$/);
    // It returned at the go, long before the load's end, and said what to do next.
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(detached.stderr).toMatch(/go: 2 of 2 task\(s\) ready/);
    expect(detached.stderr).toContain(`run ${runId} goes on without this runner: no heartbeat`);
    for (const command of ["attach", "collect", "stop"]) expect(detached.stderr).toContain(`cable-fanout ${command} ${runId} --local --store ${store} --out ${path.join(work, "detached")}`);
    expect(detached.stderr).not.toContain("collecting results");

    // The record is in the store, with what another machine needs; the manifest has no heartbeat.
    const stored = json(path.join(store, "runs", runId, "control", "fanout.json"));
    expect(stored).toMatchObject({ runId, backend: "local", regions: ["local-a", "local-b"], count: 1, startAt: expect.any(Number), detached: { maxDurationMs: expect.any(Number), phasesMs: 15_000, phaseCount: 1 }, barrier: { outcome: "go" } });
    expect(Object.keys(stored.started).sort()).toEqual(["local-a", "local-b"]);
    expect(json(path.join(store, "runs", runId, "bundle", "run.json"))).not.toHaveProperty("heartbeat");

    // status: one line per region, the run detached with its task running.
    const status = await cli(["status", "--local", "--store", store, "--out", path.join(work, "elsewhere")]);
    expect(status.code, status.stderr).toBe(0);
    for (const region of ["local-a", "local-b"]) expect(status.stdout).toMatch(new RegExp(`^${region}\\s+${runId}\\s+\\d+:\\d\\d\\s+1\\s+0\\s+detached$`, "m"));

    // An attach that gets Ctrl-C leaves the run going, and says how to stop it.
    const interrupted = await runCli(["attach", runId, "--local", "--store", store, "--out", path.join(work, "first-attach")], {
      cwd: work,
      onSpawn: (child) => {
        let said = "";
        child.stderr?.on("data", (d) => {
          said += d;
          if (said.includes("attached to run")) setTimeout(() => child.kill("SIGINT"), 500);
        });
      },
    });
    expect(interrupted.code, interrupted.stderr).toBe(130);
    expect(interrupted.stderr).toContain(`SIGINT: leaving run ${runId}, which goes on without this runner; \`cable-fanout stop ${runId} --local --store ${store}\` stops it`);
    const still = await cli(["status", "--local", "--store", store, "--out", path.join(work, "elsewhere")]);
    expect(still.stdout).toMatch(new RegExp(`^local-a\\s+${runId}\\s+\\S+\\s+1\\s+0\\s+detached$`, "m"));

    // attach from a fresh results directory: the live lines, the tasks' end, the report.
    const attachOut = path.join(work, "attached");
    const attached = await cli(["attach", runId, "--local", "--store", store, "--out", attachOut]);
    expect(attached.code, attached.stderr).toBe(0);
    expect(attached.stderr).toMatch(/^local-a \d+:\d\d/m);
    expect(attached.stderr).toMatch(/^local-b \d+:\d\d/m);
    expect(attached.stdout.trim()).toBe(path.join(attachOut, runId, "report.md"));
    // Every task ran its phases to their end: none stopped on the heartbeat (3 s) the runner stopped writing at the go.
    const record = json(path.join(attachOut, runId, "fanout.json"));
    expect(record.tasks.map((t: Json) => `${t.region} ${t.state}`)).toEqual(["local-a ok", "local-b ok"]);
    for (const region of ["local-a", "local-b"]) {
      const end = json(path.join(store, "runs", runId, region, "task-1", "status.json")).end;
      expect(end).toEqual({ by: "phases-done" });
    }
    const attachedMerged = json(path.join(attachOut, runId, "merged.json"));
    // 15 s × 1 user/s per task, two tasks.
    expect(attachedMerged.all.counters["vusers.created"]).toBe(30);

    // collect from yet another directory: the same figures.
    const collectOut = path.join(work, "collected");
    const collected = await cli(["collect", runId, "--local", "--store", store, "--out", collectOut]);
    expect(collected.code, collected.stderr).toBe(0);
    const collectedMerged = json(path.join(collectOut, runId, "merged.json"));
    expect(collectedMerged.all.counters).toEqual(attachedMerged.all.counters);
    expect(collectedMerged.regions.map((r: Json) => [r.name, r.tasks, r.counters])).toEqual(attachedMerged.regions.map((r: Json) => [r.name, r.tasks, r.counters]));
    for (const file of ["report.md", "report.html"]) expect(existsSync(path.join(collectOut, runId, file))).toBe(true);
    const attachedReport = readFileSync(path.join(attachOut, runId, "report.md"), "utf8");
    expect(countRows(readFileSync(path.join(collectOut, runId, "report.md"), "utf8"))).toEqual(countRows(attachedReport));

    // A run of the same load watched throughout counts the same users, in the same rows.
    const watchedOut = path.join(work, "watched");
    const watched = await cli(["run", CHAT, ...common.filter((a) => a !== "3s" && a !== "--heartbeat-timeout"), "--out", watchedOut]);
    expect(watched.code, watched.stderr).toBe(0);
    const watchedRun = path.dirname(watched.stdout.trim());
    const watchedMerged = json(path.join(watchedRun, "merged.json"));
    for (const counter of ["vusers.created", "vusers.completed", "vusers.failed"]) expect(attachedMerged.all.counters[counter], counter).toBe(watchedMerged.all.counters[counter]);
    expect(countRows(attachedReport)).toEqual(countRows(readFileSync(path.join(watchedRun, "report.md"), "utf8")));
    expect(countRows(attachedReport).length).toBeGreaterThan(1);
  }, 240_000);

  it("stop <runId> from a fresh results directory stops a detached run", async () => {
    const detached = await cli(["run", CHAT, "--local", "--store", store, "--regions", "local", "--count", "2", "--target", target.cableUrl, "--overrides", LONG, "--start-delay", "1", "--heartbeat-timeout", "3s", "--out", path.join(work, "to-stop"), "--detach"]);
    expect(detached.code, detached.stderr).toBe(0);
    const runId = detached.stdout.trim();
    const stopped = await cli(["stop", runId, "--local", "--store", store, "--out", path.join(work, "stopper")]);
    expect(stopped.code, stopped.stderr).toBe(0);
    expect(stopped.stderr).toContain("local: stopped 2 task(s): task-1, task-2");
    const status = await cli(["status", "--local", "--store", store, "--out", path.join(work, "elsewhere")]);
    expect(status.stdout).not.toContain(runId);
  }, 120_000);
});

// The capacity search by message rate through the real CLI, the real worker entrypoint and the real
// Artillery, with the ready AnyCable scenario, against the local target given a known rate capacity
// (above 27 broadcasts a second, over a sliding 5 s, it delivers every broadcast 800 ms late): 20
// users stay at every level, the levels are msg/s, and the search must find the capacity within one
// step, repeat the breach, refine between the last level held and the breach, measure the rate each
// level really sent, and end every user once.
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { startTarget, type LocalTarget } from "cable-local-target";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "./cli";

const ROOT = path.resolve(__dirname, "../../..");
const ANYCABLE = path.join(ROOT, "scenarios/capacity-anycable.yml");
// 20 users sending 25 msg/s put at most ~26.5 in any 5 s window (each user's sends are periodic,
// from a random start); 30 msg/s put at least 28 in every one.
const RATE_CAPACITY = 27;

// capacity.json as read back: checked field by field below.
type Capacity = Record<string, any>;

describe("cable-fanout capacity --vary rate --local", () => {
  let target: LocalTarget;
  let work: string;

  beforeAll(async () => {
    target = await startTarget({ port: 0, faults: { rateCapacity: RATE_CAPACITY, overCapacityDelayMs: 800 } });
    work = mkdtempSync(path.join(os.tmpdir(), "cable-capacity-rate-"));
  });
  afterAll(async () => {
    await target?.close();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it("finds the known message rate within one step from two regions, confirms the breach, refines below it, and fails --min-capacity in msg/s", async () => {
    const out = path.join(work, "out");
    const args = [
      "capacity",
      ANYCABLE,
      "--local",
      "--out",
      out,
      "--target",
      target.cableUrl,
      "--regions",
      "local-east,local-west",
      "--vary",
      "rate",
      "--users",
      "20",
      "--slo",
      "cable.broadcast_latency.p95<250",
      "--slo",
      "errors<1%",
      "--slo",
      "vusers.failed=0",
      // 20 users in 2 rooms: every message reaches about 10 listeners.
      "-v",
      JSON.stringify({ rooms: 2 }),
      ...["--start", "20", "--step", "10", "--max", "60", "--refine", "5", "--hold", "20", "--climb", "2", "--start-delay", "2", "--min-capacity", "30"],
    ];
    const r = await runCli(args, { cwd: work, timeoutMs: 300_000 });
    const markdown = path.resolve(work, r.stdout.trim());
    expect(existsSync(markdown), r.stderr).toBe(true);
    const a: Capacity = JSON.parse(readFileSync(path.join(path.dirname(markdown), "capacity.json"), "utf8"));
    expect(r.code, r.stderr).toBe(1);
    // 20 and 25 msg/s sit below the capacity of 27 broadcasts a second, 30 above it.
    expect(a).toMatchObject({ vary: "rate", unit: "msg/s", users: 20, refine: 5, held: 25, firstFailing: 30, mostTried: false, generatorBound: null, minCapacity: 30 });
    expect(a.headline).toMatch(/^held 25 msg\/s; 30 msg\/s breached twice: /);
    // A step cut short (incomplete: a busy machine) is tried again at its level as a "repeat"; it
    // stands for the attempt it replaces.
    const judged = a.steps
      .map((s: Capacity, i: number) => ({ ...s, attempt: s.attempt === "repeat" && a.steps[i - 1]?.verdict === "incomplete" && a.steps[i - 1]?.level === s.level ? a.steps[i - 1].attempt : s.attempt }))
      .filter((s: Capacity) => s.verdict !== "incomplete");
    expect(judged.map((s: Capacity) => `${s.level} ${s.attempt} ${s.verdict}`), JSON.stringify(a.steps.map((s: Capacity) => [s.level, s.attempt, s.verdict]))).toEqual(["20 stair held", "30 stair breached", "30 repeat breached", "25 refine held"]);
    expect(a.breached.map((b: Capacity) => b.slo)).toEqual(["cable.broadcast_latency.p95<250", "cable.broadcast_latency.p95<250"]);

    // Each level is a run of its own, the users the same at every level: 10 per region.
    expect(a.runs.map((run: Capacity) => run.levels)).toEqual(a.steps.map((s: Capacity) => [s.level]));
    for (const run of a.runs) {
      expect(run.users, JSON.stringify(run)).toMatchObject({ created: 20, failed: 0 });
      expect(run.users.completed).toBe(20);
    }
    expect(target.counters().connectionsOpen).toBe(0);

    // What each region really sent during the hold: its half of the level, and ~10 deliveries per message.
    for (const region of ["local-east", "local-west"]) {
      for (const s of a.regions[region].steps.filter((s: Capacity) => s.verdict !== "incomplete")) {
        expect(s.users).toBe(10);
        expect(s.sendRate).toBeGreaterThanOrEqual(0.9 * (s.level / 2));
        expect(s.sendRate).toBeLessThanOrEqual(1.1 * (s.level / 2));
        expect(s.receiveRate).toBeGreaterThan(3 * s.sendRate);
        expect(s.sendCheck).toMatchObject({ slo: `sent msg/s>=${Math.round(9 * (s.level / 2)) / 10}`, passed: true });
      }
    }
    const md = readFileSync(markdown, "utf8");
    expect(md).toContain("**held 25 msg/s; 30 msg/s breached twice");
    expect(md).toContain("refined to 5 msg/s between the last level held and the first breach");
    expect(md).toContain("| msg/s (all regions) | users here |");
    expect(md).toContain('x-axis "messages per second" [20, 25, 30]');
    expect(r.stderr).toContain("capacity: level 20 msg/s from 20 users");
    expect(r.stderr).toContain("capacity: 30 msg/s breached (repeat)");
    expect(r.stderr).toContain("capacity: refining between 20 and 30 msg/s: trying 25");
  }, 360_000);

  it("refuses --vary rate without --users, and --users by users, before any load", async () => {
    const base = ["capacity", ANYCABLE, "--local", "--out", path.join(work, "bad"), "--regions", "local", "--slo", "errors<1%", "--start", "10", "--step", "10", "--max", "20"];
    const noUsers = await runCli([...base, "--vary", "rate"], { cwd: work });
    expect(noUsers.code).toBe(2);
    expect(noUsers.stderr).toContain("--vary rate needs --users N");
    const usersByUsers = await runCli([...base, "--users", "20"], { cwd: work });
    expect(usersByUsers.code).toBe(2);
    expect(usersByUsers.stderr).toContain("--users is the fixed user count of --vary rate");
    const badAxis = await runCli([...base, "--vary", "messages"], { cwd: work });
    expect(badAxis.code).not.toBe(0);
    expect(badAxis.stderr).toMatch(/--vary.*messages.*(users, rate|"users", "rate")/s);
  }, 60_000);
});

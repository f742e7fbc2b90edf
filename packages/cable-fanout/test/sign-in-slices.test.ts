// The fan-out and a real app's own users: scenarios/rails-devise.yml from 2 regions × 2 local tasks
// against the real Rails + Devise app. Each task takes its own slice of users.csv (CABLE_SLICE), so
// the app's own sign-in log holds every user once: no user was signed in by two tasks at once.
import { execFileSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { startRailsDevise, type RailsDeviseServer } from "cable-test-servers";
import { afterAll, beforeAll, expect, it } from "vitest";
import { runCli } from "./cli";

const repo = path.resolve(__dirname, "../../..");
let app: RailsDeviseServer;

beforeAll(async () => {
  app = await startRailsDevise({ users: 100 });
});
afterAll(() => app?.stop());

it("2 regions × 2 tasks sign in 40 distinct users of the app, each once, from their own slices of users.csv", async () => {
  const work = mkdtempSync(path.join(os.tmpdir(), "fanout-sign-in-"));
  const startedAt = new Date().toISOString();
  // 10 users per task; users.csv's 100 rows give each of the 4 tasks 25 of its own.
  const overrides = { config: { phases: [{ duration: 3, arrivalCount: 10 }], variables: { hold: 1 } } };
  const result = await runCli(
    ["run", path.join(repo, "scenarios/rails-devise.yml"), "--local", "--regions", "local-a,local-b", "--count", "2", "--target", app.ws, "--overrides", JSON.stringify(overrides), "--out", path.join(work, "results")],
    { cwd: work, timeoutMs: 150_000 },
  );
  expect(result.code, result.stderr + result.stdout).toBe(0);
  expect(result.stderr).not.toContain("rows reused");
  const signIns = app.signIns().filter((e) => e.event === "sign_in" && e.at >= startedAt).map((e) => e.user_id);
  expect(signIns).toHaveLength(40);
  // Each user at most once: the slices are disjoint. Task k of 4 takes the rows whose index % 4 is k, its first 10 of them.
  expect(new Set(signIns).size).toBe(40);
  const expected = [0, 1, 2, 3].flatMap((k) => Array.from({ length: 10 }, (_, i) => k + 1 + 4 * i));
  expect([...signIns].sort((a, b) => a - b)).toEqual(expected.sort((a, b) => a - b));
  // And every socket was its own user, as many as signed in.
  const sockets = app.cableConnections().filter((e) => e.event === "connect" && e.at >= startedAt).map((e) => e.user_id);
  expect([...sockets].sort((a, b) => a! - b!)).toEqual([...signIns].sort((a, b) => a - b));
  // The users' passwords and sessions reached no log, report or live file of the run: only the
  // bundle's copies of users.csv itself (the run's input, and each task's slice of it) hold them.
  const holders = execFileSync("grep", ["-rl", "-E", "password-[0-9]|_rails_devise_session=", work], { encoding: "utf8" }).trim().split("\n");
  expect(holders.filter((file) => !/\/bundle\/users\.csv$/.test(file))).toEqual([]);
  expect(holders).toHaveLength(5);
}, 180_000);

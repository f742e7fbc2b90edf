// scenarios/rails-devise.yml through the real CLI against a real Rails 6.1 app behind Devise 4.8
// (cable-test-servers' startRailsDevise): every virtual user signs in through Devise's own form, and
// the server, asked on the socket, answers with that user, never another. A wrong password, a
// missing CSRF token and no sign-in at all each end their user with a named error, never a hang.
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { counter, runArtillery, samples, startAnyCable, startRailsDevise, type RailsDeviseServer } from "cable-test-servers";
import yaml from "js-yaml";
import { afterAll, beforeAll, describe, expect, test } from "vitest";

const repo = path.resolve(__dirname, "../../..");
const scenarioFile = path.join(repo, "scenarios", "rails-devise.yml");
const USERS = 40;
let app: RailsDeviseServer;

beforeAll(async () => {
  app = await startRailsDevise({ users: 60 });
});
afterAll(() => app?.stop());

/** What a run wrote anywhere a person or a dashboard reads: its console and its JSON report. */
function expectNoSecrets(output: string, reportPath: string): void {
  for (const text of [output, readFileSync(reportPath, "utf8")]) {
    expect(text).not.toMatch(/password-\d/);
    expect(text).not.toContain(app.sessionCookie);
  }
}

describe.concurrent("Rails + Devise: virtual users sign in as the app's users", () => {
  test(`${USERS} users sign in through Devise's form, and each socket is heard as its own user`, async () => {
    const startedAt = new Date().toISOString();
    const run = await runArtillery({
      script: scenarioFile,
      args: ["--target", app.ws, "--overrides", JSON.stringify({ config: { phases: [{ duration: 4, arrivalCount: USERS }], variables: { hold: 1 } } })],
      timeoutMs: 90_000,
    });
    const report = run.report!;
    expect(report, run.output).toBeDefined();
    expect(counter(report, "vusers.completed"), run.output).toBe(USERS);
    expect(counter(report, "vusers.failed")).toBe(0);
    // The WhoamiChannel and the room's author matched each user's own id: that is what completed means here.
    expect(samples(report, "cable.rtt")).toBe(USERS);
    expect(samples(report, "cable.http_latency")).toBe(3 * USERS);
    // The app's own logs: 40 distinct users signed in, and 40 distinct users on the socket, the first 40 rows of users.csv.
    // Rows 47 and on belong to the JWT test running beside this one; rows 41..46 never sign in.
    const signedIn = app.signIns().filter((e) => e.event === "sign_in" && e.at >= startedAt && e.user_id < 47).map((e) => e.user_id);
    const sockets = app.cableConnections().filter((e) => e.event === "connect" && e.at >= startedAt).map((e) => e.user_id);
    const first40 = Array.from({ length: USERS }, (_, i) => i + 1);
    expect([...signedIn].sort((a, b) => a - b)).toEqual(first40);
    expect([...sockets].sort((a, b) => a! - b!)).toEqual(first40);
    expectNoSecrets(run.output, run.reportPath);
  });

  test("scenarios/anycable-jwt.yml: each user signs in, takes its AnyCable token from the app, and anycable-go lets in only tokened sockets", async () => {
    const anycable = await startAnyCable({ public: false, args: [`--jwt_secret=${app.jwtSecret}`, "--enforce_jwt", "--public_streams"] });
    // Rows 47..58 of the seeded users: the 40-user test beside this one counts the app's sign-ins of rows 1..40.
    const users = path.join(mkdtempSync(path.join(os.tmpdir(), "devise-jwt-")), "users.csv");
    writeFileSync(users, Array.from({ length: 12 }, (_, i) => `user${47 + i}@example.test,password-${47 + i}`).join("\n") + "\n");
    try {
      const scenario = yaml.safeLoad(readFileSync(path.join(repo, "scenarios", "anycable-jwt.yml"), "utf8")) as { config: Record<string, any>; scenarios: { flow: Record<string, any>[] }[] };
      // A script, not the file with --overrides: Artillery reads config.payload before it applies overrides.
      const run = await runArtillery({
        script: { ...scenario, config: { ...scenario.config, target: anycable.url, cable: { http: app.http }, payload: { ...scenario.config.payload, path: users }, phases: [{ duration: 2, arrivalCount: 10 }], variables: { hold: 1 } } },
        timeoutMs: 60_000,
      });
      const report = run.report!;
      expect(report, run.output).toBeDefined();
      expect(counter(report, "vusers.completed"), run.output).toBe(10);
      expect(counter(report, "cable.subscriptions")).toBe(10);
      expect(samples(report, "cable.http_latency")).toBe(30);
      expectNoSecrets(run.output, run.reportPath);
      // The same flow without the token: --enforce_jwt refuses it, named.
      scenario.scenarios[0].flow = scenario.scenarios[0].flow.map((step) => (step.connect ? { connect: {} } : step));
      const refused = await runArtillery({
        script: { ...scenario, config: { ...scenario.config, target: anycable.url, cable: { http: app.http }, payload: { ...scenario.config.payload, path: users }, phases: [{ duration: 1, arrivalCount: 2 }], variables: { hold: 0 } } },
        timeoutMs: 60_000,
      });
      expect(counter(refused.report!, "errors.cable.unauthorized"), refused.output).toBe(2);
    } finally {
      await anycable.stop();
    }
  });

  type Script = { config: Record<string, any>; scenarios: { name?: string; engine?: string; flow: Record<string, any>[] }[] };
  const scenario = () => yaml.safeLoad(readFileSync(scenarioFile, "utf8")) as Script;

  /** The scenario with another flow and its own users file, one VU per row. */
  function variant(rows: string[], flow: (steps: Record<string, any>[]) => Record<string, any>[]): Script {
    const dir = mkdtempSync(path.join(os.tmpdir(), "devise-"));
    writeFileSync(path.join(dir, "users.csv"), rows.join("\n") + "\n");
    const s = scenario();
    return {
      config: { ...s.config, target: app.ws, phases: [{ duration: 1, arrivalCount: rows.length }], payload: { ...s.config.payload, path: path.join(dir, "users.csv") }, variables: { hold: 0 } },
      scenarios: [{ ...s.scenarios[0], flow: flow(s.scenarios[0].flow) }],
    };
  }

  test.each([
    {
      what: "a wrong password is Devise 4.8's 200 (its form again)",
      rows: ["user41@example.test,wrong-password", "user42@example.test,password-41"],
      flow: (steps: Record<string, any>[]) => steps,
      error: "errors.cable.http_200",
    },
    {
      what: "a sign-in without its CSRF token is Rails' 422",
      rows: ["user43@example.test,password-43", "user44@example.test,password-44"],
      flow: (steps: Record<string, any>[]) => steps.map((step, i) => (step.post && i === 1 ? { post: { ...step.post, form: { "user[email]": "{{ email }}", "user[password]": "{{ password }}" } } } : step)),
      error: "errors.cable.http_422",
    },
    {
      what: "a socket without a sign-in is refused by the app's identified_by (cable.unauthorized)",
      rows: ["user45@example.test,password-45", "user46@example.test,password-46"],
      flow: (steps: Record<string, any>[]) => steps.filter((step) => !step.get && !step.post).map((step) => (step.receive?.match?.user_id ? { receive: { ...step.receive, match: {} } } : step.receive?.match?.author_id ? { receive: { ...step.receive, match: { body: "hello" } } } : step)),
      error: "errors.cable.unauthorized",
    },
  ])("$what: named, never a hang", async ({ rows, flow, error }) => {
    const run = await runArtillery({ script: variant(rows, flow), timeoutMs: 60_000 });
    const report = run.report!;
    expect(report, run.output).toBeDefined();
    // Every user failed the same way and ended exactly once.
    expect(counter(report, "vusers.created")).toBe(rows.length);
    expect(counter(report, "vusers.failed"), run.output).toBe(rows.length);
    expect(counter(report, error), JSON.stringify(report.aggregate.counters)).toBe(rows.length);
    expectNoSecrets(run.output, run.reportPath);
  });
});

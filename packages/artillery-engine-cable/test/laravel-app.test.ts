// The Laravel recipes (scenarios/laravel-*.yml) through the real CLI against a real Laravel 11 app
// beside Reverb (cable-test-servers' startLaravelApp: session login, CSRF, /broadcasting/auth, a
// token guard): N users from a payload sign in and join one presence channel, and Reverb's own
// member list (its HTTP API) holds N distinct users; a user asking for another user's private
// channel is refused by the app, counted with its status, and the others go on.
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { counter, doubleSignIns, runArtillery, startLaravelApp, type LaravelApp } from "cable-test-servers";
import yaml from "js-yaml";
import { afterAll, beforeAll, describe, expect, test } from "vitest";

const repo = path.resolve(__dirname, "../../..");
const scenario = (name: string) => path.join(repo, "scenarios", name);
let app: LaravelApp;

beforeAll(async () => {
  app = await startLaravelApp({ users: 100 });
});
afterAll(() => app?.stop());

/** The recipe pointed at this app: its Reverb, its HTTP side, its key. */
function aimedAt(authPath: string, config: Record<string, unknown>) {
  return ["--target", app.ws, "--overrides", JSON.stringify({ config: { cable: { http: app.http, pusher: { key: app.key, authEndpoint: { url: `${app.http}${authPath}` } } }, ...config } })];
}

function expectNoSecrets(output: string, reportPath: string): void {
  for (const text of [output, readFileSync(reportPath, "utf8")]) {
    expect(text).not.toMatch(/password-\d/);
    expect(text).not.toContain(`${app.sessionCookie}=`);
  }
}

/** Reverb's own member list, read while the users hold their sockets, until it has `count` members. */
async function membersWhileRunning(channel: string, count: number): Promise<number[]> {
  let members: number[] = [];
  for (const until = Date.now() + 45_000; Date.now() < until && members.length < count; ) {
    await new Promise((resolve) => setTimeout(resolve, 250));
    members = await app.presenceMembers(channel).catch(() => members);
  }
  return members;
}

describe.sequential("Laravel + Reverb: virtual users sign in as the app's users", () => {
  // No retry: the GET /login that once answered 200 without its _token was Blade compiling the login
  // view in place in several PHP workers at once (an empty page: 200, every header, 0 bytes), which
  // startLaravelApp now compiles first; the engine names it, should it come back:
  // "GET /login: nothing to capture as token (HTTP 200, 0 bytes of text/html)".
  test("laravel-presence.yml: 40 users sign in through the session login and are 40 distinct members of one presence channel", async () => {
    const since = Date.now() / 1000;
    const running = runArtillery({
      script: scenario("laravel-presence.yml"),
      args: aimedAt("/broadcasting/auth", { phases: [{ duration: 4, arrivalCount: 40 }], variables: { hold: 8, room: 7 } }),
      env: { REVERB_APP_KEY: app.key },
      timeoutMs: 90_000,
    });
    const members = await membersWhileRunning("presence-room.7", 40);
    const run = await running;
    const report = run.report!;
    expect(report, run.output).toBeDefined();
    expect(counter(report, "vusers.completed"), run.output).toBe(40);
    expect(counter(report, "vusers.failed")).toBe(0);
    expect(counter(report, "cable.subscriptions")).toBe(80);
    expect([...members].sort((a, b) => a - b)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
    const logins = (await app.logins()).filter((e) => e.at >= since);
    expect(logins.filter((e) => e.event === "login")).toHaveLength(40);
    expect(doubleSignIns(logins)).toEqual([]);
    expectNoSecrets(run.output, run.reportPath);
  });

  test("another user's private channel is the app's 403: counted as cable.auth_failed (.403), and the others go on", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "laravel-"));
    // Users 41 and 42 ask for user 1's channel; user 43 for its own.
    writeFileSync(path.join(dir, "users.csv"), "user41@example.test,password-41,1\nuser42@example.test,password-42,1\nuser43@example.test,password-43,43\n");
    const recipe = yaml.safeLoad(readFileSync(scenario("laravel-presence.yml"), "utf8")) as { config: Record<string, any>; scenarios: { flow: Record<string, any>[] }[] };
    const flow = recipe.scenarios[0].flow.map((step) => (step.subscribe?.channel?.startsWith("private-") ? { subscribe: { channel: "private-App.Models.User.{{ peek }}" } } : step));
    const file = path.join(dir, "peek.yml");
    const config: Record<string, any> = { ...recipe.config, target: app.ws, phases: [{ duration: 1, arrivalCount: 3 }], payload: { path: "users.csv", fields: ["email", "password", "peek"], order: "sequence" }, variables: { hold: 1, room: 8 } };
    config.cable = { ...config.cable, http: app.http, pusher: { ...config.cable.pusher, key: app.key, authEndpoint: { ...config.cable.pusher.authEndpoint, url: `${app.http}/broadcasting/auth` } } };
    writeFileSync(file, yaml.safeDump({ config, scenarios: [{ ...recipe.scenarios[0], flow }] }));
    const run = await runArtillery({ script: file, env: { REVERB_APP_KEY: app.key }, timeoutMs: 60_000 });
    const report = run.report!;
    expect(report, run.output).toBeDefined();
    expect(counter(report, "vusers.completed"), run.output).toBe(1);
    expect(counter(report, "vusers.failed")).toBe(2);
    expect(counter(report, "errors.cable.auth_failed")).toBe(2);
    expect(counter(report, "cable.auth_failed.403")).toBe(2);
    expect(counter(report, "cable.failed_subscriptions")).toBe(2);
  });

  test("laravel-token.yml: each user logs in through the token API and its channels are authorized with its bearer token", async () => {
    const running = runArtillery({
      script: scenario("laravel-token.yml"),
      args: aimedAt("/api/broadcasting/auth", { phases: [{ duration: 2, arrivalCount: 10 }], variables: { hold: 6, room: 9 } }),
      env: { REVERB_APP_KEY: app.key },
      timeoutMs: 60_000,
    });
    const members = await membersWhileRunning("presence-room.9", 10);
    const run = await running;
    expect(counter(run.report!, "vusers.completed"), run.output).toBe(10);
    expect(members).toHaveLength(10);
    expect(new Set(members).size).toBe(10);
    expectNoSecrets(run.output, run.reportPath);
  });

  test("laravel-token-pool.yml: a pool signed in once in the before flow, its tokens handed out, one member each", async () => {
    const since = Date.now() / 1000;
    const running = runArtillery({
      script: scenario("laravel-token-pool.yml"),
      args: aimedAt("/api/broadcasting/auth", { phases: [{ duration: 2, arrivalCount: 10 }], variables: { pool_file: "users.csv", pool_size: 10, hold: 6, room: 10 } }),
      env: { REVERB_APP_KEY: app.key },
      timeoutMs: 60_000,
    });
    const members = await membersWhileRunning("presence-room.10", 10);
    const run = await running;
    expect(counter(run.report!, "vusers.completed"), run.output).toBe(10);
    expect([...members].sort((a, b) => a - b)).toEqual(Array.from({ length: 10 }, (_, i) => i + 1));
    // The pool signed in once each, before any virtual user: 10 token logins, not one per user.
    const logins = (await app.logins()).filter((e) => e.at >= since && e.event === "login");
    expect(logins.map((e) => e.via)).toEqual(Array(10).fill("token"));
    expectNoSecrets(run.output, run.reportPath);
  });
});

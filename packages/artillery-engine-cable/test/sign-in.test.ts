// Virtual users that sign in as the app's users: HTTP steps, each user's cookie jar, and the
// socket and channel auth that go with that session. Through the real CLI, against a loopback app
// that behaves as Laravel and Devise do on the points that matter (a CSRF token in the page, a
// session regenerated at login behind redirects, XSRF-TOKEN read back by the auth endpoint) and the
// local target, which knows an Action Cable user by its `uid` cookie. The real apps are in
// laravel-app.test.ts and rails-devise.test.ts.
import { execFile } from "node:child_process";
import { createHmac } from "node:crypto";
import { promisify } from "node:util";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { counter, runArtillery, samples } from "cable-test-servers";
import { startTarget, type LocalTarget } from "cable-local-target";
import { afterAll, beforeAll, describe, expect, test } from "vitest";

let target: LocalTarget;
let app: http.Server;
let appUrl: string;
/** What the app's auth endpoint was asked, per signed-in user. */
const authorized: { user: string; channel: string; status: number }[] = [];
let dir: string;

const USERS = 10;
const password = (id: number) => `pw-${id}-${"s3cret"}`;

/** The session cookie value of a signed-in user: a secret the test greps for in every output. */
const sessionOf = (id: string) => `sess-${id}-a8f3c2`;

function answer(req: http.IncomingMessage, res: http.ServerResponse, body: string): void {
  const cookies = Object.fromEntries((req.headers.cookie ?? "").split("; ").filter(Boolean).map((c) => c.split("=")));
  const user = /^sess-(\d+)-a8f3c2$/.exec(cookies.app_session ?? "")?.[1];
  const url = new URL(req.url!, appUrl);
  if (req.method === "GET" && url.pathname === "/login") {
    res.writeHead(200, { "Set-Cookie": ["XSRF-TOKEN=tok%3D%3D; Path=/", "app_session=guest; Path=/; HttpOnly"], "Content-Type": "text/html" });
    return void res.end('<html><meta name="csrf-token" content="csrf-guest"><form><input type="hidden" name="_token" value="csrf-guest"></form></html>');
  }
  if (req.method === "POST" && url.pathname === "/login") {
    const form = new URLSearchParams(body);
    if (form.get("_token") !== "csrf-guest" || cookies.app_session !== "guest") return void res.writeHead(419).end("Page Expired");
    const id = (form.get("email") ?? "").replace(/\D/g, "");
    if (form.get("password") !== password(Number(id))) return void res.writeHead(302, { Location: "/login" }).end();
    // Laravel regenerates the session at login; the redirect's target sets the socket's cookie.
    return void res.writeHead(302, { Location: "/home", "Set-Cookie": `app_session=${sessionOf(id)}; Path=/; HttpOnly` }).end();
  }
  if (url.pathname === "/home" && user) return void res.writeHead(302, { Location: "/dashboard", "Set-Cookie": `uid=User/${user}; Path=/` }).end();
  if (url.pathname === "/dashboard" && user) {
    res.writeHead(200, { "Content-Type": "application/json", "X-User-Id": user });
    return void res.end(JSON.stringify({ user: { id: Number(user), name: `User ${user}` }, csrf: `csrf-${user}` }));
  }
  if (req.method === "POST" && url.pathname === "/broadcasting/auth") {
    const form = new URLSearchParams(body);
    const channel = form.get("channel_name") ?? "";
    const own = channel === `private-user.${user}` || channel.startsWith("presence-");
    const csrf = req.headers["x-csrf-token"] === `csrf-${user}` && req.headers["x-xsrf-token"] === "tok==";
    const status = !user ? 401 : !csrf ? 419 : own ? 200 : 403;
    authorized.push({ user: user ?? "-", channel, status });
    if (status !== 200) return void res.writeHead(status, { "Content-Type": "application/json" }).end('{"message":"This action is unauthorized."}');
    const channelData = channel.startsWith("presence-") ? JSON.stringify({ user_id: user, user_info: { name: `User ${user}` } }) : undefined;
    const signature = createHmac("sha256", target.pusher.secret).update(`${form.get("socket_id")}:${channel}${channelData ? `:${channelData}` : ""}`).digest("hex");
    return void res.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify({ auth: `${target.pusher.key}:${signature}`, channel_data: channelData }));
  }
  res.writeHead(404).end();
}

beforeAll(async () => {
  target = await startTarget({ port: 0 });
  app = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", () => answer(req, res, body));
  });
  await new Promise<void>((resolve) => app.listen(0, "127.0.0.1", resolve));
  appUrl = `http://127.0.0.1:${(app.address() as AddressInfo).port}`;
  dir = mkdtempSync(path.join(os.tmpdir(), "sign-in-"));
  // User 3 has a wrong password in the file.
  const rows = Array.from({ length: USERS }, (_, i) => `user${i + 1}@example.test,${i + 1 === 3 ? "wrong" : password(i + 1)},${i + 1 === 5 ? 6 : i + 1}`);
  writeFileSync(path.join(dir, "users.csv"), `email,password,peek\n${rows.join("\n")}\n`);
});

afterAll(async () => {
  app?.closeAllConnections();
  await new Promise((resolve) => app?.close(resolve));
  await target?.close();
});

const signIn = [
  { get: { url: "/login", name: "login_form", capture: { regexp: 'name="_token" value="([^"]+)"', group: 1, as: "token" } } },
  { post: { url: "/login", name: "login", form: { _token: "{{ token }}", email: "{{ email }}", password: "{{ password }}" }, capture: [{ json: "$.user.id", as: "userId" }, { header: "x-user-id", as: "uid" }, { json: "$.csrf", as: "csrf" }] } },
];

function script(cable: Record<string, unknown>, targetUrl: string, flow: Record<string, unknown>[]) {
  return {
    config: {
      target: targetUrl,
      engines: { cable: {} },
      cable: { timeout: 3, http: appUrl, ...cable },
      phases: [{ duration: 2, arrivalCount: USERS }],
      plugins: { "cable-report": {} },
      payload: { path: path.join(dir, "users.csv"), fields: ["email", "password", "peek"], order: "sequence", skipHeader: true },
    },
    scenarios: [{ name: "sign in", engine: "cable", flow }],
  };
}

function expectNoSecrets(output: string, reportPath: string): void {
  const report = readFileSync(reportPath, "utf8");
  for (const text of [output, report]) {
    for (let id = 1; id <= USERS; id++) {
      expect(text).not.toContain(password(id));
      expect(text).not.toContain(sessionOf(String(id)));
    }
  }
}

describe.concurrent("virtual users sign in as the app's users", () => {
  test("Action Cable: each user signs in through the form and redirects, and the server hears the socket as that user", async () => {
    const out = mkdtempSync(path.join(os.tmpdir(), "sign-in-report-"));
    mkdirSync(path.join(out, "local"));
    const run = await runArtillery({
      outputDir: path.join(out, "local"),
      script: script({}, target.cableUrl, [
        ...signIn,
        { connect: null },
        { subscribe: { channel: "ChatChannel", params: { id: "lobby" }, as: "chat" } },
        { perform: { channel: "chat", action: "speak", data: { message: "hi from {{ uid }}" } } },
        // The server names the author from the socket's cookie, never the client: each user hears itself.
        { receive: { channel: "chat", match: { author_id: "{{ uid }}", message: "hi from {{ uid }}" } } },
      ]),
    });
    const report = run.report!;
    expect(report, run.output).toBeDefined();
    expect(counter(report, "vusers.completed"), run.output).toBe(USERS - 1);
    // The wrong password: Laravel and Devise answer it with a redirect back to the form, whose HTML has no user to capture.
    expect(counter(report, "errors.cable.capture_failed")).toBe(1);
    expect(counter(report, "vusers.failed")).toBe(1);
    expect(samples(report, "cable.http_latency")).toBe(2 * USERS);
    // GET /login, then POST 302 → /home 302 → /dashboard 200 (the wrong password: POST 302 → /login 200).
    expect(counter(report, "cable.http_codes.302")).toBe(2 * (USERS - 1) + 1);
    expect(counter(report, "cable.http_codes.200")).toBe(2 * USERS);
    // Each named step's own latency: the form, and the login with its redirects.
    expect(samples(report, "cable.http_latency.login_form")).toBe(USERS);
    expect(samples(report, "cable.http_latency.login")).toBe(USERS);
    // The failed capture says what it saw, in the console and in report.md's notes on errors.
    const said = /cable\.capture_failed \(capture\): POST \/login → GET \/login: nothing to capture as userId, uid, csrf \(HTTP 200, \d+ bytes of text\/html\)/;
    expect(run.output).toMatch(said);
    await promisify(execFile)(process.execPath, [path.join(__dirname, "../../cable-report/bin/cable-report.js"), out, "--out", path.join(out, "report.md")]);
    const md = readFileSync(path.join(out, "report.md"), "utf8");
    expect(md).toContain('HTTP "login" latency (ms)');
    expect(md).toContain('HTTP "login\\_form" latency (ms)');
    expect(md).toMatch(/`cable\.capture_failed` \(1\): a capture found nothing .*`POST \/login → GET \/login: nothing to capture as userId, uid, csrf \(HTTP 200, \d+ bytes of text\/html\)`/);
    expectNoSecrets(run.output, run.reportPath);
  });

  test("Pusher: the authEndpoint is called per user with its session, its CSRF header templated, XSRF-TOKEN sent back; another user's private channel is the app's 403", async () => {
    authorized.length = 0;
    const run = await runArtillery({
      script: script({ protocol: "pusher", pusher: { key: target.pusher.key, authEndpoint: { url: `${appUrl}/broadcasting/auth`, headers: { "X-CSRF-TOKEN": "{{ csrf }}" } } } }, target.url, [
        ...signIn,
        { connect: null },
        { subscribe: { channel: "presence-room.1" } },
        // The file's third column: each user's own id, but user 5 asks for user 6's channel.
        { subscribe: { channel: "private-user.{{ peek }}" } },
      ]),
      // A secret in the environment (for publishing) must not replace the app's own auth.
      env: { PUSHER_APP_SECRET: target.pusher.secret },
    });
    const report = run.report!;
    expect(report, run.output).toBeDefined();
    expect(counter(report, "vusers.completed"), run.output).toBe(USERS - 2);
    expect(counter(report, "errors.cable.capture_failed")).toBe(1);
    expect(counter(report, "errors.cable.auth_failed")).toBe(1);
    expect(counter(report, "cable.auth_failed.403")).toBe(1);
    // The app's own share of each private and presence subscription: 9 users × 2 channels.
    expect(samples(report, "cable.auth_latency")).toBe(2 * (USERS - 1));
    expect(counter(report, "cable.failed_subscriptions")).toBe(1);
    const presence = authorized.filter((a) => a.channel === "presence-room.1");
    // Every signed-in user asked as itself, with both CSRF headers right: 9 distinct members.
    expect(presence.map((a) => a.status)).toEqual(Array(USERS - 1).fill(200));
    expect(new Set(presence.map((a) => a.user)).size).toBe(USERS - 1);
    expect(authorized.filter((a) => a.status === 403)).toEqual([{ user: "5", channel: "private-user.6", status: 403 }]);
    expectNoSecrets(run.output, run.reportPath);
  });
});

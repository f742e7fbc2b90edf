import { existsSync, readFileSync, readdirSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { connect, doubleSignIns, startLaravelApp, type LaravelApp, type LaravelUser, type RawClient } from "../src/index.js";

/** What a browser keeps between requests: its cookies. Redirects are looked at, not followed. */
class Browser {
  readonly cookies = new Map<string, string>();
  constructor(private readonly base: string) {}

  async request(method: string, path: string, options: { form?: Record<string, string>; headers?: Record<string, string> } = {}) {
    const headers: Record<string, string> = { ...options.headers };
    if (this.cookies.size) headers.Cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join("; ");
    let body: string | undefined;
    if (options.form) {
      headers["Content-Type"] = "application/x-www-form-urlencoded";
      body = new URLSearchParams(options.form).toString();
    }
    const res = await fetch(this.base + path, { method, headers, body, redirect: "manual", signal: AbortSignal.timeout(10_000) });
    for (const cookie of res.headers.getSetCookie()) {
      const pair = cookie.split(";")[0];
      const eq = pair.indexOf("=");
      this.cookies.set(pair.slice(0, eq), pair.slice(eq + 1));
    }
    return res;
  }

  /** What axios sends as X-XSRF-TOKEN: the XSRF-TOKEN cookie, URL-decoded (it stays encrypted). */
  xsrf(): string {
    return decodeURIComponent(this.cookies.get("XSRF-TOKEN") ?? "");
  }

  /** GET /login, then POST the form with its hidden _token. */
  async signIn(user: { email: string; password: string }) {
    const page = await (await this.request("GET", "/login")).text();
    const token = /name="_token" value="([^"]+)"/.exec(page)?.[1];
    if (!token) throw new Error(`no _token in the login form:\n${page}`);
    return this.request("POST", "/login", { form: { _token: token, email: user.email, password: user.password } });
  }
}

const meta = (html: string, name: string) => new RegExp(`<meta name="${name}" content="([^"]*)"`).exec(html)?.[1];
const pathOf = (res: Response) => new URL(res.headers.get("location") ?? "", "http://x").pathname;

async function pusherSocket(app: LaravelApp): Promise<{ client: RawClient; socketId: string }> {
  const client = await connect(`${app.ws}/app/${app.key}?protocol=7`);
  const hello = await client.next((f) => f.event === "pusher:connection_established");
  return { client, socketId: JSON.parse(hello.data).socket_id };
}

async function subscribe(client: RawClient, channel: string, auth: { auth: string; channel_data?: string }) {
  client.send({ event: "pusher:subscribe", data: { channel, ...auth } });
  return client.next((f) => f.channel === channel || f.event === "pusher:error");
}

describe("startLaravelApp: Laravel 11 with a session login, CSRF and broadcasting auth, beside Reverb", () => {
  let app: LaravelApp;
  let users: LaravelUser[];
  const sockets: RawClient[] = [];

  beforeAll(async () => {
    app = await startLaravelApp({ users: 20 });
    users = app.users;
    console.log(`startLaravelApp: ${app.startMs} ms (Reverb beside it; copy, migrate, seed 20 users, php -S with 8 workers)`);
  });
  afterAll(async () => {
    for (const s of sockets) s.close();
    await app?.stop();
  });

  test("the seeded users follow the pattern", () => {
    expect(users[6]).toEqual({ id: 7, name: "User 7", email: "user7@example.test", password: "password-7" });
    expect(users).toHaveLength(20);
  });

  test("a browser signs in with the form's CSRF token: 302 to /dashboard and a new session cookie", async () => {
    const browser = new Browser(app.http);
    const login = await browser.request("GET", "/login");
    expect(login.status).toBe(200);
    const html = await login.text();
    expect(meta(html, "csrf-token")).toMatch(/^\w{40}$/);
    expect(html).toContain(`name="_token" value="${meta(html, "csrf-token")}"`);
    expect([...browser.cookies.keys()].sort()).toEqual(["XSRF-TOKEN", app.sessionCookie].sort());
    const guestSession = browser.cookies.get(app.sessionCookie);

    const res = await browser.request("POST", "/login", { form: { _token: meta(html, "csrf-token")!, email: users[0].email, password: users[0].password } });
    expect(res.status, app.output()).toBe(302);
    expect(pathOf(res)).toBe("/dashboard");
    expect(browser.cookies.get(app.sessionCookie)).not.toBe(guestSession);

    const dashboard = await browser.request("GET", "/dashboard");
    expect(dashboard.status).toBe(200);
    const page = await dashboard.text();
    expect(meta(page, "user-id")).toBe("1");
    // regenerate() at sign-in makes a new CSRF token too: a client must take it from the dashboard.
    const csrf = meta(page, "csrf-token");
    expect(csrf).toMatch(/^\w{40}$/);
    expect(csrf).not.toBe(meta(html, "csrf-token"));

    const asJson = await browser.request("GET", "/dashboard", { headers: { Accept: "application/json" } });
    expect(await asJson.json()).toEqual({ id: 1, name: "User 1", email: "user1@example.test", csrf });

    // The log names the session the sign-in got, and that session's file holds user 1.
    const [signedIn] = (await app.logins()).filter((e) => e.user === 1);
    expect(signedIn).toMatchObject({ event: "login", via: "session", user: 1 });
    expect(await app.sessions()).toContainEqual({ id: signedIn.session, user: 1 });
  });

  test("a wrong password is 302 back to /login and no sign-in; a POST without the CSRF token is 419", async () => {
    const browser = new Browser(app.http);
    const wrong = await browser.signIn({ email: users[1].email, password: "password-1" });
    expect(wrong.status).toBe(302);
    expect(pathOf(wrong)).toBe("/login");
    expect((await app.logins()).filter((e) => e.user === 2)).toEqual([]);
    expect((await browser.request("GET", "/dashboard")).status).toBe(302); // still a guest: off to /login

    await browser.request("GET", "/login");
    const noToken = await browser.request("POST", "/login", { form: { email: users[1].email, password: users[1].password } });
    expect(noToken.status).toBe(419);
    expect((await browser.request("GET", "/dashboard", { headers: { Accept: "application/json" } })).status).toBe(401);
  });

  test("/broadcasting/auth signs presence and own private channels for the session's user, 403 for another's; Reverb accepts them", async () => {
    const browser = new Browser(app.http);
    expect((await browser.signIn(users[0])).status).toBe(302);
    const { client, socketId } = await pusherSocket(app);
    sockets.push(client);
    const auth = (channel: string, headers: Record<string, string>) =>
      browser.request("POST", "/broadcasting/auth", { form: { socket_id: socketId, channel_name: channel }, headers: { Accept: "application/json", ...headers } });

    // Stock Laravel 11 exempts this route from CSRF; this app puts the check back (broadcastAuthCsrf).
    expect((await auth("presence-room.1", {})).status).toBe(419);

    const presence = await auth("presence-room.1", { "X-XSRF-TOKEN": browser.xsrf() });
    expect(presence.status, app.output()).toBe(200);
    const signed = (await presence.json()) as { auth: string; channel_data: string };
    expect(signed.auth).toMatch(new RegExp(`^${app.key}:[0-9a-f]{64}$`));
    expect(JSON.parse(signed.channel_data)).toEqual({ user_id: "1", user_info: { id: 1, name: "User 1" } });

    // The meta tag's token works as X-CSRF-TOKEN, as a page's own script would send it.
    const csrf = meta(await (await browser.request("GET", "/dashboard")).text(), "csrf-token")!;
    const own = await auth("private-App.Models.User.1", { "X-CSRF-TOKEN": csrf });
    expect(own.status).toBe(200);
    expect(Object.keys((await own.json()) as object)).toEqual(["auth"]);
    expect((await auth("private-App.Models.User.2", { "X-CSRF-TOKEN": csrf })).status).toBe(403);

    const guest = new Browser(app.http);
    await guest.request("GET", "/login");
    const anonymous = await guest.request("POST", "/broadcasting/auth", {
      form: { socket_id: socketId, channel_name: "presence-room.1" },
      headers: { Accept: "application/json", "X-XSRF-TOKEN": guest.xsrf() },
    });
    expect(anonymous.status).toBe(403);

    // Reverb checks the signature with the secret it shares with the app.
    expect(await subscribe(client, "presence-room.1", signed)).toMatchObject({ event: "pusher_internal:subscription_succeeded" });
    expect(await app.presenceMembers("presence-room.1")).toEqual([1]);
    expect(await subscribe(client, "private-App.Models.User.1", (await (await auth("private-App.Models.User.1", { "X-CSRF-TOKEN": csrf })).json()) as { auth: string })).toMatchObject({
      event: "pusher_internal:subscription_succeeded",
    });
  });

  test("the token login: POST /api/login → {token}; /api/broadcasting/auth takes it as a bearer token for the same channels", async () => {
    const apiLogin = (body: object) =>
      fetch(`${app.http}/api/login`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body), signal: AbortSignal.timeout(10_000) });
    expect((await apiLogin({ email: users[2].email, password: "nope" })).status).toBe(422);
    const res = await apiLogin({ email: users[2].email, password: users[2].password });
    expect(res.status).toBe(200);
    const { token } = (await res.json()) as { token: string };
    expect(token).toMatch(/^\w{60}$/);

    const { client, socketId } = await pusherSocket(app);
    sockets.push(client);
    const auth = (channel: string, bearer?: string) =>
      fetch(`${app.http}/api/broadcasting/auth`, {
        method: "POST",
        headers: { "Content-Type": "application/x-www-form-urlencoded", ...(bearer ? { Authorization: `Bearer ${bearer}` } : {}) },
        body: new URLSearchParams({ socket_id: socketId, channel_name: channel }).toString(),
        signal: AbortSignal.timeout(10_000),
      });
    const presence = await auth("presence-room.1", token);
    expect(presence.status, app.output()).toBe(200);
    const signed = (await presence.json()) as { auth: string; channel_data: string };
    expect(JSON.parse(signed.channel_data)).toEqual({ user_id: "3", user_info: { id: 3, name: "User 3" } });
    expect((await auth("private-App.Models.User.3", token)).status).toBe(200);
    expect((await auth("private-App.Models.User.1", token)).status).toBe(403);
    expect((await auth("presence-room.1")).status).toBe(401);
    expect((await auth("presence-room.1", "not-a-token")).status).toBe(401);

    expect(await subscribe(client, "presence-room.1", signed)).toMatchObject({ event: "pusher_internal:subscription_succeeded" });
    expect((await app.presenceMembers("presence-room.1")).sort()).toEqual([1, 3]);
    expect((await app.logins()).filter((e) => e.user === 3)).toMatchObject([{ event: "login", via: "token", user: 3 }]);
  });

  test("many browsers sign in at once (8 workers, file sessions, sqlite), and the login log tells who was signed in twice", async () => {
    const crowd = users.slice(3, 19);
    const began = Date.now();
    const browsers = await Promise.all(
      crowd.map(async (user) => {
        const browser = new Browser(app.http);
        const res = await browser.signIn(user);
        expect(res.status, app.output()).toBe(302);
        expect(pathOf(res)).toBe("/dashboard");
        return browser;
      }),
    );
    console.log(`${crowd.length} concurrent form sign-ins: ${Date.now() - began} ms`);
    const signedIn = (await app.sessions()).filter((s) => s.user !== undefined).map((s) => s.user);
    for (const user of crowd) expect(signedIn).toContain(user.id);

    // User 1 is signed in twice already (two tests above, no logout): the log says so, and of no one else.
    const twice = async () => [...new Set(doubleSignIns(await app.logins()).map((d) => d.user))].sort((a, b) => a - b);
    expect(await twice()).toEqual([1]);
    expect((await new Browser(app.http).signIn(crowd[1])).status).toBe(302);
    expect(await twice()).toEqual([1, crowd[1].id]);

    // A logout closes the sign-in and deletes its session.
    const first = browsers[0];
    const csrf = meta(await (await first.request("GET", "/dashboard")).text(), "csrf-token")!;
    const before = (await app.logins()).filter((e) => e.user === crowd[0].id);
    const out = await first.request("POST", "/logout", { form: { _token: csrf } });
    expect(out.status).toBe(302);
    const after = (await app.logins()).filter((e) => e.user === crowd[0].id);
    expect(after).toMatchObject([...before, { event: "logout", via: "session", session: before[0].session }]);
    expect((await app.sessions()).map((s) => s.id)).not.toContain(before[0].session);
    expect((await first.request("GET", "/dashboard")).status).toBe(302);
    // Signing in again after the logout is no double sign-in.
    expect((await new Browser(app.http).signIn(crowd[0])).status).toBe(302);
    expect(await twice()).toEqual([1, crowd[1].id]);
  });

  test("stop() ends every PHP worker (one process group) and removes the app's copy", async () => {
    const leader = app.server.pid()!;
    const group = () =>
      readdirSync("/proc")
        .filter((p) => /^\d+$/.test(p))
        .filter((p) => {
          try {
            // Fields after the command's closing parenthesis: state, ppid, pgrp. A zombie has exited
            // (its port is closed) and waits for init to reap it, which here takes a second or more.
            const [state, , pgrp] = readFileSync(`/proc/${p}/stat`, "utf8").split(") ").pop()!.split(" ");
            return Number(pgrp) === leader && state !== "Z";
          } catch {
            return false;
          }
        });
    expect(group().length).toBe(9); // the leader and PHP_CLI_SERVER_WORKERS=8
    await app.stop();
    expect(group()).toEqual([]);
    expect(existsSync(app.dir)).toBe(false);
  });
});

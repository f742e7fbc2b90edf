import { createHmac } from "node:crypto";
import WebSocket from "ws";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { startAnyCable, startRailsDevise, waitFor, type RailsDeviseServer } from "../src/index.js";

// What a browser does, by hand: plain fetch, cookies kept in a map from Set-Cookie, nothing followed.
class Browser {
  readonly jar = new Map<string, string>();
  constructor(private readonly base: string) {}

  cookie(): string {
    return [...this.jar].map(([k, v]) => `${k}=${v}`).join("; ");
  }

  async request(method: string, path: string, init: { form?: Record<string, string>; headers?: Record<string, string> } = {}) {
    const response = await fetch(this.base + path, {
      method,
      redirect: "manual",
      headers: {
        ...(this.jar.size ? { cookie: this.cookie() } : {}),
        ...(init.form ? { "content-type": "application/x-www-form-urlencoded" } : {}),
        ...init.headers,
      },
      body: init.form ? new URLSearchParams(init.form) : undefined,
      signal: AbortSignal.timeout(10_000),
    });
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(";");
      const at = pair.indexOf("=");
      this.jar.set(pair.slice(0, at), pair.slice(at + 1));
    }
    return { status: response.status, location: response.headers.get("location"), body: await response.text() };
  }
}

const formToken = (html: string) => /<input type="hidden" name="authenticity_token" value="([^"]+)"/.exec(html)?.[1];
const metaToken = (html: string) => /<meta name="csrf-token" content="([^"]+)"/.exec(html)?.[1];

interface Socket {
  ws: WebSocket;
  /** Every frame but pings, in arrival order. */
  frames: any[];
  /** Resolves with the first frame (past or future) that matches; rejects after 5 s. */
  next(match: (frame: any) => boolean): Promise<any>;
  send(frame: object): void;
}

function openSocket(app: RailsDeviseServer, cookie?: string, url = app.ws): Socket {
  const ws = new WebSocket(url, ["actioncable-v1-json"], { headers: { Origin: app.origin, ...(cookie ? { Cookie: cookie } : {}) } });
  const frames: any[] = [];
  const waiters: (() => void)[] = [];
  ws.on("message", (data) => {
    const frame = JSON.parse(data.toString());
    if (frame.type === "ping") return;
    frames.push(frame);
    for (const w of waiters.splice(0)) w();
  });
  const next = (match: (frame: any) => boolean) =>
    new Promise<any>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no matching frame in ${JSON.stringify(frames)}`)), 5_000);
      const look = () => {
        const found = frames.find(match);
        if (found) {
          clearTimeout(timer);
          resolve(found);
        } else waiters.push(look);
      };
      look();
    });
  const send = (frame: object) => {
    if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(frame));
    else ws.once("open", () => ws.send(JSON.stringify(frame)));
  };
  return { ws, frames, next, send };
}

async function subscribe(socket: Socket, identifier: string): Promise<void> {
  socket.send({ command: "subscribe", identifier });
  await socket.next((f) => f.identifier === identifier && f.type === "confirm_subscription");
}

const perform = (socket: Socket, identifier: string, data: object) =>
  socket.send({ command: "message", identifier, data: JSON.stringify(data) });

describe("Rails 6.1 + Devise 4.8 app (rails-devise/)", () => {
  let app: RailsDeviseServer;
  beforeAll(async () => {
    app = await startRailsDevise({ users: 5 });
    console.log(`rails-devise started in ${app.bootMs} ms`);
  });
  afterAll(() => app?.stop());

  test("Devise's form: a wrong password gets the form again, no token is 422, the right one 302 with a new session; /me; sign out", async () => {
    const browser = new Browser(app.http);
    const form = await browser.request("GET", "/users/sign_in");
    expect(form.status).toBe(200);
    expect(metaToken(form.body)).toBeDefined();
    const token = formToken(form.body);
    expect(token).toBeDefined();
    const anonymousSession = browser.jar.get(app.sessionCookie);
    expect(anonymousSession).toBeDefined();
    const user = app.users[1];

    // Devise 4.8's failure app "recalls" sessions#new: the form again, 200, with its flash; no redirect.
    const wrong = await browser.request("POST", "/users/sign_in", { form: { authenticity_token: token!, "user[email]": user.email, "user[password]": "nope" } });
    expect(wrong.status).toBe(200);
    expect(wrong.location).toBeNull();
    expect(wrong.body).toContain("Invalid Email or password.");
    expect(formToken(wrong.body)).toBeDefined();

    const noToken = await browser.request("POST", "/users/sign_in", { form: { "user[email]": user.email, "user[password]": user.password } });
    expect(noToken.status).toBe(422);
    const badToken = await browser.request("POST", "/users/sign_in", { form: { authenticity_token: "forged", "user[email]": user.email, "user[password]": user.password } });
    expect(badToken.status).toBe(422);
    expect((await browser.request("GET", "/me")).status).toBe(401);

    const signedIn = await browser.request("POST", "/users/sign_in", { form: { authenticity_token: token!, "user[email]": user.email, "user[password]": user.password } });
    expect(signedIn.status).toBe(302);
    expect(signedIn.location).toBe(`${app.http}/`);
    expect(browser.jar.get(app.sessionCookie)).not.toBe(anonymousSession);
    const me = await browser.request("GET", "/me");
    expect([me.status, JSON.parse(me.body)]).toEqual([200, { id: user.id, email: user.email }]);
    expect(app.signIns().map((e) => [e.event, e.user_id, e.pid])).toEqual([["sign_in", user.id, app.pid()]]);

    // Devise drops the session's CSRF token at sign-in: a sign-out takes the one a page shows after
    // it, here the page's sign-out button (a form: POST with _method=delete). Accept: text/html, as a
    // browser sends: to */* Devise answers 204 instead of the redirect.
    const home = await browser.request("GET", "/");
    expect(home.body).toContain(user.email);
    const signedOut = await browser.request("POST", "/users/sign_out", {
      form: { _method: "delete", authenticity_token: formToken(home.body)! },
      headers: { accept: "text/html" },
    });
    expect([signedOut.status, signedOut.location]).toEqual([302, `${app.http}/`]);
    expect((await browser.request("GET", "/me")).status).toBe(401);
    expect(app.signIns().map((e) => [e.event, e.user_id])).toEqual([["sign_in", user.id], ["sign_out", user.id]]);
  });

  test("Action Cable knows user 3 by the session cookie, and turns away a socket without it", async () => {
    const user = app.users[2];
    const socket = openSocket(app, await app.signIn(user));
    expect(await socket.next(() => true)).toEqual({ type: "welcome" });
    const whoami = JSON.stringify({ channel: "WhoamiChannel" });
    await subscribe(socket, whoami);
    const identity = { user_id: user.id, email: user.email };
    expect(await socket.next((f) => f.identifier === whoami && f.message)).toEqual({ identifier: whoami, message: identity });
    perform(socket, whoami, { action: "whoami" });
    await waitFor(() => socket.frames.filter((f) => f.message).length === 2, 5_000, "the whoami action's answer");
    expect(socket.frames.filter((f) => f.message).map((f) => f.message)).toEqual([identity, identity]);

    const anonymous = openSocket(app);
    expect(await anonymous.next(() => true)).toEqual({ type: "disconnect", reason: "unauthorized", reconnect: false });
    await new Promise((r) => anonymous.ws.once("close", r));

    socket.ws.close();
    await waitFor(() => app.cableConnections().some((e) => e.event === "disconnect"), 5_000, "the disconnect in the cable log");
    expect(app.cableConnections().map((e) => [e.event, e.user_id])).toEqual([
      ["connect", user.id],
      ["reject", null],
      ["disconnect", user.id],
    ]);
  });

  test("RoomChannel: speak reaches both users in the room, authored by the server; NotificationsChannel reaches only its user", async () => {
    const [u3, u4] = [app.users[2], app.users[3]];
    const [a, b] = [openSocket(app, await app.signIn(u3)), openSocket(app, await app.signIn(u4))];
    const room = JSON.stringify({ channel: "RoomChannel", room: "lobby" });
    const notes = JSON.stringify({ channel: "NotificationsChannel" });
    await Promise.all([subscribe(a, room), subscribe(b, room), subscribe(a, notes), subscribe(b, notes)]);

    // The client claims to be user 999: the server overwrites it.
    perform(b, room, { action: "speak", text: "hi", author_id: 999 });
    const said = { identifier: room, message: { action: "speak", text: "hi", author_id: u4.id, author_email: u4.email } };
    expect(await a.next((f) => f.identifier === room && f.message)).toEqual(said);
    expect(await b.next((f) => f.identifier === room && f.message)).toEqual(said);

    perform(a, notes, { action: "ping_self", n: 1 });
    expect(await a.next((f) => f.identifier === notes && f.message)).toEqual({ identifier: notes, message: { action: "ping_self", n: 1, user_id: u3.id } });
    // a's ping went out first: had it reached b too, it would be there before b's own.
    perform(b, notes, { action: "ping_self", n: 2 });
    await b.next((f) => f.identifier === notes && f.message);
    expect(b.frames.filter((f) => f.identifier === notes && f.message).map((f) => f.message)).toEqual([{ action: "ping_self", n: 2, user_id: u4.id }]);
    a.ws.close();
    b.ws.close();
  });

  test("AnyCable: anycable-go takes the app's JWT for a signed-in user as ?jid=, and refuses none, a forged and an expired one", async () => {
    const anycable = await startAnyCable({ public: false, args: [`--jwt_secret=${app.jwtSecret}`, "--enforce_jwt", "--public_streams"] });
    try {
      const user = app.users[4];
      const cookie = await app.signIn(user);
      const mint = async (query = "") => {
        const response = await fetch(`${app.http}/anycable_token${query}`, { headers: { cookie }, signal: AbortSignal.timeout(10_000) });
        expect(response.status).toBe(200);
        return ((await response.json()) as { token: string }).token;
      };
      expect((await fetch(`${app.http}/anycable_token`, { signal: AbortSignal.timeout(10_000) })).status).toBe(401);
      const token = await mint();
      const [header, payload] = token.split(".");
      const claims = JSON.parse(Buffer.from(payload, "base64url").toString());
      expect(JSON.parse(claims.ext)).toEqual({ current_user: `gid://rails-devise/User/${user.id}` });

      const socket = openSocket(app, undefined, `${anycable.url}?jid=${token}`);
      expect(await socket.next(() => true)).toEqual({ type: "welcome", sid: expect.any(String) });
      const news = JSON.stringify({ channel: "$pubsub", stream_name: "news" });
      await subscribe(socket, news);
      const published = await fetch(anycable.broadcastUrl, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ stream: "news", data: JSON.stringify({ n: 1 }) }),
        signal: AbortSignal.timeout(10_000),
      });
      expect(published.status).toBeLessThan(300);
      expect(await socket.next((f) => f.identifier === news && f.message)).toEqual({ identifier: news, message: { n: 1 } });
      socket.ws.close();

      const forged = `${header}.${payload}.${createHmac("sha256", "not-the-secret").update(`${header}.${payload}`).digest("base64url")}`;
      const refused = { type: "disconnect", reason: "unauthorized", reconnect: false };
      for (const url of [anycable.url, `${anycable.url}?jid=${forged}`]) {
        expect(await openSocket(app, undefined, url).next(() => true)).toEqual(refused);
      }
      const expired = openSocket(app, undefined, `${anycable.url}?jid=${await mint("?ttl=-60")}`);
      expect(await expired.next(() => true)).toEqual({ type: "disconnect", reason: "token_expired", reconnect: false });
    } finally {
      await anycable.stop();
    }
  });
});

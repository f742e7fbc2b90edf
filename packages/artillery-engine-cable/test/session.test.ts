import { describe, expect, test } from "vitest";
import type { LookupAddress } from "node:dns";
import { COOKIE_CAPS, Session, withCookies } from "../src/session.js";
import { isRefusedAddress, lookupRefusing } from "../src/destinations.js";
import { httpRequest } from "../src/sidecall.js";
import { authHeaders } from "../src/protocol/pusher.js";
import { accepts, redirectTo, retryAfterMs, withoutCredentials } from "../src/steps/request.js";

describe("a virtual user's cookie jar", () => {
  test("a cookie set by the app over HTTP goes with the socket to another port of the same host, as in a browser", () => {
    const session = new Session();
    session.store("http://127.0.0.1:8000/login", ["laravel_session=abc; Path=/; HttpOnly", "XSRF-TOKEN=x%3D%3D; Path=/"]);
    expect(session.cookieFor("ws://127.0.0.1:8080/app/key")).toBe("laravel_session=abc; XSRF-TOKEN=x%3D%3D");
    expect(session.cookieFor("http://127.0.0.1:9000/broadcasting/auth")).toContain("laravel_session=abc");
    // Another host gets nothing.
    expect(session.cookieFor("ws://127.0.0.2:8080/cable")).toBeUndefined();
  });

  test("domain and path rules: a Domain cookie reaches subdomains, a path cookie only its path, a foreign domain is refused", () => {
    const session = new Session();
    session.store("https://app.example.com/users/sign_in", ["_app_session=s1; Domain=example.com; Path=/", "admin=1; Path=/admin", "evil=1; Domain=other.com"]);
    expect(session.cookieFor("wss://ws.example.com/cable")).toBe("_app_session=s1");
    expect(session.cookieFor("https://app.example.com/admin/users")).toBe("admin=1; _app_session=s1");
    expect(session.cookieFor("https://other.com/")).toBeUndefined();
  });

  test("a Secure cookie goes over https and wss only", () => {
    const session = new Session();
    session.store("https://app.example.com/", "s=1; Secure; Path=/");
    expect(session.cookieFor("wss://app.example.com/cable")).toBe("s=1");
    expect(session.cookieFor("ws://app.example.com/cable")).toBeUndefined();
  });

  test("a later Set-Cookie replaces the earlier one (a session regenerated at login)", () => {
    const session = new Session();
    session.store("http://127.0.0.1:8000/login", "app_session=guest; Path=/");
    session.store("http://127.0.0.1:8000/login", "app_session=user-7; Path=/");
    expect(session.cookieFor("http://127.0.0.1:8000/")).toBe("app_session=user-7");
  });

  test("the step's own Cookie header keeps its pairs after the jar's", () => {
    const session = new Session();
    session.store("http://h/", "a=1");
    expect(withCookies(session, "ws://h/cable", { Origin: "http://h", cookie: "uid=Kay" })).toEqual({ Origin: "http://h", Cookie: "a=1; uid=Kay" });
    expect(withCookies(undefined, "ws://h/cable", { Origin: "http://h" })).toEqual({ Origin: "http://h" });
  });

  test("Laravel's XSRF-TOKEN goes back decoded as X-XSRF-TOKEN, as axios sends it, unless the scenario sets it", () => {
    const session = new Session();
    session.store("http://127.0.0.1:8000/login", "XSRF-TOKEN=eyJpdiI6%3D%3D; Path=/");
    const url = "http://127.0.0.1:8000/broadcasting/auth";
    expect(authHeaders(url, {}, session)).toEqual({ "Content-Type": "application/x-www-form-urlencoded", Accept: "application/json", "X-XSRF-TOKEN": "eyJpdiI6==" });
    expect(authHeaders(url, { "X-CSRF-TOKEN": "meta" }, session)).toEqual({ "Content-Type": "application/x-www-form-urlencoded", Accept: "application/json", "X-XSRF-TOKEN": "eyJpdiI6==", "X-CSRF-TOKEN": "meta" });
    expect(authHeaders(url, { "x-xsrf-token": "own" }, session)).toEqual({ "Content-Type": "application/x-www-form-urlencoded", Accept: "application/json", "x-xsrf-token": "own" });
    expect(authHeaders(url, { accept: "text/html" }, undefined)).toEqual({ "Content-Type": "application/x-www-form-urlencoded", accept: "text/html" });
  });
});

describe("redirects and accepted statuses", () => {
  test("303, and 301/302 after a POST, become a GET without a body; 307/308 keep the method", () => {
    expect(redirectTo(302, "/dashboard", "http://a/login", "POST")).toEqual({ url: "http://a/dashboard", method: "GET", keepBody: false });
    expect(redirectTo(303, "http://b/x", "http://a/login", "PUT")).toEqual({ url: "http://b/x", method: "GET", keepBody: false });
    expect(redirectTo(302, "/x", "http://a/", "GET")).toMatchObject({ url: "http://a/x", method: "GET" });
    expect(redirectTo(307, "/x", "http://a/", "POST")).toEqual({ url: "http://a/x", method: "POST", keepBody: true });
    expect(redirectTo(302, undefined, "http://a/", "GET")).toBeUndefined();
    expect(redirectTo(200, "/x", "http://a/", "GET")).toBeUndefined();
  });

  test("default: any 2xx or 3xx; expect: a status or a list", () => {
    expect([200, 204, 302, 399].every((s) => accepts(undefined, s))).toBe(true);
    expect([199, 400, 419, 422, 500].some((s) => accepts(undefined, s))).toBe(false);
    expect(accepts(302, 302)).toBe(true);
    expect(accepts(302, 200)).toBe(false);
    expect(accepts([200, 204], 204)).toBe(true);
  });
});

describe("a jar bounded as a browser's (issue 50)", () => {
  const lines = (n: number, prefix = "c", value = "v") => Array.from({ length: n }, (_, i) => `${prefix}${i}=${value}; Path=/`);

  test("16,000 cookies from one answer: 180 kept, the newest; the header stays within 16 KiB; every drop counted", () => {
    let dropped = 0;
    const session = new Session((n) => (dropped += n));
    session.store("http://127.0.0.1:8000/", lines(16_000, "c", "x".repeat(10)));
    expect(session.size).toBe(COOKIE_CAPS.perDomain);
    expect(dropped).toBe(16_000 - COOKIE_CAPS.perDomain);
    const header = session.cookieFor("ws://127.0.0.1:8080/cable")!;
    expect(header).toContain("c15999=");
    expect(header).not.toContain("c0=");
    expect(Buffer.byteLength(header)).toBeLessThanOrEqual(COOKIE_CAPS.headerBytes);
  });

  test("the oldest of a domain goes first; a later Set-Cookie of a kept name keeps its place", () => {
    const session = new Session();
    session.store("http://h/", lines(COOKIE_CAPS.perDomain));
    session.store("http://h/", "c0=again; Path=/");
    session.store("http://h/", "new=1; Path=/");
    const header = session.cookieFor("http://h/")!;
    expect(header).not.toContain("c0=");
    expect(header).toContain("c1=");
    expect(header).toContain("new=1");
    expect(session.size).toBe(COOKIE_CAPS.perDomain);
  });

  test("a cookie over 4096 bytes of name and value is refused; the header leaves off what passes 16 KiB, counted", () => {
    let dropped = 0;
    const session = new Session((n) => (dropped += n));
    session.store("http://h/", [`big=${"x".repeat(4096)}`, `ok=${"y".repeat(4000)}`]);
    expect(dropped).toBe(1);
    expect(session.cookieFor("http://h/")).toMatch(/^ok=/);
    session.store("http://h/", lines(5, "k", "z".repeat(4000)));
    dropped = 0;
    const header = session.cookieFor("http://h/")!;
    expect(Buffer.byteLength(header)).toBeLessThanOrEqual(COOKIE_CAPS.headerBytes);
    expect(dropped).toBe(6 - header.split("; ").length);
  });
});

describe("redirects as a browser follows them, and no further (issue 50)", () => {
  test("only http and https; anything else, or no URL at all, is refused by name", () => {
    for (const location of ["file:///etc/passwd", "data:text/plain,hi", "javascript:alert(1)", "ftp://h/x"]) {
      expect(() => redirectTo(302, location, "http://h/a", "GET")).toThrow(expect.objectContaining({ code: "cable.http_redirect_refused" }));
    }
    expect(() => redirectTo(302, "http://[::1", "http://h/a", "GET")).toThrow(expect.objectContaining({ code: "cable.http_redirect_refused" }));
    expect(redirectTo(307, "https://other/x", "http://h/a", "POST")).toEqual({ url: "https://other/x", method: "POST", keepBody: true });
  });

  test("the scenario's credentials do not cross to another origin", () => {
    expect(withoutCredentials({ Authorization: "Bearer t", cookie: "a=1", "Proxy-Authorization": "p", Accept: "json" })).toEqual({ Accept: "json" });
  });

  test("Retry-After in seconds or as a date; without it, a doubling back-off", () => {
    expect(retryAfterMs("44", 0)).toBe(44_000);
    expect(retryAfterMs(new Date(10_000 + 3_000).toUTCString(), 0, 10_000)).toBe(3_000);
    expect([0, 1, 2].map((a) => retryAfterMs(undefined, a))).toEqual([1000, 2000, 4000]);
  });
});

describe("no request to a link-local or metadata address (issue 50)", () => {
  test("the addresses: link-local v4 and v6, the metadata services, IPv4-mapped forms; nothing else", () => {
    expect(["169.254.169.254", "169.254.170.2", "169.254.0.1", "fe80::1", "fd00:ec2::254", "::ffff:169.254.169.254"].filter(isRefusedAddress)).toHaveLength(6);
    expect(["127.0.0.1", "::1", "10.0.0.1", "192.168.1.1", "fd00::1", "8.8.8.8", "not-an-ip"].filter(isRefusedAddress)).toEqual([]);
  });

  test("a URL naming one is refused before any socket; a name resolving to one at its lookup", async () => {
    await expect(httpRequest("http", "http://169.254.170.2/v2/credentials/x", { method: "GET", headers: {}, timeoutMs: 1000 })).rejects.toMatchObject({ code: "cable.http_address_refused" });
    await expect(httpRequest("auth", "http://[fd00:ec2::254]/", { headers: {}, timeoutMs: 1000 })).rejects.toMatchObject({ code: "cable.http_address_refused" });
    const resolveTo = (answer: string | LookupAddress[]) => ((_h: string, _o: unknown, cb: (e: null, a: string | LookupAddress[], f?: number) => void) => cb(null, answer, 4)) as never;
    const outcome = (resolve: never, options: object) => new Promise<unknown>((done) => lookupRefusing(resolve)("metadata.test", options, (err, address) => done(err ? (err as NodeJS.ErrnoException).code : address)));
    expect(await outcome(resolveTo("169.254.169.254"), {})).toBe("ERR_CABLE_ADDRESS_REFUSED");
    expect(await outcome(resolveTo([{ address: "127.0.0.1", family: 4 }, { address: "fe80::1", family: 6 }]), { all: true })).toBe("ERR_CABLE_ADDRESS_REFUSED");
    expect(await outcome(resolveTo("127.0.0.1"), {})).toBe("127.0.0.1");
  });
});

import { describe, expect, test } from "vitest";
import { Session, withCookies } from "../src/session.js";
import { authHeaders } from "../src/protocol/pusher.js";
import { accepts, redirectTo } from "../src/steps/request.js";

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

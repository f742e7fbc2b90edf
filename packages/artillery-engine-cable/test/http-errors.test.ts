// Every HTTP side-call a VU makes (a Pusher authEndpoint, Pusher's events API, AnyCable's
// /_broadcast) against a loopback server that answers each request with the next misbehaviour in
// turn: garbage, empty, HTML, a JSON array, a 5xx, a hang, a stalled body, a dropped socket, an
// oversized body, and a good answer. Through the real CLI, the console and the report must show
// only named error keys (`cable.*` or a socket code), never an exception's message, and every VU
// must end exactly once.
import { createHmac } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { counter, runArtillery, type ArtilleryRun } from "cable-test-servers";
import { startTarget, type LocalTarget } from "cable-local-target";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { answerError } from "../src/steps/publish-call.js";
import { CableError, errorCode } from "../src/errors.js";

type Answer = (req: http.IncomingMessage, res: http.ServerResponse, body: string) => void;

let target: LocalTarget;
let server: http.Server;
let base: string;

// The good answer per side-call, so that each run also shows the call working.
function goodAuth(body: string, res: http.ServerResponse): void {
  const form = new URLSearchParams(body);
  const signature = createHmac("sha256", target.pusher.secret).update(`${form.get("socket_id")}:${form.get("channel_name")}`).digest("hex");
  res.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify({ auth: `${target.pusher.key}:${signature}` }));
}

const answers: Record<string, Answer> = {
  garbage: (_q, res) => res.writeHead(200, { "Content-Type": "application/json" }).end("}{ not json"),
  empty: (_q, res) => res.writeHead(200, { "Content-Type": "application/json" }).end(),
  html: (_q, res) => res.writeHead(200, { "Content-Type": "text/html" }).end("<html><body>Sign in</body></html>"),
  array: (_q, res) => res.writeHead(200, { "Content-Type": "application/json" }).end("[1,2]"),
  "server-error": (_q, res) => res.writeHead(503, { "Content-Type": "application/json" }).end('{"error":"down"}'),
  hang: () => {},
  "stalled-body": (_q, res) => {
    res.writeHead(200, { "Content-Type": "application/json", "Content-Length": "100" });
    res.write('{"auth":"');
  },
  "dropped-socket": (req) => req.socket.destroy(),
  oversized: (_q, res) => res.writeHead(200, { "Content-Type": "application/json" }).end(`{"auth":"${"x".repeat(2 * 1024 * 1024)}"}`),
  good: (req, res, body) => (req.url!.startsWith("/auth") ? goodAuth(body, res) : res.writeHead(200).end("{}")),
};
const modes = Object.keys(answers);
const served: Record<string, string[]> = {};

beforeAll(async () => {
  target = await startTarget({ port: 0 });
  server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", () => {
      // Each side-call kind (the first path segment) cycles through the misbehaviours on its own.
      const kind = req.url!.split("/")[1];
      const list = (served[kind] ??= []);
      const mode = modes[list.length % modes.length];
      list.push(mode);
      answers[mode](req, res, body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  await target?.close();
});

function script(cable: Record<string, unknown>, targetUrl: string, flow: Record<string, unknown>[]) {
  return {
    config: {
      target: targetUrl,
      engines: { cable: {} },
      // 1 s: the hanging answers end the VU quickly.
      cable: { timeout: 1, ...cable },
      // One VU per misbehaviour, spaced so that each request meets the next one.
      phases: [{ duration: Math.ceil(modes.length / 5), arrivalCount: modes.length }],
    },
    scenarios: [{ name: "side-call", engine: "cable", flow }],
  };
}

const NAMED_KEY = /^errors\.(cable\.[a-z0-9_]+|[A-Z][A-Z0-9_]+)$/;

function expectOnlyNamedErrors(run: ArtilleryRun, expected: string[]): void {
  expect(run.report, run.output).toBeDefined();
  const counters = run.report!.aggregate.counters;
  const keys = Object.keys(counters).filter((k) => k.startsWith("errors."));
  for (const key of keys) expect(key, run.output).toMatch(NAMED_KEY);
  for (const key of expected) expect(counters[key] ?? 0, `${key} in ${JSON.stringify(counters)}`).toBeGreaterThan(0);
  // The console's error lines too: Artillery prints `errors.<key>: ... <count>`.
  for (const line of run.output.split("\n").filter((l) => l.startsWith("errors."))) expect(line.split(":")[0].trim()).toMatch(NAMED_KEY);
  expect(run.output).not.toMatch(/Unexpected token|is not valid JSON|aborted due to timeout|fetch failed|other side closed/);
  // Every VU ended exactly once, and none hung past the run.
  expect(counter(run.report!, "vusers.created")).toBe(modes.length);
  expect(counter(run.report!, "vusers.completed") + counter(run.report!, "vusers.failed")).toBe(modes.length);
}

describe.concurrent("HTTP side-calls with broken answers leave only named error keys", () => {
  test("a Pusher authEndpoint", async () => {
    const run = await runArtillery({
      script: script({ protocol: "pusher", pusher: { key: target.pusher.key, authEndpoint: `${base}/auth` } }, target.url, [
        { connect: null },
        { subscribe: { channel: "private-room-{{ $randomNumber(1, 1000) }}" } },
      ]),
      env: { PUSHER_APP_SECRET: "" },
    });
    expect(served.auth).toEqual(modes);
    expectOnlyNamedErrors(run, ["errors.cable.auth_failed", "errors.cable.auth_timeout"]);
    expect(counter(run.report!, "vusers.completed"), "the good answer subscribes").toBe(1);
  });

  test("Pusher's events API (publish)", async () => {
    const run = await runArtillery({
      script: script({ protocol: "pusher", pusher: { key: target.pusher.key, appId: target.pusher.appId, api: `${base}/api` } }, target.url, [
        { publish: { channel: "news", event: "post", data: { n: 1 } } },
      ]),
      env: { PUSHER_APP_SECRET: target.pusher.secret },
    });
    expect(served.api).toEqual(modes);
    // A publish reads no body: a 200 with garbage is a publish that went through.
    expectOnlyNamedErrors(run, ["errors.cable.publish_failed", "errors.cable.publish_timeout"]);
  });

  test("AnyCable's /_broadcast (publish)", async () => {
    const run = await runArtillery({
      script: script({ anycable: { broadcastUrl: `${base}/broadcast/_broadcast` } }, target.cableUrl, [{ publish: { stream: "news" } }]),
    });
    expect(served.broadcast).toEqual(modes);
    expectOnlyNamedErrors(run, ["errors.cable.publish_failed", "errors.cable.publish_timeout"]);
  });
});

test("errorCode names every failure: a cable code, a socket code, or a generic cable code", () => {
  expect(errorCode(new CableError("auth_failed", "the auth endpoint answered HTTP 503"))).toBe("cable.auth_failed");
  expect(errorCode(Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:9"), { code: "ECONNREFUSED" }))).toBe("ECONNREFUSED");
  expect(errorCode(new DOMException("The operation was aborted due to timeout", "TimeoutError"))).toBe("cable.timeout");
  expect(errorCode(new SyntaxError("Unexpected token } in JSON at position 0"))).toBe("cable.unexpected_error");
  expect(errorCode(Object.assign(new Error("x"), { code: "a sentence with spaces" }))).toBe("cable.unexpected_error");
  expect(errorCode("a thrown string")).toBe("cable.unexpected_error");
  expect(errorCode(undefined)).toBe("cable.unexpected_error");
});

test("answerError finds the error a 2xx publish answer carries in its body (Soketi 1.6's wrong signature)", () => {
  expect(answerError("{}")).toBeUndefined();
  expect(answerError("")).toBeUndefined();
  expect(answerError("ok")).toBeUndefined();
  expect(answerError('{"error":null}')).toBeUndefined();
  expect(answerError('{"note":"no \\"error\\" here"}')).toBeUndefined();
  expect(answerError('["error"]')).toBeUndefined();
  expect(answerError('{"error":"The secret authentication failed","code":401}')).toEqual({ code: 401 });
  expect(answerError('{"error":"over quota"}')).toEqual({ code: undefined });
});

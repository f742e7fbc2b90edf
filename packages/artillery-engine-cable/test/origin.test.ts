// The upgrade's Origin (issue 50): a server that refuses it is named `cable.origin_rejected` (with
// its hint), told apart from a wrong path's 404; `origin: false` sends none; NODE_DEBUG=cable names
// each upgrade's Origin. Against the real Rails Action Cable with `allowed_request_origins` set, and
// a small recording server for what the engine sends, through the real `artillery run`.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { counter, runArtillery, startAnyCable, startRails, type AnyCableServer, type RailsServer } from "cable-test-servers";
import { WebSocketServer } from "ws";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { errorTraits } from "../src/error-names.js";
import { headerOf } from "../src/session.js";
import { needsBody, refusedUpgradeName } from "../src/socket.js";
import { traceableUrl } from "../src/trace.js";

const ALLOWED = "https://app.example.com";
const WRONG = "https://evil.example.com";

/** One upgrade as the recording server saw it. */
interface Upgrade {
  s: string | null;
  origin: string | undefined;
}

let rails: RailsServer;
let anycable: AnyCableServer;
let recorder: http.Server;
let recorderUrl: string;
const upgrades: Upgrade[] = [];

beforeAll(async () => {
  [rails, anycable] = await Promise.all([
    startRails({ allowedRequestOrigins: [ALLOWED] }),
    // anycable-go checks the Origin's host (and port), not its scheme.
    startAnyCable({ args: [`--allowed_origins=${new URL(ALLOWED).host}`] }),
  ]);
  // Records each upgrade's Origin; `?refuse=1` gets gorilla/websocket's (anycable-go's) refusal,
  // anything else an Action Cable welcome.
  const wss = new WebSocketServer({ noServer: true, handleProtocols: (protocols) => [...protocols][0] ?? false });
  recorder = http.createServer((_req, res) => res.writeHead(404).end());
  recorder.on("upgrade", (req, socket, head) => {
    const query = new URL(req.url!, "http://x").searchParams;
    upgrades.push({ s: query.get("s"), origin: req.headers.origin });
    if (query.get("refuse")) {
      socket.end("HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain; charset=utf-8\r\nSec-Websocket-Version: 13\r\nContent-Length: 10\r\n\r\nForbidden\n");
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => ws.send(JSON.stringify({ type: "welcome" })));
  });
  await new Promise<void>((resolve) => recorder.listen(0, "127.0.0.1", resolve));
  recorderUrl = `ws://127.0.0.1:${(recorder.address() as AddressInfo).port}/cable`;
});
afterAll(async () => {
  await Promise.all([rails?.stop(), anycable?.stop()]);
  recorder?.closeAllConnections();
  await new Promise((resolve) => recorder?.close(resolve));
});

const phase = (users: number) => [{ duration: 1, arrivalCount: users }];
const uid = { uid: "u/{{ $uuid }}" };
const errorKeys = (counters: Record<string, number>) => Object.keys(counters).filter((k) => k.startsWith("errors."));

describe("a refused upgrade's name", () => {
  const rails404 = { status: 404, contentType: "text/plain", body: "Page not found", origin: WRONG };
  test("Rails' refusal and a 403 to an upgrade that carried an Origin are origin_rejected", () => {
    expect(refusedUpgradeName(rails404)).toBe("origin_rejected");
    expect(refusedUpgradeName({ ...rails404, contentType: "text/plain; charset=utf-8" })).toBe("origin_rejected");
    expect(refusedUpgradeName({ status: 403, contentType: "text/plain; charset=utf-8", origin: WRONG })).toBe("origin_rejected");
    expect(refusedUpgradeName({ status: 403, origin: "" })).toBe("origin_rejected");
  });
  test("a wrong path's 404, any answer to an upgrade without an Origin, and other statuses keep their status", () => {
    // Rails' router and public/404.html
    expect(refusedUpgradeName({ ...rails404, contentType: "text/html; charset=utf-8", body: "<!DOCTYPE html><html><head><title>The page you were looking for doesn't exist (404)</title>" })).toBe("http_404");
    // Rack::URLMap (rails/config.ru's /wrong), text/plain too
    expect(refusedUpgradeName({ ...rails404, body: "Not Found: /wrong" })).toBe("http_404");
    // Go's http.NotFound (anycable-go's unknown path or Pusher app key)
    expect(refusedUpgradeName({ ...rails404, contentType: "text/plain; charset=utf-8", body: "404 page not found\n" })).toBe("http_404");
    expect(refusedUpgradeName({ ...rails404, body: undefined })).toBe("http_404");
    expect(refusedUpgradeName({ ...rails404, origin: undefined })).toBe("http_404");
    expect(refusedUpgradeName({ status: 403, origin: undefined })).toBe("http_403");
    for (const status of [400, 401, 426, 500, 503]) expect(refusedUpgradeName({ status, contentType: "text/plain", body: "Page not found", origin: WRONG })).toBe(`http_${status}`);
  });
  test("the body is read only for Rails' shape to an upgrade that carried an Origin", () => {
    expect(needsBody({ status: 404, contentType: "text/plain", origin: WRONG })).toBe(true);
    expect(needsBody({ status: 404, contentType: "text/html", origin: WRONG })).toBe(false);
    expect(needsBody({ status: 404, contentType: "text/plain" })).toBe(false);
    expect(needsBody({ status: 403, contentType: "text/plain", origin: WRONG })).toBe(false);
  });
  test("its hint names the servers' settings and origin: false; cable-report prints it from this table", () => {
    const hint = errorTraits("origin_rejected").hint!;
    expect(hint).toContain("allowed_request_origins");
    expect(hint).toContain("allowed_origins");
    expect(hint).toContain("origin: false");
  });
  test("the trace's URL masks query values and user-info; headers are read case-insensitively, the last spelling winning", () => {
    expect(traceableUrl("wss://u:pw@h.example/cable?token=abc&sid=x&flag#frag")).toBe("wss://…@h.example/cable?token=…&sid=…&…");
    expect(traceableUrl("ws://127.0.0.1:1/cable")).toBe("ws://127.0.0.1:1/cable");
    expect(headerOf({ Origin: "a", origin: "b" }, "origin")).toBe("b");
    expect(headerOf({ Cookie: "c" }, "origin")).toBeUndefined();
  });
});

describe("Rails Action Cable with allowed_request_origins", () => {
  test("an Origin outside it (the target's own, by default) is cable.origin_rejected, not http_404, and traced", async () => {
    const run = await runArtillery({
      script: {
        config: { target: rails.url, engines: { cable: {} }, cable: { timeout: 3 }, phases: phase(3) },
        scenarios: [{ engine: "cable", flow: [{ connect: { cookies: uid, query: { token: "secret-token" } } }] }],
      },
      env: { NODE_DEBUG: "cable" },
    });
    const r = run.report!;
    expect(r, run.output).toBeDefined();
    expect(counter(r, "errors.cable.origin_rejected"), run.output).toBe(3);
    expect(counter(r, "errors.cable.http_404")).toBe(0);
    expect(errorKeys(r.aggregate.counters)).toEqual(["errors.cable.origin_rejected"]);
    expect(counter(r, "vusers.failed")).toBe(3);
    // NODE_DEBUG=cable: each upgrade's URL, its query values masked, and the Origin it carried; the refusal.
    const host = new URL(rails.url).host;
    const lines = run.output.split("\n").filter((l) => /CABLE \d+: upgrade/.test(l));
    expect(lines.filter((l) => l.includes(`upgrade ws://${host}/cable?token=…, Origin: http://${host}`)), run.output).toHaveLength(3);
    expect(lines.filter((l) => l.includes('upgrade refused: HTTP 404 text/plain "Page not found": origin_rejected'))).toHaveLength(3);
    expect(lines.join("\n")).not.toContain("secret-token");
  });

  test("the allowed Origin, from config.cable.origin or the step's origin (which wins), connects; origin: false is refused as any request without one: http_404", async () => {
    const overridden = {
      config: { target: rails.url, engines: { cable: {} }, cable: { timeout: 3, origin: WRONG }, phases: phase(12) },
      scenarios: [
        { name: "step", engine: "cable", flow: [{ connect: { cookies: uid, origin: ALLOWED } }, { think: 0.2 }] },
        { name: "config", engine: "cable", flow: [{ connect: { cookies: uid } }, { think: 0.2 }] },
        // Rails refuses an upgrade without an Origin too (allow_request_origin?), with the same
        // 404: without an Origin sent it is not called an Origin refusal.
        { name: "none", engine: "cable", flow: [{ connect: { cookies: uid, origin: false } }] },
      ],
    };
    const fromConfig = {
      config: { target: rails.url, engines: { cable: {} }, cable: { timeout: 3, origin: ALLOWED }, phases: phase(3) },
      scenarios: [{ engine: "cable", flow: [{ connect: { cookies: uid } }, { think: 0.2 }] }],
    };
    // Independent runs: at once, to halve the test's time.
    const [run, allowed] = await Promise.all([runArtillery({ script: overridden }), runArtillery({ script: fromConfig })]);
    const r = run.report!;
    expect(r, run.output).toBeDefined();
    const by = (name: string) => counter(r, `vusers.created_by_name.${name}`);
    expect(by("step") + by("config") + by("none")).toBe(12);
    expect(counter(r, "cable.connections"), run.output).toBe(by("step"));
    expect(counter(r, "errors.cable.origin_rejected")).toBe(by("config"));
    expect(counter(r, "errors.cable.http_404")).toBe(by("none"));
    expect(errorKeys(r.aggregate.counters).filter((k) => k !== "errors.cable.origin_rejected" && k !== "errors.cable.http_404")).toEqual([]);

    expect(counter(allowed.report!, "cable.connections"), allowed.output).toBe(3);
    expect(counter(allowed.report!, "vusers.completed")).toBe(3);
    expect(errorKeys(allowed.report!.aggregate.counters)).toEqual([]);
  });
});

describe("anycable-go with --allowed_origins", () => {
  test("an Origin outside it is refused with 403: cable.origin_rejected; its own 404 of a wrong path stays http_404", async () => {
    const run = await runArtillery({
      script: {
        config: { target: anycable.url, engines: { cable: {} }, cable: { timeout: 3 }, phases: phase(12) },
        scenarios: [
          { name: "allowed", engine: "cable", flow: [{ connect: { origin: ALLOWED } }, { think: 0.2 }] },
          { name: "wrong", engine: "cable", flow: [{ connect: {} }] },
          // Go's http.NotFound: 404, text/plain, "404 page not found"; with an allowed Origin, as a wrong path would be sent.
          { name: "wrong_path", engine: "cable", flow: [{ connect: { url: anycable.url.replace(/\/cable$/, "/wrong"), origin: ALLOWED } }] },
        ],
      },
    });
    const r = run.report!;
    expect(r, run.output).toBeDefined();
    const by = (name: string) => counter(r, `vusers.created_by_name.${name}`);
    expect(by("allowed") + by("wrong") + by("wrong_path")).toBe(12);
    expect(counter(r, "cable.connections"), run.output).toBe(by("allowed"));
    expect(counter(r, "errors.cable.origin_rejected")).toBe(by("wrong"));
    expect(counter(r, "errors.cable.http_404")).toBe(by("wrong_path"));
    expect(errorKeys(r.aggregate.counters).filter((k) => k !== "errors.cable.origin_rejected" && k !== "errors.cable.http_404")).toEqual([]);
  });
});

describe("what the engine sends (a recording server)", () => {
  test("origin: false sends no Origin header, on reconnects too; a 403 is origin_rejected only when an Origin went", async () => {
    const mixed = {
      config: { target: recorderUrl, engines: { cable: {} }, cable: { timeout: 3 }, phases: phase(16) },
      scenarios: [
        { name: "none", engine: "cable", flow: [{ connect: { origin: false, query: { s: "none" } } }, { reconnect: {} }, { think: 0.1 }] },
        { name: "default", engine: "cable", flow: [{ connect: { query: { s: "default" } } }, { think: 0.1 }] },
        { name: "refused_none", engine: "cable", flow: [{ connect: { origin: false, query: { s: "refused_none", refuse: "1" } } }] },
        { name: "refused", engine: "cable", flow: [{ connect: { query: { s: "refused", refuse: "1" } } }] },
      ],
    };
    // config.cable.origin: false, the same for every connect and reconnect.
    const noneInConfig = {
      config: { target: recorderUrl, engines: { cable: {} }, cable: { timeout: 3, origin: false }, phases: phase(2) },
      scenarios: [{ engine: "cable", flow: [{ connect: { query: { s: "config" } } }, { reconnect: {} }, { think: 0.1 }] }],
    };
    // Independent runs at once; the server tells their upgrades apart by `?s=`.
    const [run, config] = await Promise.all([runArtillery({ script: mixed }), runArtillery({ script: noneInConfig })]);
    const r = run.report!;
    expect(r, run.output).toBeDefined();
    const by = (name: string) => counter(r, `vusers.created_by_name.${name}`);
    expect(counter(r, "cable.connections"), run.output).toBe(2 * by("none") + by("default"));
    expect(counter(r, "errors.cable.http_403")).toBe(by("refused_none"));
    expect(counter(r, "errors.cable.origin_rejected")).toBe(by("refused"));
    const seen = (s: string) => upgrades.filter((u) => u.s === s);
    expect(seen("none")).toHaveLength(2 * by("none"));
    expect(seen("none").every((u) => u.origin === undefined)).toBe(true);
    expect(seen("refused_none").every((u) => u.origin === undefined)).toBe(true);
    const own = `http://${new URL(recorderUrl).host}`;
    expect(seen("default").map((u) => u.origin)).toEqual(seen("default").map(() => own));
    expect(seen("refused").map((u) => u.origin)).toEqual(seen("refused").map(() => own));
    expect(counter(config.report!, "cable.connections"), config.output).toBe(4);
    expect(seen("config")).toEqual(Array.from({ length: 4 }, () => ({ s: "config", origin: undefined })));
  });
});

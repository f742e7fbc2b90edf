// A hostile HTTP app (issue 50): the app a virtual user signs in to answers with templates, redirects
// to the cloud's metadata services, to another origin, to file: and data:, in an endless chain and
// a slow one, and with 16,000 cookies. Through the real `artillery` CLI and `cable-fanout --local
// --secret`: no request carries a secret of the generator's environment, every run ends within its
// deadlines, each refused hop is counted by its name, the scenario's credentials do not cross to
// another origin, and the upgrade's Cookie header stays within the jar's cap.
//
// Every run is under the network guard (cable-test-servers' network-guard.ts, preloaded with
// NODE_OPTIONS into each process and thread of the run): a connect to anything but loopback is
// refused before a packet leaves and written to the guard's log, which each test expects empty. An
// engine that followed a redirect to 169.254.169.254 fails here, instead of reaching out.
//
// Cases are handed to virtual users by the app (`/dispatch/<queue>`, a 307 to the user's case), not
// by a payload's row: each case runs once whichever worker thread Artillery runs its user in.
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import {
  counter,
  filesHolding,
  HOSTILE_NAMES,
  hostileHttpApp,
  networkGuard,
  OFF_MACHINE_REDIRECTS,
  OFF_MACHINE_SOCKETS,
  runArtillery,
  runNode,
  type ArtilleryReport,
  type ArtilleryRun,
  type GuardViolation,
  type HostileHttpApp,
  type NetworkGuard,
  type RecordedRequest,
} from "cable-test-servers";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { isRefusedAddress } from "../src/destinations.js";

const SECRET = "s3cr3t-probe";
const repo = path.resolve(__dirname, "../../..");
/** The guard's error code for a refused connect (network-guard.ts GUARD_CODE). */
const GUARD_CODE = "ERR_TEST_NETWORK_GUARD";
/** Node's own server refuses headers over 16 KiB, and COOKIE_CAPS.headerBytes keeps a Cookie header within it. */
const COOKIE_HEADER_CAP = 16 * 1024;

let app: HostileHttpApp;

beforeAll(async () => {
  app = await hostileHttpApp();
});

afterAll(async () => {
  await app?.close();
});

/** Every form of the secret a leak could take in a request or a file. */
const holdsSecret = (text: string) => [SECRET, encodeURIComponent(SECRET), Buffer.from(SECRET).toString("base64")].some((form) => text.includes(form));

/**
 * A run's whole time, Artillery's start-up included, on a 2-core machine running this file's runs
 * side by side: a bound that only a run that does not end passes. Each test bounds its own
 * deadlines from the app's side (when its users' requests came and went).
 */
const RUN_BOUND_MS = 40_000;

/**
 * Runs the real CLI under a network guard of its own, PROBE_SECRET in its environment; killed after
 * 50 s. A connect the guard refused fails the test first (unless the test is the guard's own).
 */
async function guardedRun(script: Record<string, unknown>, { refusalsExpected = false } = {}): Promise<{ run: ArtilleryRun; guard: NetworkGuard; report: ArtilleryReport; endedAt: number }> {
  const guard = networkGuard({ resolve: HOSTILE_NAMES });
  const run = await runArtillery({ script, env: { ...guard.env, PROBE_SECRET: SECRET }, timeoutMs: 50_000 });
  const endedAt = Date.now();
  if (!refusalsExpected) expect(guard.violations().map(describeViolation), "connects off this machine, refused by the guard").toEqual([]);
  expect(run.report, run.output).toBeDefined();
  return { run, guard, report: run.report!, endedAt };
}

/**
 * What every guarded run must show: nothing refused by the guard (no connect off this machine was
 * even tried), the guard loaded in Artillery's worker threads (where the users run), the run ended
 * by itself within RUN_BOUND_MS, and every error counted by a name, never a message.
 */
function expectGuardedRun(run: ArtilleryRun, guard: NetworkGuard): void {
  expect(guard.violations().map(describeViolation), "connects off this machine, refused by the guard").toEqual([]);
  const threads = guard.threads();
  expect(threads.some((t) => t.main && /artillery/.test(t.script)), "the guard in artillery's main thread").toBe(true);
  expect(threads.some((t) => !t.main), "the guard in artillery's worker threads").toBe(true);
  expect(run.durationMs, run.output).toBeLessThan(RUN_BOUND_MS);
  expectErrorNames(run.report!);
  expect(run.output).not.toMatch(/unhandled|UnhandledPromiseRejection|uncaught/i);
}

/** A refused connect as the failure shows it: where to, from which thread, and the first caller outside Node's own modules. */
const describeViolation = (v: GuardViolation) => {
  const caller = v.stack.split("\n").find((frame) => !/\(node:|at node:|network-guard/.test(frame))?.trim() ?? "";
  return `${v.via} ${v.host === v.address ? v.address : `${v.host} → ${v.address}`}:${v.port} (thread ${v.thread}) ${caller}`;
};

/** Every `errors.*` counter is `errors.cable.<name>` or an upper-case code: never a message. */
function expectErrorNames(report: ArtilleryReport): void {
  const errors = Object.keys(report.aggregate.counters).filter((k) => k.startsWith("errors."));
  expect(errors.filter((k) => !/^errors\.(cable\.[a-z0-9_]+|[A-Z][A-Z0-9_]*)$/.test(k))).toEqual([]);
}

const query = (r: RecordedRequest, name: string) => new URL(r.url, "http://app").searchParams.get(name);
/** The HTTP requests (not upgrades) a step marked with `?from=`. */
const requestsFrom = (from: string) => app.requests.filter((r) => !r.upgrade && query(r, "from") === from);
/**
 * The slow loop tagged `tag` (1 s a hop), started at `startedAt` under a 2 s deadline: at most 3
 * hops reached the app, and the user gave up on the last about 2 s after the start.
 */
function expectOneDeadline(startedAt: number, tag: string): void {
  const hops = app.requests.filter((r) => r.pathname === "/slow-loop" && query(r, "tag") === tag);
  expect(hops.length).toBeGreaterThanOrEqual(1);
  expect(hops.length).toBeLessThanOrEqual(3);
  const endedAt = hops.at(-1)!.abortedAt;
  expect(endedAt, "the user left the last hop before its answer").toBeDefined();
  expect(endedAt! - startedAt).toBeGreaterThan(1_500);
  expect(endedAt! - startedAt).toBeLessThan(4_000);
}

let queues = 0;
/** A queue of cases of its own for one run. */
function cases(paths: string[]): string {
  const name = `q${++queues}`;
  app.enqueue(name, paths);
  return `/dispatch/${name}`;
}

/** Captures of every kind (JSON, header, regexp) of an answer's token. */
const captureToken = [
  { json: "$.token", as: "token" },
  { header: "x-token", as: "htoken" },
  { regexp: '"token":"([^"]*)"', group: 1, as: "rtoken" },
];

describe.concurrent("a hostile HTTP app, through the real CLI under the network guard", () => {
  test("the guard refuses a connect off this machine, from the main thread and from worker threads, before any connect(2)", async () => {
    const guard = networkGuard();
    const dir = mkdtempSync(path.join(os.tmpdir(), "guard-self-test-"));
    const script = path.join(dir, "reach-out.cjs");
    writeFileSync(script, REACH_OUT);
    const run = await runNode(script, [], { env: { ...process.env, ...guard.env }, timeoutMs: 30_000 });
    expect(run.code, run.stderr).toBe(0);
    const results = JSON.parse(run.stdout.trim().split("\n").pop()!) as ThreadResult[];
    expect(results.map((r) => r.thread)).toEqual(["main", "worker (env without NODE_OPTIONS)", "worker (env of the parent, as Artillery's)"]);
    for (const result of results) {
      for (const attempt of result.attempts) {
        const expected = attempt.name.startsWith("loopback") ? "connected" : attempt.name.startsWith("beneath net") ? "EPERM" : GUARD_CODE;
        expect(attempt.outcome, `${result.thread}: ${attempt.name}`).toBe(expected);
      }
      // The socket handles were asked to connect to loopback only: the guard refused the rest in net and dgram, before any handle.
      expect(result.syscalls.length, result.thread).toBeGreaterThan(0);
      expect(result.syscalls.filter((s) => !/ (127\.0\.0\.1|::1):\d+$/.test(s)), result.thread).toEqual([]);
    }
    // Each refusal written to the log, with the thread it came from; the handles' line refused only what was put to it straight.
    const violations = guard.violations();
    const threadIds = new Set(violations.map((v) => v.thread));
    expect(threadIds.size).toBe(3);
    for (const id of threadIds) {
      const own = violations.filter((v) => v.thread === id);
      expect(own.map((v) => v.address).sort()).toEqual([...REFUSED_ADDRESSES, "0.0.0.0"].sort());
      expect(own.filter((v) => v.via === "lookup").map((v) => v.host).sort()).toEqual(["metadata.test", "mixed.test"]);
      expect(own.filter((v) => v.via === "tcp_wrap" || v.via === "udp_wrap").map((v) => v.address)).toEqual(["0.0.0.0"]);
    }
    expect(guard.threads().map((t) => t.main)).toEqual([true, false, false]);
  });

  test("the guard is in Artillery's worker threads: a processor function reaching out from a virtual user is refused and logged", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "guard-artillery-"));
    writeFileSync(path.join(dir, "processor.js"), PROCESSOR);
    const { run, guard, report } = await guardedRun({
      config: { target: app.wsUrl, processor: path.join(dir, "processor.js"), engines: { cable: {} }, phases: [{ duration: 1, arrivalCount: 1 }] },
      scenarios: [{ engine: "cable", flow: [{ function: "reachOut" }] }],
    }, { refusalsExpected: true });
    expect(counter(report, `errors.${GUARD_CODE}`), run.output).toBe(1);
    const violations = guard.violations();
    expect(violations.map((v) => `${v.via} ${v.host} ${v.address}`)).toEqual(["net.connect 169.254.169.254 169.254.169.254", "lookup metadata.hostile.test 169.254.169.254", "net.connect fd00:ec2::254 fd00:ec2::254"]);
    // From a worker thread of the artillery process.
    const main = guard.threads().find((t) => t.main && /artillery/.test(t.script))!;
    expect(main).toBeDefined();
    expect(violations.every((v) => v.pid === main.pid && v.thread !== 0)).toBe(true);
    expect(guard.threads().some((t) => t.pid === main.pid && !t.main && t.thread === violations[0].thread)).toBe(true);
  });

  test("captured values are data: a token holding {{ $processEnvironment.X }} or {{ $env.X }} is sent as written, and the secret goes nowhere", async () => {
    const { run, guard, report } = await guardedRun({
      config: { target: app.wsUrl, engines: { cable: {} }, cable: { timeout: 3 }, phases: [{ duration: 1, arrivalCount: 2 }] },
      scenarios: [
        {
          engine: "cable",
          flow: [
            { get: { url: cases(["/token-secret", "/token-secret-env"]), capture: captureToken } },
            { get: { url: "/echo?from=captured&q={{ rtoken }}", headers: { Authorization: "Bearer {{ token }}", "X-Header-Token": "{{ htoken }}" } } },
            { post: { url: "/echo?from=captured-json", json: { token: "{{ token }}" } } },
            { connect: { url: `${app.wsUrl}?from=captured`, headers: { "X-Token": "{{ token }}" } } },
            { subscribe: { channel: "C", as: "c" } },
          ],
        },
      ],
    });
    expectGuardedRun(run, guard);
    expect(counter(report, "vusers.completed"), run.output).toBe(2);
    const templates = ["{{ $env.PROBE_SECRET }}", "{{ $processEnvironment.PROBE_SECRET }}"];
    const echoes = requestsFrom("captured");
    expect(echoes.map((r) => r.headers.authorization).sort()).toEqual(templates.map((t) => `Bearer ${t}`));
    expect(echoes.map((r) => r.headers["x-header-token"]).sort()).toEqual(templates);
    expect(echoes.map((r) => query(r, "q")).sort()).toEqual(templates);
    expect(requestsFrom("captured-json").map((r) => JSON.parse(r.body).token).sort()).toEqual(templates);
    expect(app.upgrades().filter((r) => query(r, "from") === "captured").map((r) => r.headers["x-token"]).sort()).toEqual(templates);
    // Not in any request the app received, from any test of this file, nor in the run's output or report.
    expect(app.requests.filter((r) => holdsSecret(JSON.stringify(r))).map((r) => r.url)).toEqual([]);
    expect(holdsSecret(run.output)).toBe(false);
    expect(holdsSecret(readFileSync(run.reportPath, "utf8"))).toBe(false);
  });

  test("a token that names itself ({{ token }}) is sent as written, and the run ends", async () => {
    const { run, guard, report, endedAt } = await guardedRun({
      config: { target: app.wsUrl, engines: { cable: {} }, cable: { timeout: 3 }, phases: [{ duration: 1, arrivalCount: 1 }] },
      scenarios: [
        {
          engine: "cable",
          flow: [
            { get: { url: "/token-self", capture: captureToken } },
            { get: { url: "/echo?from=self&q={{ rtoken }}", headers: { Authorization: "Bearer {{ token }}", "X-Header-Token": "{{ htoken }}" } } },
          ],
        },
      ],
    });
    // A worker thread rendering the value for ever would never end the run (killed after 50 s, and no report).
    expectGuardedRun(run, guard);
    expect(counter(report, "vusers.completed"), run.output).toBe(1);
    const asked = app.requests.find((r) => r.pathname === "/token-self")!;
    expect(endedAt - asked.at, "from the user's first request to the run's end").toBeLessThan(20_000);
    const [echo] = requestsFrom("self");
    expect(echo?.headers.authorization).toBe("Bearer {{ token }}");
    expect(echo?.headers["x-header-token"]).toBe("{{ token }}");
    expect(query(echo!, "q")).toBe("{{ token }}");
  });

  test("redirects: off this machine and to file: or data: refused by name before any connect, no more than 10, one deadline for all hops, no credentials across origins", async () => {
    const refusedAddresses = Object.keys(OFF_MACHINE_REDIRECTS);
    const refusedSchemes = ["/to-file", "/to-data"];
    const followed = ["/to-other-host-302", "/to-other-host-307", "/to-same-origin-302", "/to-same-origin-307"];
    const all = [...refusedAddresses, ...refusedSchemes, "/loop?tag=endless", "/slow-loop?tag=config", ...followed];
    const dispatch = cases(all);
    const queue = dispatch.split("/").pop()!;
    const { run, guard, report } = await guardedRun({
      // config.cable.timeout is each HTTP step's deadline, every hop of it included.
      config: { target: app.wsUrl, engines: { cable: {} }, cable: { timeout: 2 }, phases: [{ duration: 2, arrivalCount: all.length }] },
      scenarios: [
        {
          engine: "cable",
          flow: [
            // A cookie in the jar for 127.0.0.1: by cookie rules it goes to the same host, never to 127.0.0.2.
            { get: { url: "/cookies?n=1&size=4&prefix=jar" } },
            // The dispatch is a same-origin 307: the case's own redirect is the step's second hop.
            {
              post: {
                url: dispatch,
                json: { probe: "body" },
                headers: { Authorization: "Bearer scenario-token", Cookie: "explicit=scenario-cookie", "Proxy-Authorization": "Basic c2NlbmFyaW8=" },
              },
            },
          ],
        },
      ],
    });
    // The slow loop's 2 s, the arrivals' 2 s, and Artillery's start-up.
    expectGuardedRun(run, guard);
    expect(app.dispatched(queue).sort()).toEqual([...all].sort());
    expect(counter(report, "errors.cable.http_address_refused"), run.output).toBe(refusedAddresses.length);
    expect(counter(report, "errors.cable.http_redirect_refused")).toBe(refusedSchemes.length);
    expect(counter(report, "errors.cable.http_too_many_redirects")).toBe(1);
    expect(counter(report, "errors.cable.http_timeout")).toBe(1);
    expect(counter(report, "vusers.failed")).toBe(refusedAddresses.length + refusedSchemes.length + 2);
    expect(counter(report, "vusers.completed")).toBe(followed.length);

    // The endless chain: the dispatch's hop and 10 of the loop's; the 11th redirect refused, unfollowed.
    expect(app.requests.filter((r) => r.pathname === "/loop" && query(r, "tag") === "endless").length).toBe(10);

    // The slow loop (1 s a hop): config.cable.timeout's 2 s cover all of the step's hops, not 2 s each.
    const dispatches = app.requests.filter((r) => r.pathname === `/dispatch/${queue}`);
    expectOneDeadline(dispatches[app.dispatched(queue).indexOf("/slow-loop?tag=config")].at, "config");

    // Another origin (127.0.0.2, the same app): neither the scenario's credentials nor 127.0.0.1's cookies.
    const crossed = app.requests.filter((r) => r.host === "127.0.0.2");
    expect(crossed.map((r) => query(r, "from")).sort()).toEqual(["other-host-302", "other-host-307"]);
    for (const r of crossed) {
      expect(r.headers.authorization, r.url).toBeUndefined();
      expect(r.headers["proxy-authorization"], r.url).toBeUndefined();
      expect(r.headers.cookie, r.url).toBeUndefined();
    }
    // The same origin: all of them, the jar's cookie beside the scenario's own.
    const same = app.requests.filter((r) => /^same-origin-/.test(query(r, "from") ?? ""));
    expect(same.map((r) => query(r, "from")).sort()).toEqual(["same-origin-302", "same-origin-307"]);
    for (const r of same) {
      expect(r.headers.authorization, r.url).toBe("Bearer scenario-token");
      expect(r.headers["proxy-authorization"], r.url).toBe("Basic c2NlbmFyaW8=");
      expect(r.headers.cookie, r.url).toContain("explicit=scenario-cookie");
      expect(r.headers.cookie, r.url).toContain("jar0=vvvv");
    }
  });

  test("a socket the app points to a metadata address is refused too: an IP literal before the upgrade, a name at its lookup", async () => {
    const keys = Object.keys(OFF_MACHINE_SOCKETS);
    const { run, guard, report } = await guardedRun({
      config: { target: app.wsUrl, engines: { cable: {} }, cable: { timeout: 2 }, phases: [{ duration: 1, arrivalCount: keys.length }] },
      scenarios: [
        {
          engine: "cable",
          flow: [
            { get: { url: cases(keys.map((k) => `/socket-url/${k}`)), capture: { json: "$.url", as: "where" } } },
            { connect: { url: "{{ where }}" } },
          ],
        },
      ],
    });
    expectGuardedRun(run, guard);
    expect(counter(report, "errors.cable.http_address_refused"), run.output).toBe(keys.length);
    expect(counter(report, "vusers.failed")).toBe(keys.length);
    expectErrorNames(report);
  });

  test("a step's own timeout is its deadline, for all its hops", async () => {
    const { run, guard, report } = await guardedRun({
      config: { target: app.wsUrl, engines: { cable: {} }, cable: { timeout: 10 }, phases: [{ duration: 1, arrivalCount: 1 }] },
      scenarios: [{ engine: "cable", flow: [{ get: { url: "/slow-loop?tag=step", timeout: 2 } }] }],
    });
    expectGuardedRun(run, guard);
    expect(counter(report, "errors.cable.http_timeout"), run.output).toBe(1);
    expectOneDeadline(app.requests.find((r) => r.pathname === "/slow-loop" && query(r, "tag") === "step")!.at, "step");
  });

  test("the jar is bounded: 16,000 cookies, big ones and wide ones; the upgrade's Cookie header within 16 KiB, every cookie left out counted", async () => {
    const dispatch = cases(["/cookies?n=0", "/cookies?n=16000&size=10&prefix=one"]);
    const { run, guard, report } = await guardedRun({
      config: { target: app.wsUrl, engines: { cable: {} }, cable: { timeout: 5 }, phases: [{ duration: 1, arrivalCount: 2 }] },
      scenarios: [
        {
          engine: "cable",
          flow: [
            // One user meets 16,000 Set-Cookie lines in one answer; the other none here.
            { get: { url: dispatch } },
            // 16,000 more in 40 answers of 400 (an answer of Node's default 16 KiB of headers at most).
            { loop: [{ get: { url: "/cookies?n=400&size=10&prefix=b{{ $loopCount }}x" } }], count: 40 },
            // Over 4096 bytes each: refused by the jar.
            { get: { url: "/cookies?n=3&size=5000&prefix=big" } },
            // 3500 bytes each, 21,000 in all: more than one Cookie header holds.
            { get: { url: "/cookies?n=3&size=3500&prefix=wideA" } },
            { get: { url: "/cookies?n=3&size=3500&prefix=wideB" } },
            { connect: { url: `${app.wsUrl}?from=cookies` } },
            { subscribe: { channel: "C", as: "c" } },
          ],
        },
      ],
    });
    expectGuardedRun(run, guard);
    // The user of 16,000 lines in one answer: its HTTP client refuses headers over 16 KiB by name
    // (undici's UND_ERR_HEADERS_OVERFLOW), or it goes on within the jar's caps as the other does.
    expect(counter(report, "vusers.completed"), run.output).toBeGreaterThanOrEqual(1);
    expect(counter(report, "vusers.completed") + counter(report, "errors.UND_ERR_HEADERS_OVERFLOW")).toBe(2);
    const upgrades = app.upgrades().filter((r) => query(r, "from") === "cookies");
    expect(upgrades.length).toBe(counter(report, "vusers.completed"));
    for (const upgrade of upgrades) {
      const header = String(upgrade.headers.cookie ?? "");
      const pairs = header.split("; ");
      expect(Buffer.byteLength(header)).toBeGreaterThan(0);
      expect(Buffer.byteLength(header)).toBeLessThanOrEqual(COOKIE_HEADER_CAP);
      // At most 180 a domain; none over 4096 bytes of name and value.
      expect(pairs.length).toBeLessThanOrEqual(180);
      expect(pairs.filter((p) => p.length > 4096)).toEqual([]);
    }
    // No request to the app carried more either.
    const sizes = app.requests.filter((r) => /^\/cookies|\/echo/.test(r.pathname)).map((r) => Buffer.byteLength(String(r.headers.cookie ?? "")));
    expect(Math.max(0, ...sizes)).toBeLessThanOrEqual(COOKIE_HEADER_CAP);
    expect(counter(report, "cable.cookies_dropped")).toBeGreaterThan(0);
  });

  test("through cable-fanout --local --secret: the app never receives the secret, and no file of the run holds it", async () => {
    const guard = networkGuard({ resolve: HOSTILE_NAMES });
    const work = mkdtempSync(path.join(os.tmpdir(), "hostile-http-fanout-"));
    mkdirSync(path.join(work, "app"));
    const scenario = path.join(work, "app", "hostile.yml");
    writeFileSync(
      scenario,
      JSON.stringify({
        config: { target: "ws://127.0.0.1:1/cable", engines: { cable: {} }, cable: { timeout: 3 }, phases: [{ duration: 1, arrivalCount: 2 }] },
        scenarios: [
          {
            engine: "cable",
            flow: [
              { get: { url: cases(["/token-secret", "/token-secret-env"]), capture: captureToken } },
              { get: { url: "/echo?from=fanout&q={{ rtoken }}", headers: { Authorization: "Bearer {{ token }}", "X-Header-Token": "{{ htoken }}" } } },
              // A redirect off the machine too: refused, named, and no secret in what the report keeps of it.
              { get: { url: "/to-metadata", expect: 200 } },
            ],
          },
        ],
      }),
    );
    const out = path.join(work, "results");
    const startedAt = Date.now();
    const result = await runNode(
      path.join(repo, "packages/cable-fanout/bin/cable-fanout.js"),
      ["run", scenario, "--local", "--regions", "local-a", "--count", "1", "--secret", "PROBE_SECRET", "--target", app.wsUrl, "--start-delay", "1", "--out", out],
      { cwd: work, env: { ...process.env, ARTILLERY_DISABLE_TELEMETRY: "true", ...guard.env, PROBE_SECRET: SECRET }, timeoutMs: 90_000 },
    );
    const output = result.stdout + result.stderr;
    expect(guard.violations().map(describeViolation), "connects off this machine, refused by the guard").toEqual([]);
    // The guard reached the task's artillery and its worker threads (the CABLE_ variables did not: the shim carries the log's path).
    expect(guard.threads().some((t) => !t.main), output).toBe(true);
    expect(Date.now() - startedAt, output).toBeLessThan(60_000);
    const echoes = requestsFrom("fanout");
    expect(echoes.map((r) => r.headers.authorization).sort(), output).toEqual(["Bearer {{ $env.PROBE_SECRET }}", "Bearer {{ $processEnvironment.PROBE_SECRET }}"]);
    expect(app.requests.filter((r) => holdsSecret(JSON.stringify(r))).map((r) => r.url)).toEqual([]);
    const [runId] = readdirSync(out).filter((d) => !d.startsWith("."));
    const merged = JSON.parse(readFileSync(path.join(out, runId, "merged.json"), "utf8")) as { all: { counters: Record<string, number> } };
    expect(merged.all.counters["errors.cable.http_address_refused"], output).toBe(2);
    expectErrorNames({ aggregate: { counters: merged.all.counters } } as ArtilleryReport);
    const searched = filesHolding(work, holdsSecret);
    expect(searched.files).toBeGreaterThan(10);
    expect(searched.leaks).toEqual([]);
    expect(holdsSecret(output)).toBe(false);
  }, 120_000);

  test("the engine refuses every address the app sends its users to, and none of loopback (isRefusedAddress)", async () => {
    const literal = Object.values(OFF_MACHINE_REDIRECTS)
      .map((url) => new URL(url).hostname.replace(/^\[(.*)\]$/, "$1"))
      .filter((host) => !host.endsWith(".test"));
    const resolved = Object.values(HOSTILE_NAMES).flat();
    expect([...literal, ...resolved].filter((ip) => !isRefusedAddress(ip))).toEqual([]);
    expect(["127.0.0.1", "127.0.0.2", "::1"].filter((ip) => isRefusedAddress(ip))).toEqual([]);
  });
});

interface ThreadResult {
  thread: string;
  attempts: { name: string; outcome: string }[];
  syscalls: string[];
}

/** The off-machine addresses the self-test tries, each refused once per thread. */
const REFUSED_ADDRESSES = [
  ...["ipv4 literal", "a name", "a mixed name", "http.get", "fetch", "tls", "dgram"].map(() => "169.254.169.254"),
  "169.254.170.2",
  "fd00:ec2::254",
  "fe80::1",
  "10.0.0.1",
];

/**
 * The guard's self-test, run with the guard preloaded: each attempt off this machine, in the main
 * thread and in two workers (one given an env without NODE_OPTIONS, which the guard must still
 * reach; one given the parent's env, as Artillery gives it), with a spy on the socket handles'
 * connect and send (the calls that reach connect(2) and sendto(2)): a refused attempt must never
 * get there. And the guard's last line, beneath net, asked straight.
 */
const REACH_OUT = String.raw`
const net = require("node:net");
const http = require("node:http");
const dgram = require("node:dgram");
const { Worker, isMainThread, parentPort, workerData } = require("node:worker_threads");

// What reached the socket handles (the calls to connect(2) and sendto(2)) after the guard's net and
// dgram hooks: a spy that records each, and refuses anything off loopback itself (ENETUNREACH), so
// that this test sends nothing off the machine even if the guard it tests is broken.
const syscalls = [];
const os = require("node:os");
const tcp = process.binding("tcp_wrap");
const udp = process.binding("udp_wrap");
const beneath = tcp.TCP.prototype.connect; // the guard's own last line, under the spy
const loopback = (address) => /^127\./.test(address) || address === "::1";
const spy = (proto, method, at) => {
  const original = proto[method];
  proto[method] = function (...args) {
    const target = at(args);
    if (!target) return original.apply(this, args);
    syscalls.push(method + " " + target.address + ":" + target.port);
    return loopback(target.address) ? original.apply(this, args) : -os.constants.errno.ENETUNREACH;
  };
};
for (const m of ["connect", "connect6"]) spy(tcp.TCP.prototype, m, (a) => ({ address: a[1], port: a[2] }));
for (const m of ["send", "send6"]) spy(udp.UDP.prototype, m, (a) => (typeof a[4] === "string" ? { address: a[4], port: a[3] } : undefined));

/** The guard's last line, beneath net: a TCP handle asked straight to connect to 0.0.0.0 (this machine, should the guard let it through). */
function handleConnect(closedPort) {
  const handle = new tcp.TCP(tcp.constants.SOCKET);
  const req = new tcp.TCPConnectWrap();
  req.oncomplete = () => handle.close();
  const err = beneath.call(handle, req, "0.0.0.0", closedPort);
  if (err) handle.close();
  return err === -os.constants.errno.EPERM ? "EPERM" : "returned " + err;
}

/** A name's answer, as dns.lookup gives it (all: true, or the first). */
const answering = (addresses) => (hostname, options, callback) => {
  const list = addresses.map((address) => ({ address, family: net.isIP(address) }));
  process.nextTick(() => (options && options.all ? callback(null, list) : callback(null, list[0].address, list[0].family)));
};

function outcome(start) {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve("timeout"), 3000);
    const done = (value) => { clearTimeout(timer); resolve(value); };
    let emitter;
    try {
      emitter = start(done);
    } catch (err) {
      return done("threw " + (err.code || err.message));
    }
    if (!emitter) return;
    emitter.once("connect", () => { emitter.destroy(); done("connected"); });
    emitter.once("error", (err) => done(err.code || (err.cause && err.cause.code) || err.message));
  });
}

async function attempts(loopbackPort) {
  const list = [
    ["ipv4 literal 169.254.169.254:80", () => net.connect({ host: "169.254.169.254", port: 80 })],
    ["(port, host) 169.254.170.2:80", () => net.connect(80, "169.254.170.2")],
    ["ipv6 literal fd00:ec2::254", () => net.connect({ host: "fd00:ec2::254", port: 80 })],
    ["link-local fe80::1", () => new net.Socket().connect({ host: "fe80::1", port: 80 })],
    ["a name resolving to 169.254.169.254", () => net.connect({ host: "metadata.test", port: 80, lookup: answering(["169.254.169.254"]) })],
    ["a name resolving to loopback and 169.254.169.254", () => net.connect({ host: "mixed.test", port: 80, lookup: answering(["127.0.0.1", "169.254.169.254"]) })],
    ["http.get", () => http.get("http://169.254.169.254/latest/meta-data/")],
    ["fetch", (done) => { fetch("http://169.254.169.254/latest/meta-data/").then(() => done("connected"), (err) => done((err.cause && err.cause.code) || err.message)); }],
    ["tls", () => require("node:tls").connect({ host: "169.254.169.254", port: 443 })],
    ["dgram", (done) => { const s = dgram.createSocket("udp4"); s.send("x", 53, "169.254.169.254", (err) => { s.close(); done(err ? err.code : "sent"); }); }],
    ["dgram to 10.0.0.1", (done) => { const s = dgram.createSocket("udp4"); s.once("error", (err) => { s.close(); done(err.code); }); s.send("x", 53, "10.0.0.1"); }],
    ["beneath net: a TCP handle's connect to 0.0.0.0", (done) => done(handleConnect(loopbackPort + 1))],
    ["loopback 127.0.0.1", () => net.connect({ host: "127.0.0.1", port: loopbackPort })],
    ["loopback localhost", () => net.connect({ host: "localhost", port: loopbackPort, family: 4 })],
  ];
  const results = [];
  for (const [name, start] of list) results.push({ name, outcome: await outcome(start) });
  return results;
}

if (isMainThread) {
  const server = net.createServer((socket) => socket.destroy()).listen(0, "127.0.0.1", async () => {
    const port = server.address().port;
    const all = [{ thread: "main", attempts: await attempts(port), syscalls }];
    const inWorker = (thread, env) =>
      new Promise((resolve, reject) => {
        const worker = new Worker(__filename, { env, workerData: { port } });
        worker.once("message", (m) => resolve({ thread, ...m }));
        worker.once("error", reject);
      });
    const withoutOptions = { ...process.env };
    delete withoutOptions.NODE_OPTIONS;
    all.push(await inWorker("worker (env without NODE_OPTIONS)", withoutOptions));
    all.push(await inWorker("worker (env of the parent, as Artillery's)", { ...process.env }));
    server.close();
    console.log(JSON.stringify(all));
  });
} else {
  attempts(workerData.port).then((results) => parentPort.postMessage({ attempts: results, syscalls }));
}
`;

/** A processor whose function, run by a virtual user in Artillery's worker thread, tries to reach out. */
const PROCESSOR = String.raw`
const net = require("node:net");
const os = require("node:os");
// Should the guard miss, nothing leaves all the same: the TCP handle refuses anything off loopback (ENETUNREACH).
const tcp = process.binding("tcp_wrap").TCP.prototype;
for (const method of ["connect", "connect6"]) {
  const original = tcp[method];
  tcp[method] = function (req, address, port) {
    return /^127\./.test(address) || address === "::1" ? original.apply(this, arguments) : -os.constants.errno.ENETUNREACH;
  };
}
const attempt = (options) =>
  new Promise((resolve) => {
    const socket = net.connect(options);
    const timer = setTimeout(() => { socket.destroy(); resolve("timeout"); }, 3000);
    socket.once("connect", () => { clearTimeout(timer); socket.destroy(); resolve("connected"); });
    socket.once("error", (err) => { clearTimeout(timer); resolve(err.code); });
  });
module.exports = {
  async reachOut() {
    const codes = [];
    codes.push(await attempt({ host: "169.254.169.254", port: 80 }));
    // Resolves to 169.254.169.254 through the test's DNS (networkGuard({ resolve: HOSTILE_NAMES })).
    codes.push(await attempt({ host: "metadata.hostile.test", port: 80 }));
    codes.push(await attempt({ host: "fd00:ec2::254", port: 80 }));
    const err = new Error("reached out: " + codes.join(", "));
    err.code = codes.every((c) => c === "${GUARD_CODE}") ? "${GUARD_CODE}" : "GUARD_MISSED";
    throw err;
  },
};
`;

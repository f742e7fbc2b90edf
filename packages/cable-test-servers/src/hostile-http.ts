// A hostile HTTP app on loopback (issue 50), beside the hostile WebSocket server: what a virtual
// user's HTTP steps meet when the app it signs in to is an attacker's, or broken. It answers with
// templates for the generator to render (`{{ $processEnvironment.PROBE_SECRET }}`, `{{ token }}`),
// redirects to the cloud's metadata services, to another origin (127.0.0.2, loopback on Linux), to
// `file:` and `data:`, in an endless chain and in a slow one, and sets 16,000 cookies; its WebSocket
// (any path) accepts the upgrade as an Action Cable server would, and keeps the upgrade's headers.
// It records every request it receives, the upgrades included, for the tests to read.
//
// And the harness that keeps such tests on this machine: networkGuard() makes the environment of a
// guarded run (NODE_OPTIONS preloading network-guard.js into every process and thread) and reads
// what the guard refused. A run against this app must leave its log empty; a wrong implementation
// fails the test there, its packets refused before they left.
import { mkdtempSync, readFileSync, writeFileSync, existsSync } from "node:fs";
import http from "node:http";
import type { AddressInfo, Socket } from "node:net";
import os from "node:os";
import path from "node:path";
import { WebSocketServer, type WebSocket } from "ws";
import type { GuardViolation } from "./network-guard.js";

export type { GuardViolation } from "./network-guard.js";

/** The app's redirects off this machine, by path: where a wrong implementation would send its users. */
export const OFF_MACHINE_REDIRECTS = {
  "/to-metadata": "http://169.254.169.254/latest/meta-data/",
  "/to-ecs-creds": "http://169.254.170.2/v2/credentials/abc",
  "/to-ipv6-metadata": "http://[fd00:ec2::254]/",
  "/to-link-local-name": "http://metadata.hostile.test/latest/meta-data/",
  "/to-link-local-name6": "http://link-local6.hostile.test/",
} as const;

/**
 * The names the app redirects to, and what they resolve to: they exist nowhere, and resolve only in a
 * process given `networkGuard({ resolve: HOSTILE_NAMES })`.
 */
export const HOSTILE_NAMES: Record<string, string[]> = {
  "metadata.hostile.test": ["169.254.169.254"],
  "link-local6.hostile.test": ["fe80::1"],
};

/** WebSocket URLs the app answers (`/socket-url/<key>`, JSON `{url}`) for a scenario that connects where it is told. */
export const OFF_MACHINE_SOCKETS = {
  ip: "ws://169.254.169.254/cable",
  v6: "ws://[fd00:ec2::254]/cable",
  name: "ws://metadata.hostile.test/cable",
} as const;

/** Redirects to schemes a user must not follow. */
export const SCHEME_REDIRECTS = {
  "/to-file": "file:///etc/passwd",
  "/to-data": "data:text/plain,hi",
} as const;

export interface RecordedRequest {
  /** ms since the epoch, when the request's headers arrived. */
  at: number;
  /** The address the request arrived at: 127.0.0.1, or 127.0.0.2 (the other origin). */
  host: string;
  /** Where it came from. */
  remote: string;
  method: string;
  /** Path and query, as sent. */
  url: string;
  pathname: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  /** A WebSocket upgrade. */
  upgrade: boolean;
  /** When the client closed the connection before the app's answer was written (a redirect it no longer waited for). */
  abortedAt?: number;
}

export interface HostileHttpApp {
  port: number;
  /** http://127.0.0.1:<port> */
  url: string;
  /** http://127.0.0.2:<port>: the same app, another origin. */
  otherUrl: string;
  /** ws://127.0.0.1:<port>/cable: an Action Cable endpoint (welcome, every subscription confirmed). */
  wsUrl: string;
  /** Every request received, upgrades included, in order. */
  requests: RecordedRequest[];
  /** The upgrades among them. */
  upgrades(): RecordedRequest[];
  /**
   * Cases handed out by `/dispatch/<queue>` (a 307 to the next path of the queue, 410 once empty):
   * each virtual user of a run takes the next, however many worker threads Artillery runs them in.
   */
  enqueue(queue: string, paths: string[]): void;
  /** What `/dispatch/<queue>` handed out, in order. */
  dispatched(queue: string): string[];
  close(): Promise<void>;
}

export interface HostileHttpOptions {
  /** The variable the token templates name; PROBE_SECRET by default. */
  secretName?: string;
  /** How long each hop of `/slow-loop` waits before its redirect; 1000 ms by default. */
  slowHopMs?: number;
}

/** The biggest request body the app keeps. */
const MAX_BODY = 1024 * 1024;

/**
 * Starts the app on 127.0.0.1 and 127.0.0.2, the same port on both. Paths (any method):
 * - `/token-secret`: `{"token":"{{ $processEnvironment.PROBE_SECRET }}"}`, and the same template in
 *   header `X-Token` (for JSON, header and regexp captures); `/token-secret-env` with `$env`;
 *   `/token-self`: `{{ token }}` (a value that names itself);
 * - `/echo`: 200 `{"ok":true}` (every request is recorded anyway);
 * - OFF_MACHINE_REDIRECTS and SCHEME_REDIRECTS: a 302 to each; OFF_MACHINE_SOCKETS: `/socket-url/<key>` answers `{url}`;
 * - `/to-other-host-302`, `/to-other-host-307`: to `http://127.0.0.2:<port>/echo?from=…`;
 *   `/to-same-origin-302`, `/to-same-origin-307`: to `/echo?from=…` on the same origin;
 * - `/loop?n=k&tag=t`: a 302 to `/loop?n=k+1&tag=t`, for ever; `/slow-loop` the same after `slowHopMs`;
 * - `/cookies?n=16000&size=10&from=0&prefix=c`: n `Set-Cookie` lines, `<prefix><from+i>=<size bytes>`;
 * - `/dispatch/<queue>`: see enqueue();
 * - any upgrade: an Action Cable server's welcome, and each subscribe confirmed.
 */
export async function hostileHttpApp(options: HostileHttpOptions = {}): Promise<HostileHttpApp> {
  const secretName = options.secretName ?? "PROBE_SECRET";
  const slowHopMs = options.slowHopMs ?? 1000;
  const requests: RecordedRequest[] = [];
  const queues = new Map<string, string[]>();
  const handedOut = new Map<string, string[]>();
  const timers = new Set<NodeJS.Timeout>();
  const sockets = new Set<WebSocket>();
  let port = 0;

  const record = (req: http.IncomingMessage, body: string, upgrade: boolean): RecordedRequest => {
    const entry: RecordedRequest = {
      at: Date.now(),
      host: req.socket.localAddress ?? "",
      remote: req.socket.remoteAddress ?? "",
      method: req.method ?? "",
      url: req.url ?? "",
      pathname: new URL(req.url ?? "/", "http://app").pathname,
      headers: req.headers,
      body,
      upgrade,
    };
    requests.push(entry);
    return entry;
  };

  const token = (res: http.ServerResponse, template: string) => {
    res.writeHead(200, { "Content-Type": "application/json", "X-Token": template });
    res.end(JSON.stringify({ token: template }));
  };
  const redirect = (res: http.ServerResponse, status: number, location: string) => res.writeHead(status, { Location: location, "Content-Length": "0" }).end();

  const answer = (req: http.IncomingMessage, res: http.ServerResponse) => {
    const url = new URL(req.url ?? "/", "http://app");
    const n = Number(url.searchParams.get("n") ?? "0");
    const p = url.pathname;
    if (p === "/token-secret") return token(res, `{{ $processEnvironment.${secretName} }}`);
    if (p === "/token-secret-env") return token(res, `{{ $env.${secretName} }}`);
    if (p === "/token-self") return token(res, "{{ token }}");
    const socket = /^\/socket-url\/(\w+)$/.exec(p)?.[1];
    if (socket && socket in OFF_MACHINE_SOCKETS) return void res.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify({ url: OFF_MACHINE_SOCKETS[socket as keyof typeof OFF_MACHINE_SOCKETS] }));
    if (p === "/echo") return void res.writeHead(200, { "Content-Type": "application/json" }).end('{"ok":true}');
    if (p in OFF_MACHINE_REDIRECTS) return redirect(res, 302, OFF_MACHINE_REDIRECTS[p as keyof typeof OFF_MACHINE_REDIRECTS]);
    if (p in SCHEME_REDIRECTS) return redirect(res, 302, SCHEME_REDIRECTS[p as keyof typeof SCHEME_REDIRECTS]);
    const other = /^\/to-other-host-(30[27])$/.exec(p);
    if (other) return redirect(res, Number(other[1]), `http://127.0.0.2:${port}/echo?from=other-host-${other[1]}`);
    const same = /^\/to-same-origin-(30[27])$/.exec(p);
    if (same) return redirect(res, Number(same[1]), `/echo?from=same-origin-${same[1]}`);
    // A chain keeps its `tag`, for a test to tell its own hops from another's.
    const tag = url.searchParams.get("tag");
    const next = `${p}?n=${n + 1}${tag === null ? "" : `&tag=${encodeURIComponent(tag)}`}`;
    if (p === "/loop") return redirect(res, 302, next);
    if (p === "/slow-loop") {
      const timer = setTimeout(() => {
        timers.delete(timer);
        if (!res.destroyed) redirect(res, 302, next);
      }, slowHopMs);
      timers.add(timer);
      return;
    }
    if (p === "/cookies") {
      const size = Number(url.searchParams.get("size") ?? "10");
      const from = Number(url.searchParams.get("from") ?? "0");
      const prefix = url.searchParams.get("prefix") ?? "c";
      const value = "v".repeat(size);
      const lines = Array.from({ length: n }, (_, i) => `${prefix}${from + i}=${value}; Path=/`);
      res.writeHead(200, { "Content-Type": "application/json", "Set-Cookie": lines });
      return void res.end(JSON.stringify({ set: n }));
    }
    const dispatch = /^\/dispatch\/([\w-]+)$/.exec(p);
    if (dispatch) {
      const handed = queues.get(dispatch[1])?.shift();
      if (handed === undefined) return void res.writeHead(410).end();
      handedOut.get(dispatch[1])?.push(handed);
      return redirect(res, 307, handed);
    }
    res.writeHead(404).end();
  };

  const handler = (req: http.IncomingMessage, res: http.ServerResponse) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (c: Buffer) => {
      size += c.length;
      if (size <= MAX_BODY) chunks.push(c);
    });
    req.on("end", () => {
      const entry = record(req, Buffer.concat(chunks).toString("utf8"), false);
      res.once("close", () => {
        if (!res.writableFinished) entry.abortedAt = Date.now();
      });
      answer(req, res);
    });
  };

  const wss = new WebSocketServer({ noServer: true });
  const upgrade = (req: http.IncomingMessage, socket: Socket, head: Buffer) => {
    record(req, "", true);
    socket.on("error", () => undefined);
    wss.handleUpgrade(req, socket, head, (ws) => {
      sockets.add(ws);
      ws.on("close", () => sockets.delete(ws));
      ws.on("error", () => sockets.delete(ws));
      ws.send(JSON.stringify({ type: "welcome" }));
      ws.on("message", (raw) => {
        let frame: { command?: string; identifier?: string } | undefined;
        try {
          frame = JSON.parse(raw.toString());
        } catch {
          return;
        }
        if (frame?.command === "subscribe") ws.send(JSON.stringify({ identifier: frame.identifier, type: "confirm_subscription" }));
      });
    });
  };

  // Node refuses a request whose headers pass 16 KiB (431): the app must see an oversized Cookie to measure it.
  const make = () => {
    const server = http.createServer({ maxHeaderSize: 8 * 1024 * 1024 }, handler);
    server.on("upgrade", upgrade);
    server.on("clientError", (_err, socket) => socket.destroy());
    return server;
  };
  const listen = (server: http.Server, host: string, on: number) =>
    new Promise<number>((resolve, reject) => {
      server.once("error", reject);
      server.listen(on, host, () => {
        server.off("error", reject);
        resolve((server.address() as AddressInfo).port);
      });
    });
  const closeServer = (server: http.Server) =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });

  let servers: http.Server[] = [];
  for (let attempt = 0; servers.length === 0; attempt++) {
    const first = make();
    port = await listen(first, "127.0.0.1", 0);
    const second = make();
    try {
      await listen(second, "127.0.0.2", port);
      servers = [first, second];
    } catch (err) {
      await closeServer(first);
      if (attempt >= 10) throw err;
    }
  }

  return {
    port,
    url: `http://127.0.0.1:${port}`,
    otherUrl: `http://127.0.0.2:${port}`,
    wsUrl: `ws://127.0.0.1:${port}/cable`,
    requests,
    upgrades: () => requests.filter((r) => r.upgrade),
    enqueue(queue, paths) {
      queues.set(queue, [...(queues.get(queue) ?? []), ...paths]);
      if (!handedOut.has(queue)) handedOut.set(queue, []);
    },
    dispatched: (queue) => [...(handedOut.get(queue) ?? [])],
    async close() {
      for (const timer of timers) clearTimeout(timer);
      for (const ws of sockets) ws.terminate();
      wss.close();
      await Promise.all(servers.map(closeServer));
    },
  };
}

/** A thread that loaded the guard. */
export interface GuardThread {
  event: "loaded";
  pid: number;
  thread: number;
  main: boolean;
  script: string;
}

export interface NetworkGuard {
  /** The guard's directory: its preload shim, its log, its threads file. */
  dir: string;
  /** Refused attempts, one JSON line each (also CABLE_NETWORK_GUARD_LOG). */
  log: string;
  /** One JSON line per process and thread that loaded the guard. */
  threadsFile: string;
  /** The preload given to --require: it loads the guard (and the fake names), with the log's path. */
  preload: string;
  /** The environment of a guarded run: NODE_OPTIONS (this process's own, plus the preload) and CABLE_NETWORK_GUARD_LOG. */
  env: { NODE_OPTIONS: string; CABLE_NETWORK_GUARD_LOG: string };
  /** What the guard refused so far. */
  violations(): GuardViolation[];
  /** The processes and threads the guard was loaded in so far. */
  threads(): GuardThread[];
}

export interface NetworkGuardOptions {
  /**
   * Names that exist nowhere, and the addresses dns.lookup answers for them in the guarded processes
   * (HOSTILE_NAMES): so that a run meets a name resolving to a metadata address without touching
   * /etc/hosts. Every other name is looked up as ever. This is the test's DNS, not the guard: the
   * guard rewrites nothing and judges these answers as any other.
   */
  resolve?: Record<string, string[]>;
}

const readLines = <T>(file: string): T[] =>
  existsSync(file)
    ? readFileSync(file, "utf8")
        .split("\n")
        .filter(Boolean)
        .map((line) => JSON.parse(line) as T)
    : [];

/**
 * A network guard for runs a test spawns (runArtillery, cable-fanout): spread `env` into the
 * child's environment, then expect `violations()` to be empty. The log's path travels inside the
 * preload shim too, because cable-fanout --local gives its tasks no CABLE_ variable.
 */
export function networkGuard(options: NetworkGuardOptions = {}): NetworkGuard {
  const dir = mkdtempSync(path.join(os.tmpdir(), "network-guard-"));
  const log = path.join(dir, "violations.jsonl");
  const threadsFile = path.join(dir, "threads.jsonl");
  const preload = path.join(dir, "preload.cjs");
  const guard = require.resolve("./network-guard.js");
  const lines = [
    "// Written by networkGuard() (cable-test-servers/src/hostile-http.ts): preloaded into a guarded run's every process and thread.",
    `globalThis[Symbol.for("cable-test-servers.network-guard")] = ${JSON.stringify({ log, threads: threadsFile })};`,
    `globalThis[Symbol.for("cable-test-servers.network-guard")].preload = __filename;`,
  ];
  if (options.resolve && Object.keys(options.resolve).length > 0) {
    const fake = path.join(dir, "fake-dns.cjs");
    writeFileSync(fake, fakeDnsSource(options.resolve));
    lines.push(`require(${JSON.stringify(fake)});`);
  }
  lines.push(`require(${JSON.stringify(guard)});`, "");
  writeFileSync(preload, lines.join("\n"));
  const existing = process.env.NODE_OPTIONS ?? "";
  return {
    dir,
    log,
    threadsFile,
    preload,
    env: { NODE_OPTIONS: `${existing} --require ${JSON.stringify(preload)}`.trim(), CABLE_NETWORK_GUARD_LOG: log },
    violations: () => readLines<GuardViolation>(log),
    threads: () => readLines<GuardThread>(threadsFile),
  };
}

/** A preload answering dns.lookup for `names` (lower case), and passing every other name to the real one. */
function fakeDnsSource(names: Record<string, string[]>): string {
  return `// The test's DNS for names that exist nowhere (networkGuard({ resolve })).
const dns = require("node:dns");
const net = require("node:net");
const names = ${JSON.stringify(Object.fromEntries(Object.entries(names).map(([k, v]) => [k.toLowerCase(), v])))};
const real = dns.lookup;
dns.lookup = function lookup(hostname, options, callback) {
  if (typeof options === "function") { callback = options; options = {}; }
  const answer = names[String(hostname).toLowerCase()];
  if (!answer) return real.call(this, hostname, options, callback);
  const all = typeof options === "object" && options !== null && options.all;
  const list = answer.map((address) => ({ address, family: net.isIP(address) }));
  process.nextTick(() => (all ? callback(null, list) : callback(null, list[0].address, list[0].family)));
};
require("node:module").syncBuiltinESMExports();
`;
}

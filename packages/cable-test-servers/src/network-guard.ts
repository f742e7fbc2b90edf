// The network guard (issue 50): preloaded into every process and thread a test runs the code under
// test in (`node --require dist/network-guard.js`, through NODE_OPTIONS: `networkGuard()` in
// hostile-http.ts builds it), it refuses every TCP connect and UDP send to an address off loopback
// before a packet leaves, and writes a line naming it to a log the test reads. A wrong
// implementation (one that follows a redirect to the cloud's metadata service) then fails its test
// instead of reaching out. It rewrites nothing: a destination is either let through unchanged or
// refused; answers of a lookup are passed on as they came, or refused.
//
// - net.Socket.prototype.connect, which every TCP client of Node goes through (net.connect,
//   tls.connect, http and https agents, undici and fetch, ws): an IP literal off loopback is refused
//   at once; a host name gets its lookup (the caller's `lookup` option, else dns.lookup) wrapped, and
//   an answer holding any address off loopback is refused before net connects to any of them.
// - dgram.Socket's send and connect: an IP literal off loopback is refused; so is any name other than
//   `localhost` (its lookup is dgram's own, out of reach: tests send no UDP to names).
// - beneath both, the TCP and UDP handles' connect and send (process.binding's tcp_wrap and
//   udp_wrap, the calls that reach connect(2) and sendto(2)): anything off loopback that got past the
//   hooks above (an internal path, a lookup they did not see) is refused there with EPERM.
// - worker_threads.Worker: a worker given an `env` whose NODE_OPTIONS lacks this preload gets it added
//   there, so that no thread of a guarded process runs unguarded. (Artillery's workers get the
//   parent's environment, NODE_OPTIONS included, so they load it without this.)
//
// Allowed: 127.0.0.0/8, ::1, ::ffff:127.0.0.0/104, and Unix sockets. Everything else is refused:
// 169.254.169.254, 169.254.170.2, fd00:ec2::254, fe80::/10, the machine's own non-loopback
// addresses, 0.0.0.0.
//
// The log (one JSON object a line): CABLE_NETWORK_GUARD_LOG, else the path a preload shim put in
// globalThis[Symbol.for("cable-test-servers.network-guard")] (cable-fanout --local drops every CABLE_
// variable from its tasks' environments; NODE_OPTIONS, and so the shim, goes everywhere). Each thread
// that loads the guard adds a line to the `threads` file of the same settings, if any: the proof that
// it reached Artillery's worker threads.
import dgram from "node:dgram";
import dns from "node:dns";
import fs from "node:fs";
import net from "node:net";
import nodeModule from "node:module";
import os from "node:os";
import workerThreads from "node:worker_threads";

/** What a preload shim (networkGuard()) passes to the guard of its process and of each thread. */
export interface GuardSettings {
  /** Where refused attempts are appended; CABLE_NETWORK_GUARD_LOG wins. */
  log?: string;
  /** Where each thread that loaded the guard appends a line. */
  threads?: string;
  /** The file given to --require (the shim, or this file): what a Worker without it gets added. */
  preload?: string;
}

export interface GuardViolation {
  event: "refused";
  /** net.connect (an IP literal), lookup (a name's answer), dgram.send, dgram.connect; tcp_wrap, udp_wrap (beneath them). */
  via: string;
  host: string;
  address: string;
  port: number | string | undefined;
  pid: number;
  thread: number;
  at: string;
  stack: string;
}

/** The error a refused connect ends with: an upper-case code, as a socket error's. */
export const GUARD_CODE = "ERR_TEST_NETWORK_GUARD";

const SETTINGS = Symbol.for("cable-test-servers.network-guard");
const INSTALLED = Symbol.for("cable-test-servers.network-guard.installed");

const allowed = new net.BlockList();
allowed.addSubnet("127.0.0.0", 8, "ipv4");
allowed.addAddress("::1", "ipv6");

/** Whether an IP literal is loopback (IPv4-mapped forms of 127/8 too; a zone id is ignored). */
export function isLoopback(ip: string): boolean {
  const bare = ip.replace(/%.*$/, "");
  const family = net.isIP(bare);
  if (family === 0) return false;
  return allowed.check(bare, family === 6 ? "ipv6" : "ipv4");
}

function settings(): GuardSettings {
  const given = (globalThis as Record<symbol, GuardSettings | undefined>)[SETTINGS] ?? {};
  return { ...given, log: process.env.CABLE_NETWORK_GUARD_LOG || given.log };
}

function append(file: string | undefined, entry: object): void {
  const line = JSON.stringify(entry) + "\n";
  try {
    if (file) fs.appendFileSync(file, line);
    else process.stderr.write(`[network guard] ${line}`);
  } catch {
    // The guard refuses whether or not it could write: the test also sees the refused connect's error.
  }
}

function refusal(via: string, host: string, address: string, port: number | string | undefined): NodeJS.ErrnoException {
  const entry: GuardViolation = {
    event: "refused",
    via,
    host,
    address,
    port,
    pid: process.pid,
    thread: workerThreads.threadId,
    at: new Date().toISOString(),
    stack: (new Error().stack ?? "").split("\n").slice(1, 16).join("\n"),
  };
  append(settings().log, entry);
  const where = host === address ? address : `${host} (${address})`;
  return Object.assign(new Error(`network guard: refused ${via} to ${where}:${port ?? ""}, not a loopback address`), { code: GUARD_CODE });
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address?: string | dns.LookupAddress[], family?: number) => void;
type Lookup = (hostname: string, options: dns.LookupOptions, callback: LookupCallback) => void;

/** The lookup net will call, refusing an answer that holds any address off loopback; the answer itself is passed on unchanged. */
function guardLookup(lookup: Lookup, port: number | string | undefined): Lookup {
  return function guardedLookup(hostname, options, callback) {
    if (typeof options === "function") {
      callback = options as LookupCallback;
      options = {};
    }
    lookup(hostname, options, (err, address, family) => {
      if (err) return callback(err, address, family);
      const list = Array.isArray(address) ? address : [{ address: String(address), family: family ?? 0 }];
      const off = list.find((a) => !isLoopback(a.address));
      if (off) return callback(refusal("lookup", hostname, off.address, port));
      callback(null, address, family);
    });
  };
}

interface ConnectOptions {
  host?: string;
  port?: number | string;
  path?: string;
  lookup?: Lookup;
}

function installNet(): void {
  const original = net.Socket.prototype.connect as (this: net.Socket, ...args: unknown[]) => net.Socket;
  const guarded = function connect(this: net.Socket, ...args: unknown[]): net.Socket {
    // net.connect and tls.connect pass [options, callback] marked normalized (an internal symbol
    // that is kept on the copy); a caller of socket.connect passes (options | port, host?, cb?) or (path, cb?).
    const normalized = Array.isArray(args[0]) ? (args[0] as unknown[]) : undefined;
    let options: ConnectOptions;
    let rest: unknown[];
    if (normalized) {
      options = (normalized[0] ?? {}) as ConnectOptions;
      rest = [];
    } else if (args[0] !== null && typeof args[0] === "object") {
      options = args[0] as ConnectOptions;
      rest = args.slice(1);
    } else if (typeof args[0] === "string" && !/^\d+$/.test(args[0])) {
      options = { path: args[0] };
      rest = args.slice(1);
    } else {
      options = { port: args[0] as number | string, host: typeof args[1] === "string" ? args[1] : undefined };
      rest = args.filter((a) => typeof a === "function");
    }
    // A Unix socket (or a Windows pipe) is this machine's.
    if (options.path !== undefined && options.path !== null) return original.apply(this, args);
    const host = options.host || "localhost";
    if (net.isIP(host.replace(/%.*$/, ""))) {
      if (isLoopback(host)) return original.apply(this, args);
      const err = refusal("net.connect", host, host, options.port);
      process.nextTick(() => this.destroy(err));
      return this;
    }
    // A name: connected to only once its answer is known to be loopback.
    const lookup = guardLookup(options.lookup ?? (dns.lookup as unknown as Lookup), options.port);
    const withLookup = { ...options, lookup };
    if (normalized) {
      const copy: unknown[] = [withLookup, normalized[1]];
      for (const key of Object.getOwnPropertySymbols(normalized)) (copy as unknown as Record<symbol, unknown>)[key] = (normalized as unknown as Record<symbol, unknown>)[key];
      return original.call(this, copy);
    }
    return original.call(this, withLookup, ...rest);
  };
  net.Socket.prototype.connect = guarded as typeof net.Socket.prototype.connect;
}

/** dgram's address argument: the first string after the message (send) or the first string (connect). */
function dgramAddress(args: unknown[], from: number): string | undefined {
  return args.slice(from).find((a): a is string => typeof a === "string");
}

function installDgram(): void {
  const allowedDgram = (address: string | undefined) => address === undefined || address === "localhost" || isLoopback(address);
  const refuseDgram = (socket: dgram.Socket, via: string, address: string, args: unknown[]) => {
    const err = refusal(via, address, address, args.find((a) => typeof a === "number") as number | undefined);
    const callback = [...args].reverse().find((a): a is (e: Error) => void => typeof a === "function");
    process.nextTick(() => (callback ? callback(err) : socket.emit("error", err)));
  };
  const send = dgram.Socket.prototype.send as (this: dgram.Socket, ...args: unknown[]) => void;
  dgram.Socket.prototype.send = function (this: dgram.Socket, ...args: unknown[]) {
    const address = dgramAddress(args, 1);
    if (!allowedDgram(address)) return refuseDgram(this, "dgram.send", address!, args);
    return send.apply(this, args);
  } as typeof dgram.Socket.prototype.send;
  const connect = dgram.Socket.prototype.connect as (this: dgram.Socket, ...args: unknown[]) => void;
  dgram.Socket.prototype.connect = function (this: dgram.Socket, ...args: unknown[]) {
    const address = dgramAddress(args, 0);
    if (!allowedDgram(address)) return refuseDgram(this, "dgram.connect", address!, args);
    return connect.apply(this, args);
  } as typeof dgram.Socket.prototype.connect;
}

/**
 * Beneath net and dgram, the last call before connect(2) and sendto(2): the handles' own connect and
 * send, each given the address it is about to use. Whatever reaches a socket without net's or
 * dgram's public methods, or after a lookup the hooks above did not see, is refused here (EPERM):
 * the hooks above refuse first and name the host, this one catches what they would miss.
 */
function installHandles(): void {
  const EPERM = -os.constants.errno.EPERM;
  const binding = (name: string): Record<string, { prototype: Record<string, unknown> }> | undefined => {
    try {
      return (process as unknown as { binding(name: string): Record<string, { prototype: Record<string, unknown> }> }).binding(name);
    } catch {
      return undefined;
    }
  };
  const wrap = (proto: Record<string, unknown> | undefined, method: string, via: string, at: (args: unknown[]) => { address: unknown; port: unknown } | undefined) => {
    const original = proto?.[method];
    if (!proto || typeof original !== "function") return;
    proto[method] = function (this: unknown, ...args: unknown[]) {
      const target = at(args);
      if (target && typeof target.address === "string" && !isLoopback(target.address)) {
        refusal(via, target.address, target.address, target.port as number);
        return EPERM;
      }
      return original.apply(this, args);
    };
  };
  const tcp = binding("tcp_wrap")?.TCP?.prototype;
  // TCP: connect(req, address, port), connect6 the same.
  for (const m of ["connect", "connect6"]) wrap(tcp, m, "tcp_wrap", (a) => ({ address: a[1], port: a[2] }));
  const udp = binding("udp_wrap")?.UDP?.prototype;
  // UDP: send(req, list, count, port, address, hasCallback), or (req, list, count, hasCallback) once connected; connect(address, port).
  for (const m of ["send", "send6"]) wrap(udp, m, "udp_wrap", (a) => (typeof a[4] === "string" ? { address: a[4], port: a[3] } : undefined));
  for (const m of ["connect", "connect6"]) wrap(udp, m, "udp_wrap", (a) => ({ address: a[0], port: a[1] }));
}

function installWorkers(preload: string): void {
  const Original = workerThreads.Worker;
  const flag = `--require ${JSON.stringify(preload)}`;
  class GuardedWorker extends Original {
    constructor(filename: string | URL, options: workerThreads.WorkerOptions = {}) {
      const env = options.env;
      // No env, or SHARE_ENV: the worker reads this process's NODE_OPTIONS, which holds the preload.
      if (env && env !== workerThreads.SHARE_ENV && typeof env === "object") {
        const given = (env as NodeJS.ProcessEnv).NODE_OPTIONS ?? "";
        if (!given.includes(preload)) options = { ...options, env: { ...(env as NodeJS.ProcessEnv), NODE_OPTIONS: `${given} ${flag}`.trim() } };
      }
      super(filename, options);
    }
  }
  (workerThreads as { Worker: typeof Original }).Worker = GuardedWorker;
  // ESM importers of node:worker_threads see the CJS exports as they were at startup until synced.
  nodeModule.syncBuiltinESMExports();
}

function install(): void {
  const global = globalThis as Record<symbol, unknown>;
  if (global[INSTALLED]) return;
  global[INSTALLED] = true;
  installNet();
  installDgram();
  installHandles();
  const s = settings();
  installWorkers(s.preload ?? __filename);
  if (s.threads) append(s.threads, { event: "loaded", pid: process.pid, thread: workerThreads.threadId, main: workerThreads.isMainThread, script: process.argv[1] ?? "" });
}

install();

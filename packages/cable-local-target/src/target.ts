import { readFileSync } from "node:fs";
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import type { Duplex } from "node:stream";
import { WebSocketServer, type WebSocket } from "ws";
import { broadcastPayloadJson } from "./actioncable/frames.js";
import { ActionCableServer, chooseSubprotocol } from "./actioncable/server.js";
import { Counters, type CounterSnapshot } from "./counters.js";
import { Faults, type FaultConfig } from "./faults.js";
import { handleHttp } from "./http.js";
import { Leak, LEAK_TICK_MS } from "./leak.js";
import { renderMetrics } from "./metrics.js";
import { parseTargetOptions, type TargetOptions } from "./options.js";
import { Partition, type Survivors } from "./partition.js";
import { PusherServer } from "./pusher/server.js";
import { TimerSet } from "./timers.js";

export interface LocalTarget {
  host: string;
  port: number;
  /** `ws://HOST:PORT`, the base of both WebSocket endpoints. */
  url: string;
  /** `ws://HOST:PORT/cable`: Action Cable (and AnyCable `$pubsub`). */
  cableUrl: string;
  /** `ws://HOST:PORT/app/<key>`: Pusher protocol 7 (add `?protocol=7&client=…&version=…` as clients do). */
  pusherUrl: string;
  /** `http://HOST:PORT`: POST /_broadcast, POST /apps/<id>/events, GET /health, GET /metrics. */
  httpUrl: string;
  pusher: { appId: string; key: string; secret: string };
  /** The secret `$pubsub` signed stream names are checked with. */
  streamsSecret: string;
  /** Replaces the fault configuration (validated; throws naming the bad field). */
  setFaults(faults: FaultConfig): void;
  faults(): FaultConfig;
  counters(): CounterSnapshot & { cableConnections: number; pusherConnections: number; leakedBytes: number };
  /** AnyCable-style broadcast to an Action Cable stream; returns the number of subscribers reached. */
  broadcast(stream: string, data: string): number;
  /**
   * Simulates an AnyCable server restart: every Action Cable connection gets
   * `{"type":"disconnect","reason":"server_restart","reconnect":true}` and close 1001, while stream
   * history, cached sessions and presence are kept (so reconnecting `?sid=` clients are restored and
   * can fetch history). `forgetState` also drops them and starts a new epoch, as restarting AnyCable's
   * in-memory broker does. Every Pusher connection gets `pusher:error` code 4200 and close 4200
   * (reconnect immediately). Returns the number of connections dropped, both protocols.
   */
  restart(options?: { forgetState?: boolean }): number;
  /**
   * A silent partition for `ms` (partition.ts): every WebSocket goes quiet both ways without being
   * closed, new upgrades hang; then the survivors are reset, forgotten (silent for good) or resumed.
   * Returns the number of sockets silenced.
   */
  partition(ms: number, survivors: Survivors): number;
  /** The current epoch of the reliable streams (`epoch` in extended-protocol broadcasts). */
  epoch(): string;
  /** Pusher event on a channel; returns the number of subscribers reached. */
  trigger(channel: string, event: string, data: unknown): number;
  /** Terminates every socket and timer; resolves once the port is released. */
  close(): Promise<void>;
}

/** This package's version, from its package.json (beside src/ and dist/ alike). */
function packageVersion(): string {
  try {
    const version = (JSON.parse(readFileSync(path.join(__dirname, "..", "package.json"), "utf8")) as { version?: unknown }).version;
    return typeof version === "string" ? version : "unknown";
  } catch {
    return "unknown";
  }
}

/** What the target says it is in every upgrade answer (`Server:`), as real servers do: the engine counts it, the report names it. */
export const SERVER_SOFTWARE = `cable-local-target/${packageVersion()}`;

/** Maximum inbound frame: bounded so that one client cannot make the target buffer without limit. */
const MAX_PAYLOAD_BYTES = 1024 * 1024;

/** Starts the local target: Action Cable at /cable and Pusher at /app/<key> on one port, plus the HTTP APIs. */
export async function startTarget(input: TargetOptions = {}): Promise<LocalTarget> {
  const options = parseTargetOptions(input);
  const counters = new Counters();
  const faults = new Faults(options.faults);
  const timers = new TimerSet();
  // leakMbPerMinute: checked every tick, so that setFaults can switch it on (or off) at runtime.
  const leak = new Leak(faults);
  timers.interval(() => leak.tick(), LEAK_TICK_MS);
  const cable = new ActionCableServer(
    {
      requireUid: options.cable.requireUid,
      pingIntervalMs: options.cable.pingIntervalMs,
      publicStreams: options.cable.publicStreams,
      streamsSecret: options.cable.streamsSecret,
      streamsWhisper: options.cable.streamsWhisper,
      streamsPresence: options.cable.streamsPresence,
      history: { limit: options.cable.historyLimit, ttlMs: options.cable.historyTtlMs },
      sessionsTtlMs: options.cable.sessionsTtlMs,
      presenceTtlMs: options.cable.presenceTtlMs,
    },
    faults,
    counters,
  );
  const pusher = new PusherServer({ ...options.pusher }, faults, counters);
  const broadcast = (stream: string, data: string) => cable.broadcast(stream, broadcastPayloadJson(data));
  const restart = (restartOptions?: { forgetState?: boolean }) => cable.restart(restartOptions) + pusher.restart();

  const cableWss = new WebSocketServer({ noServer: true, maxPayload: MAX_PAYLOAD_BYTES, handleProtocols: chooseSubprotocol });
  const pusherWss = new WebSocketServer({ noServer: true, maxPayload: MAX_PAYLOAD_BYTES });
  for (const wss of [cableWss, pusherWss]) wss.on("headers", (headers) => headers.push(`Server: ${SERVER_SOFTWARE}`));
  const pendingUpgrades = new Set<Duplex>();
  // Every socket that asked for a WebSocket, for a partition to silence.
  const upgraded = new Set<Duplex>();
  const partitioner = new Partition(timers);
  const partition = (ms: number, survivors: Survivors) => partitioner.begin(upgraded, ms, survivors);

  const server = createServer((request, response) => {
    void handleHttp(request, response, {
      pusher: options.pusher,
      broadcastKey: options.cable.broadcastKey,
      broadcast,
      trigger: (channel, event, data, except) => pusher.trigger(channel, event, data, except),
      health: () => ({ status: "ok", ...counters.snapshot() }),
      metrics: () => renderMetrics({ connections: cable.openConnections + pusher.openConnections, leakedBytes: leak.heldBytes }),
      restart: options.control ? restart : undefined,
      partition: options.control ? partition : undefined,
    });
  });

  const upgrade = (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    pendingUpgrades.delete(socket);
    if (socket.destroyed) return;
    const path = new URL(request.url ?? "/", "http://localhost").pathname;
    const onSocket = (accept: (ws: WebSocket) => void) => (ws: WebSocket) => {
      // A protocol error from a client (bad frame, too large) must close that socket, not crash the target.
      ws.on("error", () => ws.terminate());
      accept(ws);
    };
    if (path === "/cable") {
      cableWss.handleUpgrade(request, socket, head, onSocket((ws) => cable.accept(ws, request)));
    } else if (path.startsWith("/app/")) {
      const key = decodeURIComponent(path.slice("/app/".length));
      pusherWss.handleUpgrade(request, socket, head, onSocket((ws) => pusher.accept(ws, request, key)));
    } else {
      socket.end("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    }
  };

  server.on("upgrade", (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on("error", () => socket.destroy());
    upgraded.add(socket);
    socket.on("close", () => upgraded.delete(socket));
    // During a partition the upgrade hangs: its request was read, its answer never leaves.
    if (partitioner.active) partitioner.hold(socket);
    const delay = faults.config.acceptDelayMs;
    if (!delay) return upgrade(request, socket, head);
    // acceptDelayMs: hold the 101 answer back; the client sees a slow handshake.
    pendingUpgrades.add(socket);
    timers.timeout(() => upgrade(request, socket, head), delay);
  });

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const hostForUrl = options.host.includes(":") ? `[${options.host}]` : options.host;
  const url = `ws://${hostForUrl}:${port}`;

  let closing: Promise<void> | undefined;
  return {
    host: options.host,
    port,
    url,
    cableUrl: `${url}/cable`,
    pusherUrl: `${url}/app/${encodeURIComponent(options.pusher.key)}`,
    httpUrl: `http://${hostForUrl}:${port}`,
    pusher: { appId: options.pusher.appId, key: options.pusher.key, secret: options.pusher.secret },
    streamsSecret: options.cable.streamsSecret,
    setFaults: (config) => faults.set(config),
    faults: () => faults.config,
    counters: () => ({ ...counters.snapshot(), cableConnections: cable.openConnections, pusherConnections: pusher.openConnections, leakedBytes: leak.heldBytes }),
    broadcast,
    restart,
    partition,
    epoch: () => cable.epoch,
    trigger: (channel, event, data) => pusher.trigger(channel, event, data),
    close() {
      closing ??= new Promise<void>((resolve) => {
        timers.clearAll();
        leak.release();
        for (const socket of pendingUpgrades) socket.destroy();
        pendingUpgrades.clear();
        cable.close();
        pusher.close();
        // Sockets refused at connect (no uid, wrong key) are in no protocol server's set; ws tracks them all.
        for (const ws of [...cableWss.clients, ...pusherWss.clients]) ws.terminate();
        cableWss.close();
        pusherWss.close();
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}

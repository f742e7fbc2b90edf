import { existsSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { freePort, spawnServer, type RunningServer } from "./process.js";

export interface SoketiServer extends RunningServer {
  /** `ws://127.0.0.1:PORT`: the WebSocket is at `/app/<key>`, the HTTP API at `/apps/<id>/events`. */
  url: string;
  /** Prometheus metrics (`soketi_connected`, memory, CPU) at `/metrics`. */
  metricsUrl: string;
  appId: string;
  key: string;
  secret: string;
}

export interface SoketiOptions {
  /** Presence members per channel (Soketi's default, 100, unless set). */
  presenceMaxMembers?: number;
}

function cacheDir(): string {
  return process.env.CABLE_CACHE ?? path.join(os.homedir(), ".cache", "cable");
}

/** Soketi's entry point, installed by scripts/setup-test-servers.sh. */
export function soketiEntry(): string {
  return process.env.SOKETI_ENTRY ?? path.join(cacheDir(), "soketi", "node_modules", "@soketi", "soketi", "bin", "server.js");
}

/**
 * The Node that runs Soketi: its uWebSockets.js build has binaries for Node 20 only, so not the
 * project's Node 22 (the machine's system Node, or SOKETI_NODE).
 */
export function soketiNode(): string {
  return process.env.SOKETI_NODE ?? "/usr/bin/node";
}

/** Starts Soketi 1.6.1 (Pusher protocol 7) on loopback with one app that allows client events. */
export async function startSoketi(options: SoketiOptions = {}): Promise<SoketiServer> {
  const entry = soketiEntry();
  if (!existsSync(entry)) throw new Error(`soketi is not installed at ${entry}: run \`bash scripts/setup-test-servers.sh\``);
  const node = soketiNode();
  if (!existsSync(node)) throw new Error(`soketi needs Node 20 at ${node} (its uWebSockets.js has no Node 22 build): install it or set SOKETI_NODE`);
  const [port, metricsPort] = [await freePort(), await freePort()];
  const app = { appId: "cable-test", key: "cable-test-key", secret: "cable-test-secret" };
  const server = await spawnServer({
    command: node,
    args: [entry, "start"],
    port,
    // Soketi waits for its connections to close after SIGTERM.
    killSignal: "SIGKILL",
    env: {
      SOKETI_HOST: "127.0.0.1",
      SOKETI_PORT: String(port),
      SOKETI_METRICS_SERVER_PORT: String(metricsPort),
      SOKETI_METRICS_ENABLED: "true",
      SOKETI_DEFAULT_APP_ID: app.appId,
      SOKETI_DEFAULT_APP_KEY: app.key,
      SOKETI_DEFAULT_APP_SECRET: app.secret,
      SOKETI_DEFAULT_APP_ENABLE_CLIENT_MESSAGES: "true",
      SOKETI_DEFAULT_APP_MAX_CONNS: "-1",
      ...(options.presenceMaxMembers ? { SOKETI_PRESENCE_MAX_MEMBERS: String(options.presenceMaxMembers) } : {}),
    },
  });
  return { ...server, ...app, url: `ws://127.0.0.1:${port}`, metricsUrl: `http://127.0.0.1:${metricsPort}/metrics` };
}

import { existsSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { freePort, spawnServer, type RunningServer } from "./process.js";

export interface AnyCableOptions {
  /** `--public`: every connection and every public `$pubsub` stream accepted. Default: true without an RPC app. */
  public?: boolean;
  /** `--streams_secret`: signed `$pubsub` streams are verified with it (whispers allowed on them too). */
  streamsSecret?: string;
  /** `--broker=memory`: reliable streams (history, session restore) and presence. */
  broker?: "memory";
  /** `--broadcast_key`: the HTTP broadcast endpoint asks for `Authorization: Bearer <key>`. */
  broadcastKey?: string;
  /** Pusher mode: the Pusher protocol at `/app/<key>` and its HTTP API on the main port. */
  pusher?: { appId: string; key: string; secret: string };
  /** `--rpc_host`: an HTTP RPC app (startAnyCableRails); without it, `--norpc`. */
  rpcUrl?: string;
  /** The HTTP broadcast endpoint's port (default a free one): an RPC app started first must know it. */
  broadcastPort?: number;
  /** More flags, e.g. `["--sessions_ttl=60"]`. */
  args?: string[];
}

export interface AnyCableServer extends RunningServer {
  /** `ws://127.0.0.1:PORT/cable` */
  url: string;
  /** `ws://127.0.0.1:PORT`: Pusher mode's socket host (the engine adds `/app/<key>`). */
  pusherUrl: string;
  /** `http://127.0.0.1:B/_broadcast`: the HTTP broadcast endpoint (its own port). */
  broadcastUrl: string;
  streamsSecret?: string;
  pusher?: { appId: string; key: string; secret: string };
}

export function anycableBinary(): string {
  const cache = process.env.CABLE_CACHE ?? path.join(os.homedir(), ".cache", "cable");
  return process.env.ANYCABLE_GO_BIN ?? path.join(cache, "anycable", "bin", "anycable-go");
}

/**
 * Starts anycable-go 1.6.16 (built by scripts/setup-test-servers.sh) on loopback, standalone (no RPC
 * server), telemetry off, with the HTTP broadcast endpoint on a port of its own. `kill()` and
 * `restart()` crash it and bring it back on the same ports; a memory broker's state dies with it.
 */
export async function startAnyCable(options: AnyCableOptions = {}): Promise<AnyCableServer> {
  const bin = anycableBinary();
  if (!existsSync(bin)) {
    throw new Error(`anycable-go is not built at ${bin}: run \`bash scripts/setup-test-servers.sh\` (it builds it once from ../shared/vendor)`);
  }
  const [port, broadcastPort] = [await freePort(), options.broadcastPort ?? (await freePort())];
  const args = [
    "--host=127.0.0.1",
    `--port=${port}`,
    "--broadcast_adapter=http",
    `--http_broadcast_port=${broadcastPort}`,
    "--log_level=error",
    options.rpcUrl ? `--rpc_host=${options.rpcUrl}` : "--norpc",
  ];
  if (options.public ?? !options.rpcUrl) args.push("--public");
  if (options.streamsSecret) args.push(`--streams_secret=${options.streamsSecret}`, "--streams_whisper");
  if (options.broker) args.push(`--broker=${options.broker}`);
  if (options.broadcastKey) args.push(`--broadcast_key=${options.broadcastKey}`);
  if (options.pusher) {
    args.push(`--pusher_app_id=${options.pusher.appId}`, `--pusher_app_key=${options.pusher.key}`, `--pusher_secret=${options.pusher.secret}`);
  }
  args.push(...(options.args ?? []));
  const server = await spawnServer({
    command: bin,
    args,
    port,
    // It drains for up to --shutdown_timeout (30 s) after SIGTERM; tests need no grace.
    killSignal: "SIGKILL",
    env: { ANYCABLE_DISABLE_TELEMETRY: "true" },
  });
  return {
    ...server,
    url: `ws://127.0.0.1:${port}/cable`,
    pusherUrl: `ws://127.0.0.1:${port}`,
    broadcastUrl: `http://127.0.0.1:${broadcastPort}/_broadcast`,
    streamsSecret: options.streamsSecret,
    pusher: options.pusher,
  };
}

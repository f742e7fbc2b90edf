import { existsSync } from "node:fs";
import path from "node:path";
import { startAnyCable, type AnyCableServer } from "./anycable.js";
import { freePort, spawnServer, type RunningServer } from "./process.js";

export interface RailsServer extends RunningServer {
  /** `ws://127.0.0.1:PORT/cable` */
  url: string;
}

const configRu = path.resolve(__dirname, "../rails/config.ru");

/**
 * Starts Rails Action Cable 6.1 (Debian's ruby-actioncable) under puma on loopback, with the channels
 * of rails/config.ru: ChatChannel, BenchmarkChannel, RejectChannel, and a `uid` cookie check (and,
 * at /_anycable, the same channels as AnyCable's HTTP RPC).
 */
export async function startRails(options: { threads?: string; anycableBroadcastUrl?: string } = {}): Promise<RailsServer> {
  if (!existsSync("/usr/bin/puma")) {
    throw new Error("puma is not installed: run `bash scripts/setup-test-servers.sh` (it installs ruby-actioncable and puma)");
  }
  const port = await freePort();
  const server = await spawnServer({
    command: "puma",
    args: ["-b", `tcp://127.0.0.1:${port}`, "-t", options.threads ?? "8:32", "--quiet", configRu],
    port,
    env: { RACK_ENV: "production", ...(options.anycableBroadcastUrl ? { ANYCABLE_BROADCAST_URL: options.anycableBroadcastUrl } : {}) },
  });
  return { ...server, url: `ws://127.0.0.1:${port}/cable` };
}

export interface AnyCableRailsServer extends AnyCableServer {
  /** The RPC app (puma): its pid belongs to the server's figures beside anycable-go's. */
  rpc: RailsServer;
}

/**
 * AnyCable as a Rails app runs it: anycable-go in front, the channels of rails/config.ru behind its
 * HTTP RPC (`/_anycable`, the stand-in for anycable-rails), broadcasts through anycable-go's HTTP
 * endpoint. The same scenario runs here and on startRails().
 */
export async function startAnyCableRails(options: { threads?: string } = {}): Promise<AnyCableRailsServer> {
  const broadcastPort = await freePort();
  const rpc = await startRails({ ...options, anycableBroadcastUrl: `http://127.0.0.1:${broadcastPort}/_broadcast` });
  try {
    const server = await startAnyCable({ rpcUrl: `http://127.0.0.1:${rpc.port}/_anycable`, broadcastPort });
    return {
      ...server,
      rpc,
      stop: async () => {
        await Promise.all([server.stop(), rpc.stop()]);
      },
    };
  } catch (err) {
    await rpc.stop();
    throw err;
  }
}

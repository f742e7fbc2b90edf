import { existsSync } from "node:fs";
import path from "node:path";
import { freePort, spawnServer, type RunningServer } from "./process.js";

export interface RailsServer extends RunningServer {
  /** `ws://127.0.0.1:PORT/cable` */
  url: string;
}

const configRu = path.resolve(__dirname, "../rails/config.ru");

/**
 * Starts Rails Action Cable 6.1 (Debian's ruby-actioncable) under puma on loopback, with the channels
 * of rails/config.ru: ChatChannel, BenchmarkChannel, RejectChannel, and a `uid` cookie check.
 */
export async function startRails(options: { threads?: string } = {}): Promise<RailsServer> {
  if (!existsSync("/usr/bin/puma")) {
    throw new Error("puma is not installed: run `bash scripts/setup-test-servers.sh` (it installs ruby-actioncable and puma)");
  }
  const port = await freePort();
  const server = await spawnServer({
    command: "puma",
    args: ["-b", `tcp://127.0.0.1:${port}`, "-t", options.threads ?? "8:32", "--quiet", configRu],
    port,
    env: { RACK_ENV: "production" },
  });
  return { ...server, url: `ws://127.0.0.1:${port}/cable` };
}

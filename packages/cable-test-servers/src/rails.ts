import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
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
export async function startRails(options: RailsOptions = {}): Promise<RailsServer> {
  if (!existsSync("/usr/bin/puma")) {
    throw new Error("puma is not installed: run `bash scripts/setup-test-servers.sh` (it installs ruby-actioncable and puma)");
  }
  const port = await freePort();
  const checked = options.allowedRequestOrigins ? originCheckedApp() : undefined;
  try {
    const server = await spawnServer({
      command: "puma",
      args: ["-b", `tcp://127.0.0.1:${port}`, "-t", options.threads ?? "8:32", "--quiet", checked?.rackup ?? configRu],
      port,
      env: {
        RACK_ENV: "production",
        ...(options.anycableBroadcastUrl ? { ANYCABLE_BROADCAST_URL: options.anycableBroadcastUrl } : {}),
        ...(options.allowedRequestOrigins ? { CABLE_ALLOWED_ORIGINS: JSON.stringify(options.allowedRequestOrigins) } : {}),
      },
    });
    return {
      ...server,
      url: `ws://127.0.0.1:${port}/cable`,
      stop: async () => {
        await server.stop();
        checked?.remove();
      },
    };
  } catch (err) {
    checked?.remove();
    throw err;
  }
}

export interface RailsOptions {
  threads?: string;
  anycableBroadcastUrl?: string;
  /**
   * Turns Action Cable's request-origin check on (rails/config.ru turns it off), as a production app
   * has it: `config.action_cable.allowed_request_origins` = these, and `allow_same_origin_as_host`
   * off, so that only these pass (the engine's default Origin, the target's own, is the host's).
   */
  allowedRequestOrigins?: string[];
}

/**
 * rails/config.ru with the origin check on, without changing it for every other test: a rackup in a
 * temporary directory that evaluates it as puma would (same binding: its constants stay top-level)
 * and then sets the check from CABLE_ALLOWED_ORIGINS (JSON). Action Cable reads these per request.
 */
function originCheckedApp(): { rackup: string; remove(): void } {
  const dir = mkdtempSync(path.join(os.tmpdir(), "rails-origins-"));
  const rackup = path.join(dir, "config.ru");
  writeFileSync(
    rackup,
    [
      "# Written by cable-test-servers (src/rails.ts): the harness app with Action Cable's origin check on.",
      `harness_config_ru = ${JSON.stringify(configRu)}`,
      "eval File.read(harness_config_ru), binding, harness_config_ru",
      'require "json"',
      "ActionCable.server.config.disable_request_forgery_protection = false",
      "ActionCable.server.config.allow_same_origin_as_host = false",
      'ActionCable.server.config.allowed_request_origins = JSON.parse(ENV.fetch("CABLE_ALLOWED_ORIGINS"))',
      "",
    ].join("\n"),
  );
  return { rackup, remove: () => rmSync(dir, { recursive: true, force: true }) };
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

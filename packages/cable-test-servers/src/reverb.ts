import { existsSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { freePort, spawnServer, type RunningServer } from "./process.js";

export interface ReverbServer extends RunningServer {
  /** `ws://127.0.0.1:PORT`: the WebSocket is at `/app/<key>`, the HTTP API at `/apps/<id>/events`. */
  url: string;
  appId: string;
  key: string;
  secret: string;
}

/** The offline Laravel 11 app with Reverb 1.10.2, unpacked by scripts/setup-test-servers.sh. */
export function reverbApp(): string {
  const cache = process.env.CABLE_CACHE ?? path.join(os.homedir(), ".cache", "cable");
  return process.env.REVERB_APP_DIR ?? path.join(cache, "reverb", "reverb");
}

/** Starts Laravel Reverb 1.10.2 (Pusher protocol 7) on loopback, client events from all. */
export async function startReverb(): Promise<ReverbServer> {
  const app = reverbApp();
  const script = path.join(app, "start.sh");
  if (!existsSync(script)) throw new Error(`reverb is not unpacked at ${app}: run \`bash scripts/setup-test-servers.sh\``);
  const port = await freePort();
  const creds = { appId: "cable-test", key: "cable-test-key", secret: "cable-test-secret" };
  const server = await spawnServer({
    command: "bash",
    // start.sh execs php: the signals reach Reverb itself.
    args: [script, String(port), creds.appId, creds.key, creds.secret],
    port,
    env: { REVERB_APP_DIR: app },
  });
  return { ...server, ...creds, url: `ws://127.0.0.1:${port}` };
}

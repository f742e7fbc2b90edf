import { existsSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { freePort, spawnServer, type RunningServer } from "./process.js";

export interface SockudoServer extends RunningServer {
  /** `ws://127.0.0.1:PORT`: the WebSocket is at `/app/<key>`, the HTTP API at `/apps/<id>/events`. */
  url: string;
  appId: string;
  key: string;
  secret: string;
}

export function sockudoBinary(): string {
  const cache = process.env.CABLE_CACHE ?? path.join(os.homedir(), ".cache", "cable");
  return process.env.SOCKUDO_BIN ?? path.join(cache, "sockudo", "bin", "sockudo");
}

/** Starts Sockudo (Pusher protocol 7) on loopback with one app that allows client events. */
export async function startSockudo(): Promise<SockudoServer> {
  const bin = sockudoBinary();
  if (!existsSync(bin)) {
    throw new Error(`sockudo is not built at ${bin}: run \`bash scripts/setup-test-servers.sh\` (it builds it once from crates.io)`);
  }
  const [port, metricsPort] = [await freePort(), await freePort()];
  const app = { appId: "cable-test", key: "cable-test-key", secret: "cable-test-secret" };
  // Sockudo reads config/config.toml from its working directory when present: start it where there is none.
  const cwd = mkdtempSync(path.join(os.tmpdir(), "sockudo-"));
  const server = await spawnServer({
    command: bin,
    args: [],
    cwd,
    port,
    killSignal: "SIGKILL", // it would wait a 10 s grace period after SIGTERM
    env: {
      HOST: "127.0.0.1",
      PORT: String(port),
      METRICS_HOST: "127.0.0.1",
      METRICS_PORT: String(metricsPort),
      SOCKUDO_DEFAULT_APP_ID: app.appId,
      SOCKUDO_DEFAULT_APP_KEY: app.key,
      SOCKUDO_DEFAULT_APP_SECRET: app.secret,
      SOCKUDO_DEFAULT_APP_ENABLE_CLIENT_MESSAGES: "true",
      SOCKUDO_DEFAULT_APP_MAX_CONNECTIONS: "100000",
      ADAPTER_DRIVER: "local",
      CACHE_DRIVER: "memory",
      QUEUE_DRIVER: "none",
      APP_MANAGER_DRIVER: "memory",
      RATE_LIMITER_ENABLED: "false",
    },
  });
  return {
    ...server,
    ...app,
    url: `ws://127.0.0.1:${port}`,
    stop: async () => {
      await server.stop();
      rmSync(cwd, { recursive: true, force: true });
    },
  };
}

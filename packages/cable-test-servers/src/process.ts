import { spawn, type ChildProcess } from "node:child_process";
import net from "node:net";

export interface RunningServer {
  port: number;
  stop(): Promise<void>;
  /** What the server printed, for assertion messages. */
  output(): string;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host: "127.0.0.1" });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

export interface SpawnOptions {
  command: string;
  args: string[];
  port: number;
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** How long the server may take to accept TCP connections. */
  startTimeoutMs?: number;
  /** Set for servers with a long graceful shutdown (Sockudo waits 10 s after SIGTERM). */
  killSignal?: NodeJS.Signals;
}

/** Spawns a server and resolves once its port accepts connections; rejects with its output if it dies or stalls. */
export async function spawnServer(options: SpawnOptions): Promise<RunningServer> {
  const { command, args, port, cwd, env, startTimeoutMs = 30_000, killSignal = "SIGTERM" } = options;
  let log = "";
  const child: ChildProcess = spawn(command, args, { cwd, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  const append = (chunk: Buffer) => {
    log += chunk.toString();
    if (log.length > 64_000) log = log.slice(-32_000);
  };
  child.stdout?.on("data", append);
  child.stderr?.on("data", append);
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  let spawnError: Error | undefined;
  child.once("error", (err) => (spawnError = err));

  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill(killSignal);
    const timer = setTimeout(() => child.kill("SIGKILL"), 3_000);
    await exited;
    clearTimeout(timer);
  };

  const deadline = Date.now() + startTimeoutMs;
  while (Date.now() < deadline) {
    if (spawnError) throw new Error(`${command} could not start: ${spawnError.message}`);
    if (child.exitCode !== null) throw new Error(`${command} exited with ${child.exitCode} before listening:\n${log}`);
    if (await canConnect(port)) return { port, stop, output: () => log };
    await new Promise((r) => setTimeout(r, 100));
  }
  await stop();
  throw new Error(`${command} did not listen on 127.0.0.1:${port} within ${startTimeoutMs} ms:\n${log}`);
}

import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import net from "node:net";

export interface RunningServer {
  port: number;
  stop(): Promise<void>;
  /** What the server printed, for assertion messages. */
  output(): string;
  /** `kill -9`, as a crash: resolves once the process has exited and the port is closed. */
  kill(): Promise<void>;
  /** Starts the server again on the same port, with the same arguments; resolves once it listens. */
  restart(): Promise<void>;
  /** The running process's id (a restart gets a new one); undefined once it has exited. */
  pid(): number | undefined;
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
  /**
   * Starts the server as the leader of its own process group and signals the whole group, for
   * servers that fork workers (PHP's built-in server with PHP_CLI_SERVER_WORKERS): signalling the
   * leader alone leaves its workers holding the port.
   */
  processGroup?: boolean;
}

/**
 * Whether a process of the group still runs. Zombies do not count: they hold no port, and an init
 * that reaps lazily (this machine's takes a second or more) would otherwise stall every stop().
 */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
  } catch {
    return false;
  }
  if (!existsSync("/proc/self/stat")) return true;
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      // After the command's closing parenthesis: state, ppid, pgrp.
      const [state, , pgrp] = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ").pop()!.split(" ");
      if (Number(pgrp) === pgid && state !== "Z") return true;
    } catch {
      // exited while we looked
    }
  }
  return false;
}

interface Started {
  child: ChildProcess;
  exited: Promise<void>;
}

/**
 * Spawns a server and resolves once its port accepts connections; rejects with its output if it dies
 * or stalls. The server can be killed (-9) and started again on the same port, for restart tests.
 */
export async function spawnServer(options: SpawnOptions): Promise<RunningServer> {
  const { command, args, port, cwd, env, startTimeoutMs = 30_000, killSignal = "SIGTERM", processGroup = false } = options;
  let log = "";
  const append = (chunk: Buffer) => {
    log += chunk.toString();
    if (log.length > 64_000) log = log.slice(-32_000);
  };
  let current: Started | undefined;

  const running = (s: Started | undefined): s is Started => !!s && s.child.exitCode === null && s.child.signalCode === null;
  const signal = (s: Started, sig: NodeJS.Signals) => {
    if (!processGroup || s.child.pid === undefined) return void s.child.kill(sig);
    try {
      process.kill(-s.child.pid, sig);
    } catch {
      // ESRCH: the group is gone already.
    }
  };
  const end = async (sig: NodeJS.Signals) => {
    const s = current;
    if (!running(s)) {
      // A leader that died on its own may have left workers behind.
      if (s && processGroup) signal(s, "SIGKILL");
      return;
    }
    signal(s, sig);
    const timer = setTimeout(() => signal(s, "SIGKILL"), 3_000);
    await s.exited;
    clearTimeout(timer);
    // Workers that outlive their leader would keep the port: the group goes with it, and stop()
    // resolves once the last of them is gone.
    if (processGroup && s.child.pid !== undefined) {
      signal(s, "SIGKILL");
      const deadline = Date.now() + 3_000;
      while (groupAlive(s.child.pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    }
  };

  const start = async () => {
    const child: ChildProcess = spawn(command, args, {
      cwd,
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
      detached: processGroup,
    });
    child.stdout?.on("data", append);
    child.stderr?.on("data", append);
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    let spawnError: Error | undefined;
    child.once("error", (err) => (spawnError = err));
    current = { child, exited };
    const deadline = Date.now() + startTimeoutMs;
    while (Date.now() < deadline) {
      if (spawnError) throw new Error(`${command} could not start: ${spawnError.message}`);
      if (child.exitCode !== null) throw new Error(`${command} exited with ${child.exitCode} before listening:\n${log}`);
      if (await canConnect(port)) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    await end(killSignal);
    throw new Error(`${command} did not listen on 127.0.0.1:${port} within ${startTimeoutMs} ms:\n${log}`);
  };

  await start();
  return {
    port,
    stop: () => end(killSignal),
    output: () => log,
    kill: () => end("SIGKILL"),
    restart: async () => {
      if (running(current)) throw new Error(`${command} is still running on ${port}: kill it first`);
      await start();
    },
    pid: () => (running(current) ? current.child.pid : undefined),
  };
}

// The local target in a process of its own, so that its CPU is never counted as the load
// generator's. It is the built CLI of packages/cable-local-target.
import { createRequire } from "node:module";
import path from "node:path";
import { exitWithin, sleep, spawnWithFileLimit } from "./proc.mjs";

const require = createRequire(import.meta.url);

/** `cpus`: pin the target to these cores (taskset), e.g. for the replay with the generator on the other. */
export async function startTarget({ cpus } = {}) {
  const cli = path.join(path.dirname(require.resolve("cable-local-target/package.json")), "dist", "cli.js");
  const child = spawnWithFileLimit([process.execPath, cli, "--allow-anonymous", "--host", "127.0.0.1", "--port", "0"], {
    stdio: ["ignore", "pipe", "inherit"],
    cpus,
  });
  const urls = await new Promise((resolve, reject) => {
    let out = "";
    child.stdout.on("data", (chunk) => {
      out += chunk;
      if (out.includes("\n")) resolve(JSON.parse(out.split("\n")[0]));
    });
    child.once("exit", (code) => reject(new Error(`the local target exited with ${code} before listening (is it built? npm run build -w cable-local-target)`)));
  });
  return new Target(child, urls);
}

export class Target {
  constructor(child, urls) {
    this.name = "local target";
    this.child = child;
    this.cableUrl = urls.cableUrl;
    this.httpUrl = urls.httpUrl;
    /** AnyCable's broadcast endpoint, which the local target serves on its own port. */
    this.broadcastUrl = `${urls.httpUrl}/_broadcast`;
    /** What every listening user subscribes to: the identifier's fields, streaming `all`. */
    this.channel = { channel: "BenchmarkChannel" };
  }

  /** The target's counters (GET /health): connectionsOpen, framesIn, framesOut, … */
  async health() {
    const res = await fetch(`${this.httpUrl}/health`);
    if (!res.ok) throw new Error(`GET /health answered ${res.status}`);
    return res.json();
  }

  /** The counters a measurement starts from: the local target's are exact at once. */
  async baseline() {
    return this.health();
  }

  /** One AnyCable-style broadcast (POST /_broadcast); `data` is the message object. */
  async broadcast(stream, data) {
    const res = await fetch(this.broadcastUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ stream, data: JSON.stringify(data) }),
    });
    if (res.status !== 201) throw new Error(`POST /_broadcast answered ${res.status}: ${await res.text()}`);
  }

  /**
   * Polls /health until `ready(counters)` or the deadline; returns the last counters and whether
   * they were ready. `abandon()` ends the wait early (the subject died).
   */
  async waitFor(ready, { deadline, pollMs = 100, abandon = () => false }) {
    for (;;) {
      const counters = await this.health();
      if (ready(counters)) return { counters, ready: true };
      if (Date.now() > deadline || abandon()) return { counters, ready: false };
      await sleep(pollMs);
    }
  }

  async stop() {
    this.child.kill("SIGTERM");
    await exitWithin(this.child, 5_000);
  }
}

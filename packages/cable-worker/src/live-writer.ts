/**
 * How the worker's Artillery plugins (cable-live, cable-capacity-probe) write into the run's store
 * from Artillery's main thread: never awaited where Artillery emits (a slow store must not hold up a
 * period), the first failure logged once, and every write settled before Artillery exits (its
 * `beforeExit` hook waits for them: Artillery exits right after `done`).
 */
import { type Redact, redactJson } from "./redact.js";
import type { Store } from "./store.js";

interface ArtilleryGlobal {
  log(message: string, level?: string): void;
  ext(extension: { ext: "beforeExit" | "onShutdown"; method: (event: unknown) => Promise<void> }): void;
}

export function artilleryGlobal(): ArtilleryGlobal | undefined {
  return (global as unknown as { artillery?: ArtilleryGlobal }).artillery;
}

/** Artillery's own log, which the task's output carries. */
export function artilleryLog(message: string, level: string): void {
  artilleryGlobal()?.log(message, level);
}

/** The run's store, from the worker's environment; loaded on demand: it pulls in the S3 SDK, which no worker thread needs. */
export function openTaskStore(storeUrl: string): Store {
  const { openStore } = require("./open-store.js") as typeof import("./open-store.js");
  return openStore(storeUrl, { s3Client: () => new (require("@aws-sdk/client-s3") as typeof import("@aws-sdk/client-s3")).S3Client({}) });
}

export class LiveWriter {
  private readonly pending = new Set<Promise<void>>();
  private warned = false;

  constructor(
    private readonly store: Store,
    /** The plugin's name, for its log lines. */
    private readonly plugin: string,
    /** The run's secrets, as the worker named them in Artillery's environment (redactorFromEnv). */
    private readonly redact: Redact,
  ) {
    artilleryGlobal()?.ext({ ext: "beforeExit", method: () => Promise.all(this.pending).then(() => undefined) });
  }

  put(key: string, value: unknown): void {
    const write = this.store.putText(key, JSON.stringify(redactJson(value, this.redact))).catch((err: Error) => {
      if (this.warned) return;
      this.warned = true;
      artilleryLog(`${this.plugin}: could not write ${key}: ${err.message}`, "error");
    });
    this.pending.add(write);
    void write.finally(() => this.pending.delete(write));
  }
}

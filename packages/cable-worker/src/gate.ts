/** The worker's side of the start gate (see artillery-plugin-cable-start-gate.ts). */
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { GATE_FILES } from "./artillery-plugin-cable-start-gate.js";

export const GATE_PLUGIN = "cable-start-gate";

export class StartGate {
  constructor(readonly dir: string) {
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
  }

  /** What Artillery's environment needs for the plugin to load and find this gate (ARTILLERY_PLUGIN_PATH: see artilleryTaskEnv). */
  env(base: NodeJS.ProcessEnv, timeoutMs: number): NodeJS.ProcessEnv {
    let plugins: Record<string, unknown> = {};
    try {
      plugins = base.ARTILLERY_PLUGINS ? (JSON.parse(base.ARTILLERY_PLUGINS) as Record<string, unknown>) : {};
    } catch {
      plugins = {};
    }
    return {
      ARTILLERY_PLUGINS: JSON.stringify({ ...plugins, [GATE_PLUGIN]: {} }),
      CABLE_GATE_DIR: this.dir,
      CABLE_GATE_TIMEOUT_MS: String(timeoutMs),
    };
  }

  loaded(): boolean {
    return existsSync(path.join(this.dir, GATE_FILES.loaded));
  }

  open(startAt: number): void {
    writeFileSync(path.join(this.dir, `${GATE_FILES.go}.tmp`), String(startAt));
    // Renamed into place so the plugin never reads half a number.
    renameSync(path.join(this.dir, `${GATE_FILES.go}.tmp`), path.join(this.dir, GATE_FILES.go));
  }

  cancel(): void {
    try {
      writeFileSync(path.join(this.dir, GATE_FILES.cancel), "");
    } catch {
      // The gate directory is gone: nothing waits at it.
    }
  }

  /** When the plugin let Artillery go (epoch ms), if it did. */
  releasedAt(): number | null {
    try {
      const value = Number(readFileSync(path.join(this.dir, GATE_FILES.released), "utf8"));
      return Number.isFinite(value) ? value : null;
    } catch {
      return null;
    }
  }
}

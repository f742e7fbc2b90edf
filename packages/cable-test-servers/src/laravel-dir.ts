import { cp, mkdir, mkdtemp, readdir, symlink, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";

/** This package's Laravel app: the files it lays over the vendored Reverb app. */
export const laravelOverlay = path.resolve(__dirname, "../laravel-app");

// Caches that would pin a copy to the base app's settings, or to its paths.
const STALE = new Set(["config.php", "routes-v7.php", "events.php"]);

/**
 * A private copy of the unpacked Reverb app with laravel-app/ laid over it, in a temp dir: its own
 * .env, sqlite file, storage/ and login log, so parallel starts never share state and the shared
 * app that startReverb() runs from is never written to.
 *
 * vendor/ is linked package by package, not copied (60 MB) nor linked whole: Composer's autoloader
 * finds the app's classes relative to `__DIR__` of vendor/composer/, and PHP resolves symlinks in
 * `__DIR__`, so a linked vendor/composer/ would load App\ classes from the base app. That one
 * directory (1 MB) and vendor/autoload.php are copied.
 */
export async function makeLaravelDir(base: string): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "cable-laravel-"));
  for (const entry of await readdir(base)) {
    if (entry === "vendor" || entry === "storage" || entry === ".env") continue;
    await cp(path.join(base, entry), path.join(dir, entry), {
      recursive: true,
      filter: (src) => !(path.basename(path.dirname(src)) === "cache" && STALE.has(path.basename(src))) && !/\.sqlite/.test(path.basename(src)),
    });
  }

  const vendor = path.join(dir, "vendor");
  await mkdir(vendor);
  for (const entry of await readdir(path.join(base, "vendor"))) {
    const from = path.join(base, "vendor", entry);
    if (entry === "composer" || entry === "autoload.php") await cp(from, path.join(vendor, entry), { recursive: true });
    else await symlink(from, path.join(vendor, entry));
  }

  for (const sub of ["app/public", "framework/cache/data", "framework/sessions", "framework/views", "logs"]) {
    await mkdir(path.join(dir, "storage", sub), { recursive: true });
  }
  await cp(laravelOverlay, dir, { recursive: true });
  await writeFile(path.join(dir, "database", "database.sqlite"), "");
  return dir;
}

/** `.env` for a human who runs artisan in the copy; the processes get the same values as real variables. */
export function dotenv(env: Record<string, string>): string {
  return Object.entries(env)
    .map(([k, v]) => `${k}=${/^[\w./:+=-]*$/.test(v) ? v : JSON.stringify(v)}`)
    .join("\n") + "\n";
}

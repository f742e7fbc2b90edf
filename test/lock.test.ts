import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

// `npm ci` on a teammate's Mac or Windows laptop installs rollup's native package from the lock;
// a lock regenerated where the registry lacks them would silently drop those entries. Rollup is
// pinned in the root package.json's `overrides` to a version whose packages the registry serves.
const PLATFORMS = ["darwin-arm64", "darwin-x64", "linux-x64-gnu", "linux-arm64-gnu", "win32-x64-msvc"];

const root = new URL("../", import.meta.url);
const lock = JSON.parse(readFileSync(new URL("package-lock.json", root), "utf8")) as {
  packages: Record<string, { version?: string; os?: string[]; cpu?: string[] }>;
};
const manifest = JSON.parse(readFileSync(new URL("package.json", root), "utf8")) as { overrides?: Record<string, string> };

describe("package-lock.json", () => {
  const rollup = lock.packages["node_modules/rollup"];

  it("pins rollup through overrides, and the lock holds that version", () => {
    expect(manifest.overrides?.rollup).toBeDefined();
    expect(rollup?.version).toBe(manifest.overrides?.rollup);
  });

  it.each(PLATFORMS)("lists rollup's native package for %s at rollup's version", (platform) => {
    const entry = lock.packages[`node_modules/@rollup/rollup-${platform}`];
    expect(entry, `@rollup/rollup-${platform} is missing from package-lock.json`).toBeDefined();
    expect(entry!.version).toBe(rollup!.version);
  });
});

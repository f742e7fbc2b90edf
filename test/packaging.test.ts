import { execFile, execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// The published packages as npm packs them: what is in each tarball, their metadata, and source
// maps that resolve inside the tarball. Installing the tarballs into a fresh project and running
// them there is packages/cable-action/test/action.test.ts (the action's own install step does it).
const ROOT = path.resolve(__dirname, "..");

/** Workspace name → directory, in `npm publish` order (docs/releasing.md): dependencies first. */
const PUBLISHED: Record<string, string> = {
  "artillery-engine-cable": "packages/artillery-engine-cable",
  "artillery-plugin-cable-report": "packages/cable-report",
  "cable-worker": "packages/cable-worker",
  "cable-infra": "infra",
  "cable-fanout": "packages/cable-fanout",
  "cable-action": "packages/cable-action",
};

interface Packed {
  name: string;
  version: string;
  filename: string;
  size: number;
  files: Array<{ path: string; size: number }>;
}

interface Manifest {
  name: string;
  version: string;
  private?: boolean;
  license?: string;
  repository?: { type: string; url: string; directory: string };
  main?: string;
  bin?: Record<string, string>;
  exports?: Record<string, string | { types?: string; default?: string; development?: string }>;
  files?: string[];
  peerDependencies?: Record<string, string>;
  dependencies?: Record<string, string>;
}

let out: string;
let packed: Packed[];
const manifest = (name: string): Manifest => JSON.parse(readFileSync(path.join(out, name, "package", "package.json"), "utf8"));
const filesOf = (name: string): string[] => packed.find((p) => p.name === name)!.files.map((f) => f.path).sort();

/** npm, asynchronously: a worker blocked for long misses vitest's RPC deadline on a busy machine. */
function npm(args: string[], cwd: string): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile("npm", args, { cwd, encoding: "utf8", timeout: 120_000, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => (err ? reject(new Error(`npm ${args.join(" ")}: ${stderr}`)) : resolve(stdout))),
  );
}

beforeAll(async () => {
  out = mkdtempSync(path.join(os.tmpdir(), "cable-packaging-"));
  packed = JSON.parse(await npm(["pack", "--json", "--pack-destination", out, ...Object.keys(PUBLISHED).flatMap((w) => ["-w", w])], ROOT)) as Packed[];
  for (const p of packed) {
    execFileSync("mkdir", ["-p", path.join(out, p.name)]);
    execFileSync("tar", ["-xzf", path.join(out, p.filename), "-C", path.join(out, p.name)]);
  }
}, 120_000);

afterAll(() => rmSync(out, { recursive: true, force: true }));

describe("the published tarballs", () => {
  it("packs exactly the packages to publish, all at one version, none private", () => {
    expect(packed.map((p) => p.name).sort()).toEqual(Object.keys(PUBLISHED).sort());
    const versions = new Set(packed.map((p) => p.version));
    expect(versions.size).toBe(1);
    for (const p of packed) expect(manifest(p.name).private, p.name).toBeUndefined();
    // The test-only workspace is never published.
    expect(JSON.parse(readFileSync(path.join(ROOT, "packages/cable-test-servers/package.json"), "utf8")).private).toBe(true);
  });

  it("each has the license file, the README, the repository and the Artillery it supports", () => {
    const license = readFileSync(path.join(ROOT, "LICENSE"), "utf8");
    const artillery = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")).devDependencies.artillery as string;
    for (const p of packed) {
      const m = manifest(p.name);
      expect(filesOf(p.name), p.name).toEqual(expect.arrayContaining(["LICENSE", "README.md", "package.json"]));
      expect(m.license, p.name).toBe("MPL-2.0");
      expect(readFileSync(path.join(out, p.name, "package/LICENSE"), "utf8"), p.name).toBe(license);
      expect(m.repository, p.name).toEqual({ type: "git", url: "git+https://github.com/cable-loadtest/cable-loadtest.git", directory: PUBLISHED[p.name] });
      // The engine, the plugin and the worker run inside Artillery: npm warns about another one.
      if (p.name !== "cable-action") expect(m.peerDependencies?.artillery, p.name).toBe(`^${artillery}`);
    }
  });

  it("depends on its siblings at the version published with it", () => {
    const version = packed[0].version;
    for (const p of packed) {
      for (const [dep, range] of Object.entries(manifest(p.name).dependencies ?? {})) {
        if (dep in PUBLISHED) expect(range, `${p.name} → ${dep}`).toBe(`^${version}`);
      }
    }
  });

  it("ships no tests, test helpers, fixtures or TypeScript sources, and everything main, bin and exports name", () => {
    for (const p of packed) {
      const files = filesOf(p.name);
      const testOnly = files.filter((f) => /(^|\/)(test|tests|__tests__|fixtures)\/|\.test\.|(^|\/)testing\.|(^|\/)cdk\/|(^|\/)image\//.test(f) || (f.endsWith(".ts") && !f.endsWith(".d.ts")));
      expect(testOnly, p.name).toEqual([]);
      const m = manifest(p.name);
      // What Node and TypeScript resolve outside this monorepo (the "development" condition, which
      // names TypeScript sources for the monorepo's type-check and tests, is never one of them).
      const named = [m.main, ...Object.values(m.bin ?? {}), ...Object.values(m.exports ?? {}).flatMap((e) => (typeof e === "string" ? [e] : [e.types, e.default]))].filter((f): f is string => Boolean(f));
      for (const file of named) expect(files, `${p.name}: ${file}`).toContain(path.normalize(file));
    }
  });

  it("has source maps that resolve inside the tarball: every source's text is in the map", () => {
    let maps = 0;
    for (const p of packed) {
      const dir = path.join(out, p.name, "package");
      for (const file of filesOf(p.name).filter((f) => f.endsWith(".js"))) {
        const js = readFileSync(path.join(dir, file), "utf8");
        if (file.startsWith("bin/")) continue; // hand-written launchers, no map
        if (file.startsWith("assets/")) continue; // report.html's page script, inlined as written: no build, no map
        const url = /\/\/# sourceMappingURL=(\S+)\s*$/.exec(js)?.[1];
        expect(url, `${p.name}/${file}`).toBeDefined();
        const mapFile = path.join(path.dirname(path.join(dir, file)), url!);
        expect(existsSync(mapFile), `${p.name}/${file} → ${url}`).toBe(true);
        const map = JSON.parse(readFileSync(mapFile, "utf8")) as { sources: string[]; sourcesContent?: Array<string | null> };
        map.sources.forEach((source, i) => {
          const onDisk = path.resolve(path.dirname(mapFile), source);
          const inline = map.sourcesContent?.[i];
          expect(typeof inline === "string" && inline.length > 0 ? true : existsSync(onDisk) && statSync(onDisk).isFile(), `${p.name}/${file}: ${source}`).toBe(true);
        });
        maps++;
      }
    }
    expect(maps).toBeGreaterThan(50);
  });

  it("npm pack --dry-run lists the same files (what npm publish sends)", async () => {
    for (const [name, dir] of Object.entries(PUBLISHED)) {
      const [dry] = JSON.parse(await npm(["pack", "--dry-run", "--json"], path.join(ROOT, dir))) as Packed[];
      expect(dry.files.map((f) => f.path).sort(), name).toEqual(filesOf(name));
    }
  });

  it("every tarball stays small (no stray build output, caches or dependencies)", () => {
    // The largest, cable-fanout, is 429 KB (its maps carry their sources); a stray folder is megabytes.
    for (const p of packed) expect(p.size, p.name).toBeLessThan(500_000);
    expect(readdirSync(out).filter((f) => f.endsWith(".tgz"))).toHaveLength(packed.length);
  });
});

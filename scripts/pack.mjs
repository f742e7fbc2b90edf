// `npm run pack [-- <dir>]`: builds, then writes the published packages' tarballs (exactly what
// `npm publish` would send, docs/releasing.md) into <dir>, by default packs/ at the repository's
// root, under names without the version (packs/artillery-engine-cable.tgz), so that the README's
// quick starts install them into an app as written until the packages are on the registry:
//
//   npm install --save-dev artillery@2.0.34 <clone>/packs/artillery-engine-cable.tgz
//
// The version is inside each tarball (its package.json), as a registry install would record it.
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
// In `npm publish` order (docs/releasing.md): dependencies first.
const PUBLISHED = ["artillery-engine-cable", "artillery-plugin-cable-report", "cable-worker", "cable-infra", "cable-fanout", "cable-action"];

// A relative <dir> is the caller's: npm runs scripts from the root and says where it was called in INIT_CWD.
const dest = path.resolve(process.env.INIT_CWD ?? process.cwd(), process.argv[2] ?? path.join(root, "packs"));
mkdirSync(dest, { recursive: true });

const npm = process.platform === "win32" ? "npm.cmd" : "npm";
execFileSync(npm, ["run", "build", "--silent"], { cwd: root, stdio: "inherit" });
const packed = JSON.parse(
  execFileSync(npm, ["pack", "--json", "--loglevel=error", "--pack-destination", dest, ...PUBLISHED.flatMap((w) => ["-w", w])], {
    cwd: root,
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
  }),
);

const width = Math.max(...packed.map((p) => p.name.length));
for (const p of packed) {
  const stable = path.join(dest, `${p.name}.tgz`);
  rmSync(stable, { force: true });
  renameSync(path.join(dest, p.filename), stable);
  console.log(`${p.name.padEnd(width)}  ${p.version}  ${stable}  (${Math.round(p.size / 1024)} kB)`);
}
const artillery = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")).devDependencies.artillery;
console.log(`\nIn your app (the Rails and Laravel quick starts of the README):\n  npm install --save-dev artillery@${artillery} ${path.join(dest, "artillery-engine-cable.tgz")}`);

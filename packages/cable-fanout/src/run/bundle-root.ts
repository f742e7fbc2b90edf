// Which files of this machine a run may pack and upload onto tasks that have internet access: the
// files a scenario names, each resolving (after symlinks) under one folder, the bundle root, and
// none of them hidden. A teammate's scenario naming `../../x.csv`, `/etc/hostname`, a symlink that
// points out, `.git/config` or `~/.aws/credentials` is refused before anything is uploaded.
//
// The root is `--bundle-root <dir>` when given; otherwise the project holding the scenario: the
// nearest folder, from the scenario's own upward, with a package.json or a .git, which is where a
// scenario's `../processors/x.js` lives (this repository's scenarios, an app's `loadtest/`); without
// one, the scenario's own folder. Never the filesystem's root nor the home folder: neither is a project.
import { existsSync, realpathSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { FanoutInputError } from "../errors.js";

export interface BundleRoot {
  /** Absolute, as given or found: the files' places in the bundle are measured from it. */
  dir: string;
  /** The same folder after symlinks: every file must resolve under it. */
  real: string;
  /** How it was chosen, for the messages. */
  why: string;
}

export const BUNDLE_ROOT_HELP =
  "the folder every file the scenario names (processor, payloads, includeFiles, config.tls files) must lie in, after symlinks; default: the nearest folder above the scenario with a package.json or .git, else its own. Hidden files (.git, .env…) are never bundled";

const PROJECT_MARKERS = ["package.json", ".git"];
/** The one hidden folder taken: a repository's workflows and their files (GitHub keeps an Action's secrets elsewhere). */
const ALLOWED_HIDDEN = new Set([".github"]);
const HIDDEN_RULE = "hidden files and folders (.git, .env*, .aws, .ssh, .npmrc…) hold credentials and version control, and are never bundled";

/** The bundle root for `scenarioFile` (absolute): `explicit` (--bundle-root) if given, else its project's folder. */
export function findBundleRoot(scenarioFile: string, explicit: string | undefined, home: string = os.homedir()): BundleRoot {
  const forbidden = (real: string) => real === path.parse(real).root || real === realOrSelf(home);
  if (explicit !== undefined) {
    const dir = path.resolve(explicit);
    if (!existsSync(dir) || !statSync(dir).isDirectory()) throw new FanoutInputError(`--bundle-root ${explicit}: not a folder`);
    const real = realpathSync(dir);
    if (forbidden(real)) throw new FanoutInputError(`--bundle-root ${explicit}: ${real} is the filesystem's root or your home folder, which would let a scenario bundle any file there; name the project's folder`);
    return { dir, real, why: "--bundle-root" };
  }
  const own = path.dirname(scenarioFile);
  for (let dir = own; !forbidden(realOrSelf(dir)); dir = path.dirname(dir)) {
    const marker = PROJECT_MARKERS.find((m) => existsSync(path.join(dir, m)));
    if (marker) return { dir, real: realpathSync(dir), why: `the project holding the scenario: the nearest folder with a package.json or .git (its ${marker})` };
  }
  if (forbidden(realOrSelf(own))) {
    throw new FanoutInputError(`${scenarioFile}: a scenario directly in the filesystem's root or your home folder has no project to bundle from; move it into a folder of its own, or name one with --bundle-root <dir>`);
  }
  return { dir: own, real: realpathSync(own), why: "the scenario's folder: no package.json or .git above it" };
}

/**
 * Checks one file a scenario names (`file`, absolute, as the scenario's path resolves it); `what`
 * says which field named it and how. Throws naming the file, the field and the rule.
 */
export function checkBundled(root: BundleRoot, file: string, what: string): void {
  const real = realpathSync(file);
  const rule = `every file a scenario names must resolve, after symlinks, under the bundle root ${root.dir} (${root.why}); a scenario reaching further needs --bundle-root <dir>, never / nor your home folder`;
  const lexical = path.relative(root.dir, file);
  if (isOutside(lexical)) throw new FanoutInputError(`${what}: ${file} is outside the bundle root: ${rule}`);
  const resolved = path.relative(root.real, real);
  if (isOutside(resolved)) throw new FanoutInputError(`${what}: ${file} resolves through a symlink to ${real}, outside the bundle root: ${rule}`);
  const hidden = [...lexical.split(path.sep), ...resolved.split(path.sep)].find((part) => part.startsWith(".") && !ALLOWED_HIDDEN.has(part));
  if (hidden) throw new FanoutInputError(`${what}: ${file}${real === file ? "" : ` (${real})`} is or lies in ${hidden}: ${HIDDEN_RULE}`);
}

const isOutside = (relative: string) => relative === ".." || relative.startsWith(`..${path.sep}`) || path.isAbsolute(relative);

function realOrSelf(dir: string): string {
  try {
    return realpathSync(dir);
  } catch {
    return path.resolve(dir);
  }
}

import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { startTarget, type LocalTarget } from "cable-local-target";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildBundle } from "../src/run/bundle";
import { findBundleRoot } from "../src/run/bundle-root";
import { loadScenario } from "../src/scenario";
import { runCli } from "./cli";

// The bundle goes onto tasks with internet access: a scenario may bundle only files under its bundle
// root (its project's folder, or --bundle-root), after symlinks, and never a hidden one. Before this,
// `../../x.csv`, a symlink pointing out, `includeFiles: [/etc/hostname]` and an absolute `tls.ca`
// were all packed, with the bundle's root at `/`.
const ROOT = path.resolve(__dirname, "../../..");

let work: string;
/** A project (package.json) with a scenario folder, a processor beside it, hidden files, and a secret outside it. */
let project: string;
let outside: string;

const scenario = (name: string, config: string, dir = path.join(project, "scenarios")) => {
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, name);
  writeFileSync(file, `config:\n  target: ws://127.0.0.1:1/cable\n${config}\nscenarios: []\n`);
  return file;
};

beforeAll(() => {
  work = mkdtempSync(path.join(os.tmpdir(), "cable-bundle-root-"));
  outside = path.join(work, "elsewhere");
  project = path.join(work, "app");
  mkdirSync(outside);
  writeFileSync(path.join(outside, "x.csv"), "stolen\n");
  writeFileSync(path.join(outside, "ca.pem"), "-----BEGIN CERTIFICATE-----\n");
  for (const dir of ["scenarios", "processors", "data", ".git", ".aws", ".github/loadtest"]) mkdirSync(path.join(project, dir), { recursive: true });
  writeFileSync(path.join(project, "package.json"), "{}\n");
  writeFileSync(path.join(project, "processors/p.js"), "module.exports = {};\n");
  writeFileSync(path.join(project, "data/users.csv"), "a@example.com\n");
  writeFileSync(path.join(project, ".git/config"), "[remote]\n  url = https://token@example.com/x\n");
  writeFileSync(path.join(project, ".aws/credentials"), "[default]\n");
  writeFileSync(path.join(project, ".env.production"), "SECRET=1\n");
  writeFileSync(path.join(project, ".github/loadtest/users.csv"), "a@example.com\n");
  symlinkSync(path.join(outside, "x.csv"), path.join(project, "data/link-out.csv"));
  symlinkSync(path.join(project, ".env.production"), path.join(project, "data/link-env.csv"));
  symlinkSync(path.join(project, "data/users.csv"), path.join(project, "scenarios/users-link.csv"));
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe("the bundle root", () => {
  it("is the nearest folder above the scenario with a package.json or .git; else the scenario's own; never / nor home", () => {
    const file = scenario("s.yml", "");
    expect(findBundleRoot(file, undefined, work)).toMatchObject({ dir: project, why: expect.stringContaining("its package.json") });
    // This repository's own scenarios: the repository's root, so `../processors/x.js` is inside.
    expect(findBundleRoot(path.join(ROOT, "scenarios/pubsub-rooms.yml"), undefined).dir).toBe(ROOT);
    const loose = path.join(work, "loose");
    mkdirSync(loose);
    expect(findBundleRoot(path.join(loose, "s.yml"), undefined, "/nonexistent-home")).toMatchObject({ dir: loose, why: expect.stringContaining("no package.json or .git") });
    // The search stops at the home folder; a scenario lying in it, or in /, has no project.
    expect(findBundleRoot(path.join(loose, "s.yml"), undefined, work).dir).toBe(loose);
    expect(() => findBundleRoot(path.join(work, "s.yml"), undefined, work)).toThrow(/directly in the filesystem's root or your home folder has no project/);
    expect(() => findBundleRoot("/s.yml", undefined, work)).toThrow(/no project to bundle from/);
    expect(() => findBundleRoot(file, "/", work)).toThrow("--bundle-root /: / is the filesystem's root or your home folder");
    expect(() => findBundleRoot(file, work, work)).toThrow(/is the filesystem's root or your home folder/);
    expect(() => findBundleRoot(file, path.join(work, "nope"), work)).toThrow(/--bundle-root .*nope: not a folder/);
  });

  it("bundles a scenario whose files all lie inside, a symlink between two of them included, and keeps their layout", () => {
    const file = scenario("good.yml", "  processor: ../processors/p.js\n  payload:\n    - path: ../data/users.csv\n    - path: users-link.csv\n  environments:\n    gh:\n      payload: { path: ../.github/loadtest/users.csv }");
    const loaded = loadScenario(file);
    expect(loaded.root.dir).toBe(project);
    const bundle = buildBundle(loaded, {});
    expect(bundle.files.map((f) => f.key)).toEqual(["scenarios/good.yml", "processors/p.js", "data/users.csv", "scenarios/users-link.csv", ".github/loadtest/users.csv"]);
  });

  it("refuses every kind of outside file, in config and in every environment, naming the file, the field and the rule", () => {
    const rule = `every file a scenario names must resolve, after symlinks, under the bundle root ${project}`;
    const refused: Array<[string, string, RegExp]> = [
      ["  payload: { path: ../../elsewhere/x.csv }", "config.payload.path names ../../elsewhere/x.csv", /elsewhere\/x\.csv is outside the bundle root/],
      ["  payload:\n    - path: ../data/link-out.csv", "config.payload[0].path names ../data/link-out.csv", /resolves through a symlink to .*elsewhere\/x\.csv, outside the bundle root/],
      ["  includeFiles: [/etc/hostname]", "config.includeFiles[0] names /etc/hostname", /\/etc\/hostname is outside the bundle root/],
      [`  tls: { ca: ${path.join(outside, "ca.pem")} }`, `config.tls.ca names ${path.join(outside, "ca.pem")}`, /is outside the bundle root/],
      ["  environments:\n    staging:\n      processor: ../../elsewhere/x.csv", "config.environments.staging.processor names ../../elsewhere/x.csv", /is outside the bundle root/],
      ["  environments:\n    staging:\n      tls: { key: [../../elsewhere/ca.pem] }", "config.environments.staging.tls.key[0] names ../../elsewhere/ca.pem", /is outside the bundle root/],
    ];
    for (const [config, named, how] of refused) {
      const file = scenario("bad.yml", config);
      let message = "";
      try {
        loadScenario(file);
      } catch (err) {
        message = (err as Error).message;
      }
      expect(message, config).toContain(`${file}: ${named}: `);
      expect(message, config).toMatch(how);
      expect(message, config).toContain(rule);
      expect(message, config).toContain("needs --bundle-root <dir>");
    }
  });

  it("refuses hidden files and folders inside the project too: .git, .aws, .env*, and a symlink to one", () => {
    const hidden: Array<[string, string]> = [
      ["  includeFiles: [../.git/config]", ".git"],
      ["  payload: { path: ../.aws/credentials }", ".aws"],
      ["  processor: ../.env.production", ".env.production"],
      ["  payload: { path: ../data/link-env.csv }", ".env.production"],
    ];
    for (const [config, part] of hidden) {
      expect(() => loadScenario(scenario("hidden.yml", config)), config).toThrow(`is or lies in ${part}: hidden files and folders (.git, .env*, .aws, .ssh, .npmrc…) hold credentials and version control, and are never bundled`);
    }
  });

  it("--bundle-root narrows or widens the root; the scenario itself must lie in it", () => {
    const file = scenario("proc.yml", "  processor: ../processors/p.js");
    expect(() => loadScenario(file, undefined, path.join(project, "scenarios"))).toThrow(/config\.processor names \.\.\/processors\/p\.js: .* is outside the bundle root: .*\(--bundle-root\)/);
    expect(() => loadScenario(file, undefined, path.join(project, "processors"))).toThrow(/the scenario: .*proc\.yml is outside the bundle root/);
    // Without a project, the root is the scenario's folder: reaching a sibling needs --bundle-root.
    const bare = path.join(work, "bare");
    mkdirSync(path.join(bare, "processors"), { recursive: true });
    writeFileSync(path.join(bare, "processors/p.js"), "module.exports = {};\n");
    const loose = scenario("s.yml", "  processor: ../processors/p.js", path.join(bare, "scenarios"));
    expect(() => loadScenario(loose)).toThrow(/is outside the bundle root: .* under the bundle root .*bare\/scenarios \(the scenario's folder: no package\.json or \.git above it\)/);
    expect(loadScenario(loose, undefined, bare).root).toMatchObject({ dir: bare, why: "--bundle-root" });
  });
});

describe("the CLI", () => {
  let target: LocalTarget;
  beforeAll(async () => {
    target = await startTarget({ port: 0 });
  });
  afterAll(async () => {
    await target.close();
  });

  it("stops run, compare and capacity before anything is uploaded (locally and on AWS), naming the file, the field and the rule", async () => {
    const file = scenario("evil.yml", "  includeFiles: [/etc/hostname]");
    const out = path.join(work, "refused");
    const runs: string[][] = [
      ["run", file, "--local", "--regions", "local-a"],
      ["run", file, "--regions", "eu-west-2"],
      ["compare", file, "--local", "--regions", "local-a", "--target", `a=${target.cableUrl}`, "--target", `b=${target.cableUrl}`],
      ["capacity", file, "--local", "--regions", "local-a", "--slo", "errors<1%", "--start", "10", "--step", "10", "--max", "20"],
    ];
    for (const args of runs) {
      const result = await runCli([...args, "--out", out], { cwd: work, timeoutMs: 60_000 });
      expect(result.code, result.stderr).toBe(2);
      expect(result.stderr).toContain(`cable-fanout: ${file}: config.includeFiles[0] names /etc/hostname: /etc/hostname is outside the bundle root: every file a scenario names must resolve, after symlinks, under the bundle root ${project}`);
    }
    // Nothing was uploaded: the local store holds no run, no run folder exists.
    expect(existsSync(path.join(out, ".local-store", "runs"))).toBe(false);
    expect(existsSync(out) ? readdirSync(out).filter((d) => !d.startsWith(".")) : []).toEqual([]);
  }, 180_000);

  it("runs a scenario whose files lie in its project, and lists every file it bundled", async () => {
    const out = path.join(work, "ran");
    const file = path.join(project, "scenarios/run.yml");
    writeFileSync(
      file,
      [
        "config:",
        "  target: ws://127.0.0.1:1/cable",
        "  processor: ../processors/p.js",
        "  payload: { path: ../data/users.csv, fields: [email] }",
        "  engines: { cable: {} }",
        "  phases: [{ duration: 1, arrivalRate: 1 }]",
        "scenarios:",
        "  - engine: cable",
        "    flow:",
        // The local target refuses a socket without a uid cookie: the payload's row is the user's.
        '      - connect: { cookies: { uid: "bundle/{{ email }}" } }',
        "      - disconnect: {}",
        "",
      ].join("\n"),
    );
    const result = await runCli(["run", file, "--local", "--regions", "local-a", "--target", target.cableUrl, "--start-delay", "1", "--out", out], { cwd: project, timeoutMs: 90_000 });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toContain("bundled 3 file(s) from .: scenarios/run.yml, processors/p.js, data/users.csv\n");
  }, 120_000);
});

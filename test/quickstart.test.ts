// The README's two quick starts as a new user pastes them. Their commands and YAML are read from
// README.md's fenced blocks (so the test breaks when the README drifts), and run in a fresh project
// outside the repository: the clone's `npm run pack`, the install command as written (only
// `<clone>` replaced by this repository's path), the YAML as loadtest/chat.yml and
// loadtest/presence.yml, and the `npx artillery run` command as written with only its target
// replaced by a server on loopback: the local target (Action Cable, it echoes ChatChannel `speak`)
// for the Rails recipe, a real Laravel 11 app beside Reverb for the Laravel one (its HTTP side too:
// `config.cable.http` and the `authEndpoint` are the app's address, on a free port). A run with a
// failed user must not be green: the same Rails recipe against a closed port exits non-zero.
//
// The npm install takes Artillery 2.0.34 (~480 MB) from the registry, through this machine's npm
// cache. It does not judge time: the shared project.
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { startTarget, type LocalTarget } from "cable-local-target";
import { freePort, startLaravelApp, type LaravelApp } from "cable-test-servers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";

const ROOT = path.resolve(__dirname, "..");
const README = readFileSync(path.join(ROOT, "README.md"), "utf8");
const CLONE = "<clone>";

interface QuickStart {
  /** Everything under the heading, up to the next `## `. */
  text: string;
  install: string;
  run: string;
  yaml: string;
}

/** A quick start's fenced blocks: one ```sh block (an `npm install` line, an `npx artillery run` line) and one ```yaml. */
function quickStart(heading: string): QuickStart {
  const start = README.indexOf(`\n## ${heading}\n`);
  if (start < 0) throw new Error(`README.md has no "## ${heading}"`);
  const next = README.indexOf("\n## ", start + 1);
  const text = README.slice(start, next < 0 ? undefined : next);
  const blocks = [...text.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)].map(([, lang, body]) => ({ lang, body }));
  const sh = blocks.filter((b) => b.lang === "sh");
  const yml = blocks.filter((b) => b.lang === "yaml");
  if (sh.length !== 1 || yml.length !== 1) throw new Error(`"${heading}": expected one sh and one yaml block, found ${sh.length} and ${yml.length}`);
  const lines = sh[0].body.split("\n").map((l) => l.trim()).filter((l) => l && !l.startsWith("#"));
  const install = lines.filter((l) => /(^|\s)npm install /.test(l));
  const run = lines.filter((l) => /(^|\s)npx artillery run /.test(l));
  const other = lines.filter((l) => !install.includes(l) && !run.includes(l));
  if (install.length !== 1 || run.length !== 1 || other.length > 0) {
    throw new Error(`"${heading}": this test runs one npm install and one npx artillery run; the block holds:\n${lines.join("\n")}`);
  }
  return { text, install: install[0], run: run[0], yaml: yml[0].body };
}

interface Ran {
  command: string;
  code: number | null;
  output: string;
  seconds: number;
}

const transcript: string[] = [];

/**
 * A command line as a person's shell runs it, in `cwd`, with this Node first on PATH (the README
 * asks for Node ≥ 22.18) and none of the test runner's npm, vitest or AWS variables.
 */
function sh(command: string, cwd: string, timeoutMs: number): Promise<Ran> {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!/^(npm_|VITEST|CABLE_|AWS_|NODE_OPTIONS$|NODE_ENV$|INIT_CWD$)/i.test(k)) env[k] = v;
  env.PATH = `${path.dirname(process.execPath)}${path.delimiter}${process.env.PATH}`;
  // Artillery's telemetry would call out of this machine; the network tests stay on loopback.
  env.ARTILLERY_DISABLE_TELEMETRY = "true";
  const began = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn("bash", ["-c", command], { cwd, env, stdio: ["ignore", "pipe", "pipe"], detached: true });
    let output = "";
    child.stdout.on("data", (d: Buffer) => (output += d.toString()));
    child.stderr.on("data", (d: Buffer) => (output += d.toString()));
    const timer = setTimeout(() => {
      output += `\n[killed after ${timeoutMs} ms]`;
      try {
        process.kill(-child.pid!, "SIGKILL");
      } catch {
        child.kill("SIGKILL");
      }
    }, timeoutMs);
    child.once("error", reject);
    child.once("close", (code) => {
      clearTimeout(timer);
      const seconds = Math.round((Date.now() - began) / 100) / 10;
      let line = `$ (cd ${cwd} && ${command})\n  → exit ${code}, ${seconds} s`;
      if (output.includes("Summary report @")) {
        const { counters, checks } = summary(output);
        const users = ["created", "completed", "failed"].map((k) => `${k} ${counters[`vusers.${k}`] ?? 0}`).join(", ");
        line += `; users ${users}; checks ${Object.entries(checks).map(([check, result]) => `${result}: ${check}`).join(", ")}`;
      }
      transcript.push(line);
      resolve({ command, code, output, seconds });
    });
  });
}

/** The console's last summary: `name: ....... 12` lines, and the `ensure` checks under "Checks:". */
function summary(output: string): { counters: Record<string, number>; checks: Record<string, "ok" | "fail"> } {
  const last = output.slice(output.lastIndexOf("Summary report @"));
  const counters: Record<string, number> = {};
  for (const [, name, value] of last.matchAll(/^([\w.\-/]+): \.+ (\d+(?:\.\d+)?)$/gm)) counters[name] = Number(value);
  const checks: Record<string, "ok" | "fail"> = {};
  for (const [, result, check] of last.slice(last.indexOf("Checks:")).matchAll(/^(ok|fail): (.+)$/gm)) checks[check.trim()] = result as "ok" | "fail";
  return { counters, checks };
}

/** A fresh project outside the repository: an app's own folder with its package.json, as Rails with jsbundling and Laravel have. */
function freshProject(name: string): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), `quickstart-${name}-`));
  writeFileSync(path.join(dir, "package.json"), JSON.stringify({ name: `${name}-app`, private: true }, null, 2));
  return dir;
}

/** The `--target` the README's command names, replaced by `target`; the command otherwise as written. */
function aimed(command: string, target: string): string {
  const written = /--target (\S+)/.exec(command)?.[1];
  if (!written) throw new Error(`no --target in: ${command}`);
  return command.replace(`--target ${written}`, `--target ${target}`);
}

/** The scenario file the run command names (its last argument). */
function scenarioOf(command: string): string {
  const file = command.split(/\s+/).at(-1)!;
  if (!file.endsWith(".yml")) throw new Error(`the run command names no .yml last: ${command}`);
  return file;
}

const rails = quickStart("Quick start: your own Rails app");
const laravel = quickStart("Quick start: your own Laravel app");
const dirs: string[] = [];
let railsDir: string;
let laravelDir: string;
let target: LocalTarget;
let app: LaravelApp;
let laravelUsers: number;

beforeAll(async () => {
  // The clone's side, as the Rails quick start says it (its `npm install` is this working tree's).
  expect(rails.text).toContain("`npm install && npm run pack` in a clone of this repository");
  const pack = await sh("npm run pack", ROOT, 300_000);
  if (pack.code !== 0) throw new Error(`npm run pack: exit ${pack.code}\n${pack.output}`);

  expect(ROOT).not.toMatch(/\s/);
  const install = async (name: string, qs: QuickStart): Promise<string> => {
    const dir = freshProject(name);
    dirs.push(dir);
    expect(qs.install).toContain(CLONE);
    const ran = await sh(qs.install.replaceAll(CLONE, ROOT), dir, 480_000);
    if (ran.code !== 0) throw new Error(`${qs.install}: exit ${ran.code}\n${ran.output}`);
    return dir;
  };
  // Both installs, the local target and the Laravel app at once: each waits on the disk, npm or PHP.
  // Every one settles before a failure is thrown, so that afterAll stops the servers that started.
  const [r, l, t, a] = await Promise.allSettled([install("rails", rails), install("laravel", laravel), startTarget({ port: 0 }), startLaravelApp({ users: 50 })]);
  if (t.status === "fulfilled") target = t.value;
  if (a.status === "fulfilled") app = a.value;
  for (const s of [r, l, t, a]) if (s.status === "rejected") throw s.reason;
  railsDir = (r as PromiseFulfilledResult<string>).value;
  laravelDir = (l as PromiseFulfilledResult<string>).value;

  // loadtest/chat.yml as the README gives it (both Rails runs read it).
  expect(scenarioOf(rails.run)).toBe("loadtest/chat.yml");
  mkdirSync(path.join(railsDir, "loadtest"));
  writeFileSync(path.join(railsDir, scenarioOf(rails.run)), rails.yaml);

  // loadtest/presence.yml: the app's HTTP side (config.cable.http, the authEndpoint) is this app's,
  // on its own port; and "users.csv beside it holds email,password rows of users the app knows".
  expect(scenarioOf(laravel.run)).toBe("loadtest/presence.yml");
  const http = (parse(laravel.yaml) as { config: { cable: { http: string } } }).config.cable.http;
  expect(http).toMatch(/^http:\/\/localhost:\d+$/);
  const recipe = laravel.yaml.replaceAll(http, app.http);
  const config = (parse(recipe) as { config: { payload: { path: string; fields: string[] }; phases: Array<{ duration: number; arrivalRate: number }> } }).config;
  mkdirSync(path.join(laravelDir, "loadtest"));
  writeFileSync(path.join(laravelDir, scenarioOf(laravel.run)), recipe);
  expect(config.payload.fields).toEqual(["email", "password"]);
  laravelUsers = config.phases.reduce((n, p) => n + p.duration * p.arrivalRate, 0);
  expect(laravelUsers).toBeLessThanOrEqual(app.users.length);
  writeFileSync(path.join(laravelDir, "loadtest", config.payload.path), app.users.map((u) => `${u.email},${u.password}\n`).join(""));
}, 600_000);

afterAll(async () => {
  await Promise.allSettled([target?.close(), app?.stop()]);
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  console.log(`The quick starts as pasted:\n${transcript.join("\n")}`);
});

describe.concurrent("the README's quick starts, pasted into a fresh project", () => {
  it("Rails: the install and the run as written, against the local Action Cable target: exit 0, every user completed, the ensure ok", async ({ expect }) => {
    // The engine came from the tarball, not from this repository.
    expect(JSON.parse(readFileSync(path.join(railsDir, "package.json"), "utf8")).devDependencies["artillery-engine-cable"]).toMatch(/^file:.*packs\/artillery-engine-cable\.tgz$/);

    const ran = await sh(aimed(rails.run, target.cableUrl), railsDir, 240_000);
    const { counters, checks } = summary(ran.output);
    expect(ran.code, ran.output).toBe(0);
    expect(counters["vusers.created"], ran.output).toBeGreaterThan(0);
    expect(counters["vusers.completed"], ran.output).toBe(counters["vusers.created"]);
    expect(counters["vusers.failed"], ran.output).toBe(0);
    expect(ran.output, "cable.rtt's samples (a message sent and seen back)").toMatch(/^cable\.rtt:$/m);
    expect(checks["vusers.failed == 0"], ran.output).toBe("ok");
    expect(Object.values(checks), ran.output).not.toContain("fail");
  }, 300_000);

  it("Rails against a closed port: every user failed, and the ensure makes the run exit non-zero", async ({ expect }) => {
    const closed = await freePort();
    const ran = await sh(aimed(rails.run, `ws://127.0.0.1:${closed}/cable`), railsDir, 240_000);
    const { counters, checks } = summary(ran.output);
    expect(ran.code, ran.output).not.toBe(0);
    expect(counters["vusers.failed"], ran.output).toBeGreaterThan(0);
    expect(counters["vusers.failed"], ran.output).toBe(counters["vusers.created"]);
    expect(checks["vusers.failed == 0"], ran.output).toBe("fail");
  }, 300_000);

  it("Laravel: the install and the run as written, against a real Laravel app and Reverb: exit 0, every user signed in and completed", async ({ expect }) => {
    const users = laravelUsers;
    expect(laravel.run).toContain("REVERB_APP_KEY=… ");
    const ran = await sh(aimed(laravel.run, app.ws).replace("REVERB_APP_KEY=… ", `REVERB_APP_KEY=${app.key} `), laravelDir, 240_000);
    const { counters, checks } = summary(ran.output);
    expect(ran.code, ran.output).toBe(0);
    expect(counters["vusers.created"], ran.output).toBe(users);
    expect(counters["vusers.completed"], ran.output).toBe(users);
    expect(counters["vusers.failed"], ran.output).toBe(0);
    expect(counters["cable.subscriptions"], ran.output).toBe(2 * users);
    expect(checks["vusers.failed == 0"], ran.output).toBe("ok");
    expect(Object.values(checks), ran.output).not.toContain("fail");
  }, 300_000);
});

// What signing in costs the load generator: the HTTP steps and the cookie jar, per virtual user,
// against the real Rails + Devise app (cable-test-servers' startRailsDevise).
//
//   npm run build && node bench/sign-in.mjs [--users 200] [--pairs 3]
//
// Two flows, run A B A B … through the real CLI, the same users, the same socket work:
//   A: connect with a session cookie signed in beforehand (connect.cookies from the payload), subscribe, listen;
//   B: the same after signing in through Devise's form (get, post, get /me: scenarios/rails-devise.yml's steps).
// The Artillery process's CPU (all its threads) is read by /usr/bin/time; B − A per user is what the
// sign-in costs the generator. The jar's memory per user is measured apart, in this process.
// Figures: docs/benchmarks.md#signing-in.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const require = createRequire(import.meta.url);
const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, "..");
const { startRailsDevise } = require(path.join(repo, "packages/cable-test-servers/dist/index.js"));
const { Session } = require(path.join(repo, "packages/artillery-engine-cable/dist/session.js"));
const { values: flags } = parseArgs({ options: { users: { type: "string", default: "200" }, pairs: { type: "string", default: "3" } } });
const users = Number(flags.users);
const pairs = Number(flags.pairs);
const artillery = path.join(repo, "node_modules/artillery/bin/run");

const app = await startRailsDevise({ users });
const dir = mkdtempSync(path.join(os.tmpdir(), "sign-in-bench-"));
try {
  // A's users hold sessions signed in beforehand, one per row.
  const cookies = [];
  for (const user of app.users) cookies.push(await app.signIn(user));
  writeFileSync(path.join(dir, "sessions.csv"), cookies.map((c) => `"${c.replaceAll('"', '""')}"`).join("\n") + "\n");
  const phases = [{ duration: 10, arrivalCount: users }];
  const signIn = [
    { get: { url: "/users/sign_in", capture: { regexp: 'name="authenticity_token" value="([^"]+)"', group: 1, as: "authenticity_token" } } },
    { post: { url: "/users/sign_in", form: { authenticity_token: "{{ authenticity_token }}", "user[email]": "{{ email }}", "user[password]": "{{ password }}" }, followRedirect: false, expect: 302 } },
    { get: { url: "/me", capture: { json: "$.id", as: "user_id" } } },
  ];
  const socket = [{ subscribe: { channel: "WhoamiChannel", as: "whoami" } }, { listen: { channel: "whoami", for: 2 } }];
  const flows = {
    A: { payload: { path: path.join(dir, "sessions.csv"), fields: ["cookie"], order: "sequence" }, flow: [{ connect: { cookies: "{{ cookie }}" } }, ...socket] },
    B: { payload: { path: app.usersCsv, fields: ["email", "password"], order: "sequence" }, flow: [...signIn, { connect: {} }, ...socket] },
  };
  const results = { A: [], B: [] };
  for (let pair = 0; pair < pairs; pair++) {
    for (const name of ["A", "B"]) {
      const script = path.join(dir, `${name}.yml`);
      const report = path.join(dir, `${name}-${pair}.json`);
      writeFileSync(script, JSON.stringify({ config: { target: app.ws, engines: { cable: {} }, phases, payload: flows[name].payload }, scenarios: [{ engine: "cable", flow: flows[name].flow }] }));
      const timing = path.join(dir, "time.txt");
      execFileSync("/usr/bin/time", ["-f", "%U %S %M", "-o", timing, process.execPath, artillery, "run", "-o", report, script], { env: { ...process.env, ARTILLERY_DISABLE_TELEMETRY: "true" }, stdio: "ignore" });
      const [user, sys, maxKb] = readFileSync(timing, "utf8").trim().split("\n").pop().split(" ").map(Number);
      const { aggregate } = JSON.parse(readFileSync(report, "utf8"));
      const completed = aggregate.counters["vusers.completed"] ?? 0;
      if (completed !== users) throw new Error(`${name}: ${completed} of ${users} users completed: ${JSON.stringify(aggregate.counters)}`);
      results[name].push({ cpuS: user + sys, maxRssMb: maxKb / 1024, http: aggregate.summaries["cable.http_latency"] });
      console.log(`${name} #${pair + 1}: CPU ${(user + sys).toFixed(2)} s, max RSS ${(maxKb / 1024).toFixed(0)} MB`);
    }
  }
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const perUserMs = results.B.map((b, i) => ((b.cpuS - results.A[i].cpuS) * 1000) / users);
  const http = results.B.map((b) => b.http);
  // The jar alone: a signed-in user's cookies (Devise's session cookie as the app set it), kept 10,000 times.
  const sample = cookies[0].split("; ").map((pair) => `${pair}; path=/; HttpOnly; SameSite=Lax`);
  global.gc?.();
  const before = process.memoryUsage().heapUsed;
  const jars = Array.from({ length: 10_000 }, () => {
    const s = new Session();
    s.store(`${app.http}/users/sign_in`, sample);
    return s;
  });
  global.gc?.();
  const jarBytes = (process.memoryUsage().heapUsed - before) / jars.length;
  console.log(`\nsign-in CPU per user (B − A, ${pairs} pairs): median ${median(perUserMs).toFixed(2)} ms (${perUserMs.map((x) => x.toFixed(2)).join(", ")})`);
  console.log(`cable.http_latency (get form, post, get /me; each step): p50 ${http.map((h) => h.p50).join(", ")} ms; p95 ${http.map((h) => h.p95).join(", ")} ms`);
  console.log(`a signed-in user's jar: ${(jarBytes / 1024).toFixed(1)} KB (${jars.length} jars, heap delta)`);
} finally {
  await app.stop();
}

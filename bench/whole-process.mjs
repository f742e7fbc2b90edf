// The whole process, as a user's machine pays for it (issue 55): each workload run whole by the
// engine (`artillery run`) and by k6 + xk6-cable (`k6 run`), at two sizes, in the same run; the
// kernel's CPU (user + system, every thread) and peak RSS from /usr/bin/time; the figure is the
// difference between the sizes per user, frame, arrival or request, so that each tool's start-up
// cancels and everything else a user pays is counted.
//
//   npm run build && node bench/whole-process.mjs                 # five pairs of every workload (about 60 min)
//   node bench/whole-process.mjs --workloads hold,sign-in --pairs 1
//
// Workloads (anycable-go 1.6.16 from the harness, and the Rails 6.1 + Devise 4.8 app for sign-in):
// - hold: N users connect, subscribe and hold 25 s (N = 2,000, 200 and 1): CPU per user, peak RSS per user;
// - listen: 2,000 subscribed users receive 500 broadcasts (1,000,000 frames) against none: frames per CPU-second;
// - chat: the capacity scenario by rate, 1,000 users for 40 s against 100 (the rate scaled with them): CPU per delivered frame;
// - arrivals: 100 arrivals/s for 20 s against 1/s, users that do nothing (the engine only): CPU-s per 1,000 arrivals;
// - sign-in: N users sign in through Devise's form (get, post, get /me), N = 600, 60 and 1, by the
//   engine, by Artillery's own http engine and by k6: CPU per HTTP request.
// Where three sizes run (1, N/10, N), the figure "at scale" is N/10 to N (what one more user costs
// a warm process), "from one" is 1 to N (the issue's held-out method: V8's warming of the hot
// paths counted in), and "warming" is the CPU-seconds the first N/10 cost beyond the scale rate.
// Goals (worst pair): hold ≤ k6's, listen ≥ 1.5× k6's, chat ≤ k6's, memory ≤ 0.2× k6's,
// arrivals ≤ 0.5, sign-in ≤ k6's. Results: bench/results/whole-process-<date>.json.
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { startRailsDevise } from "cable-test-servers";
import { METRICS } from "artillery-engine-cable/metrics";
import { startAnycableTarget } from "./lib/anycable-target.mjs";
import { CHAT_SCRIPT, findK6, k6Scenarios, LISTEN_SCRIPT } from "./lib/k6.mjs";
import { sleep } from "./lib/proc.mjs";
import { engineRevision, machineFacts } from "./lib/report.mjs";
import { processor } from "./lib/subjects.mjs";
import { marginal, round, startTimedArtillery, startTimedK6, threeSizes } from "./lib/whole.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const WORKLOADS = ["hold", "listen", "chat", "arrivals", "sign-in"];
const { values: flags } = parseArgs({
  options: {
    workloads: { type: "string", default: WORKLOADS.join(",") },
    pairs: { type: "string", default: "5" },
    out: { type: "string" },
    subjects: { type: "string", default: "engine,k6,artillery-http" },
    // The sign-in's two sizes (default 600 and 1): N and N/10 lets the JIT's warming cancel too.
    "sign-in-users": { type: "string" },
    "sign-in-few": { type: "string" },
    help: { type: "boolean", short: "h", default: false },
  },
});
if (flags.help) {
  console.log(`Usage: node bench/whole-process.mjs [--workloads ${WORKLOADS.join(",")}] [--subjects engine,k6,artillery-http] [--pairs 5] [--sign-in-users 600] [--sign-in-few 1] [--out file.json]`);
  process.exit(0);
}
const workloads = flags.workloads.split(",");
const subjects = new Set(flags.subjects.split(","));
const only = (list) => list.filter((s) => subjects.has(s));
const SUBJECTS = ["engine", "k6", "artillery-http"];
const unknown = [...workloads.filter((w) => !WORKLOADS.includes(w)), ...[...subjects].filter((s) => !SUBJECTS.includes(s))];
const pairs = Number(flags.pairs);
if (unknown.length > 0 || !(Number.isInteger(pairs) && pairs >= 1 && pairs <= 20)) {
  console.error(`--workloads: some of ${WORKLOADS.join(", ")}; --subjects: some of ${SUBJECTS.join(", ")}; --pairs: 1 to 20 (got ${flags.workloads}; ${flags.subjects}; ${flags.pairs})`);
  process.exit(2);
}
const log = (msg) => console.error(`[whole ${new Date().toISOString().slice(11, 19)}] ${msg}`);
const dir = mkdtempSync(path.join(os.tmpdir(), "cable-whole-"));
let runs = 0;
const id = (name) => `${name}-${++runs}`;

const k6 = findK6();
if (!k6.bin) {
  console.error(k6.why);
  process.exit(1);
}

// ---------------------------------------------------------------------------------------------
// hold: connect, subscribe, hold 25 s, leave.

const HOLD = { users: 2_000, few: 1, ratePerSecond: 500, holdS: 25 };

const K6_HOLD = `
import cable from "k6/x/cable";
import { sleep } from "k6";
import { Counter } from "k6/metrics";
const subscribed = new Counter("cable_subscribed");
export const options = JSON.parse(__ENV.BENCH_OPTIONS);
export default function () {
  const client = cable.connect(__ENV.BENCH_URL, { receiveTimeoutMs: 30000 });
  if (!client) return;
  const channel = client.subscribe(__ENV.BENCH_CHANNEL, JSON.parse(__ENV.BENCH_PARAMS));
  if (!channel) return;
  subscribed.add(1);
  sleep(Number(__ENV.BENCH_HOLD_S));
  client.disconnect();
}
`;

/** k6's arrivals for `n` users at `perSecond`, as one constant-arrival-rate scenario. */
function k6Arrivals(n, perSecond, graceS) {
  return k6Scenarios({ n0: 0, n, pauseMs: 0, ratePerSecond: perSecond, deadline: Date.now() + graceS * 1000 });
}

function subscribeStep(target) {
  const { channel, stream_name: stream } = target.channel;
  return channel === "$pubsub" ? { subscribe: { stream, as: "s" } } : { subscribe: { channel, as: "s" } };
}

const k6Channel = (target) => ({
  BENCH_URL: target.cableUrl,
  BENCH_CHANNEL: target.channel.channel,
  BENCH_PARAMS: JSON.stringify(Object.fromEntries(Object.entries(target.channel).filter(([k]) => k !== "channel"))),
});

async function hold(target, subject, n) {
  const timeoutMs = 120_000 + n * 10;
  // Each run starts with no users connected: the last run's closes counted out (anycable-go's gauge).
  await target.baseline();
  if (subject === "engine") {
    const script = {
      config: { target: target.cableUrl, engines: { cable: {} }, cable: { timeout: 30 }, phases: [{ arrivalCount: n, duration: Math.max(1, Math.ceil(n / HOLD.ratePerSecond)) }] },
      scenarios: [{ engine: "cable", flow: [{ connect: {} }, subscribeStep(target), { think: HOLD.holdS }] }],
    };
    const r = await startTimedArtillery(script, { dir, id: id(`hold-engine-${n}`), timeoutMs }).done;
    return { ...r, users: r.counters["vusers.completed"] ?? 0, failed: r.counters["vusers.failed"] ?? 0 };
  }
  const r = await startTimedK6(k6.bin, K6_HOLD, {
    dir,
    id: id(`hold-k6-${n}`),
    timeoutMs,
    env: { ...k6Channel(target), BENCH_HOLD_S: String(HOLD.holdS), BENCH_OPTIONS: JSON.stringify({ scenarios: k6Arrivals(n, HOLD.ratePerSecond, HOLD.holdS + 60) }) },
  }).done;
  const users = r.metrics.cable_subscribed?.count ?? 0;
  return { ...r, users, failed: n - users };
}

// ---------------------------------------------------------------------------------------------
// listen: 2,000 subscribed users; 500 broadcasts against none, on the same timeline.

const LISTEN = { users: 2_000, ratePerSecond: 500, broadcasts: 500, broadcastsPerSecond: 10 };

async function listen(target, subject, broadcasts) {
  const { users } = LISTEN;
  const rampS = Math.ceil(users / LISTEN.ratePerSecond);
  const sendS = Math.ceil(LISTEN.broadcasts / LISTEN.broadcastsPerSecond);
  // Every user listens to one deadline, the same with and without broadcasts: start-up (k6 makes
  // its 2,000 VUs first), the ramp, the wait for every subscription, the broadcasts, their delivery.
  const deadline = Date.now() + (15 + rampS + 5 + sendS + 10) * 1000;
  const timeoutMs = deadline - Date.now() + 60_000;
  const base = await target.baseline();
  const run =
    subject === "engine"
      ? startTimedArtillery(
          {
            config: { target: target.cableUrl, engines: { cable: {} }, cable: { timeout: 30 }, processor, phases: [{ arrivalCount: users, duration: rampS }] },
            scenarios: [{ engine: "cable", flow: [{ connect: {} }, subscribeStep(target), { function: "untilDeadline" }, { listen: { channel: "s", for: "{{ listenFor }}" } }] }],
          },
          { dir, id: id(`listen-engine-${broadcasts}`), timeoutMs, env: { BENCH_DEADLINE: String(deadline) } },
        )
      : startTimedK6(k6.bin, LISTEN_SCRIPT, {
          dir,
          id: id(`listen-k6-${broadcasts}`),
          timeoutMs,
          env: { ...k6Channel(target), BENCH_DEADLINE: String(deadline), BENCH_OPTIONS: JSON.stringify({ scenarios: k6Arrivals(users, LISTEN.ratePerSecond, (deadline - Date.now()) / 1000) }) },
        });
  const subscribed = await target.waitFor((c) => c.connectionsOpen - base.connectionsOpen >= users && c.framesIn - base.framesIn >= users, {
    deadline: deadline - sendS * 1000 - 5_000,
    abandon: () => run.child.exitCode !== null,
  });
  let sent = 0;
  if (subscribed.ready) {
    const started = Date.now();
    for (; sent < broadcasts; sent++) {
      const due = started + (sent * 1000) / LISTEN.broadcastsPerSecond;
      if (due > Date.now()) await sleep(due - Date.now());
      await target.broadcast("all", { seq: sent, ts: Date.now() });
    }
  }
  const r = await run.done;
  const frames = subject === "engine" ? (r.counters[METRICS.messagesReceived] ?? 0) : (r.metrics.cable_received?.count ?? 0);
  return { ...r, subscribed: subscribed.ready, sent, frames, expected: users * sent };
}

// ---------------------------------------------------------------------------------------------
// chat: scenarios/capacity-anycable.yml by rate; 1,000 users against 100, 50 messages/s per 1,000.

const CHAT = { users: 1_000, few: 100, rooms: 10, ratePer1000: 50, rampS: 5, holdS: 40 };

async function chat(target, subject, users) {
  const base = await target.baseline();
  // Delivered frames are counted by the server for both tools (its server_msg_total: the welcome,
  // the confirmation and every broadcast written to a user): k6 + xk6-cable panics in goja as its
  // chat VUs end (exit 2, in most runs here) and then writes no summary of what it received.
  const delivered = async () => (await target.health()).framesOut - base.framesOut - 2 * users;
  const rate = (CHAT.ratePer1000 * users) / 1000;
  const timeoutMs = (CHAT.rampS + CHAT.holdS + 90) * 1000;
  if (subject === "engine") {
    const overrides = { config: { target: target.cableUrl, cable: { timeout: 10, anycable: { broadcastUrl: target.broadcastUrl } }, phases: [{ name: "ramp", arrivalCount: users, duration: CHAT.rampS }] } };
    const variables = { rooms: CHAT.rooms, capacity_users: users, capacity_rate: rate, capacity_max_s: CHAT.holdS };
    const scenario = path.join(here, "..", "scenarios", "capacity-anycable.yml");
    const r = await startTimedArtillery(scenario, { dir, id: id(`chat-engine-${users}`), timeoutMs, args: ["--overrides", JSON.stringify(overrides), "--variables", JSON.stringify(variables)] }).done;
    return { ...r, frames: await delivered(), received: r.counters[METRICS.messagesReceived] ?? 0, failed: r.counters["vusers.failed"] ?? 0 };
  }
  // lib/k6.mjs's chat as the peer bench runs it: every user to one deadline, k6's start-up (its
  // VUs made first) and the ramp before the hold (a deadline per user made xk6-cable panic in goja
  // as its VUs ended, in every run).
  const deadline = Date.now() + (5 + CHAT.rampS + CHAT.holdS) * 1000;
  const r = await startTimedK6(k6.bin, CHAT_SCRIPT, {
    dir,
    id: id(`chat-k6-${users}`),
    timeoutMs,
    okCodes: [0, 2, 99, 107],
    env: {
      BENCH_URL: target.cableUrl,
      BENCH_BROADCAST_URL: target.broadcastUrl,
      BENCH_ROOMS: String(CHAT.rooms),
      BENCH_USERS: String(users),
      BENCH_RATE: String(rate),
      BENCH_DEADLINE: String(deadline),
      BENCH_OPTIONS: JSON.stringify({ scenarios: k6Arrivals(users, users / CHAT.rampS, CHAT.holdS + 60) }),
    },
  }).done;
  return { ...r, frames: await delivered(), received: r.summary ? (r.metrics.cable_received?.count ?? 0) : null, panicked: !r.summary, failed: 0 };
}

// ---------------------------------------------------------------------------------------------
// arrivals: users that arrive and leave, 100/s against 1/s for 20 s (the engine only: k6 has no
// arrival timer to compare; Artillery's own spins, about 10 CPU-s per 1,000, docs/benchmarks.md).

const ARRIVALS = { rate: 100, fewRate: 1, seconds: 20 };

async function arrivals(target, rate) {
  const script = {
    config: { target: target.cableUrl, engines: { cable: {} }, processor, phases: [{ duration: ARRIVALS.seconds, arrivalRate: rate }] },
    scenarios: [{ engine: "cable", flow: [{ function: "arrive" }] }],
  };
  const r = await startTimedArtillery(script, { dir, id: id(`arrivals-${rate}`), timeoutMs: 120_000 }).done;
  return { ...r, arrivals: r.counters["vusers.created"] ?? 0 };
}

// ---------------------------------------------------------------------------------------------
// sign-in: Devise's form, as scenarios/rails-devise.yml signs in; the engine, Artillery's http
// engine and k6 on the same app.

const SIGN_IN = { users: Number(flags["sign-in-users"] ?? 600), few: Number(flags["sign-in-few"] ?? 1), seconds: 10 };
const TOKEN = 'name="authenticity_token" value="([^"]+)"';

const K6_SIGN_IN = `
import http from "k6/http";
import { SharedArray } from "k6/data";
import { Counter } from "k6/metrics";
const signedIn = new Counter("signed_in");
const users = new SharedArray("users", () => open(__ENV.BENCH_USERS_CSV).trim().split("\\n").map((line) => line.split(",")));
export const options = JSON.parse(__ENV.BENCH_OPTIONS);
const base = __ENV.BENCH_HTTP;
export default function () {
  const [email, password] = users[(__ITER + (__VU - 1)) % users.length];
  const form = http.get(base + "/users/sign_in");
  const token = /${TOKEN}/.exec(form.body);
  if (!token) return;
  const login = http.post(base + "/users/sign_in", { authenticity_token: token[1], "user[email]": email, "user[password]": password }, { redirects: 0 });
  if (login.status !== 302) return;
  const me = http.get(base + "/me");
  if (me.status === 200 && me.json("id")) signedIn.add(1);
}
`;

function signInFlow() {
  return [
    { get: { url: "/users/sign_in", capture: { regexp: TOKEN, group: 1, as: "authenticity_token" } } },
    { post: { url: "/users/sign_in", form: { authenticity_token: "{{ authenticity_token }}", "user[email]": "{{ email }}", "user[password]": "{{ password }}" }, followRedirect: false } },
    { get: { url: "/me", capture: { json: "$.id", as: "user_id" } } },
  ];
}

async function signIn(app, subject, n) {
  const timeoutMs = 180_000;
  const phases = [{ duration: SIGN_IN.seconds, arrivalCount: n }];
  const payload = { path: app.usersCsv, fields: ["email", "password"], order: "sequence" };
  if (subject === "k6") {
    const r = await startTimedK6(k6.bin, K6_SIGN_IN, {
      dir,
      id: id(`sign-in-k6-${n}`),
      timeoutMs,
      env: { BENCH_HTTP: app.http, BENCH_USERS_CSV: app.usersCsv, BENCH_OPTIONS: JSON.stringify({ scenarios: k6Arrivals(n, n / SIGN_IN.seconds, 60) }) },
    }).done;
    const ok = r.metrics.signed_in?.count ?? 0;
    return { ...r, requests: r.metrics.http_reqs?.count ?? 0, signedIn: ok };
  }
  const script =
    subject === "engine"
      ? { config: { target: app.ws, engines: { cable: {} }, phases, payload }, scenarios: [{ engine: "cable", flow: signInFlow() }] }
      : { config: { target: app.http, phases, payload }, scenarios: [{ flow: signInFlow() }] };
  const r = await startTimedArtillery(script, { dir, id: id(`sign-in-${subject}-${n}`), timeoutMs }).done;
  // The engine counts every answer by status (cable.http_codes.<status>); Artillery's http engine, http.requests.
  const answers = Object.entries(r.counters).filter(([k]) => k.startsWith(`${METRICS.httpCodes}.`));
  const requests = subject === "engine" ? answers.reduce((sum, [, v]) => sum + v, 0) : (r.counters["http.requests"] ?? 0);
  return { ...r, requests, signedIn: r.counters["vusers.completed"] ?? 0 };
}

// ---------------------------------------------------------------------------------------------

const results = { startedAt: new Date().toISOString(), engine: engineRevision(path.join(here, "..")), machine: machineFacts(), k6: k6.version, settings: { HOLD, LISTEN, CHAT, ARRIVALS, SIGN_IN }, pairs: [] };
const need = (set) => workloads.some((w) => set.includes(w));
const target = need(["hold", "listen", "chat", "arrivals"]) ? await startAnycableTarget() : null;
const app = need(["sign-in"]) ? await startRailsDevise({ users: SIGN_IN.users }) : null;
try {
  for (let pair = 1; pair <= pairs; pair++) {
    const row = { pair };
    if (workloads.includes("hold")) {
      row.hold = {};
      for (const s of only(["engine", "k6"])) {
        const f = await sized(`hold ${s}`, [HOLD.few, HOLD.users / 10, HOLD.users], (n) => hold(target, s, n), (r) => r.users);
        row.hold[s] = { runs: f.runs, cpuPerUserMs: ms(f.atScale), fromOneMs: ms(f.fromOne), warmingS: f.warmingS, rssPerUserKb: round(f.atScale && f.atScale.rssPerUnitKb, 1), failed: f.runs.at(-1).failed };
        log(`pair ${pair} hold ${s}: ${row.hold[s].cpuPerUserMs} ms per user at scale, ${row.hold[s].fromOneMs} from one, warming ${f.warmingS} s; ${row.hold[s].rssPerUserKb} KB peak RSS per user`);
      }
    }
    if (workloads.includes("listen")) {
      row.listen = {};
      for (const s of only(["engine", "k6"])) {
        const none = await attempt(`listen ${s} 0`, () => listen(target, s, 0));
        const all = await attempt(`listen ${s} ${LISTEN.broadcasts}`, () => listen(target, s, LISTEN.broadcasts));
        const m = marginal(none, all, (r) => r.frames);
        row.listen[s] = { none: slim(none), all: { ...slim(all), frames: all.frames, expected: all.expected }, framesPerCpuS: round(m && 1 / m.cpuPerUnitS, 0), delivery: round(all.frames / all.expected, 4) };
        log(`pair ${pair} listen ${s}: ${row.listen[s].framesPerCpuS} frames per CPU-s, delivery ${row.listen[s].delivery}`);
      }
    }
    if (workloads.includes("chat")) {
      row.chat = {};
      for (const s of only(["engine", "k6"])) {
        const few = await attempt(`chat ${s} ${CHAT.few}`, () => chat(target, s, CHAT.few));
        const many = await attempt(`chat ${s} ${CHAT.users}`, () => chat(target, s, CHAT.users));
        const m = marginal(few, many, (r) => r.frames);
        row.chat[s] = { few: { ...slim(few), frames: few.frames, received: few.received, panicked: few.panicked }, many: { ...slim(many), frames: many.frames, received: many.received, panicked: many.panicked }, cpuPerFrameUs: round(m && m.cpuPerUnitS * 1e6, 1), failed: many.failed };
        log(`pair ${pair} chat ${s}: ${row.chat[s].cpuPerFrameUs} µs per frame (${many.frames} frames)`);
      }
    }
    if (workloads.includes("arrivals") && subjects.has("engine")) {
      const few = await attempt(`arrivals ${ARRIVALS.fewRate}`, () => arrivals(target, ARRIVALS.fewRate));
      const many = await attempt(`arrivals ${ARRIVALS.rate}`, () => arrivals(target, ARRIVALS.rate));
      const m = marginal(few, many, (r) => r.arrivals);
      row.arrivals = { few: slim(few), many: slim(many), cpuSPer1000: round(m && m.cpuPerUnitS * 1000) };
      log(`pair ${pair} arrivals: ${row.arrivals.cpuSPer1000} CPU-s per 1,000 arrivals`);
    }
    if (workloads.includes("sign-in")) {
      row.signIn = {};
      for (const s of only(["engine", "artillery-http", "k6"])) {
        const f = await sized(`sign-in ${s}`, [SIGN_IN.few, SIGN_IN.users / 10, SIGN_IN.users], (n) => signIn(app, s, n), (r) => r.requests);
        row.signIn[s] = { runs: f.runs, cpuPerRequestMs: ms(f.atScale), fromOneMs: ms(f.fromOne), warmingS: f.warmingS, signedIn: f.runs.at(-1).signedIn };
        log(`pair ${pair} sign-in ${s}: ${row.signIn[s].cpuPerRequestMs} ms per request at scale, ${row.signIn[s].fromOneMs} from one, warming ${f.warmingS} s (${row.signIn[s].signedIn} of ${SIGN_IN.users} signed in)`);
      }
    }
    results.pairs.push(row);
  }
} finally {
  await target?.stop();
  await app?.stop();
}
results.goals = judge(results.pairs);
const out = flags.out ?? path.join(here, "results", `whole-process-${results.startedAt.slice(0, 10)}.json`);
mkdirSync(path.dirname(out), { recursive: true });
writeFileSync(out, JSON.stringify(results, null, 2) + "\n");
console.log(table(results.pairs));
console.log("\n" + results.goals.map((g) => `${g.met === null ? "–" : g.met ? "met" : "MISSED"}  ${g.name}: ${g.worst ?? "no figure"} (goal ${g.goal})`).join("\n"));
console.log(`\nresults: ${path.relative(process.cwd(), out)}`);
// The servers are stopped; a pooled fetch connection must not keep the bench waiting.
process.exit(0);

/**
 * One whole run; a run that fails (k6 + xk6-cable panics now and then in goja, from onMessage) is
 * run once more, and a second failure is recorded as the pair's figure, not the bench's end.
 */
async function attempt(what, run) {
  for (let tries = 1; ; tries++) {
    try {
      return await run();
    } catch (err) {
      log(`${what}: ${err.message.split("\n")[0].slice(0, 300)}${tries === 1 ? "; once more" : ""}`);
      if (tries === 2) return { error: err.message.split("\n")[0].slice(0, 300) };
    }
  }
}

/** Three whole runs of one workload, at 1, N/10 and N, and their figures (lib/whole.mjs threeSizes). */
async function sized(what, sizes, run, units) {
  const runs = [];
  for (const n of sizes) runs.push(await attempt(`${what} ${n}`, () => run(n)));
  const figures = threeSizes(...runs, units);
  return { runs: runs.map((r, i) => ({ n: sizes[i], ...slim(r), units: r.error ? null : units(r), failed: r.failed, signedIn: r.signedIn })), ...figures };
}

function ms(m) {
  return round(m && m.cpuPerUnitS * 1000);
}

function slim(r) {
  return r.error ? { error: r.error } : { cpuS: r.cpuS, maxRssKb: r.maxRssKb, wallS: r.wallS };
}

/** Each goal over every pair, the worst counting; null where no pair has both figures. */
function judge(rows) {
  const ratios = (pick) => rows.map(pick).filter((v) => Number.isFinite(v));
  const goal = (name, values, { max, min, goal }) => {
    if (values.length === 0) return { name, goal, worst: null, met: null, values };
    const worst = max !== undefined ? Math.max(...values) : Math.min(...values);
    return { name, goal, worst: round(worst, 3), met: max !== undefined ? worst <= max : worst >= min, values: values.map((v) => round(v, 3)) };
  };
  const ratio = (a, b) => (Number.isFinite(a) && Number.isFinite(b) && b > 0 ? a / b : NaN);
  return [
    goal("hold: CPU per user at scale (N/10 to N), engine ÷ k6", ratios((r) => ratio(r.hold?.engine?.cpuPerUserMs, r.hold?.k6?.cpuPerUserMs)), { max: 1, goal: "≤ 1" }),
    goal("hold: CPU per user from one (1 to N, warming in), engine ÷ k6", ratios((r) => ratio(r.hold?.engine?.fromOneMs, r.hold?.k6?.fromOneMs)), { max: 1, goal: "≤ 1" }),
    goal("hold: peak RSS per user, engine ÷ k6", ratios((r) => ratio(r.hold?.engine?.rssPerUserKb, r.hold?.k6?.rssPerUserKb)), { max: 0.2, goal: "≤ 0.2" }),
    goal("listen: frames per CPU-second, engine ÷ k6", ratios((r) => ratio(r.listen?.engine?.framesPerCpuS, r.listen?.k6?.framesPerCpuS)), { min: 1.5, goal: "≥ 1.5" }),
    goal("chat: CPU per delivered frame, engine ÷ k6", ratios((r) => ratio(r.chat?.engine?.cpuPerFrameUs, r.chat?.k6?.cpuPerFrameUs)), { max: 1, goal: "≤ 1" }),
    goal("arrivals at 100/s: CPU-s per 1,000", ratios((r) => r.arrivals?.cpuSPer1000), { max: 0.5, goal: "≤ 0.5" }),
    goal("sign-in: CPU per HTTP request at scale, engine ÷ k6", ratios((r) => ratio(r.signIn?.engine?.cpuPerRequestMs, r.signIn?.k6?.cpuPerRequestMs)), { max: 1, goal: "≤ 1" }),
    goal("sign-in: CPU per HTTP request from one, engine ÷ k6", ratios((r) => ratio(r.signIn?.engine?.fromOneMs, r.signIn?.k6?.fromOneMs)), { max: 1, goal: "≤ 1" }),
  ];
}

function table(rows) {
  const f = (v, d = 2) => (Number.isFinite(v) ? v.toFixed(d) : "–");
  const pair = (a, b, d) => `${f(a, d)} / ${f(b, d)}`;
  const lines = [
    "| pair | hold ms per user at scale (from one), engine / k6 | warming s, engine / k6 | peak RSS KB per user, engine / k6 | frames per CPU-s, engine / k6 | chat µs per frame, engine / k6 | arrivals CPU-s per 1,000 | sign-in ms per request at scale (from one), engine / Artillery http / k6 |",
    "|---|---|---|---|---|---|---|---|",
  ];
  for (const r of rows) {
    const h = r.hold;
    const si = r.signIn;
    lines.push(
      `| ${r.pair} | ${pair(h?.engine?.cpuPerUserMs, h?.k6?.cpuPerUserMs)} (${pair(h?.engine?.fromOneMs, h?.k6?.fromOneMs)}) | ${pair(h?.engine?.warmingS, h?.k6?.warmingS)} | ${pair(h?.engine?.rssPerUserKb, h?.k6?.rssPerUserKb, 1)} | ${pair(r.listen?.engine?.framesPerCpuS, r.listen?.k6?.framesPerCpuS, 0)} | ${pair(r.chat?.engine?.cpuPerFrameUs, r.chat?.k6?.cpuPerFrameUs, 1)} | ${f(r.arrivals?.cpuSPer1000, 3)} | ${f(si?.engine?.cpuPerRequestMs)} / ${f(si?.["artillery-http"]?.cpuPerRequestMs)} / ${f(si?.k6?.cpuPerRequestMs)} (${f(si?.engine?.fromOneMs)} / ${f(si?.["artillery-http"]?.fromOneMs)} / ${f(si?.k6?.fromOneMs)}) |`,
    );
  }
  return lines.join("\n");
}

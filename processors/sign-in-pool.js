// Processor functions for scenarios/laravel-token-pool.yml: a pool of users signed in once, in
// Artillery's `before` flow, and their tokens handed out to the virtual users through variables.
// For a login too slow (or too rate-limited) to run once per virtual user.
const { readFileSync } = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { threadId } = require("node:worker_threads");

/**
 * `before` flow: the first `pool_size` rows of `pool_file` (an `email,password` CSV beside the
 * scenario) as `pool_users`, for a `loop … over: pool_users`. Read here because Artillery deals a
 * payload's rows only to scenarios, not to hooks.
 */
function loadPoolUsers(context, _events, done) {
  const file = path.resolve(path.dirname(context.vars.$scenarioFile ?? "."), String(context.vars.pool_file ?? "users.csv"));
  const rows = readFileSync(file, "utf8").split(/\r?\n/).filter(Boolean);
  context.vars.pool_users = rows.slice(0, Number(context.vars.pool_size) || rows.length).map((line) => {
    const [email, ...rest] = line.split(",");
    return { email, password: rest.join(",") };
  });
  context.vars.pool = [];
  done();
}

/** `before` flow, after each sign-in: keeps the user's token and id (captured by the steps before it). */
function keepSignedIn(context, _events, done) {
  context.vars.pool.push({ token: context.vars.token, user_id: context.vars.user_id });
  done();
}

// Artillery runs the scenario on max(1, cores − 1) worker threads, each with the whole pool: thread
// t hands out entries t, t + threads, t + 2 × threads, … so that two threads never hand out the same
// user while the pool holds more users than are online at once.
const threads = Math.max(1, os.cpus().length - 1);
let handedOut = 0;

/** Scenario: this user's token and id, the next of this thread's share of the pool. */
function takeFromPool(context, _events, done) {
  const pool = context.vars.pool;
  if (!Array.isArray(pool) || pool.length === 0) return done(new Error("the before flow signed no one in"));
  const entry = pool[(((threadId || 1) - 1) % threads + threads * handedOut++) % pool.length];
  context.vars.token = entry.token;
  context.vars.user_id = entry.user_id;
  done();
}

module.exports = { loadPoolUsers, keepSignedIn, takeFromPool };

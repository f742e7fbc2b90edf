import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { readdir, rm, utimes, writeFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { dotenv, makeLaravelDir } from "./laravel-dir.js";
import { readLoginLog, readSessions, type LaravelSession, type LoginEvent } from "./login-log.js";
import { freePort, spawnServer, type RunningServer } from "./process.js";
import { presenceUsers } from "./pusher-api.js";
import { reverbApp, startReverb, type ReverbServer } from "./reverb.js";

export { doubleSignIns, type DoubleSignIn, type LaravelSession, type LoginEvent } from "./login-log.js";

export interface LaravelUser {
  id: number;
  name: string;
  email: string;
  password: string;
}

export interface LaravelAppOptions {
  /** How many users to seed: user i is `useri@example.test`, "User i", password `password-i`. Default 100. */
  users?: number;
  /** PHP_CLI_SERVER_WORKERS: requests served at once. Default 8. */
  workers?: number;
  /**
   * Whether the session's /broadcasting/auth requires the CSRF token (419 without). Default true;
   * false is stock Laravel 11, which exempts that route from CSRF.
   */
  broadcastAuthCsrf?: boolean;
  /** Laravel's `throttle` on POST /login, `max,decayMinutes` ("5,0.1": 5 a source address per 6 s). Default none. */
  loginThrottle?: string;
}

export interface LaravelApp {
  /** `http://127.0.0.1:P`: GET/POST /login, GET /dashboard, POST /logout, POST /broadcasting/auth, POST /api/login, POST /api/broadcasting/auth. */
  http: string;
  /** Reverb beside it, `ws://127.0.0.1:R`: the WebSocket at `/app/<key>?protocol=7`. */
  ws: string;
  appId: string;
  key: string;
  secret: string;
  /** The session cookie's name (`<APP_NAME slug>_session`); the CSRF cookie is `XSRF-TOKEN`. */
  sessionCookie: string;
  users: LaravelUser[];
  /** The app's private copy (temp dir, removed by stop()). */
  dir: string;
  /** How long startLaravelApp took, Reverb included. */
  startMs: number;
  /** The user ids Reverb holds in a presence channel (`presence-room.1`), through its HTTP API. */
  presenceMembers(channel: string): Promise<number[]>;
  /** Every sign-in and sign-out so far, in the order they were written. */
  logins(): Promise<LoginEvent[]>;
  /** The session files now, and who is signed in under each. */
  sessions(): Promise<LaravelSession[]>;
  /** PHP's built-in server and Reverb, for their pids or a restart. */
  server: RunningServer;
  reverb: ReverbServer;
  stop(): Promise<void>;
  /** What PHP (request log, Laravel's errors on stderr) and Reverb printed. */
  output(): string;
}

const run = promisify(execFile);
const APP_NAME = "Cable Laravel";

/** The users the app seeds (laravel-app/database/seeders/DatabaseSeeder.php): the same pattern, derived here. */
export function laravelUsers(count: number): LaravelUser[] {
  return Array.from({ length: count }, (_, i) => ({
    id: i + 1,
    name: `User ${i + 1}`,
    email: `user${i + 1}@example.test`,
    password: `password-${i + 1}`,
  }));
}

/**
 * Starts a small Laravel 11 app with a Breeze-style session login, CSRF, a token login and
 * broadcasting auth for presence and private channels, served by PHP's built-in server with
 * several workers, with Reverb beside it under the same app credentials. Each start runs from its
 * own temp copy (laravel-dir.ts), so test files may start it in parallel.
 */
export async function startLaravelApp(options: LaravelAppOptions = {}): Promise<LaravelApp> {
  const began = Date.now();
  const base = reverbApp();
  if (!existsSync(path.join(base, "artisan"))) throw new Error(`the Laravel app is not unpacked at ${base}: run \`bash scripts/setup-test-servers.sh\``);
  const users = laravelUsers(options.users ?? 100);

  const [reverb, prepared] = await Promise.allSettled([startReverb(), prepare(base, users.length, options)]);
  if (reverb.status === "rejected" || prepared.status === "rejected") {
    if (reverb.status === "fulfilled") await reverb.value.stop();
    if (prepared.status === "fulfilled") await rm(prepared.value.dir, { recursive: true, force: true });
    throw reverb.status === "rejected" ? reverb.reason : (prepared as PromiseRejectedResult).reason;
  }
  const { dir, env, port } = prepared.value;
  const rv = reverb.value;
  const fullEnv = {
    ...env,
    REVERB_APP_ID: rv.appId,
    REVERB_APP_KEY: rv.key,
    REVERB_APP_SECRET: rv.secret,
    REVERB_HOST: "127.0.0.1",
    REVERB_PORT: String(rv.port),
    REVERB_SCHEME: "http",
  };
  let server: RunningServer;
  try {
    await writeFile(path.join(dir, ".env"), dotenv(fullEnv));
    server = await spawnServer({
      command: "php",
      // -q: no "Accepted"/"Closing" lines per request, so output() keeps Laravel's errors (stderr).
      // OPcache, off for the CLI by default, is shared by the forked workers: ~25% less per request.
      args: ["-q", "-d", "opcache.enable_cli=1", "-S", `127.0.0.1:${port}`, "-t", "public", "public/index.php"],
      cwd: dir,
      port,
      env: { ...fullEnv, PHP_CLI_SERVER_WORKERS: String(options.workers ?? 8) },
      processGroup: true,
    });
  } catch (err) {
    await rv.stop();
    await rm(dir, { recursive: true, force: true });
    throw err;
  }

  await warmUp(`http://127.0.0.1:${port}`);
  const creds = { appId: rv.appId, key: rv.key, secret: rv.secret };
  const reverbHttp = `http://127.0.0.1:${rv.port}`;
  return {
    http: `http://127.0.0.1:${port}`,
    ws: rv.url,
    ...creds,
    sessionCookie: `${APP_NAME.toLowerCase().replace(/[^a-z0-9]+/g, "_")}_session`,
    users,
    dir,
    startMs: Date.now() - began,
    presenceMembers: async (channel) => (await presenceUsers(reverbHttp, creds, channel)).map(Number),
    logins: () => readLoginLog(env.CABLE_LOGIN_LOG),
    sessions: () => readSessions(path.join(dir, "storage", "framework", "sessions")),
    server,
    reverb: rv,
    stop: async () => {
      await Promise.all([server.stop(), rv.stop()]);
      await rm(dir, { recursive: true, force: true });
    },
    output: () => `--- php -S\n${server.output()}\n--- reverb\n${rv.output()}`,
  };
}

/**
 * Blade's views compiled before the app takes a request. Laravel 11.33's BladeCompiler writes a
 * compiled view in place (`file_put_contents`, truncate then write; atomic only since
 * laravel/framework#58812): on a cold copy PHP's eight workers compiled `login.blade.php` at once,
 * and a worker that opened it between another's truncate and write rendered nothing, answering 200
 * with every header and cookie and 0 bytes (strace: emptied at .350102, read as "" at .350155 and
 * .350167, written at .350473). The flow's `GET /login` then failed as cable.capture_failed "(HTTP
 * 200, 0 bytes of text/html)": 2 of 20 loaded runs of laravel-app.test.ts before, 0 of 20 after.
 * The sources are dated back first: Laravel recompiles a view whose source is as new (in whole
 * seconds) as its compiled file, which a copy made in the same second would be.
 */
async function compileViews(dir: string, env: Record<string, string>): Promise<void> {
  const views = path.join(dir, "resources", "views");
  const past = new Date(Date.now() - 3_600_000);
  for (const file of await readdir(views, { recursive: true })) await utimes(path.join(views, file), past, past);
  await run("php", ["artisan", "view:cache", "--no-interaction"], { cwd: dir, env: { ...process.env, ...env, BROADCAST_CONNECTION: "null" }, timeout: 60_000 });
}

/**
 * Every worker serves a few requests before the tests do: a backstop for what compileViews fixes
 * (in 20 loaded starts with only this warm-up, 11 empty answers all landed on its first burst).
 */
async function warmUp(http: string): Promise<void> {
  for (let burst = 0; burst < 4; burst++) {
    await Promise.all(Array.from({ length: 8 }, () => fetch(`${http}/login`, { signal: AbortSignal.timeout(10_000) }).then((r) => r.arrayBuffer(), () => undefined)));
  }
}

/** The private copy, migrated and seeded, and the environment its processes share. */
async function prepare(base: string, userCount: number, options: LaravelAppOptions) {
  const dir = await makeLaravelDir(base);
  try {
    const port = await freePort();
    const env = {
      APP_NAME,
      APP_ENV: "local",
      APP_DEBUG: "false",
      APP_KEY: `base64:${randomBytes(32).toString("base64")}`,
      APP_URL: `http://127.0.0.1:${port}`,
      LOG_CHANNEL: "stderr",
      LOG_LEVEL: "warning",
      DB_CONNECTION: "sqlite",
      DB_DATABASE: path.join(dir, "database", "database.sqlite"),
      SESSION_DRIVER: "file",
      CACHE_STORE: "file",
      QUEUE_CONNECTION: "sync",
      BROADCAST_CONNECTION: "reverb",
      BCRYPT_ROUNDS: "4",
      CABLE_USERS: String(userCount),
      CABLE_LOGIN_LOG: path.join(dir, "storage", "logins.jsonl"),
      CABLE_BROADCAST_AUTH_CSRF: options.broadcastAuthCsrf === false ? "0" : "1",
      CABLE_LOGIN_THROTTLE: options.loginThrottle ?? "",
    };
    // No config cache was copied (laravel-dir.ts), so no config:clear: the variables take effect.
    // Booting registers routes/channels.php on the broadcaster, and the reverb one wants Reverb's
    // credentials, which come from the Reverb starting meanwhile: the migration broadcasts nothing.
    await run("php", ["artisan", "migrate", "--force", "--seed", "--no-interaction"], {
      cwd: dir,
      env: { ...process.env, ...env, BROADCAST_CONNECTION: "null" },
      timeout: 60_000,
    }).catch((err: Error & { stdout?: string; stderr?: string }) => {
      throw new Error(`migrating the Laravel app in ${dir} failed: ${err.message}\n${err.stdout ?? ""}${err.stderr ?? ""}`);
    });
    await compileViews(dir, env);
    return { dir, env, port };
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}

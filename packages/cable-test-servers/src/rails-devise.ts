import { existsSync, readFileSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { freePort, spawnServer, type RunningServer } from "./process.js";

export interface RailsDeviseUser {
  id: number;
  email: string;
  password: string;
}

/** A line of the app's sign-in log (Warden's after_authentication and before_logout). */
export interface SignInEvent {
  event: "sign_in" | "sign_out";
  user_id: number;
  /** Devise's scope: always "user" here. */
  scope: string;
  /** ISO 8601, microseconds, UTC. */
  at: string;
  pid: number;
}

/** A line of the app's cable log: ApplicationCable::Connection's connect (or reject) and disconnect. */
export interface CableEvent {
  event: "connect" | "reject" | "disconnect";
  /** null for a rejected connection: it has no user. */
  user_id: number | null;
  at: string;
  pid: number;
}

export interface RailsDeviseOptions {
  /** How many users to seed (user1@example.test / password-1 …); default 100. */
  users?: number;
  /** puma's `-t`; default "8:32" (40 concurrent users sign in and hold sockets at once). */
  threads?: string;
  /** Action Cable's worker pool (connect, subscribe and actions run there); default 8. */
  cableWorkers?: number;
  /** Rails' log level, printed to output(); default "warn" (info logs every frame under load). */
  logLevel?: "debug" | "info" | "warn" | "error";
}

export interface RailsDeviseServer extends RunningServer {
  /** `http://127.0.0.1:P`: the sign-in form is at `/users/sign_in`, the JSON identity at `/me`. */
  http: string;
  /** `ws://127.0.0.1:P/cable` */
  ws: string;
  /** The Origin Action Cable accepts (`http://127.0.0.1:P`), as the engine derives it from `ws`. */
  origin: string;
  /** The seeded users, id order: users[i] is user i+1. */
  users: RailsDeviseUser[];
  /** The same users as `email,password` lines, no header: an Artillery payload file. */
  usersCsv: string;
  /** Devise's session cookie (Rails' cookie store): `_rails_devise_session`. */
  sessionCookie: string;
  /** This start's own directory: sqlite database, logs, the CSV. Removed by stop(). */
  dir: string;
  /** How long the start took, spawn to listening, in ms. */
  bootMs: number;
  /**
   * The HS256 secret of the tokens `GET /anycable_token` mints (signed in; `?ttl=<s>`, default 3600):
   * anycable-go started with `--jwt_secret=<it>` accepts them as `?jid=<token>`.
   */
  jwtSecret: string;
  signIns(): SignInEvent[];
  cableConnections(): CableEvent[];
  /** Signs in through Devise's form as a browser would; resolves to the `Cookie` header to send. */
  signIn(user: RailsDeviseUser): Promise<string>;
}

const APP = path.resolve(__dirname, "../rails-devise");
const SESSION_COOKIE = "_rails_devise_session";
// Fixed, so that a cookie minted by one start is readable by a restart on the same state.
const SECRET_KEY_BASE = "rails-devise-test-secret-".padEnd(128, "0123456789abcdef");
const JWT_SECRET = "rails-devise-anycable-jwt-secret";
const HTTP_TIMEOUT_MS = 10_000;

export function deviseUsers(count: number): RailsDeviseUser[] {
  return Array.from({ length: count }, (_, i) => ({ id: i + 1, email: `user${i + 1}@example.test`, password: `password-${i + 1}` }));
}

/**
 * Starts a Rails 6.1 app with Devise 4.8 (rails-devise/) under puma on loopback: Devise's own
 * sign-in form and sessions, `/me`, and Action Cable at `/cable` identifying users through Warden,
 * with WhoamiChannel, RoomChannel and NotificationsChannel. Each start has its own directory, so
 * that several test files may start one at once.
 */
export async function startRailsDevise(options: RailsDeviseOptions = {}): Promise<RailsDeviseServer> {
  if (!existsSync("/usr/bin/puma")) {
    throw new Error("puma is not installed: run `bash scripts/setup-test-servers.sh` (it installs ruby-rails, ruby-devise, ruby-sqlite3 and puma)");
  }
  const users = deviseUsers(options.users ?? 100);
  const dir = await mkdtemp(path.join(os.tmpdir(), "rails-devise-"));
  const usersCsv = path.join(dir, "users.csv");
  await writeFile(usersCsv, users.map((u) => `${u.email},${u.password}\n`).join(""));
  const port = await freePort();
  const began = Date.now();
  let server: RunningServer;
  try {
    server = await spawnServer({
      command: "puma",
      args: ["-b", `tcp://127.0.0.1:${port}`, "-t", options.threads ?? "8:32", path.join(APP, "config.ru")],
      port,
      // puma reads config/puma.rb from its working directory: the empty state directory has none.
      cwd: dir,
      // Rails' boot is seconds here, more on a busy 2-core machine; puma binds only once it is done.
      startTimeoutMs: 60_000,
      env: {
        RAILS_ENV: "production",
        RACK_ENV: "production",
        SECRET_KEY_BASE,
        RAILS_DEVISE_STATE: dir,
        RAILS_DEVISE_PORT: String(port),
        RAILS_DEVISE_USERS: String(users.length),
        CABLE_WORKERS: String(options.cableWorkers ?? 8),
        RAILS_LOG_LEVEL: options.logLevel ?? "warn",
        ANYCABLE_JWT_SECRET: JWT_SECRET,
      },
    });
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    const missing = /cannot load such file -- (\S+)/.exec(String(err));
    if (missing) throw new Error(`Ruby cannot load ${missing[1]}: run \`bash scripts/setup-test-servers.sh\` (ruby-rails ruby-devise ruby-sqlite3 puma)\n${err}`);
    throw err;
  }
  const bootMs = Date.now() - began;
  const http = `http://127.0.0.1:${port}`;
  return {
    ...server,
    http,
    ws: `ws://127.0.0.1:${port}/cable`,
    origin: http,
    users,
    usersCsv,
    sessionCookie: SESSION_COOKIE,
    dir,
    bootMs,
    jwtSecret: JWT_SECRET,
    signIns: () => jsonLines<SignInEvent>(path.join(dir, "sign-ins.jsonl")),
    cableConnections: () => jsonLines<CableEvent>(path.join(dir, "cable.jsonl")),
    signIn: (user) => signIn(http, user),
    stop: async () => {
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

function jsonLines<T>(file: string): T[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => line.length > 0)
    .map((line) => JSON.parse(line) as T);
}

/** The cookies a browser would keep for the app, from each response's Set-Cookie. */
function keep(jar: Map<string, string>, response: Response): void {
  for (const line of response.headers.getSetCookie()) {
    const [pair] = line.split(";");
    const at = pair.indexOf("=");
    if (at > 0) jar.set(pair.slice(0, at).trim(), pair.slice(at + 1).trim());
  }
}

const cookieHeader = (jar: Map<string, string>) => [...jar].map(([k, v]) => `${k}=${v}`).join("; ");

async function signIn(http: string, user: RailsDeviseUser): Promise<string> {
  const jar = new Map<string, string>();
  const form = await fetch(`${http}/users/sign_in`, { signal: AbortSignal.timeout(HTTP_TIMEOUT_MS) });
  keep(jar, form);
  const token = /name="authenticity_token" value="([^"]+)"/.exec(await form.text())?.[1];
  if (!token) throw new Error(`GET /users/sign_in (${form.status}) has no authenticity_token`);
  const posted = await fetch(`${http}/users/sign_in`, {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded", cookie: cookieHeader(jar) },
    body: new URLSearchParams({ authenticity_token: token, "user[email]": user.email, "user[password]": user.password }),
    signal: AbortSignal.timeout(HTTP_TIMEOUT_MS),
  });
  keep(jar, posted);
  await posted.arrayBuffer();
  if (posted.status !== 302) throw new Error(`signing in ${user.email} answered ${posted.status}, not 302`);
  return cookieHeader(jar);
}

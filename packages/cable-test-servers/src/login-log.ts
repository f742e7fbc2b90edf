import { readdir, readFile } from "node:fs/promises";
import path from "node:path";

/** One line of the Laravel app's login log (laravel-app/app/Support/LoginLog.php). */
export interface LoginEvent {
  event: "login" | "logout";
  /** `session`: the browser's form login; `token`: POST /api/login. */
  via: "session" | "token";
  user: number;
  /** The session id after sign-in (its file under storage/framework/sessions), or `token:<hash prefix>`. */
  session: string;
  /** Unix time in seconds, microsecond resolution. */
  at: number;
  /** The source address the app saw (`request()->ip()`). */
  ip?: string;
}

export async function readLoginLog(file: string): Promise<LoginEvent[]> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw err;
  }
  return text
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as LoginEvent);
}

/** A sign-in made while the same user was still signed in elsewhere (a session not yet logged out). */
export interface DoubleSignIn {
  user: number;
  /** The sign-in still open… */
  open: LoginEvent;
  /** …when this one came. */
  again: LoginEvent;
}

/**
 * Every sign-in of a user who was already signed in under another session or token. A sign-in
 * never followed by a logout stays open to the end of the log.
 */
export function doubleSignIns(events: LoginEvent[]): DoubleSignIn[] {
  const open = new Map<number, Map<string, LoginEvent>>();
  const found: DoubleSignIn[] = [];
  for (const e of [...events].sort((a, b) => a.at - b.at)) {
    const mine = open.get(e.user) ?? new Map<string, LoginEvent>();
    open.set(e.user, mine);
    if (e.event === "logout") {
      mine.delete(e.session);
      continue;
    }
    for (const other of mine.values()) found.push({ user: e.user, open: other, again: e });
    mine.set(e.session, e);
  }
  return found;
}

/** A session file of the app (SESSION_DRIVER=file): its id, and the user signed in under it, if any. */
export interface LaravelSession {
  id: string;
  user?: number;
}

/** The sessions the app holds now, guests' included (a sign-in regenerates the id but keeps the old file). */
export async function readSessions(dir: string): Promise<LaravelSession[]> {
  const sessions: LaravelSession[] = [];
  for (const id of await readdir(dir)) {
    if (id.startsWith(".")) continue;
    let payload: string;
    try {
      payload = await readFile(path.join(dir, id), "utf8");
    } catch {
      continue; // logged out (deleted) while we listed
    }
    // The payload is PHP's serialize() of the session array; the web guard keeps the user id under login_web_<sha1>.
    const match = /"login_web_[0-9a-f]+";i:(\d+);/.exec(payload);
    sessions.push(match ? { id, user: Number(match[1]) } : { id });
  }
  return sessions;
}

// One Action Cable connection as the local target holds it: its subscriptions and timers, what
// AnyCable's session cache keeps of it, and how its user is known (the uid cookie, a restored sid);
// and one broadcast's frames, serialised once per protocol flavour.
import type { IncomingMessage } from "node:http";
import type { WebSocket } from "ws";
import { malformed } from "../counters.js";
import type { ChannelFaults } from "../faults.js";
import { TimerSet } from "../timers.js";

/** A subscription as a session cache entry keeps it (session.go `cacheEntry`: subscriptions and channel state). */
export interface SubscriptionState {
  channel: string;
  params: Record<string, unknown>;
  streams: string[];
  /** AnyCable's `$w` channel state: the stream whispers go to; undefined means whispers are ignored. */
  whisperStream?: string;
  /** AnyCable's `$p` channel state: the stream presence commands act on. */
  presenceStream?: string;
}

export interface Subscription extends SubscriptionState {
  /** Set while a delayed confirmation is pending. */
  pendingConfirm?: NodeJS.Timeout;
}

export interface SessionSnapshot {
  userId: string;
  subscriptions: Array<[identifier: string, state: SubscriptionState]>;
}

/** Cookie header → value of one cookie, unescaped the way Rack does. */
export function cookie(header: string | undefined, name: string): string | undefined {
  for (const part of header?.split(";") ?? []) {
    const eq = part.indexOf("=");
    if (eq < 0 || part.slice(0, eq).trim() !== name) continue;
    const raw = part.slice(eq + 1).trim().replace(/\+/g, " ");
    try {
      return decodeURIComponent(raw);
    } catch {
      return raw;
    }
  }
  return undefined;
}

/** session.go `PrevSid`: the `X-ANYCABLE-RESTORE-SID` header first, then the `sid` query parameter. */
export function previousSid(request: IncomingMessage): string | undefined {
  const header = request.headers["x-anycable-restore-sid"];
  if (typeof header === "string" && header) return header;
  return new URL(request.url ?? "/", "http://localhost").searchParams.get("sid") || undefined;
}

export class CableConnection {
  readonly subscriptions = new Map<string, Subscription>();
  readonly timers = new TimerSet();
  /** Cleared by `restart({ forgetState: true })`: the session is then not cached when the socket closes. */
  cacheOnClose = true;

  constructor(
    readonly ws: WebSocket,
    readonly userId: string,
    /** The session id; only extended-protocol connections have one. */
    readonly sid: string | undefined,
  ) {}

  get extended(): boolean {
    return this.sid !== undefined;
  }

  snapshot(): SessionSnapshot {
    const subscriptions: SessionSnapshot["subscriptions"] = [];
    for (const [identifier, { pendingConfirm, ...state }] of this.subscriptions) {
      if (!pendingConfirm) subscriptions.push([identifier, { ...state, streams: [...state.streams] }]);
    }
    return { userId: this.userId, subscriptions };
  }
}

/**
 * One group's frame for one broadcast, serialised at most once per protocol flavour: plain
 * connections get Rails' frame, extended ones AnyCable's (with the stream position when it has one).
 */
export class PreparedBroadcast {
  private readonly frames: [Buffer?, Buffer?] = [];
  private readonly cut: [Buffer?, Buffer?] = [];

  constructor(
    readonly faults: ChannelFaults,
    private readonly build: (extended: boolean) => string,
  ) {}

  frame(extended: boolean): Buffer {
    const i = extended ? 1 : 0;
    return (this.frames[i] ??= Buffer.from(this.build(extended)));
  }

  malformed(extended: boolean): Buffer {
    const i = extended ? 1 : 0;
    return (this.cut[i] ??= malformed(this.frame(extended)));
  }
}

// Who hears what a user sends, read from the script before it runs: each send step's channel is
// matched with the subscriptions of the same name, so that a broadcast is counted as the frames it
// makes (one per subscriber, in every task: all tasks run the script against the same server), not
// as one message. What the script cannot say (a room picked by a processor, a stream only the app
// subscribes to) is named, and the plan sizes those flows by the measured chat workload instead.

type Json = Record<string, unknown>;
const isRecord = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value);

/** How many distinct channels one channel name stands for: a fixed name is 1; `per-user`, one each. */
export type Spread = number | "per-user";

/** A channel name as the script writes it, with how many channels it makes at run time; undefined when that cannot be known. */
export interface ChannelName {
  key: string;
  spread: Spread;
}

/** What one flow sends to and hears from, per user over its whole flow. */
export interface FlowTraffic {
  /** Expected sends per channel key (probability and loop counts applied). */
  sendsTo: Map<string, number>;
  /** Sends answered to the sender alone (the benchmark protocol's `echo`). */
  echoes: number;
  /** Sends made as HTTP requests (publish: the Pusher API, AnyCable's broadcast endpoint). */
  publishes: number;
  subscribes: Map<string, Spread>;
  /** Channel names that cannot be read before the run, as written. */
  unreadable: Set<string>;
  /** Data fields of each send, as JSON text, for the traffic estimate. */
  sendBodies: number[];
}

export const emptyTraffic = (): FlowTraffic => ({ sendsTo: new Map(), echoes: 0, publishes: 0, subscribes: new Map(), unreadable: new Set(), sendBodies: [] });

/**
 * A channel name's key and spread: a fixed name; `{{ $randomNumber(a, b) }}` spreads over b − a + 1
 * channels; `{{ $uuid }}` is one per user; a config.variables list is one of its values each. A
 * name set by a processor, a capture or a payload is unknown (undefined).
 */
export function channelName(raw: unknown, variables: Json): ChannelName | undefined {
  if (typeof raw !== "string") return raw === undefined ? undefined : { key: JSON.stringify(raw), spread: 1 };
  const templates = [...raw.matchAll(/\{\{\s*(.+?)\s*\}\}/g)].map((m) => m[1]);
  let spread: Spread = 1;
  for (const expr of templates) {
    const random = /^\$randomNumber\(\s*(-?\d+)\s*,\s*(-?\d+)\s*\)$/.exec(expr);
    if (random) {
      spread = spread === "per-user" ? spread : spread * Math.max(1, Number(random[2]) - Number(random[1]) + 1);
      continue;
    }
    if (expr === "$uuid" || expr === "$randomString()" || /^\$uuid\(\)$/.test(expr)) {
      spread = "per-user";
      continue;
    }
    if (!/^[A-Za-z_]\w*$/.test(expr) || !Object.hasOwn(variables, expr)) return undefined;
    const value = variables[expr];
    if (Array.isArray(value)) spread = spread === "per-user" ? spread : spread * Math.max(1, new Set(value.map(String)).size);
    else if (typeof value !== "string" && typeof value !== "number") return undefined;
  }
  return { key: raw, spread };
}

/** The subscription a `subscribe` step makes, and the name later steps call it by. */
export function subscription(spec: Json, variables: Json): { alias: string; name: ChannelName | undefined; written: string } {
  const channel = spec.stream ?? spec.signedStream ?? spec.channel;
  const written = String(channel);
  const alias = String(spec.as ?? channel);
  const name = channelName(channel, variables);
  // Action Cable: the same channel class with other params is another audience (ChatChannel id: 1 and id: 2).
  if (name && isRecord(spec.params)) {
    let spread = name.spread;
    for (const value of Object.values(spec.params)) {
      const part = channelName(value, variables);
      if (!part) return { alias, name: undefined, written: `${written} ${JSON.stringify(spec.params)}` };
      spread = spread === "per-user" || part.spread === "per-user" ? "per-user" : spread * part.spread;
    }
    return { alias, name: { key: `${name.key} ${JSON.stringify(spec.params)}`, spread }, written: `${written} ${JSON.stringify(spec.params)}` };
  }
  return { alias, name, written };
}

/**
 * Where a send step's message goes: the key of the subscription it names (perform, trigger,
 * whisper: by alias), or of the channels and streams it publishes to (publish: by name); "echo"
 * for the benchmark protocol's reply to the sender alone (websocket-shootout's BenchmarkChannel
 * `echo`); undefined with the name as written when it cannot be matched.
 */
export function sendTarget(kind: string, spec: Json, aliases: Map<string, string>, variables: Json): { keys: string[] } | "echo" | { unreadable: string } {
  if (kind === "perform" && spec.action === "echo") return "echo";
  if (kind === "publish") {
    const names = ([] as unknown[]).concat(spec.channels ?? spec.channel ?? spec.streams ?? spec.stream ?? []);
    const keys: string[] = [];
    for (const raw of names) {
      const name = channelName(raw, variables);
      if (!name) return { unreadable: String(raw) };
      keys.push(name.key);
    }
    return { keys };
  }
  const ref = String(spec.channel);
  const key = aliases.get(ref);
  return key === undefined ? { unreadable: ref } : { keys: [key] };
}

/** One channel's rates at a task's peak, for the plan. */
export interface AudienceRate {
  /** The channel as the script names it. */
  channel: string;
  /** Messages sent to it a second per user at the peak (averaged over every user). */
  sendsPerUserSecond: number;
  /** Share of the users at the peak subscribed to it. */
  subscribedShare: number;
  spread: Spread;
}

/**
 * Frames one task's users receive a second from broadcasts when `tasks` tasks (count × regions)
 * run the script with `peak` users each: every task's sends to a channel reach its subscribers in
 * every task, spread over the channels the name stands for; echoes reach their sender alone.
 */
export function framesPerTask(audiences: readonly AudienceRate[], echoesPerUserSecond: number, peak: number, tasks: number): number {
  let frames = echoesPerUserSecond * peak;
  for (const a of audiences) {
    const sends = a.sendsPerUserSecond * peak;
    frames += a.spread === "per-user" ? (a.subscribedShare > 0 ? sends : 0) : (tasks * sends * a.subscribedShare * peak) / a.spread;
  }
  return frames;
}

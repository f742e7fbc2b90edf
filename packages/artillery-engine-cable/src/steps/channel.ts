import { nowMs } from "../clock.js";
import { CableError } from "../errors.js";
import { compilePattern, matches, parsePath, readPath, type Pattern } from "../match.js";
import { customMetric, METRICS } from "../metrics.js";
import type { CableConnection } from "../connection.js";
import { encodeHistory, encodePerform } from "../protocol/actioncable.js";
import { asyncStep, type StepFn } from "../vu.js";
import { secondsToMs, templater, type Compiler } from "./compiler.js";

export interface SubscribeSpec {
  channel?: string;
  params?: Record<string, unknown>;
  as?: string;
  user?: { id: string | number; info?: unknown };
  stream?: string;
  signedStream?: string;
  history?: { since: number | string };
}

export function compileSubscribe(compiler: Compiler, raw: SubscribeSpec): StepFn {
  const spec = templater(compiler, raw);
  const { protocol, events, settings } = compiler;
  return asyncStep(async (vu, context) => {
    const s = spec(context);
    const connection = vu.open();
    const startedAt = nowMs();
    const { key, frame } = await protocol.subscribe(s, connection.welcome);
    await connection.subscribe(key, frame, settings.timeout * 1000);
    events.emit("histogram", METRICS.subscriptionLatency, nowMs() - startedAt);
    events.emit("counter", METRICS.subscriptions, 1);
    vu.channels.set(s.as ?? s.stream ?? s.signedStream ?? s.channel!, { key, request: s });
    // A plain connection ("preferred" fell back) has no history to ask for: waiting for a
    // confirm_history that cannot come would only end in a timeout.
    if (s.history && connection.extended) {
      const since = Math.floor((Date.now() - secondsToMs(s.history.since, "history.since")) / 1000);
      await requestHistory(compiler, connection, key, encodeHistory(key, { since }));
    }
  });
}

/** AnyCable history: records `cable.history_latency` and the replayed count; a refusal is counted, not fatal. */
export async function requestHistory(compiler: Compiler, connection: CableConnection, key: string, frame: string): Promise<void> {
  const startedAt = nowMs();
  const { ok, replayed } = await connection.history(key, frame, compiler.settings.timeout * 1000);
  if (!ok) {
    compiler.events.emit("error", "cable.history_rejected");
    return;
  }
  compiler.events.emit("histogram", METRICS.historyLatency, nowMs() - startedAt);
  compiler.events.emit("counter", METRICS.historyReplayed, replayed);
}

export interface PerformSpec {
  channel: string;
  action: string;
  data?: Record<string, unknown>;
  stamp?: boolean;
}

export function compilePerform(compiler: Compiler, raw: PerformSpec): StepFn {
  const spec = templater(compiler, raw);
  const { events, settings } = compiler;
  return asyncStep((vu, context) => {
    const s = spec(context);
    const state = vu.channel(s.channel);
    const data = s.stamp ? { ...s.data, ...vu.stamp(state.key, settings.stampField, nowMs()) } : s.data;
    // Stamped before the send, so that an rtt includes it, as a client timing its own send would.
    state.lastSentAt = nowMs();
    vu.open().send(encodePerform(state.key, s.action, data));
    events.emit("counter", METRICS.messagesSent, 1);
    events.emit("rate", METRICS.sendRate);
  });
}

export interface ReceiveSpec {
  channel: string;
  /** Pusher: the event's name, e.g. `client-broadcast` or `pusher_internal:member_added`. */
  event?: string;
  match?: unknown;
  timeout?: number | string;
  capture?: { json: string; as: string } | { json: string; as: string }[];
  metric?: string | true;
}

export function compileReceive(compiler: Compiler, raw: ReceiveSpec): StepFn {
  const spec = templater(compiler, { channel: raw.channel, timeout: raw.timeout, event: raw.event });
  const pattern = templater(compiler, raw.match);
  // A static pattern is compiled once; a templated one per execution.
  const staticPattern = raw.match === undefined ? undefined : JSON.stringify(raw.match).includes("{{") ? null : compilePattern(raw.match);
  const captures = ([] as { json: string; as: string }[]).concat(raw.capture ?? []).map((c) => ({ as: c.as, path: parsePath(c.json) }));
  const metric = raw.metric === undefined ? undefined : raw.metric === true ? METRICS.rtt : customMetric(raw.metric);
  const { events, settings } = compiler;

  return asyncStep(async (vu, context) => {
    const s = spec(context);
    const state = vu.channel(s.channel);
    const timeoutMs = s.timeout === undefined ? settings.timeout * 1000 : secondsToMs(s.timeout, "timeout");
    const expected: Pattern | undefined = staticPattern === null ? compilePattern(pattern(context)) : staticPattern;
    const event = s.event;
    const message = await vu
      .open()
      .receive(state.key, (msg) => (event === undefined || msg.event === event) && (expected === undefined || matches(msg.payload, expected)), timeoutMs);
    if (metric && state.lastSentAt !== undefined) events.emit("histogram", metric, nowMs() - state.lastSentAt);
    for (const capture of captures) {
      const value = readPath(message.payload, capture.path);
      if (value === undefined) throw new CableError("capture_failed", `nothing at ${capture.path.join(".")} to capture as "${capture.as}"`);
      context.vars[capture.as] = value;
    }
  });
}

export function compileListen(compiler: Compiler, raw: { channel?: string; for: number | string }): StepFn {
  const spec = templater(compiler, raw);
  return asyncStep(async (vu, context) => {
    const s = spec(context);
    const key = s.channel === undefined ? undefined : vu.channel(s.channel).key;
    await vu.open().listen(secondsToMs(s.for, "for"), key);
  });
}

export function compileUnsubscribe(compiler: Compiler, raw: { channel: string }): StepFn {
  const spec = templater(compiler, raw);
  return asyncStep((vu, context) => {
    const { channel } = spec(context);
    const state = vu.channel(channel);
    vu.open().unsubscribe(state.key, compiler.protocol.unsubscribe(state.key));
    vu.channels.delete(channel);
  });
}

import { z } from "zod";
import { nowMs } from "../clock.js";
import { cableCode } from "../error-names.js";
import { CableError } from "../errors.js";
import { compilePattern, matches, parsePath, readPath, type Pattern } from "../match.js";
import { customMetric, METRICS } from "../metrics.js";
import type { CableConnection } from "../connection.js";
import { encodeHistory, encodePerform } from "../protocol/actioncable.js";
import { asyncStep, type StepFn } from "../vu.js";
import { secondsToMs, templater, type Compiler } from "./compiler.js";
import { capture, channelRef, defineStep, isTemplated, seconds } from "./define.js";

const subscribeSchema = z
  .object({
    channel: channelRef.optional(),
    params: z.record(z.unknown()).optional(),
    as: z.string().min(1).optional(),
    user: z.object({ id: z.union([z.string(), z.number()]), info: z.unknown().optional() }).strict().optional(),
    /** AnyCable `$pubsub`: a public stream by name, or a stream name the engine signs. */
    stream: z.string().min(1).optional(),
    signedStream: z.string().min(1).optional(),
    /** AnyCable ext: ask for what the stream had in the last `since` seconds. */
    history: z.object({ since: seconds }).strict().optional(),
  })
  .strict()
  .refine((s) => s.channel !== undefined || s.stream !== undefined || s.signedStream !== undefined, {
    message: 'give "channel", or an AnyCable "stream" or "signedStream"',
  })
  .refine((s) => s.stream === undefined || (s.channel === undefined && s.signedStream === undefined), {
    message: '"stream" is a $pubsub stream: it takes no "channel" or "signedStream"',
  });

export type SubscribeSpec = z.output<typeof subscribeSchema>;

export function compileSubscribe(compiler: Compiler, raw: SubscribeSpec): StepFn {
  const spec = templater(raw);
  const { protocol, events, settings } = compiler;
  return asyncStep(async (vu, context) => {
    const s = spec(context);
    const connection = vu.open();
    const startedAt = nowMs();
    const { key, frame } = await protocol.subscribe(s, connection.welcome, compiler.auth(vu, context));
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
    compiler.events.emit("error", cableCode("history_rejected"));
    return;
  }
  compiler.events.emit("histogram", METRICS.historyLatency, nowMs() - startedAt);
  compiler.events.emit("counter", METRICS.historyReplayed, replayed);
}

const performSchema = z
  .object({ channel: channelRef, action: z.string().min(1), data: z.record(z.unknown()).optional(), stamp: z.boolean().optional() })
  .strict();

export type PerformSpec = z.output<typeof performSchema>;

export function compilePerform(compiler: Compiler, raw: PerformSpec): StepFn {
  const spec = templater(raw);
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

const receiveSchema = z
  .object({
    channel: channelRef,
    /** Pusher: the event's name, e.g. `client-broadcast` or `pusher_internal:member_added`; AnyCable: a presence event. */
    event: z.string().min(1).optional(),
    match: z.unknown().optional(),
    timeout: seconds.optional(),
    capture: z.union([capture, z.array(capture)]).optional(),
    metric: z.union([z.literal(true), z.string().regex(/^[a-z][a-z0-9_]*$/, "a metric name is lower_snake_case")]).optional(),
  })
  .strict();

export type ReceiveSpec = z.output<typeof receiveSchema>;

/** The event names AnyCable's presence frames get (protocol/actioncable.ts): the only Action Cable messages with one. */
const PRESENCE_EVENTS = ["presence:join", "presence:leave", "presence:info"];

export function compileReceive(compiler: Compiler, raw: ReceiveSpec): StepFn {
  const spec = templater({ channel: raw.channel, timeout: raw.timeout, event: raw.event });
  const pattern = templater(raw.match);
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

const listenSchema = z.object({ channel: channelRef.optional(), for: seconds }).strict();

export function compileListen(compiler: Compiler, raw: z.output<typeof listenSchema>): StepFn {
  const spec = templater(raw);
  return asyncStep(async (vu, context) => {
    const s = spec(context);
    const key = s.channel === undefined ? undefined : vu.channel(s.channel).key;
    await vu.open().listen(secondsToMs(s.for, "for"), key);
  });
}

export function compileUnsubscribe(compiler: Compiler, raw: { channel: string }): StepFn {
  const spec = templater(raw);
  return asyncStep((vu, context) => {
    const { channel } = spec(context);
    const state = vu.channel(channel);
    vu.open().unsubscribe(state.key, compiler.protocol.unsubscribe(state.key));
    vu.channels.delete(channel);
  });
}

export const subscribe = defineStep({
  schema: subscribeSchema,
  needsConnection: true,
  subscribes: (spec) => ({ as: String(spec.as ?? spec.stream ?? spec.signedStream ?? spec.channel), channel: String(spec.channel ?? "$pubsub") }),
  check(spec, { at, config }) {
    const problems: string[] = [];
    if (config.protocol === "pusher" && (spec.stream !== undefined || spec.signedStream !== undefined || spec.history !== undefined)) {
      problems.push(`${at} (subscribe): "stream", "signedStream" and "history" are AnyCable's (protocol actioncable)`);
    }
    if (spec.signedStream !== undefined && !config.anycable.streamsSecret) {
      problems.push(`${at} (subscribe): "signedStream" needs ANYCABLE_STREAMS_SECRET or config.cable.anycable.streamsSecret`);
    }
    if (spec.history !== undefined && config.anycable.extended === "off") {
      problems.push(`${at} (subscribe): "history" needs AnyCable's extended protocol: set config.cable.anycable.extended`);
    }
    if (config.protocol === "pusher" && spec.channel !== undefined && !isTemplated(spec.channel)) {
      const channel = spec.channel;
      if ((channel.startsWith("private-") || channel.startsWith("presence-")) && !config.pusher?.secret && !config.pusher?.authEndpoint) {
        problems.push(`${at} (subscribe): "${channel}" needs auth: set PUSHER_APP_SECRET, config.cable.pusher.secret or authEndpoint`);
      }
      if (channel.startsWith("presence-") && !spec.user && !config.pusher?.authEndpoint) problems.push(`${at} (subscribe): field "user": a presence channel needs user: {id, info} (or an authEndpoint: the app names the member)`);
    }
    return problems;
  },
  compile: (compiler, spec) => compileSubscribe(compiler, spec),
});

export const perform = defineStep({
  schema: performSchema,
  // Artillery's per-request `probability`, in percent: sends only, so that a flow's shape stays fixed.
  modifiers: ["probability"],
  only: { protocol: "actioncable", instead: 'Pusher has no actions: use "trigger" (a client event) or "publish" (the HTTP API)' },
  usesChannel: true,
  compile: (compiler, spec) => compilePerform(compiler, spec),
});

export const receive = defineStep({
  schema: receiveSchema,
  usesChannel: true,
  check(spec, { at, config }) {
    if (config.protocol !== "actioncable" || spec.event === undefined || isTemplated(spec.event) || PRESENCE_EVENTS.includes(spec.event)) return [];
    return [
      spec.event === "whisper"
        ? `${at} (receive): field "event": no server sends a "whisper" frame: anycable-go relays a whisper as a plain message on the channel. Receive it with "match" on a field of its data, e.g. match: {typing: true}`
        : `${at} (receive): field "event": Action Cable messages have no event name; only AnyCable presence events have one (${PRESENCE_EVENTS.join(", ")}). Use "match" on the payload`,
    ];
  },
  compile: (compiler, spec) => compileReceive(compiler, spec),
});

export const listen = defineStep({ schema: listenSchema, usesChannel: true, needsConnection: true, compile: (compiler, spec) => compileListen(compiler, spec) });

export const unsubscribe = defineStep({
  schema: z.object({ channel: channelRef }).strict(),
  usesChannel: true,
  compile: (compiler, spec) => compileUnsubscribe(compiler, spec),
});

import { z } from "zod";
import { nowMs } from "../clock.js";
import type { CableConfig } from "../config.js";
import { CableError } from "../errors.js";
import { postJson } from "./publish-call.js";
import { METRICS } from "../metrics.js";
import { encodeClientEvent } from "../protocol/pusher.js";
import { signedQuery } from "../protocol/pusher-signatures.js";
import { asyncStep, type StepFn } from "../vu.js";
import { stamped, templater, type Compiler } from "./compiler.js";
import { compileBroadcast } from "./anycable.js";
import { channelRef, defineStep, isTemplated } from "./define.js";

const triggerSchema = z.object({ channel: channelRef, event: z.string().min(1), data: z.unknown().optional(), stamp: z.boolean().optional() }).strict();

export type TriggerSpec = z.output<typeof triggerSchema>;

/** A client event on a private or presence channel the VU is subscribed to (pusher-js `channel.trigger`). */
export function compileTrigger(compiler: Compiler, raw: TriggerSpec): StepFn {
  const spec = templater(raw);
  const { events } = compiler;
  return asyncStep((vu, context) => {
    const s = spec(context);
    const state = vu.channel(s.channel);
    const frame = encodeClientEvent(state.key, s.event, stamped(compiler, vu, state.key, s.data ?? {}, s.stamp));
    state.lastSentAt = nowMs();
    vu.open().send(frame);
    events.emit("counter", METRICS.messagesSent, 1);
    events.emit("rate", METRICS.sendRate);
  });
}

const publishSchema = z
  .object({
    // Pusher: channels and an event, through its HTTP API.
    channel: z.string().min(1).optional(),
    channels: z.array(z.string().min(1)).nonempty().optional(),
    event: z.string().min(1).optional(),
    // Action Cable: AnyCable streams, through its HTTP broadcast endpoint.
    stream: z.string().min(1).optional(),
    streams: z.array(z.string().min(1)).nonempty().optional(),
    data: z.unknown().optional(),
    stamp: z.boolean().optional(),
  })
  .strict();

export type PublishSpec = z.output<typeof publishSchema>;

/** The HTTP API's base: configured, or the target's origin with http(s) for ws(s). */
export function apiBase(configured: string | undefined, target: string | undefined): string {
  const base = configured ?? target;
  if (!base) throw new CableError("invalid_value", "no config.cable.pusher.api and no target to derive it from");
  const u = new URL(base);
  const protocol = u.protocol === "wss:" ? "https:" : u.protocol === "ws:" ? "http:" : u.protocol;
  return configured ? `${protocol}//${u.host}${u.pathname.replace(/\/$/, "")}` : `${protocol}//${u.host}`;
}

/** A server-side event through the signed HTTP API (`POST /apps/{id}/events`), as real apps broadcast. */
export function compilePublish(compiler: Compiler, raw: PublishSpec): StepFn {
  const spec = templater(raw);
  const { events, settings } = compiler;
  const pusher = settings.pusher!;
  return asyncStep(async (vu, context) => {
    const s = spec(context);
    const data = stamped(compiler, vu, s.channel ?? s.channels!.join(","), s.data ?? {}, s.stamp);
    const body = JSON.stringify({
      name: s.event,
      ...(s.channels ? { channels: s.channels } : { channel: s.channel }),
      data: typeof data === "string" ? data : JSON.stringify(data),
    });
    const base = apiBase(pusher.api, compiler.target);
    const path = `${new URL(base).pathname.replace(/\/$/, "")}/apps/${pusher.appId}/events`;
    const query = signedQuery({ key: pusher.key, secret: pusher.secret!, method: "POST", path, body, timestamp: Math.floor(Date.now() / 1000) });
    await postJson(compiler, `${new URL(base).origin}${path}?${query}`, body, {}, vu);
    events.emit("counter", METRICS.messagesSent, 1);
    events.emit("rate", METRICS.sendRate);
  });
}

export const trigger = defineStep({
  schema: triggerSchema,
  modifiers: ["probability"],
  only: { protocol: "pusher", instead: 'Action Cable has no client events: use "perform"' },
  usesChannel: true,
  check(spec, { at }, channelOf) {
    const problems: string[] = [];
    if (!isTemplated(spec.event) && !spec.event.startsWith("client-")) problems.push(`${at} (trigger): field "event": a client event's name starts with "client-" (got "${spec.event}")`);
    const subscribed = channelOf(spec.channel);
    if (subscribed !== undefined && !isTemplated(subscribed) && !subscribed.startsWith("private-") && !subscribed.startsWith("presence-")) {
      problems.push(`${at} (trigger): field "channel": client events go only on private- or presence- channels (got "${subscribed}")`);
    }
    return problems;
  },
  compile: (compiler, spec) => compileTrigger(compiler, spec),
});

function checkPublish(at: string, spec: PublishSpec, config: CableConfig): string[] {
  const one = (a: keyof PublishSpec, b: keyof PublishSpec) => (spec[a] === undefined) !== (spec[b] === undefined);
  if (config.protocol === "pusher") {
    const problems: string[] = [];
    if (spec.stream !== undefined || spec.streams !== undefined) problems.push(`${at} (publish): Pusher publishes to "channel" or "channels", not streams`);
    else if (!one("channel", "channels")) problems.push(`${at} (publish): give one of "channel" or "channels"`);
    if (spec.event === undefined) problems.push(`${at} (publish): field "event": Required`);
    if (!config.pusher?.appId || !config.pusher?.secret) {
      problems.push(`${at} (publish): the HTTP API needs config.cable.pusher.appId, and the secret (PUSHER_APP_SECRET or config.cable.pusher.secret)`);
    }
    return problems;
  }
  if (spec.channel !== undefined || spec.channels !== undefined || spec.event !== undefined) {
    return [`${at} (publish): Action Cable publishes to AnyCable "stream" or "streams" (no channel or event)`];
  }
  return one("stream", "streams") ? [] : [`${at} (publish): give one of "stream" or "streams"`];
}

/** Pusher's HTTP API, or AnyCable's broadcast endpoint on Action Cable. */
export const publish = defineStep({
  schema: publishSchema,
  modifiers: ["probability"],
  check: (spec, { at, config }) => checkPublish(at, spec, config),
  compile: (compiler, spec) => (compiler.settings.protocol === "pusher" ? compilePublish(compiler, spec) : compileBroadcast(compiler, spec)),
});

import { z } from "zod";
import { nowMs } from "../clock.js";
import { CableError } from "../errors.js";
import { METRICS } from "../metrics.js";
import { encodePresence, encodeWhisper } from "../protocol/actioncable.js";
import { asyncStep, type StepFn } from "../vu.js";
import { stamped, templater, type Compiler } from "./compiler.js";
import { channelRef, defineStep, needsExtended } from "./define.js";
import { postJson } from "./publish-call.js";

// AnyCable's additions to Action Cable: HTTP broadcasts, and the extended protocol's whispers and
// presence (anycable-go docs: broadcasting.md, action_cable_protocol.md, presence.md). Session
// restore and history after a drop are in reconnect.ts.

export interface BroadcastSpec {
  stream?: string;
  streams?: string[];
  data?: unknown;
  stamp?: boolean;
}

/** The broadcast endpoint: configured, or the target's origin (http for ws) + `/_broadcast`. */
export function broadcastUrl(configured: string | undefined, target: string | undefined): string {
  if (configured) return configured;
  if (!target) throw new CableError("invalid_value", "no config.cable.anycable.broadcastUrl and no target to derive it from");
  const u = new URL(target);
  return `${u.protocol === "wss:" ? "https:" : u.protocol === "ws:" ? "http:" : u.protocol}//${u.host}/_broadcast`;
}

/** `publish` on Action Cable: AnyCable's `POST /_broadcast`, one stream or a batch. */
export function compileBroadcast(compiler: Compiler, raw: BroadcastSpec): StepFn {
  const spec = templater(raw);
  const { settings } = compiler;
  const key = settings.anycable.broadcastKey;
  return asyncStep(async (vu, context) => {
    const s = spec(context);
    const streams = s.streams ?? [s.stream!];
    // Data is a string on the wire; each stream's message gets its own sequence.
    const body = streams.map((stream) => ({ stream, data: JSON.stringify(stamped(compiler, vu, stream, s.data ?? {}, s.stamp)) }));
    await postJson(compiler, broadcastUrl(settings.anycable.broadcastUrl, compiler.target), body.length === 1 ? body[0] : body, key ? { Authorization: `Bearer ${key}` } : {}, vu);
    compiler.events.emit("counter", METRICS.messagesSent, streams.length);
    for (let i = 0; i < streams.length; i++) compiler.events.emit("rate", METRICS.sendRate);
  });
}

const whisperSchema = z.object({ channel: channelRef, data: z.unknown().optional(), stamp: z.boolean().optional() }).strict();

export function compileWhisper(compiler: Compiler, raw: z.output<typeof whisperSchema>): StepFn {
  const spec = templater(raw);
  const { events } = compiler;
  return asyncStep((vu, context) => {
    const s = spec(context);
    const state = vu.channel(s.channel);
    const frame = encodeWhisper(state.key, stamped(compiler, vu, state.key, s.data ?? {}, s.stamp));
    state.lastSentAt = nowMs();
    vu.openExtended().send(frame);
    events.emit("counter", METRICS.messagesSent, 1);
    events.emit("rate", METRICS.sendRate);
  });
}

const joinSchema = z.object({ channel: channelRef, id: z.union([z.string().min(1), z.number()]), info: z.unknown().optional() }).strict();

export function compileJoin(compiler: Compiler, raw: z.output<typeof joinSchema>): StepFn {
  const spec = templater(raw);
  return asyncStep((vu, context) => {
    const s = spec(context);
    vu.openExtended().send(encodePresence("join", vu.channel(s.channel).key, { id: String(s.id), info: s.info }));
  });
}

export function compileLeave(compiler: Compiler, raw: { channel: string }): StepFn {
  const spec = templater(raw);
  return asyncStep((vu, context) => {
    const s = spec(context);
    vu.openExtended().send(encodePresence("leave", vu.channel(s.channel).key, { id: "" }));
  });
}

export const whisper = defineStep({
  schema: whisperSchema,
  only: { protocol: "actioncable", instead: "whispers are AnyCable's: use a Pusher client event (trigger)" },
  usesChannel: true,
  check: (_spec, { at, config }) => needsExtended(at, "whisper", config),
  compile: (compiler, spec) => compileWhisper(compiler, spec),
});

export const join = defineStep({
  schema: joinSchema,
  only: { protocol: "actioncable", instead: "Pusher presence is a presence- channel's subscription" },
  usesChannel: true,
  check: (_spec, { at, config }) => needsExtended(at, "join", config),
  compile: (compiler, spec) => compileJoin(compiler, spec),
});

export const leave = defineStep({
  schema: z.object({ channel: channelRef }).strict(),
  only: { protocol: "actioncable", instead: "Pusher presence ends with an unsubscribe" },
  usesChannel: true,
  check: (_spec, { at, config }) => needsExtended(at, "leave", config),
  compile: (compiler, spec) => compileLeave(compiler, spec),
});

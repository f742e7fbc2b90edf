import { nowMs } from "../clock.js";
import { CableError } from "../errors.js";
import { postJson } from "./http.js";
import { METRICS } from "../metrics.js";
import { encodeClientEvent } from "../protocol/pusher.js";
import { signedQuery } from "../protocol/pusher-signatures.js";
import { asyncStep, type StepFn, type VirtualUser } from "../vu.js";
import { templater, type Compiler } from "./compiler.js";

/** Stamps an event's data; data that is not an object is wrapped as `{data}` to carry the stamp. */
export function stamped(compiler: Compiler, vu: VirtualUser, channel: string, data: unknown, stamp: boolean | undefined): unknown {
  if (!stamp) return data;
  const base = data !== null && typeof data === "object" ? data : data === undefined ? {} : { data };
  return { ...base, ...vu.stamp(channel, compiler.settings.stampField, nowMs()) };
}

export interface TriggerSpec {
  channel: string;
  event: string;
  data?: unknown;
  stamp?: boolean;
}

/** A client event on a private or presence channel the VU is subscribed to (pusher-js `channel.trigger`). */
export function compileTrigger(compiler: Compiler, raw: TriggerSpec): StepFn {
  const spec = templater(compiler, raw);
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

export interface PublishSpec {
  channel?: string;
  channels?: string[];
  event: string;
  data?: unknown;
  stamp?: boolean;
}

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
  const spec = templater(compiler, raw);
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
    await postJson(compiler, `${new URL(base).origin}${path}?${query}`, body);
    events.emit("counter", METRICS.messagesSent, 1);
    events.emit("rate", METRICS.sendRate);
  });
}

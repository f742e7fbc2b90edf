import { nowMs } from "../clock.js";
import { CableError } from "../errors.js";
import { METRICS } from "../metrics.js";
import { encodeClientEvent } from "../protocol/pusher.js";
import { signedQuery } from "../protocol/pusher-signatures.js";
import { asyncStep, type StepFn } from "../vu.js";
import { templater, type Compiler } from "./compiler.js";

function stamped(compiler: Compiler, data: unknown, stamp: boolean | undefined): unknown {
  if (!stamp) return data;
  const base = data !== null && typeof data === "object" ? data : data === undefined ? {} : { data };
  return { ...base, [compiler.settings.stampField]: nowMs() };
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
    vu.open().send(encodeClientEvent(state.key, s.event, stamped(compiler, s.data ?? {}, s.stamp)));
    state.lastSentAt = nowMs();
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
  return asyncStep(async (_vu, context) => {
    const s = spec(context);
    const data = stamped(compiler, s.data ?? {}, s.stamp);
    const body = JSON.stringify({
      name: s.event,
      ...(s.channels ? { channels: s.channels } : { channel: s.channel }),
      data: typeof data === "string" ? data : JSON.stringify(data),
    });
    const base = apiBase(pusher.api, compiler.target);
    const path = `${new URL(base).pathname.replace(/\/$/, "")}/apps/${pusher.appId}/events`;
    const query = signedQuery({ key: pusher.key, secret: pusher.secret!, method: "POST", path, body, timestamp: Math.floor(Date.now() / 1000) });
    const startedAt = nowMs();
    let status: number;
    try {
      const res = await fetch(`${new URL(base).origin}${path}?${query}`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body,
        signal: AbortSignal.timeout(settings.timeout * 1000),
      });
      status = res.status;
      await res.arrayBuffer();
    } catch (err) {
      // fetch hides the socket error in `cause`: keep its code (ECONNREFUSED, …) as other steps do.
      const cause = (err as { cause?: { code?: string } }).cause;
      if (cause?.code) throw Object.assign(new Error(`publish failed: ${cause.code}`), { code: cause.code });
      throw new CableError((err as Error).name === "TimeoutError" ? "publish_timeout" : "publish_failed", `publish failed: ${(err as Error).message}`);
    }
    events.emit("histogram", METRICS.publishLatency, nowMs() - startedAt);
    if (status < 200 || status >= 300) throw new CableError("publish_failed", `the HTTP API answered ${status}`);
    events.emit("counter", METRICS.messagesSent, 1);
    events.emit("rate", METRICS.sendRate);
  });
}

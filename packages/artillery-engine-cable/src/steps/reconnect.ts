import { z } from "zod";
import { backoffDelay, isTransient } from "../backoff.js";
import { nowMs } from "../clock.js";
import type { CableConnection, OpenOptions } from "../connection.js";
import { CableError, errorCode } from "../errors.js";
import { METRICS } from "../metrics.js";
import { encodeHistory } from "../protocol/actioncable.js";
import type { StreamPosition } from "../protocol/types.js";
import { asyncStep, type StepFn, type VirtualUser, type VuContext } from "../vu.js";
import { requestHistory } from "./channel.js";
import { secondsToMs, templater, type Compiler } from "./compiler.js";
import { defineStep, seconds } from "./define.js";

const reconnectSchema = z
  .object({
    /** "drop": wait for the server to drop the connection (a restart) before reconnecting. */
    after: z.literal("drop").optional(),
    /** Seconds to wait for that drop (default: config.cable.timeout). */
    wait: seconds.optional(),
    /** Seconds from the drop to every channel back, retries included (default: config.cable.reconnect.timeout); then `cable.reconnect_timeout`. */
    timeout: seconds.optional(),
    /** A random 0..jitter s pause before the first attempt. */
    jitter: seconds.optional(),
    /** The back-off between attempts: the first pause, and the longest, in seconds. */
    initialDelay: seconds.optional(),
    maxDelay: seconds.optional(),
    /** AnyCable's extended protocol: ask each channel for what it missed since the last position seen. */
    history: z.boolean().optional(),
  })
  .strict()
  .nullable();

export type ReconnectSpec = NonNullable<z.output<typeof reconnectSchema>>;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Gets a VU back in after its connection dropped (or drops it itself), as real clients do, on every
 * protocol: a new connection, retried with an exponential back-off and jitter while the server
 * refuses or drops it; then every channel is usable again: restored by AnyCable's session restore
 * (`?sid=` or the header), or subscribed again (Pusher's private and presence channels signed for
 * the new socket_id). `cable.restore_latency` runs from the drop to that moment, retries included;
 * with `history: true`, each channel then asks for what it missed.
 */
export function compileReconnect(compiler: Compiler, raw: ReconnectSpec | null): StepFn {
  const spec = templater(raw ?? {});
  const { events, settings } = compiler;
  const seconds = (value: number | string | undefined, fallback: number, field: string) =>
    value === undefined ? fallback * 1000 : secondsToMs(value, field);
  return asyncStep(async (vu, context) => {
    const s = spec(context);
    const old = vu.connection;
    if (!old || !vu.opened) throw new CableError("not_connected", "reconnect needs an earlier connect step");
    if (s.after === "drop") await old.waitForDrop(seconds(s.wait, settings.timeout, "wait"));
    const droppedAt = old.endedAt ?? nowMs();
    const sid = old.welcome?.sid;
    // History starts from what was seen before the drop: live messages after the restore move the
    // positions on before the history request goes out, past the gap.
    const seenBeforeDrop = s.history ? snapshot(vu.memory.positions) : undefined;
    vu.drop(true);
    const timeoutMs = seconds(s.timeout, settings.reconnect.timeout, "timeout");
    const deadline = droppedAt + timeoutMs;
    const policy = { initialMs: seconds(s.initialDelay, settings.reconnect.initialDelay, "initialDelay"), maxMs: seconds(s.maxDelay, settings.reconnect.maxDelay, "maxDelay") };
    if (s.jitter !== undefined) await sleep(Math.random() * secondsToMs(s.jitter, "jitter"));

    let lastError: unknown;
    for (let attempt = 1; ; attempt++) {
      const left = deadline - nowMs();
      if (left <= 0) break;
      events.emit("counter", METRICS.reconnectAttempts, 1);
      try {
        const connection = await rejoin(compiler, vu, context, restoreOptions(compiler, vu.opened, sid), left, seenBeforeDrop !== undefined);
        events.emit("histogram", METRICS.restoreLatency, nowMs() - droppedAt);
        if (seenBeforeDrop) await replayMissed(compiler, vu, connection, seenBeforeDrop);
        return;
      } catch (err) {
        if (!isTransient(err)) throw err;
        lastError = err;
      }
      const pause = Math.min(backoffDelay(attempt, policy), deadline - nowMs());
      if (pause <= 0) break;
      await sleep(pause);
    }
    vu.drop(true);
    throw new CableError(
      "reconnect_timeout",
      `not back within ${timeoutMs / 1000} s of the drop${lastError === undefined ? "" : ` (last attempt: ${errorCode(lastError)})`}`,
    );
  });
}

/** The connect options again, asking AnyCable to restore the session when there is one. */
function restoreOptions(compiler: Compiler, opened: OpenOptions, sid: string | undefined): OpenOptions {
  const options = { ...opened, headers: { ...opened.headers } };
  if (!sid || compiler.protocol.name !== "actioncable") return options;
  if (compiler.settings.anycable.restoreWith === "header") {
    options.headers["X-ANYCABLE-RESTORE-SID"] = sid;
  } else {
    const url = new URL(options.url);
    url.searchParams.set("sid", sid);
    options.url = url.toString();
  }
  return options;
}

/** One attempt: a new connection, then every channel restored or subscribed again, within `budgetMs`. */
async function rejoin(compiler: Compiler, vu: VirtualUser, context: VuContext, options: OpenOptions, budgetMs: number, history: boolean): Promise<CableConnection> {
  const { events, settings, protocol } = compiler;
  const until = nowMs() + budgetMs;
  const within = () => Math.max(1, Math.min(settings.timeout * 1000, until - nowMs()));
  const connection = compiler.connect(vu, true);
  connection.dropCopies(history);
  const welcome = await connection.open({ ...options, timeoutMs: within() }, true);
  if (welcome.sid) context.vars.sid = welcome.sid;
  if (welcome.socketId) context.vars.socket_id = welcome.socketId;
  const restored = new Set(welcome.restored ? welcome.restoredIds : []);
  for (const state of vu.channels.values()) {
    if (restored.has(state.key)) {
      events.emit("counter", METRICS.subscriptionsRestored, 1);
      continue;
    }
    // Pusher signs private and presence subscriptions with the socket_id: a new one each time.
    const { key, frame } = await protocol.subscribe(state.request, connection.welcome, compiler.auth(vu, context));
    await connection.subscribe(key, frame, within());
    events.emit("counter", METRICS.subscriptionsResubscribed, 1);
  }
  return connection;
}

type Positions = Map<string, Map<string, StreamPosition>>;

function snapshot(positions: Positions): Positions {
  return new Map([...positions].map(([channel, streams]) => [channel, new Map(streams)]));
}

/** AnyCable's history from the last position seen on each stream before the drop: what the VU missed. */
async function replayMissed(compiler: Compiler, vu: VirtualUser, connection: CableConnection, seenBeforeDrop: Positions): Promise<void> {
  try {
    if (!connection.extended) return;
    for (const state of vu.channels.values()) {
      const seen = seenBeforeDrop.get(state.key);
      if (!seen?.size) continue;
      const streams = Object.fromEntries([...seen.values()].map((p) => [p.stream, { epoch: p.epoch, offset: p.offset }]));
      await requestHistory(compiler, connection, state.key, encodeHistory(state.key, { streams }));
    }
  } finally {
    connection.dropCopies(false);
  }
}

export const reconnect = defineStep({
  schema: reconnectSchema,
  needsConnection: true,
  check(spec, { at, config }) {
    if (!spec?.history) return [];
    if (config.protocol === "pusher") return [`${at} (reconnect): "history" is AnyCable's (protocol actioncable)`];
    return config.anycable.extended === "off" ? [`${at} (reconnect): "history" needs AnyCable's extended protocol: set config.cable.anycable.extended`] : [];
  },
  compile: (compiler, spec) => compileReconnect(compiler, spec),
});

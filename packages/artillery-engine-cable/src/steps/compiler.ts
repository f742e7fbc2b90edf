import type { CableConfig } from "../config.js";
import type { TlsOptions } from "../tls.js";
import type { Events } from "../metrics.js";
import type { Protocol, UserAuth } from "../protocol/types.js";
import type { CableConnection } from "../connection.js";
import type { StepFn, VirtualUser, VuContext } from "../vu.js";
import { nowMs } from "../clock.js";
import { CableError } from "../errors.js";
import { hasTemplate, render } from "../template.js";

/**
 * The helpers Artillery passes to an engine's constructor (lib/commons/engine_util.ts) that the
 * engine uses. Not its `template`: a value from an answer must not be rendered again (template.ts).
 */
export interface ArtilleryHelpers {
  createThink(step: Record<string, unknown>, defaults?: Record<string, unknown>): StepFn;
  createLoopWithCount(count: number | string, steps: StepFn[], opts: Record<string, unknown>): StepFn;
  isProbableEnough(step: Record<string, unknown>): boolean;
}

/** What every step compiler needs: settings, the protocol, Artillery's helpers, the thread's events. */
export interface Compiler {
  settings: CableConfig;
  protocol: Protocol;
  target: string | undefined;
  /** `config.tls` (tls.ts), for the socket and every HTTP side-call. */
  tls?: TlsOptions;
  helpers: ArtilleryHelpers;
  processor: Record<string, unknown>;
  thinkDefaults: Record<string, unknown>;
  events: Events;
  compile(step: Record<string, unknown>): StepFn;
  /** How this user asks the app for a channel's auth: the authEndpoint rendered for it, and its cookies. */
  auth(vu: VirtualUser, context: VuContext): UserAuth;
  /**
   * The source address of every connection of the user, socket and HTTP alike
   * (`config.cable.localAddress`, its list taken in turn by user); undefined: the system's choice.
   */
  localAddress(vu: VirtualUser): string | undefined;
  /** A new connection for the VU, replacing (and closing) any it has; `keepChannels` for reconnects. */
  connect(vu: VirtualUser, keepChannels?: boolean): CableConnection;
}

/** Renders a value's templates per user (template.ts) unless it has none: most steps are static, and rendering walks the value. */
export function templater<T>(value: T): (context: VuContext) => T {
  if (!hasTemplate(value)) return () => value;
  return (context) => render(value, context);
}

/** A duration in seconds from a number or a templated string, in ms. */
export function secondsToMs(value: unknown, field: string): number {
  const seconds = Number(value);
  if (!Number.isFinite(seconds) || seconds < 0) throw new CableError("invalid_value", `"${field}" is not a number of seconds: ${String(value)}`);
  return seconds * 1000;
}

/** Stamps an event's data; data that is not an object is wrapped as `{data}` to carry the stamp. */
export function stamped(compiler: Compiler, vu: VirtualUser, channel: string, data: unknown, stamp: boolean | undefined): unknown {
  if (!stamp) return data;
  const base = data !== null && typeof data === "object" ? data : data === undefined ? {} : { data };
  return { ...base, ...vu.stamp(channel, compiler.settings.stampField, nowMs()) };
}

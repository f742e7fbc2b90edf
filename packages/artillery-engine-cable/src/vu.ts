import { randomUUID } from "node:crypto";
import { CableConnection, type OpenOptions } from "./connection.js";
import { DeliveryLedger, SendSequence } from "./delivery.js";
import { errorTraits, nameOfCode } from "./error-names.js";
import { CableError, errorCode } from "./errors.js";
import { explainOnce } from "./server-words.js";
import type { StreamMemory } from "./frame-counter.js";
import { METRICS, type Events } from "./metrics.js";
import type { StreamPosition, SubscribeRequest } from "./protocol/types.js";
import { Session } from "./session.js";

/** Artillery's step shape: steps compose with its think and loop helpers. */
export type StepCallback = (err: Error | null | undefined, context?: VuContext) => void;
export type StepFn = (context: VuContext, callback: StepCallback) => void;

export interface VuContext {
  vars: Record<string, unknown>;
  funcs?: Record<string, unknown>;
  cable?: VirtualUser;
  [key: string]: unknown;
}

export interface ChannelState {
  /** What the server echoes: the identifier (Action Cable) or the channel name (Pusher). */
  key: string;
  /**
   * What the subscribe step asked for (templated), kept to subscribe again after a reconnect the
   * server did not restore: Pusher's private and presence channels are signed anew for the new socket_id.
   */
  request: SubscribeRequest;
  /** When the VU last sent to this channel (nowMs), for `receive … metric`. */
  lastSentAt?: number;
}

/** The engine's state of one virtual user, kept on Artillery's context as `context.cable`. */
export class VirtualUser {
  /** Names this VU's stamped sends (`sender`), for delivery accounting. */
  readonly id = randomUUID();
  connection: CableConnection | undefined;
  /** How the last `connect` opened its socket, for `reconnect`. */
  opened: OpenOptions | undefined;
  /** Subscribed channels by the name steps use (the `as` name, or the channel). */
  readonly channels = new Map<string, ChannelState>();
  readonly memory: StreamMemory = { positions: new Map<string, Map<string, StreamPosition>>(), ledger: new DeliveryLedger() };
  readonly sequence = new SendSequence();
  /** Where all the user's connections come from (Compiler.localAddress), once given. */
  localAddress: string | undefined;
  /** The user's cookie jar, made by its first HTTP step: a user that never signs in carries none. */
  session: Session | undefined;

  /** The user's jar, made on first use; `events` counts the cookies its caps drop (session.ts). */
  cookies(events: Events): Session {
    return (this.session ??= new Session((count) => events.emit("counter", METRICS.cookiesDropped, count)));
  }

  /** The open connection, if it speaks AnyCable's extended protocol. */
  openExtended(): CableConnection {
    const conn = this.open();
    if (!conn.extended) throw new CableError("ext_unsupported", "the server did not accept actioncable-v1-ext-json");
    return conn;
  }

  /** The open connection, or the reason there is none. */
  open(): CableConnection {
    const conn = this.connection;
    if (!conn) throw new CableError("not_connected", "no connect step has opened a connection");
    if (conn.failure) throw conn.failure;
    return conn;
  }

  channel(name: string): ChannelState {
    const state = this.channels.get(name);
    if (!state) throw new CableError("not_subscribed", `the channel "${name}" is not subscribed`);
    return state;
  }

  /** Ends the connection; `keepChannels` remembers the subscriptions for a reconnect. */
  drop(keepChannels = false): void {
    this.connection?.close();
    this.connection = undefined;
    if (!keepChannels) this.channels.clear();
  }

  /** The payload fields a `stamp: true` send adds: send time, and a per-channel sequence. */
  stamp(channel: string, stampField: string, sentAt: number): Record<string, unknown> {
    return { [stampField]: sentAt, seq: this.sequence.take(channel), sender: this.id };
  }
}

/** Adapts an async step to Artillery's callback shape, so that it composes with Artillery's helpers. */
export function asyncStep(run: (vu: VirtualUser, context: VuContext) => Promise<void> | void): StepFn {
  return (context, callback) => {
    let result: Promise<void> | void;
    try {
      result = run(context.cable!, context);
    } catch (err) {
      return callback(err as Error, context);
    }
    if (result) result.then(() => callback(null, context), (err: Error) => callback(err, context));
    else callback(null, context);
  };
}

/** Runs steps in order, stopping at the first failure. Each step may call back only once. */
export function sequence(steps: StepFn[]): StepFn {
  return (context, done) => {
    let index = 0;
    const next = (ctx: VuContext) => {
      if (index === steps.length) return done(null, ctx);
      const step = steps[index++];
      let called = false;
      const callback: StepCallback = (err, after) => {
        if (called) return;
        called = true;
        if (err) return done(err, ctx);
        next(after ?? ctx);
      };
      try {
        step(ctx, callback);
      } catch (err) {
        callback(err as Error);
      }
    };
    next(context);
  };
}

/**
 * One virtual user from start to end. It ends exactly once: the flow's end, a step's failure, or a
 * connection that the server ended after the last step that used it; the socket is closed then.
 */
export function runVirtualUser(flow: StepFn, events: Events, context: VuContext, callback: (err: Error | null, context: VuContext) => void): void {
  events.emit("started");
  const vu = new VirtualUser();
  context.cable = vu;
  let ended = false;
  flow(context, (err, after) => {
    if (ended) return;
    ended = true;
    const ctx = after ?? context;
    const failure = err ?? vu.connection?.failure;
    vu.drop();
    vu.session = undefined;
    if (!vu.memory.ledger.isEmpty) {
      events.emit("counter", METRICS.messagesMissing, vu.memory.ledger.missing);
      events.emit("counter", METRICS.messagesDuplicated, vu.memory.ledger.duplicated);
    }
    if (failure) {
      const code = errorCode(failure);
      const name = nameOfCode(code);
      if (name) explainOnce(code, errorTraits(name).hint);
      events.emit("error", code);
      return callback(failure, ctx);
    }
    callback(null, ctx);
  });
}

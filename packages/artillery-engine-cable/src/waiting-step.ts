import type { Clock, TimerHandle } from "./clock.js";
import type { ErrorName } from "./error-names.js";
import { CableError } from "./errors.js";
import type { Inbound } from "./protocol/types.js";

interface Waiter {
  /** Messages (not only control frames) may settle it: the listen path must decode them. */
  readonly wantsMessages: boolean;
  /** Returns true when the frame settles the wait (it has then resolved or rejected it). */
  offer(ev: Inbound): boolean;
  fail(err: Error): void;
}

/**
 * The step waiting on a connection, if one is. A VU runs its steps one at a time, so a connection
 * has at most one; every frame is offered to it first, and the connection's failure ends it.
 */
export class WaitingStep {
  private waiter: Waiter | undefined;

  constructor(private readonly clock: Clock) {}

  get wantsMessages(): boolean {
    return this.waiter !== undefined && this.waiter.wantsMessages;
  }

  /** True when the frame settled the wait. */
  offer(ev: Inbound): boolean {
    return this.waiter !== undefined && this.waiter.offer(ev);
  }

  fail(err: Error): void {
    this.waiter?.fail(err);
  }

  /**
   * Waits for a frame that `pick` accepts. On timeout it rejects with `cable.<timeoutReason>`, or
   * resolves (undefined) when no reason is given; a connection failure rejects at once.
   */
  frame<T>(timeoutMs: number, timeoutReason: ErrorName | undefined, wantsMessages: boolean, pick: (ev: Inbound) => T | undefined): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const settle = () => {
        this.clock.clearTimeout(timer);
        this.waiter = undefined;
      };
      const timer: TimerHandle = this.clock.setTimeout(() => {
        settle();
        if (timeoutReason) reject(new CableError(timeoutReason, `no answer within ${timeoutMs} ms`));
        else resolve(undefined as T);
      }, timeoutMs);
      this.waiter = {
        wantsMessages,
        offer: (ev) => {
          const value = pick(ev);
          if (value === undefined) return false;
          settle();
          resolve(value);
          return true;
        },
        fail: (err) => {
          settle();
          reject(err);
        },
      };
    });
  }

  /** Waits for the connection to fail (the server dropped it); rejects if it has not within the time. */
  drop(timeoutMs: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const timer = this.clock.setTimeout(() => {
        this.waiter = undefined;
        reject(new CableError("drop_timeout", `the server did not drop the connection within ${timeoutMs} ms`));
      }, timeoutMs);
      this.waiter = {
        wantsMessages: false,
        offer: () => false,
        fail: () => {
          this.clock.clearTimeout(timer);
          this.waiter = undefined;
          resolve();
        },
      };
    });
  }
}

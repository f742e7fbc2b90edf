// A silent partition on the target's own WebSocket sockets, the local twin of cable-test-servers'
// TCP proxy (`silence()`/`heal()`): nothing goes out or comes in and nothing is closed, so a client
// only notices by the missing pings; new WebSocket upgrades hang. The HTTP endpoints (broadcasts,
// the control endpoint) keep working: the partition is between the clients and the server, not the
// app and the server. It heals by itself after `ms`: the sockets that lived through it are reset,
// forgotten (silent for good) or resumed.
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import type { TimerSet } from "./timers.js";

export type Survivors = "reset" | "forget" | "resume";
export const SURVIVORS: readonly Survivors[] = ["reset", "forget", "resume"];

export class Partition {
  private silent = false;
  /** Sockets the current partition holds: silenced when it began, or upgraded during it. */
  private held = new Set<Duplex>();
  /** Forgotten by an earlier partition: silent for good. */
  private readonly forgotten = new Set<Duplex>();

  constructor(private readonly timers: TimerSet) {}

  get active(): boolean {
    return this.silent;
  }

  /** Silences `sockets` now and heals after `ms`; returns how many it silenced. */
  begin(sockets: Iterable<Duplex>, ms: number, survivors: Survivors): number {
    if (this.silent) throw new Error("a partition is already on");
    this.silent = true;
    for (const socket of sockets) if (!socket.destroyed && !this.forgotten.has(socket)) this.hold(socket);
    const silenced = this.held.size;
    this.timers.timeout(() => this.heal(survivors), ms);
    return silenced;
  }

  /** Takes a socket into the partition: it reads nothing and its writes stay corked. */
  hold(socket: Duplex): void {
    this.held.add(socket);
    socket.pause();
    socket.cork();
  }

  private heal(survivors: Survivors): void {
    this.silent = false;
    for (const socket of this.held) {
      if (survivors === "reset") (socket as Socket).resetAndDestroy?.() ?? socket.destroy();
      else if (survivors === "forget") {
        this.forgotten.add(socket);
        socket.once("close", () => this.forgotten.delete(socket));
      }
      else {
        socket.uncork();
        socket.resume();
      }
    }
    this.held.clear();
  }
}

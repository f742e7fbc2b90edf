import type { Clock } from "./clock.js";
import type { Inbound } from "./protocol/types.js";

export type InboundMessage = Extract<Inbound, { kind: "message" }>;

const ALL_CHANNELS = "\0all";
/** Positions remembered while copies are dropped: a bound on memory for a long replay. */
const MAX_SEEN_SINCE_RESTORE = 16_384;

/**
 * What a connection keeps of the messages no step was waiting for: the unread ones per channel,
 * for a later `receive`; what a `listen` consumes instead; and, after a restore, which ones are a
 * history replay's or a second copy of one.
 */
export class ChannelInbox {
  /** Channel key → its unread messages, oldest first; only channels that keep any are here. */
  private readonly unread = new Map<string, InboundMessage[]>();
  /** The channel a `listen` step consumes, if one runs. */
  private listening: string | undefined;
  /** The channel whose history is being replayed, and how many messages it has replayed so far. */
  private replaying: string | undefined;
  private replayedSoFar = 0;
  /** Stream positions received since a restore, until shortly after its history is in (dropCopies). */
  private seenSinceRestore: Set<string> | undefined;

  constructor(
    /** Unread messages kept per channel; older ones are dropped. 0: none. */
    private readonly size: number,
    private readonly clock: Clock,
  ) {}

  subscribe(key: string): void {
    if (this.size > 0) this.unread.set(key, []);
  }

  unsubscribe(key: string): void {
    this.unread.delete(key);
  }

  /** The channel keeps what nobody waits for: its broadcasts go through the decoder, to be kept. */
  keepsUnread(key: string): boolean {
    return this.unread.has(key);
  }

  /**
   * A replay counts its messages, and a copy after a restore is told by its stream position: both
   * need every message parsed.
   */
  get readsEveryMessage(): boolean {
    return this.seenSinceRestore !== undefined || this.replaying !== undefined;
  }

  /**
   * The first unread message on the channel that passes `accept`. Those before it that fail are
   * skipped for good, as a client reading a stream would.
   */
  takeUnread(key: string, accept: (msg: InboundMessage) => boolean): InboundMessage | undefined {
    const unread = this.unread.get(key);
    if (!unread) return undefined;
    while (unread.length > 0) {
      const msg = unread.shift()!;
      if (accept(msg)) return msg;
    }
    return undefined;
  }

  /** What the channel (all channels without one) hears from now on is consumed, and what it kept is read. */
  startListening(key: string | undefined): void {
    for (const [channel, unread] of this.unread) if (key === undefined || channel === key) unread.length = 0;
    this.listening = key ?? ALL_CHANNELS;
  }

  stopListening(): void {
    this.listening = undefined;
  }

  startReplay(key: string): void {
    this.replaying = key;
    this.replayedSoFar = 0;
  }

  get replayed(): number {
    return this.replayedSoFar;
  }

  endReplay(): void {
    this.replaying = undefined;
  }

  /**
   * `true` (before `open`): remember the stream position of every message, and drop a second copy;
   * `false`: stop, a second later (a live copy can trail the replay by a moment).
   */
  dropCopies(on: boolean): void {
    if (on) {
      this.seenSinceRestore = new Set();
      return;
    }
    const timer = this.clock.setTimeout(() => (this.seenSinceRestore = undefined), 1_000) as { unref?: () => void };
    timer.unref?.();
  }

  /** False for a copy to drop; counts a replayed message. */
  admit(msg: InboundMessage): boolean {
    const position = msg.position;
    if (position && this.seenSinceRestore) {
      // After a restore, a message can come both live and in the history replay (in either order,
      // when the server broadcasts while it reads the history): keep the first copy.
      const id = `${position.stream}\n${position.epoch}\n${position.offset}`;
      if (this.seenSinceRestore.has(id)) return false;
      if (this.seenSinceRestore.size < MAX_SEEN_SINCE_RESTORE) this.seenSinceRestore.add(id);
    }
    if (this.replaying === msg.channel) this.replayedSoFar++;
    return true;
  }

  /** Keeps a message no step took, unless a `listen` consumes its channel or the channel keeps none. */
  keep(msg: InboundMessage): void {
    if (this.listening === ALL_CHANNELS || this.listening === msg.channel) return;
    const unread = this.unread.get(msg.channel);
    if (!unread) return;
    if (unread.length >= this.size) unread.shift();
    unread.push(msg);
  }
}

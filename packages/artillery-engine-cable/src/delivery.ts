// Delivery accounting: stamped sends carry a per-sender, per-channel sequence; receivers find the
// gaps and repeats, as websocket-bench counts missing broadcasts. Pure: no sockets, no clocks.

/** Gaps remembered per sender and channel; a flood of losses is counted, not stored, past this. */
const MAX_GAPS = 4096;

interface SenderTrack {
  next: number;
  /** Made on the first gap: most senders never have one, and a receiver hears from many senders. */
  gaps: Set<number> | undefined;
  overflow: number;
}

export class DeliveryLedger {
  /** channel → sender → track: two lookups and no string built per received message. */
  private readonly tracks = new Map<string, Map<string, SenderTrack>>();
  duplicated = 0;

  /** Records one received message `seq` from `sender` on `channel` (sequences start at 1). */
  record(channel: string, sender: string, seq: number): void {
    let senders = this.tracks.get(channel);
    if (!senders) this.tracks.set(channel, (senders = new Map()));
    const track = senders.get(sender);
    if (!track) {
      // The first message heard from a sender starts its count: a receiver that joined late has
      // not missed what came before it.
      senders.set(sender, { next: seq + 1, gaps: undefined, overflow: 0 });
      return;
    }
    if (seq === track.next) {
      track.next++;
    } else if (seq > track.next) {
      const gaps = (track.gaps ??= new Set());
      for (let missing = track.next; missing < seq; missing++) {
        if (gaps.size < MAX_GAPS) gaps.add(missing);
        else track.overflow++;
      }
      track.next = seq + 1;
    } else if (!track.gaps?.delete(seq)) {
      this.duplicated++;
    }
  }

  /** Messages never received between the first and the last heard from each sender. */
  get missing(): number {
    let total = 0;
    for (const senders of this.tracks.values()) for (const track of senders.values()) total += (track.gaps?.size ?? 0) + track.overflow;
    return total;
  }

  get isEmpty(): boolean {
    return this.tracks.size === 0;
  }
}

/** Per VU and channel, the next sequence number a stamped send carries. */
export class SendSequence {
  private readonly next = new Map<string, number>();

  take(channel: string): number {
    const seq = (this.next.get(channel) ?? 0) + 1;
    this.next.set(channel, seq);
    return seq;
  }
}

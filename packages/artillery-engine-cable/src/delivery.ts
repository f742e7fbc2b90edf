// Delivery accounting: stamped sends carry a per-sender, per-channel sequence; receivers find the
// gaps and repeats, as websocket-bench counts missing broadcasts. Pure: no sockets, no clocks.

/** Gaps remembered per sender and channel; a flood of losses is counted, not stored, past this. */
const MAX_GAPS = 4096;

interface SenderTrack {
  next: number;
  gaps: Set<number>;
  overflow: number;
}

export class DeliveryLedger {
  private readonly tracks = new Map<string, SenderTrack>();
  duplicated = 0;

  /** Records one received message `seq` from `sender` on `channel` (sequences start at 1). */
  record(channel: string, sender: string, seq: number): void {
    const key = `${channel}\n${sender}`;
    let track = this.tracks.get(key);
    if (!track) {
      // The first message heard from a sender starts its count: a receiver that joined late has
      // not missed what came before it.
      this.tracks.set(key, { next: seq + 1, gaps: new Set(), overflow: 0 });
      return;
    }
    if (seq === track.next) {
      track.next++;
    } else if (seq > track.next) {
      for (let missing = track.next; missing < seq; missing++) {
        if (track.gaps.size < MAX_GAPS) track.gaps.add(missing);
        else track.overflow++;
      }
      track.next = seq + 1;
    } else if (!track.gaps.delete(seq)) {
      this.duplicated++;
    }
  }

  /** Messages never received between the first and the last heard from each sender. */
  get missing(): number {
    let total = 0;
    for (const track of this.tracks.values()) total += track.gaps.size + track.overflow;
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

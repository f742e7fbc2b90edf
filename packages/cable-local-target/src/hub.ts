/**
 * Stream → subscribers, grouped by what they must receive. A broadcast builds one frame per group
 * (for Action Cable a group is a subscription identifier, which the frame embeds; for Pusher there
 * is one group per channel), so the cost of serialising is paid once per broadcast, not once per
 * subscriber.
 */
export class Hub<Subscriber> {
  private readonly streams = new Map<string, Map<string, Set<Subscriber>>>();

  subscribe(stream: string, group: string, subscriber: Subscriber): void {
    let groups = this.streams.get(stream);
    if (!groups) this.streams.set(stream, (groups = new Map()));
    let members = groups.get(group);
    if (!members) groups.set(group, (members = new Set()));
    members.add(subscriber);
  }

  unsubscribe(stream: string, group: string, subscriber: Subscriber): void {
    const groups = this.streams.get(stream);
    const members = groups?.get(group);
    if (!groups || !members) return;
    members.delete(subscriber);
    if (members.size === 0) groups.delete(group);
    if (groups.size === 0) this.streams.delete(stream);
  }

  /**
   * Calls `prepare` once per group of `stream` and `deliver` once per subscriber with that group's
   * prepared value, skipping `except` (a whisper's sender). Returns the number of subscribers reached.
   */
  publish<Prepared>(
    stream: string,
    prepare: (group: string) => Prepared,
    deliver: (subscriber: Subscriber, prepared: Prepared) => void,
    except?: Subscriber,
  ): number {
    const groups = this.streams.get(stream);
    if (!groups) return 0;
    let reached = 0;
    for (const [group, members] of groups) {
      const prepared = prepare(group);
      for (const subscriber of members) {
        if (subscriber === except) continue;
        deliver(subscriber, prepared);
        reached++;
      }
    }
    return reached;
  }
}

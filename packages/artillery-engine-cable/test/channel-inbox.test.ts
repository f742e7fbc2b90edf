// What a connection keeps of the messages no step waited for: unread ones per channel, a listen's
// consumption, and after a restore the history replay's count and its second copies.
import { describe, expect, test } from "vitest";
import { ChannelInbox, type InboundMessage } from "../src/channel-inbox.js";
import type { Clock, TimerHandle } from "../src/clock.js";

/** Only the timer dropCopies(false) sets: fired by hand. */
function manualClock() {
  const due: (() => void)[] = [];
  const clock: Clock = {
    now: () => 0,
    setTimeout: (fn: () => void) => (due.push(fn), due.length as unknown as TimerHandle),
    clearTimeout: () => undefined,
  };
  return { clock, fire: () => due.splice(0).forEach((fn) => fn()) };
}

const CHAT = "chat";
function message(offset: number, channel = CHAT, epoch = "e1"): InboundMessage {
  return { kind: "message", channel, payload: { n: offset }, position: { stream: "s", epoch, offset } };
}

/** The messages a channel keeps unread, in order. */
function unread(inbox: ChannelInbox, key: string): unknown[] {
  const out: unknown[] = [];
  for (let msg = inbox.takeUnread(key, () => true); msg; msg = inbox.takeUnread(key, () => true)) out.push(msg.payload);
  return out;
}

describe("the channel inbox after a restore", () => {
  test("a message that comes both live and in the replay is kept once, whichever comes first", () => {
    const { clock } = manualClock();
    const inbox = new ChannelInbox(16, clock);
    inbox.subscribe(CHAT);
    inbox.dropCopies(true);
    inbox.startReplay(CHAT);
    const arrivals = [message(5), message(3), message(4), message(5), message(3)];
    const admitted = arrivals.filter((msg) => inbox.admit(msg));
    for (const msg of admitted) inbox.keep(msg);
    expect(admitted.map((m) => m.position!.offset)).toEqual([5, 3, 4]);
    expect(inbox.replayed).toBe(3);
    inbox.endReplay();
    expect(unread(inbox, CHAT)).toEqual([{ n: 5 }, { n: 3 }, { n: 4 }]);
  });

  test("another epoch or another stream is another message", () => {
    const inbox = new ChannelInbox(16, manualClock().clock);
    inbox.dropCopies(true);
    expect(inbox.admit(message(1))).toBe(true);
    expect(inbox.admit(message(1, CHAT, "e2"))).toBe(true);
    expect(inbox.admit({ ...message(1), position: { stream: "t", epoch: "e1", offset: 1 } })).toBe(true);
    expect(inbox.admit(message(1))).toBe(false);
  });

  test("copies are dropped until a second after dropCopies(false), and every message is read meanwhile", () => {
    const { clock, fire } = manualClock();
    const inbox = new ChannelInbox(16, clock);
    expect(inbox.readsEveryMessage).toBe(false);
    inbox.dropCopies(true);
    expect(inbox.readsEveryMessage).toBe(true);
    expect(inbox.admit(message(1))).toBe(true);
    inbox.dropCopies(false);
    // A live copy can trail the replay by a moment.
    expect(inbox.admit(message(1))).toBe(false);
    fire();
    expect(inbox.readsEveryMessage).toBe(false);
    expect(inbox.admit(message(1))).toBe(true);
  });

  test("without a restore nothing is dropped, and a replay counts only its own channel", () => {
    const inbox = new ChannelInbox(16, manualClock().clock);
    inbox.startReplay(CHAT);
    expect(inbox.readsEveryMessage).toBe(true);
    for (const msg of [message(1), message(1), message(2, "other")]) expect(inbox.admit(msg)).toBe(true);
    expect(inbox.replayed).toBe(2);
    inbox.endReplay();
    expect(inbox.readsEveryMessage).toBe(false);
  });
});

describe("the channel inbox's unread messages", () => {
  test("kept up to its size, the oldest dropped; none for a channel not subscribed or a size of 0", () => {
    const inbox = new ChannelInbox(2, manualClock().clock);
    inbox.subscribe(CHAT);
    expect(inbox.keepsUnread(CHAT)).toBe(true);
    for (const n of [1, 2, 3]) inbox.keep(message(n));
    inbox.keep(message(9, "other"));
    expect(unread(inbox, CHAT)).toEqual([{ n: 2 }, { n: 3 }]);
    expect(inbox.keepsUnread("other")).toBe(false);
    const none = new ChannelInbox(0, manualClock().clock);
    none.subscribe(CHAT);
    expect(none.keepsUnread(CHAT)).toBe(false);
  });

  test("a receive skips for good the unread messages it does not accept", () => {
    const inbox = new ChannelInbox(8, manualClock().clock);
    inbox.subscribe(CHAT);
    for (const n of [1, 2, 3]) inbox.keep(message(n));
    expect(inbox.takeUnread(CHAT, (m) => (m.payload as { n: number }).n === 2)?.payload).toEqual({ n: 2 });
    expect(unread(inbox, CHAT)).toEqual([{ n: 3 }]);
  });

  test("a listen consumes its channel: what was kept is read, and what comes is not kept", () => {
    const inbox = new ChannelInbox(8, manualClock().clock);
    inbox.subscribe(CHAT);
    inbox.subscribe("other");
    inbox.keep(message(1));
    inbox.keep(message(1, "other"));
    inbox.startListening(CHAT);
    inbox.keep(message(2));
    inbox.keep(message(2, "other"));
    inbox.stopListening();
    inbox.keep(message(3));
    expect(unread(inbox, CHAT)).toEqual([{ n: 3 }]);
    expect(unread(inbox, "other")).toEqual([{ n: 1 }, { n: 2 }]);
    inbox.startListening(undefined);
    inbox.keep(message(4, "other"));
    expect(unread(inbox, "other")).toEqual([]);
  });

  test("an unsubscribed channel keeps nothing more", () => {
    const inbox = new ChannelInbox(8, manualClock().clock);
    inbox.subscribe(CHAT);
    inbox.keep(message(1));
    inbox.unsubscribe(CHAT);
    expect(inbox.keepsUnread(CHAT)).toBe(false);
    inbox.keep(message(2));
    expect(unread(inbox, CHAT)).toEqual([]);
  });
});

import { describe, expect, test } from "vitest";
import { DeliveryLedger, SendSequence } from "../src/delivery.js";

describe("delivery accounting", () => {
  test("an unbroken sequence has nothing missing or duplicated", () => {
    const ledger = new DeliveryLedger();
    for (let seq = 1; seq <= 5; seq++) ledger.record("room", "a", seq);
    expect([ledger.missing, ledger.duplicated]).toEqual([0, 0]);
  });

  test("a gap counts the messages skipped; a late arrival fills its gap", () => {
    const ledger = new DeliveryLedger();
    for (const seq of [1, 2, 5, 6]) ledger.record("room", "a", seq);
    expect(ledger.missing).toBe(2);
    ledger.record("room", "a", 3);
    expect([ledger.missing, ledger.duplicated]).toEqual([1, 0]);
  });

  test("a repeat is a duplicate, per sender and channel", () => {
    const ledger = new DeliveryLedger();
    for (const seq of [1, 2, 2, 3]) ledger.record("room", "a", seq);
    ledger.record("room", "b", 2);
    ledger.record("other", "a", 1);
    expect([ledger.missing, ledger.duplicated]).toEqual([0, 1]);
  });

  test("a receiver that joins late has missed nothing before its first message", () => {
    const ledger = new DeliveryLedger();
    for (const seq of [40, 41, 42]) ledger.record("room", "a", seq);
    expect(ledger.missing).toBe(0);
  });

  test("sequences are per channel and start at 1", () => {
    const seq = new SendSequence();
    expect([seq.take("a"), seq.take("a"), seq.take("b"), seq.take("a")]).toEqual([1, 2, 1, 3]);
  });
});

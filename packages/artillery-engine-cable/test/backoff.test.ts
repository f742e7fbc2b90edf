import { describe, expect, test } from "vitest";
import { backoffDelay, isTransient } from "../src/backoff.js";
import { CableError } from "../src/errors.js";

describe("reconnect back-off", () => {
  const policy = { initialMs: 500, maxMs: 5_000 };

  test("doubles from the initial delay up to the maximum, with half of each delay random", () => {
    const low = [1, 2, 3, 4, 5, 6].map((n) => backoffDelay(n, policy, () => 0));
    const high = [1, 2, 3, 4, 5, 6].map((n) => backoffDelay(n, policy, () => 1));
    expect(low).toEqual([250, 500, 1_000, 2_000, 2_500, 2_500]);
    expect(high).toEqual([500, 1_000, 2_000, 4_000, 5_000, 5_000]);
    for (let i = 0; i < 100; i++) {
      const d = backoffDelay(3, policy);
      expect(d).toBeGreaterThanOrEqual(1_000);
      expect(d).toBeLessThanOrEqual(2_000);
    }
  });

  test("retries what a restart produces, not what waiting cannot change", () => {
    const socket = (code: string) => Object.assign(new Error(code), { code });
    for (const err of [socket("ECONNREFUSED"), socket("ECONNRESET"), new CableError("connection_closed"), new CableError("handshake_timeout"), new CableError("http_503"), new CableError("server_disconnect"), new CableError("pusher_4200"), new CableError("pusher_4100")]) {
      expect(isTransient(err), String((err as { code?: string }).code)).toBe(true);
    }
    for (const err of [new CableError("unauthorized"), new CableError("subscription_rejected"), new CableError("http_403"), new CableError("pusher_4001"), new CableError("ext_unsupported"), new Error("boom"), undefined]) {
      expect(isTransient(err)).toBe(false);
    }
  });
});

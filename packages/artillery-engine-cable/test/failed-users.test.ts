import { describe, expect, it } from "vitest";
import { FailureLine } from "../src/exit-status.js";
import { allowedFailures, JUDGED_BY_RUNNER_ENV, judgeFailedUsers, overLineMessage, readMaxFailedUsers } from "../src/failed-users.js";

describe("the failure line (config.cable.maxFailedUsers)", () => {
  it("allows a count, a share of the users created, or any number when off", () => {
    expect(allowedFailures(0, 100)).toBe(0);
    expect(allowedFailures(5, 100)).toBe(5);
    expect(allowedFailures("5%", 80)).toBe(4);
    expect(allowedFailures(false, 80)).toBe(Infinity);
    expect(judgeFailedUsers(0, { created: 20, failed: 1 })).toEqual({ over: true, failed: 1, created: 20, line: "0" });
    expect(judgeFailedUsers("5%", { created: 80, failed: 4 }).over).toBe(false);
    expect(judgeFailedUsers("5%", { created: 80, failed: 5 }).over).toBe(true);
    expect(judgeFailedUsers(false, { created: 20, failed: 20 })).toMatchObject({ over: false, line: "off" });
  });

  it("reads what a scenario wrote, the default for anything else", () => {
    expect(readMaxFailedUsers(undefined)).toBe(0);
    expect(readMaxFailedUsers(false)).toBe(false);
    expect(readMaxFailedUsers(3)).toBe(3);
    expect(readMaxFailedUsers("2.5%")).toBe("2.5%");
    expect(readMaxFailedUsers(-1)).toBe(0);
    expect(readMaxFailedUsers("lots")).toBe(0);
  });

  it("says the line, its figures and the way to change it", () => {
    expect(overLineMessage({ over: true, failed: 20, created: 80, line: "5%" }, "cable-fanout exits 6")).toBe(
      '20 of 80 virtual users failed, more than config.cable.maxFailedUsers (5%): cable-fanout exits 6. Set maxFailedUsers to a count, a share ("5%") or false to change this.',
    );
  });
});

describe("a worker thread's side of the line", () => {
  const artillery = () => {
    const logs: string[] = [];
    const global: { suggestedExitCode?: number; globalEvents: { emit(event: string, ...args: unknown[]): void } } = { globalEvents: { emit: (_e, _o, line) => logs.push(String(line)) } };
    return { global, logs };
  };

  it("sets Artillery's exit code once its own failures pass a count, and says it once", () => {
    const a = artillery();
    const line = new FailureLine(1, false, {}, () => a.global);
    line.userFailed();
    expect(a.global.suggestedExitCode).toBeUndefined();
    line.userFailed();
    line.userFailed();
    expect(a.global.suggestedExitCode).toBe(1);
    expect(a.logs).toEqual(["cable: 2 virtual users failed, more than config.cable.maxFailedUsers (1): artillery run will exit 1. Set maxFailedUsers to a count, a share (\"5%\") or false to change this."]);
  });

  it("leaves a share to the report plugin, the line to the plugin when it is listed, and a fan-out task's line to its runner", () => {
    const a = artillery();
    for (const line of [new FailureLine("5%", false, {}, () => a.global), new FailureLine(0, true, {}, () => a.global), new FailureLine(0, false, { [JUDGED_BY_RUNNER_ENV]: "1" }, () => a.global), new FailureLine(false, false, {}, () => a.global)]) {
      line.userFailed();
    }
    expect(a.global.suggestedExitCode).toBeUndefined();
    expect(a.logs).toEqual([]);
  });
});

// The measured capacity table (src/plan/task-capacity.ts) is consistent with itself: every
// workload at every size, larger sizes hold at least as many, only 4 vCPU extrapolated unless
// measured, memory per user within what the size's memory holds. Not copies of the figures.
import { describe, expect, it } from "vitest";
import { TASK_CAPACITY, taskCapacity, type Workload } from "../src/plan/task-capacity.js";

const WORKLOADS = Object.keys(TASK_CAPACITY.workloads) as Workload[];
const SIZES = [1, 2, 4] as const;

describe("TASK_CAPACITY", () => {
  it("says where its figures come from", () => {
    expect(TASK_CAPACITY.measuredOn).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(Number.isNaN(Date.parse(TASK_CAPACITY.measuredOn))).toBe(false);
    for (const line of [TASK_CAPACITY.machine, TASK_CAPACITY.criterion, TASK_CAPACITY.command, TASK_CAPACITY.doc]) {
      expect(line.trim().length).toBeGreaterThan(0);
      expect(line).not.toContain("\n");
    }
    expect(TASK_CAPACITY.command).toMatch(/^node bench\/task-size\.mjs/);
    expect(TASK_CAPACITY.doc).toContain("docs/benchmarks.md");
    expect(WORKLOADS.sort()).toEqual(["chat", "listen"]);
  });

  it("has exactly one entry for every workload at 1, 2 and 4 vCPU", () => {
    for (const workload of WORKLOADS) {
      for (const vcpu of SIZES) {
        expect(TASK_CAPACITY.entries.filter((e) => e.workload === workload && e.vcpu === vcpu), `${workload} at ${vcpu} vCPU`).toHaveLength(1);
      }
    }
    expect(TASK_CAPACITY.entries).toHaveLength(WORKLOADS.length * SIZES.length);
  });

  it("has whole, positive figures on valid Fargate memory", () => {
    for (const e of TASK_CAPACITY.entries) {
      expect(Number.isInteger(e.users) && e.users > 0, `${e.workload} ${e.vcpu}`).toBe(true);
      expect(e.kibPerUser).toBeGreaterThan(0);
      // Fargate: 2 GiB at least per task, at most 8 GiB per vCPU.
      expect(e.memoryMiB).toBeGreaterThanOrEqual(Math.max(2048, 2048 * e.vcpu));
      expect(e.memoryMiB).toBeLessThanOrEqual(8192 * e.vcpu);
      // The users fit in 80 % of the task's memory at the measured memory per user.
      expect((e.users * e.kibPerUser) / 1024).toBeLessThan(0.8 * e.memoryMiB);
    }
  });

  it("holds at least as many users in a larger task", () => {
    for (const workload of WORKLOADS) {
      const users = SIZES.map((vcpu) => taskCapacity(workload, vcpu)!.users);
      for (let i = 1; i < users.length; i++) expect(users[i], `${workload}: ${users.join(", ")}`).toBeGreaterThanOrEqual(users[i - 1]!);
    }
  });

  it("is extrapolated only at 4 vCPU, and measured at 1 and 2", () => {
    for (const e of TASK_CAPACITY.entries) {
      if (e.basis === "extrapolated") expect(e.vcpu).toBe(4);
      if (e.vcpu !== 4) expect(e.basis).toBe("measured");
    }
  });

  it("has one memory per user per workload (the workload's, not the size's)", () => {
    for (const workload of WORKLOADS) {
      expect(new Set(TASK_CAPACITY.entries.filter((e) => e.workload === workload).map((e) => e.kibPerUser)).size).toBe(1);
    }
  });
});

describe("taskCapacity", () => {
  it("finds the entry of a workload and a size", () => {
    for (const e of TASK_CAPACITY.entries) expect(taskCapacity(e.workload, e.vcpu)).toBe(e);
  });

  it("is undefined for a size or workload the table does not have", () => {
    expect(taskCapacity("listen", 0.5)).toBeUndefined();
    expect(taskCapacity("listen", 3)).toBeUndefined();
    expect(taskCapacity("chat", 8)).toBeUndefined();
    expect(taskCapacity("chat", Number.NaN)).toBeUndefined();
    expect(taskCapacity("lurk" as Workload, 1)).toBeUndefined();
  });
});

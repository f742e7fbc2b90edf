// The plan's workload model and prices against hand-computed cases (issue 54): a broadcast counted
// as the frames it makes, Spot as a range, ARM64, traffic, the regions, and runs refused.
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { RegionFacts } from "../src/backend";
import { framesPerTask } from "../src/plan/audience";
import { estimateCost } from "../src/plan/estimate";
import { makePlan, type PlanInput, STACK_TASK_ADDRESSES } from "../src/plan/launch";
import { fargatePrices, fargateRuns, PRICES } from "../src/plan/prices";
import { shares } from "../src/plan/sizing";
import { ARRIVAL_CAPACITY, FRAME_CAPACITY } from "../src/plan/task-capacity";
import { taskBytes } from "../src/plan/traffic";
import { estimateUsers } from "../src/plan/users";
import { effectiveConfig, loadScenario } from "../src/scenario";

const repo = path.resolve(__dirname, "../../..");
const broadcast = loadScenario(path.join(repo, "scenarios/cable-broadcast.yml"));
const facts = (over: Partial<RegionFacts> = {}): RegionFacts => ({ cpu: 1024, memoryMiB: 2048, quotas: [], freeAddresses: 8000, publicIp: true, unchecked: [], ...over });
const planOf = (over: Partial<PlanInput> = {}): PlanInput => ({
  backend: "aws",
  regions: ["us-east-1"],
  count: 10,
  capacity: "on-demand",
  config: effectiveConfig(broadcast),
  scenarios: broadcast.scenarios,
  phasesMs: broadcast.durationMs,
  maxDurationMs: 3_600_000,
  startDelayMs: 10_000,
  facts: new Map([["us-east-1", facts()]]),
  ...over,
});

describe("what a broadcast's users receive", () => {
  it("cable-broadcast.yml at --count 10: 0.4 sends a user a second, 160,000 frames a second into each task", () => {
    const users = estimateUsers(effectiveConfig(broadcast), broadcast.scenarios);
    // 20/s for 10 s, each staying 45 s: 200 at once. A fifth send 225 × 40 % over 45 s = 2/s; over all users 0.4/s.
    expect(users.peak).toBe(200);
    expect(users.sendsPerUserSecond).toBeCloseTo(0.4, 10);
    expect(users.audiences).toEqual([{ channel: "BenchmarkChannel", sendsPerUserSecond: expect.closeTo(0.4, 10), subscribedShare: 1, spread: 1 }]);
    // 10 tasks × 80 sends/s, each heard by a task's 200 subscribers.
    expect(framesPerTask(users.audiences, users.echoesPerUserSecond, users.peak, 10)).toBeCloseTo(10 * 80 * 200, 6);
  });

  it("the count it suggests is set by the frames and the arrivals together, and spreads them to one task's worth", () => {
    const plan = makePlan(planOf());
    const held = FRAME_CAPACITY.entries.find((e) => e.vcpu === 1)!.perSecond;
    const taken = ARRIVAL_CAPACITY.entries.find((e) => e.vcpu === 1)!.perSecond;
    // 160,000 frames and 20 arrivals a second into each 1-vCPU task: the two shares, added.
    const share = 160_000 / held + 20 / taken;
    expect(plan.binding).toMatchObject({ dimension: "work", share: expect.closeTo(share, 9) });
    // Frames and arrivals a task takes fall as 1/count (all sends × its own subscribers, both ÷ count).
    expect(plan.suggestedCount).toBe(Math.ceil(10 * share));
    const users = estimateUsers(effectiveConfig(broadcast), broadcast.scenarios);
    const perTask = (users.peak * 10) / plan.suggestedCount!;
    const frames = framesPerTask(users.audiences, 0, perTask, plan.suggestedCount!);
    expect(frames / held + (20 * 10) / plan.suggestedCount! / taken).toBeLessThanOrEqual(1);
    const text = plan.lines.join("\n");
    expect(text).toContain("receives: about 160,000 broadcast frames a second per task at the peak (BenchmarkChannel: 800 sends/s in all, heard by 200 users a task)");
    expect(text).toContain("frames received and arrivals together bind: each task's work would take");
    expect(text).toContain(`suggested: --count ${plan.suggestedCount} per region`);
  });

  it("probability, loops and weights: 3 of 4 users listen; the talker sends twice in a 10-pass loop at 50 %", () => {
    const users = estimateUsers({ phases: [{ duration: 100, arrivalRate: 1 }] }, [
      { weight: 1, flow: [{ subscribe: { channel: "Room", as: "r" } }, { loop: [{ perform: { channel: "r", action: "speak" }, probability: 50 }, { perform: { channel: "r", action: "speak" } }, { think: 2 }], count: 10 }] },
      { weight: 3, flow: [{ subscribe: { channel: "Room", as: "r" } }, { listen: { channel: "r", for: 20 } }] },
    ]);
    // Each flow lasts 20 s; a talker sends 10 × 1.5 = 15; over all users 15 / 4 / 20 a second.
    expect(users.flowSeconds).toBe(20);
    expect(users.sendsPerUserSecond).toBeCloseTo(15 / 4 / 20, 10);
    expect(users.audiences[0]).toMatchObject({ channel: "Room", subscribedShare: 1 });
  });

  it("rooms spread the frames: $randomNumber(1, 50) is 50 rooms; $uuid is one each; an echo reaches its sender alone", () => {
    const rooms = estimateUsers({ phases: [{ duration: 10, arrivalRate: 10 }] }, [
      { flow: [{ subscribe: { channel: "Chat", params: { id: "{{ $randomNumber(1, 50) }}" }, as: "c" } }, { loop: [{ perform: { channel: "c", action: "speak" } }, { think: 1 }], count: 10 }] },
    ]);
    expect(rooms.audiences[0].spread).toBe(50);
    // 100 users, 1 send/s each, over 4 tasks: 4 × 100 × 100 / 50.
    expect(framesPerTask(rooms.audiences, 0, 100, 4)).toBeCloseTo((4 * 100 * 100) / 50, 6);
    const own = estimateUsers({ phases: [{ duration: 10, arrivalRate: 10 }] }, [
      { flow: [{ subscribe: { stream: "user-{{ $uuid }}", as: "me" } }, { loop: [{ publish: { stream: "user-{{ $uuid }}" } }, { think: 1 }], count: 10 }] },
    ]);
    expect(own.audiences[0].spread).toBe("per-user");
    const echo = estimateUsers({ phases: [{ duration: 10, arrivalRate: 10 }] }, [
      { flow: [{ subscribe: { channel: "BenchmarkChannel", as: "b" } }, { loop: [{ perform: { channel: "b", action: "echo" } }, { think: 1 }], count: 10 }] },
    ]);
    expect(echo.audiences).toEqual([]);
    expect(echo.echoesPerUserSecond).toBeCloseTo(1, 10);
  });

  it("a room a processor picks cannot be read: named, and sized by the chat measurement, its HTTP publishes and arrivals", () => {
    const rooms = loadScenario(path.join(repo, "scenarios/pubsub-rooms.yml"));
    const plan = makePlan(planOf({ config: effectiveConfig(rooms), scenarios: rooms.scenarios, phasesMs: rooms.durationMs, count: 1 }));
    expect(plan.users!.unreadable).toEqual(["{{ room }}"]);
    // Its publishes (4,000 × 0.25 a second against the chat figure's 212.5) and its 100 arrivals a second (against 250), added.
    expect(plan.binding).toMatchObject({ dimension: "work", parts: ["arrivals", "publishes"] });
    expect(plan.binding!.share).toBeCloseTo(1000 / 212.5 + 100 / 250, 9);
    expect(plan.lines.join("\n")).toContain('who hears "{{ room }}" cannot be read from the script');
  });
});

describe("prices: Spot, ARM64, regions", () => {
  const size = { cpu: 1024, memoryMiB: 2048, taskSeconds: 3600 } as const;
  const east = fargatePrices("us-east-1")!;

  it("--spot is a range from all-Spot to all on-demand, from the dated Spot price", () => {
    const e = estimateCost({ regions: [{ region: "us-east-1", tasks: 10, publicIp: false }], ...size, capacity: "spot" });
    const spot = east.x86_64.spot!.value;
    const onDemand = east.x86_64.onDemand.value;
    expect(e.regions[0].fargate).toBeCloseTo(10 * (spot.vcpuHour + 2 * spot.gbHour), 10);
    expect(e.regions[0].fargateUpTo).toBeCloseTo(10 * (onDemand.vcpuHour + 2 * onDemand.gbHour), 10);
    expect(east.x86_64.spot!.asOf).toMatch(/^2026-/);
  });

  it("ARM64 on-demand and Spot at their own rates", () => {
    const arm = east.arm64!;
    const od = estimateCost({ regions: [{ region: "us-east-1", tasks: 10, publicIp: false }], ...size, arch: "arm64", capacity: "on-demand" });
    expect(od.regions[0].fargate).toBeCloseTo(10 * (arm.onDemand.value.vcpuHour + 2 * arm.onDemand.value.gbHour), 10);
    const spot = estimateCost({ regions: [{ region: "us-east-1", tasks: 10, publicIp: false }], ...size, arch: "arm64", capacity: "spot-only" });
    expect(spot.regions[0].fargate).toBeCloseTo(10 * (arm.spot!.value.vcpuHour + 2 * arm.spot!.value.gbHour), 10);
    expect(spot.regions[0].fargate).toBeLessThan(od.regions[0].fargate);
  });

  it("the plan names the cheapest capacity that holds the load, ARM64 Spot where it is priced", () => {
    const plan = makePlan(planOf());
    expect(plan.cheapest).toMatchObject({ arch: "arm64", capacity: "spot" });
    expect(plan.cheapest!.cost).toBeLessThan(plan.cost!.total * plan.suggestedCount! / 10);
    expect(plan.lines.join("\n")).toMatch(/cheapest that holds it: --count \d+ --cpu \d+ --memory \d+ --arch arm64 --spot: about \$/);
  });

  it("traffic for a known frame size and count: sends out as egress, both ways through NAT without public addresses", () => {
    const users = { ...estimateUsers({ phases: [{ duration: 100, arrivalRate: 1 }] }, [{ flow: [{ subscribe: { channel: "C", as: "c" } }, { loop: [{ perform: { channel: "c", action: "speak", data: { text: "hello" } } }, { think: 1 }], count: 10 }] }]) };
    // 100 users each sending 10 frames of data {"text":"hello"} (16 bytes) in an Action Cable envelope (110) and a masked header (6).
    const b = taskBytes({ users, framesPerSecond: 0, protocol: "actioncable", tls: false })!;
    expect(users.sendBytes).toBe(16);
    expect(b.sent[0]).toBeCloseTo(100 * 450 + 1000 * (16 + 110 + 6), 6);
    expect(b.sent[1]).toBeCloseTo(b.sent[0] + 1000 * 52, 6);
    const gb = 1024 ** 3;
    const cost = estimateCost({ regions: [{ region: "us-east-1", tasks: 2, publicIp: false }], ...size, capacity: "on-demand", traffic: b });
    const extras = PRICES.extras.default;
    expect(cost.regions[0].traffic[0]).toBeCloseTo(((2 * b.sent[0]) / gb) * extras.internetEgressPerGb.value + ((2 * (b.sent[0] + b.received[0])) / gb) * extras.natPerGb.value, 12);
    const open = estimateCost({ regions: [{ region: "us-east-1", tasks: 2, publicIp: true }], ...size, capacity: "on-demand", traffic: b });
    expect(open.regions[0].traffic[1]).toBeCloseTo(((2 * b.sent[1]) / gb) * extras.internetEgressPerGb.value, 12);
  });

  it("a region the table lacked is in AWS's list now; a region Fargate does not run in is said", () => {
    for (const region of ["ca-west-1", "mx-central-1", "ap-southeast-5"]) expect(fargateRuns(region), region).toBe(true);
    const plan = makePlan(planOf({ regions: ["ca-west-1"], facts: new Map() }));
    expect(plan.lines.join("\n")).toMatch(/no x86_64 Fargate price in the table for ca-west-1/);
    expect(makePlan(planOf({ regions: ["xx-nowhere-1"], facts: new Map() })).lines.join("\n")).toContain("not in AWS's list of Fargate regions");
  });
});

describe("runs refused or flagged before they start", () => {
  it("an absurd count is refused with its reason, not priced", () => {
    const plan = makePlan(planOf({ count: 1_000_000_000, facts: new Map() }));
    expect(plan.refusals?.join("\n")).toMatch(new RegExp(`--count 1,000,000,000 is more tasks than a region's network holds: the stack's own VPC has ${STACK_TASK_ADDRESSES.toLocaleString("en-US")} task addresses`));
    expect(makePlan(planOf({ count: 50, facts: new Map() })).refusals).toBeUndefined();
  });

  it("phases it cannot read are priced for --max-duration, and said to be a placeholder", () => {
    const plan = makePlan(planOf({ phasesMs: undefined, config: { phases: [{ duration: 60, arrivalRate: "{{ rate }}" }] } }));
    expect(plan.lines.join("\n")).toContain("the phases cannot be read, so each task is priced for --max-duration (60 min), a placeholder");
  });

  it("--subnets private prices NAT when no stack says otherwise; the stack's own fact wins", () => {
    const open = makePlan(planOf({ facts: new Map() }));
    const nat = makePlan(planOf({ facts: new Map(), subnets: "private" }));
    expect(nat.cost!.regions[0].traffic[0]).toBeGreaterThan(open.cost!.regions[0].traffic[0]);
    expect(nat.lines.join("\n")).toContain("without public addresses: both ways through a NAT gateway");
  });
});

it("a scenario's channel and function names reach the terminal as one printable line", () => {
  const evil = "room\u001b]8;;http://x\u0007\nfake: line";
  const plan = makePlan(
    planOf({
      config: { phases: [{ duration: 10, arrivalRate: 1 }] },
      scenarios: [{ flow: [{ function: "pick\u001b[2J" }, { subscribe: { channel: evil, as: "r" } }, { loop: [{ perform: { channel: "r", action: "speak" } }, { think: 1 }], count: 5 }, { publish: { channel: "{{ picked }}\r\nx" } }] }],
    }),
  );
  const text = plan.lines.join("\n");
  expect(text).toContain("room ]8;;http://x fake: line:");
  expect(text).toContain("functions (pick [2J)");
  expect(text).not.toMatch(/[\u0000-\u0009\u000b-\u001f]/);
  expect(plan.lines.every((l) => !l.includes("\n"))).toBe(true);
});

describe("dimensions that add up", () => {
  it("cable-broadcast.yml: frames, arrivals and their sum, beside users at once; the sum is the two shares added", () => {
    const users = estimateUsers(effectiveConfig(broadcast), broadcast.scenarios);
    const dims = shares(users, 10, 1024, 2048);
    expect(dims.map((d) => d.dimension).sort()).toEqual(["arrivals", "frames", "users", "work"]);
    const of = (name: string) => dims.find((d) => d.dimension === name)!;
    expect(of("arrivals")).toMatchObject({ demand: 20, holds: ARRIVAL_CAPACITY.entries[0].perSecond });
    expect(of("work").share).toBeCloseTo(of("frames").share + of("arrivals").share, 12);
    expect(dims[0].dimension).toBe("work");
  });

  it("HTTP publishes: pubsub-rooms.yml's 0.25 a user a second, against what the chat figure's users published", () => {
    const rooms = loadScenario(path.join(repo, "scenarios/pubsub-rooms.yml"));
    const users = estimateUsers(effectiveConfig(rooms), rooms.scenarios);
    expect(users.publishesPerUserSecond).toBeCloseTo(10 / 40, 10);
    const publishes = shares(users, 1, 1024, 2048).find((d) => d.dimension === "publishes")!;
    expect(publishes.demand).toBeCloseTo(4000 * 0.25, 6);
    expect(publishes.holds).toBeCloseTo((850 * 10) / 40, 6);
  });

  it("a flow that sends as fast as the server answers is said to be unpaced; processor functions are named as assumed", () => {
    const bots = loadScenario(path.join(repo, "scenarios/bot-stress.yml"));
    const plan = makePlan(planOf({ config: effectiveConfig(bots), scenarios: bots.scenarios, phasesMs: bots.durationMs }));
    expect(plan.users!.unpaced).toBe(true);
    expect(plan.lines.join("\n")).toContain("as fast as the server answers, so its rate (and the CPU it takes) is not known before the run");
    const waves = loadScenario(path.join(repo, "scenarios/avalanche.yml"));
    const avalanche = makePlan(planOf({ config: effectiveConfig(waves), scenarios: waves.scenarios, phasesMs: waves.durationMs }));
    expect(avalanche.lines.join("\n")).toContain("assumed: the flow's functions (waitForWave, startClock, recordConnectToConfirm, waveDone) take no time");
  });
});

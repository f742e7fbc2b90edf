// The plan's pure parts: users per task from a script, the cost against hand-computed figures, the
// block's suggestions, and the guard.
import { readdirSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { LOCAL_PREFLIGHT, type RegionFacts } from "../src/backend";
import { FanoutInputError } from "../src/errors";
import { billedCost, estimateCost, usd } from "../src/plan/estimate";
import { ASK_ABOVE_USD, guardCost, makePlan, type PlanInput } from "../src/plan/launch";
import { PRICES, type PriceTable } from "../src/plan/prices";
import { holdsPerTask, shares } from "../src/plan/sizing";
import { arrivalsPerSecond, estimateUsers, peakWithin } from "../src/plan/users";
import { effectiveConfig, loadScenario } from "../src/scenario";

const repo = path.resolve(__dirname, "../../..");

/** A table of our own, so that the arithmetic below is checked against figures written here. */
const TABLE: PriceTable = {
  ...PRICES,
  asOf: "2026-01-01",
  fargate: {
    "us-east-1": {
      x86_64: {
        onDemand: { value: { vcpuHour: 0.04048, gbHour: 0.004445 }, source: "test", asOf: "2026-01-01" },
        spot: { value: { vcpuHour: 0.01288871, gbHour: 0.00141527 }, source: "test", asOf: "2026-01-01" },
      },
      arm64: {
        onDemand: { value: { vcpuHour: 0.03238, gbHour: 0.00356 }, source: "test", asOf: "2026-01-01" },
        spot: { value: { vcpuHour: 0.0103, gbHour: 0.00113 }, source: "test", asOf: "2026-01-01" },
      },
    },
    "eu-west-2": { x86_64: { onDemand: { value: { vcpuHour: 0.04656, gbHour: 0.00511 }, source: "test", asOf: "2026-01-01" }, spot: null }, arm64: null },
    "sa-east-1": { x86_64: { onDemand: { value: { vcpuHour: 0.0696, gbHour: 0.0076 }, source: "test", asOf: "2026-01-01" }, spot: null }, arm64: null },
  },
  extras: {
    default: {
      ...PRICES.extras.default,
      publicIpv4Hour: { value: 0.005, source: "test", asOf: "2026-01-01" },
      internetEgressPerGb: { value: 0.09, source: "test", asOf: "2026-01-01" },
      natPerGb: { value: 0.045, source: "test", asOf: "2026-01-01" },
    },
    byRegion: {},
  },
};

describe("users per task", () => {
  it("counts arrivals second by second: rates, ramps, counts and pauses", () => {
    expect(arrivalsPerSecond([{ duration: 3, arrivalRate: 2 }, { pause: 2 }, { duration: 2, arrivalCount: 10 }])).toEqual([2, 2, 2, 0, 0, 5, 5]);
    expect(arrivalsPerSecond([{ duration: 4, arrivalRate: 0, rampTo: 8 }])).toEqual([1, 3, 5, 7]);
    expect(arrivalsPerSecond([{ duration: "2m", arrivalRate: "{{ rate }}" }], { rate: 3 })).toHaveLength(120);
    expect(() => arrivalsPerSecond([{ duration: 10, arrivalRate: "{{ nope }}" }])).toThrow(/config\.phases\[0\]\.arrivalRate is not a number/);
    expect(peakWithin([1, 1, 1, 10, 1, 1], 2)).toBe(11);
  });

  it("RelayBox's rooms: 100 a second for 60 s, each staying 10 × 2 s and a 20 s listen, about 4,000 at once", () => {
    const scenario = loadScenario(path.join(repo, "scenarios/pubsub-rooms.yml"));
    const users = estimateUsers(effectiveConfig(scenario), scenario.scenarios);
    expect(users.flowSeconds).toBe(40);
    expect(users.peak).toBe(4000);
    expect(users.workload).toBe("chat");
    expect(users.sendsPerUserSecond).toBeCloseTo(10 / 40);
  });

  it("a soak's trickle: 2 a second, each staying 6 × 10 s; -v and --overrides change it as Artillery would", () => {
    const scenario = loadScenario(path.join(repo, "scenarios/soak.yml"));
    expect(estimateUsers(effectiveConfig(scenario), scenario.scenarios).peak).toBe(120);
    const overrides = { config: { variables: { stay_messages: 3 }, phases: [{ duration: 60, arrivalRate: 10 }] } };
    expect(estimateUsers(effectiveConfig(scenario, overrides), scenario.scenarios).peak).toBe(300);
  });

  it("listeners that send nothing in a loop are a listen workload; a stay it cannot know counts every arrival as staying", () => {
    const listen = estimateUsers({ phases: [{ duration: 10, arrivalRate: 5 }], variables: { hold: 30 } }, [{ flow: [{ connect: {} }, { subscribe: { channel: "c" } }, { listen: { for: "{{ hold }}" } }] }]);
    expect(listen).toMatchObject({ workload: "listen", does: "receives", peak: 50, flowSeconds: 30 });
    const forever = estimateUsers({ phases: [{ duration: 10, arrivalRate: 5 }] }, [{ flow: [{ connect: {} }, { loop: [{ think: 1 }], whileTrue: "keepGoing" }] }]);
    expect(forever).toMatchObject({ peak: 50, flowSeconds: undefined });
    const thinks = estimateUsers({ phases: [{ duration: 100, arrivalRate: 1 }], variables: { ms: 400 } }, [{ flow: [{ loop: [{ think: "{{ $randomNumber(500, 1500) }}ms" }, { think: "{{ ms }}ms" }], count: 10 }] }]);
    expect(thinks.flowSeconds).toBeCloseTo(14);
  });

  it("names what the flow does: a user that speaks once and waits for its echo sends and receives, sized as chat", () => {
    const once = estimateUsers({ phases: [{ duration: 10, arrivalRate: 5 }] }, [
      { flow: [{ connect: {} }, { subscribe: { channel: "ChatChannel", as: "chat" } }, { perform: { channel: "chat", action: "speak" } }, { receive: { channel: "chat" } }, { think: 5 }] },
    ]);
    expect(once).toMatchObject({ does: "sends and receives", workload: "chat" });
    expect(estimateUsers({ phases: [{ duration: 10, arrivalRate: 5 }] }, [{ flow: [{ connect: {} }, { publish: { channel: "c" } }] }])).toMatchObject({ does: "sends", workload: "chat" });
    expect(estimateUsers({ phases: [{ duration: 10, arrivalRate: 5 }] }, [{ flow: [{ connect: {} }, { think: 5 }] }])).toMatchObject({ does: "connects", workload: "listen" });
  });

  it("weights the scenarios' flows", () => {
    const users = estimateUsers({ phases: [{ duration: 100, arrivalRate: 1 }] }, [
      { weight: 3, flow: [{ think: 10 }] },
      { weight: 1, flow: [{ think: 50 }] },
    ]);
    expect(users.flowSeconds).toBe(20);
    expect(users.peak).toBe(20);
  });
});

describe("the cost estimate, by hand", () => {
  const oneRegion = (region: string, tasks: number, publicIp = true) => [{ region, tasks, publicIp }];

  it("100 tasks of 4 vCPU / 8 GiB for 30 minutes on demand in us-east-1", () => {
    const cost = estimateCost({ regions: oneRegion("us-east-1", 100), cpu: 4096, memoryMiB: 8192, capacity: "on-demand", taskSeconds: 1800 }, TABLE);
    const r = cost.regions[0];
    // 100 × (4 × 0.04048 + 8 × 0.004445) × 0.5 h
    expect(r.fargate).toBeCloseTo(100 * (4 * 0.04048 + 8 * 0.004445) * 0.5, 10);
    expect(r.fargate).toBeCloseTo(9.874, 10);
    expect(r.publicIpv4).toBeCloseTo(100 * 0.005 * 0.5, 10);
    expect(r.upTo).toBe(r.total);
    expect(r.s3 + r.logs).toBeLessThan(0.5);
    expect(cost.total).toBeCloseTo(r.fargate + r.publicIpv4 + r.s3 + r.logs, 10);
  });

  it("Spot at its rates, up to on-demand if every task falls back; --spot-only has no fallback; a region without a Spot price at on-demand", () => {
    const input = { regions: [...oneRegion("us-east-1", 10, false), ...oneRegion("eu-west-2", 2, false)], cpu: 4096, memoryMiB: 8192, taskSeconds: 3600 } as const;
    const spot = estimateCost({ ...input, capacity: "spot" }, TABLE);
    const [east, london] = spot.regions;
    expect(east.fargate).toBeCloseTo(10 * (4 * 0.01288871 + 8 * 0.00141527), 10);
    expect(east.fargateUpTo).toBeCloseTo(10 * (4 * 0.04048 + 8 * 0.004445), 10);
    expect(london).toMatchObject({ spotUnpriced: true });
    expect(london.fargate).toBeCloseTo(2 * (4 * 0.04656 + 8 * 0.00511), 10);
    expect(spot.upTo).toBeGreaterThan(spot.total);
    const spotOnly = estimateCost({ ...input, capacity: "spot-only" }, TABLE);
    expect(spotOnly.upTo).toBeCloseTo(spotOnly.total, 10);
  });

  it("several regions, a smaller task, and a region the table lacks at its dearest region's rates", () => {
    const cost = estimateCost(
      { regions: [...oneRegion("eu-west-2", 2), ...oneRegion("me-central-1", 1)], cpu: 2048, memoryMiB: 4096, capacity: "on-demand", taskSeconds: 3600 },
      TABLE,
    );
    expect(cost.regions[0].fargate).toBeCloseTo(2 * (2 * 0.04656 + 4 * 0.00511), 10);
    expect(cost.regions[1]).toMatchObject({ unpriced: true });
    expect(cost.regions[1].fargate).toBeCloseTo(2 * 0.0696 + 4 * 0.0076, 10);
  });

  it("bills a minute at least", () => {
    const cost = estimateCost({ regions: oneRegion("us-east-1", 1, false), cpu: 1024, memoryMiB: 2048, capacity: "on-demand", taskSeconds: 5 }, TABLE);
    expect(cost.taskSeconds).toBe(60);
  });

  it("what the run cost: each task's seconds on the capacity it ran on (a Spot task that fell back bills on-demand)", () => {
    const billed = billedCost(
      [
        { region: "us-east-1", seconds: 3600, capacity: "FARGATE_SPOT" },
        { region: "us-east-1", seconds: 1800, capacity: "FARGATE" },
        { region: "eu-west-2", seconds: 20, capacity: "FARGATE" },
        { region: "eu-west-2", seconds: 0, capacity: "FARGATE" },
      ],
      { cpu: 4096, memoryMiB: 8192, publicIp: (region) => region === "us-east-1" },
      TABLE,
    );
    const spotHour = 4 * 0.01288871 + 8 * 0.00141527 + 0.005;
    const onDemandHalf = (4 * 0.04048 + 8 * 0.004445 + 0.005) * 0.5;
    const london = (4 * 0.04656 + 8 * 0.00511) * (60 / 3600);
    expect(billed.byRegion["us-east-1"].usd).toBeCloseTo(spotHour + onDemandHalf, 10);
    expect(billed.byRegion["eu-west-2"]).toMatchObject({ tasks: 2, taskSeconds: 60 });
    expect(billed.byRegion["eu-west-2"].usd).toBeCloseTo(london, 10);
    expect(billed.taskSeconds).toBe(3600 + 1800 + 60);
  });

  it("says dollars as people read them", () => {
    expect(usd(0.001)).toBe("<$0.01");
    expect(usd(1234.5)).toBe("$1,234.50");
  });
});

const awsFacts = (over: Partial<RegionFacts> = {}): RegionFacts => ({
  cpu: 4096,
  memoryMiB: 8192,
  quotas: [
    { kind: "on-demand", code: "L-3032A538", quota: 4000, from: "applied", inUse: 16 },
    { kind: "spot", code: "L-36FBB829", quota: 6, from: "default", inUse: 0 },
  ],
  freeAddresses: 8000,
  publicIp: true,
  unchecked: [],
  ...over,
});

const planOf = (over: Partial<PlanInput> = {}): PlanInput => ({
  backend: "aws",
  regions: ["eu-west-2", "us-east-1"],
  count: 10,
  capacity: "on-demand",
  config: { phases: [{ duration: 60, arrivalRate: 10 }] },
  scenarios: [{ flow: [{ connect: {} }, { listen: { for: 30 } }] }],
  phasesMs: 60_000,
  maxDurationMs: 3_600_000,
  startDelayMs: 10_000,
  facts: new Map([
    ["eu-west-2", awsFacts()],
    ["us-east-1", awsFacts()],
  ]),
  ...over,
});

describe("the plan block", () => {
  it("per task and in all: users, what one task holds, the suggested count and the cheapest size, each region's quotas and addresses, the cost", () => {
    const plan = makePlan(planOf());
    expect(plan.users).toMatchObject({ peak: 300, workload: "listen" });
    expect(plan.holds).toBe(holdsPerTask("listen", 4096, 8192));
    expect(plan.binding).toMatchObject({ dimension: "users" });
    // 10 tasks × 300 users a region fit in far fewer tasks of 4 vCPU.
    expect(plan.suggestedCount).toBe(Math.ceil(3000 / plan.holds!));
    // The cheapest that holds 3,000 users a region: 1 vCPU tasks holding 2,000 each, on Spot.
    expect(plan.cheapest).toMatchObject({ cpu: 1024, memoryMiB: 2048, count: 2, capacity: "spot" });
    expect(plan.cost!.total).toBeGreaterThan(plan.cheapest!.cost);
    const text = plan.lines.join("\n");
    expect(text).toContain(`cheapest that holds it: --count 2 --cpu 1024 --memory 2048`);
    expect(text).toMatch(/^plan: 10 task\(s\) in each of eu-west-2, us-east-1 \(20 in all\), 4 vCPU \/ 8 GiB x86_64 each \(stack\), on-demand/);
    expect(text).toContain("users: about 300 at once per task at the peak (600 arrive over 60 s; a user stays about 30 s), 6,000 in all; each user receives (sized as the listen workload)");
    expect(text).toMatch(/eu-west-2: 10 task\(s\), 40 vCPU; on-demand 3,984 of 4,000 vCPU free \(16 in use\); 8,000 addresses free; \$\d+\.\d\d/);
    expect(text).toMatch(/cost: about \$\d+\.\d\d for about 4 min a task .*list prices as of \d{4}-\d\d-\d\d/);
    expect(text).toContain(`suggested: --count ${plan.suggestedCount} per region`);
  });

  it("with --spot shows both quotas; says what it could not check; a plan without an account prices the stack's default size", () => {
    const spot = makePlan(planOf({ capacity: "spot", facts: new Map([["eu-west-2", awsFacts({ unchecked: ["Fargate Spot vCPU quota: current use: AccessDeniedException"] })]]), regions: ["eu-west-2"] }));
    expect(spot.lines.join("\n")).toContain("spot 6 of 6 vCPU free (default quota), on-demand 3,984 of 4,000 vCPU free (16 in use)");
    expect(spot.lines.join("\n")).toContain("not checked: eu-west-2: Fargate Spot vCPU quota: current use: AccessDeniedException");
    const noAccount = makePlan(planOf({ facts: new Map(), unreached: "the regions could not be reached (no credentials)" }));
    expect(noAccount.size).toEqual({ cpu: 4096, memoryMiB: 8192, from: "stack default" });
    expect(noAccount.cost!.total).toBeGreaterThan(0);
    expect(noAccount.lines.join("\n")).toContain("eu-west-2: 10 task(s), 40 vCPU; quota not checked; addresses not checked");
    expect(noAccount.lines.join("\n")).toContain("not checked: the regions could not be reached (no credentials)");
    expect(makePlan(planOf({ size: { cpu: 1024, memory: 2048 } })).size).toEqual({ cpu: 1024, memoryMiB: 2048, from: "flags" });
  });

  it("a task carrying more than it holds is said to set the figures itself; local runs are not priced", () => {
    const heavy = makePlan(planOf({ count: 1, config: { phases: [{ duration: 60, arrivalRate: 1000 }] }, scenarios: [{ flow: [{ loop: [{ perform: { channel: "c", action: "a" } }, { think: 1 }], count: 60 }] }] }));
    expect(heavy.users!.workload).toBe("chat");
    expect(heavy.suggestedCount).toBeGreaterThan(1);
    expect(heavy.lines.join("\n")).toMatch(/each task would carry [\d,]+ (users at once|frames a second), [\d,]+% of what it holds: the generator, not the server, would set the figures/);
    const local = makePlan(planOf({ backend: "local", facts: new Map([["eu-west-2", LOCAL_PREFLIGHT.facts]]) }));
    expect(local.cost).toBeUndefined();
    expect(local.lines[0]).toContain("local processes");
  });

  it("a comparison's cost covers every server's run", () => {
    const one = makePlan(planOf()).cost!.total;
    expect(makePlan(planOf({ runsInAll: 3 })).cost!.total).toBeCloseTo(3 * one, 10);
  });
});

describe("every scenario in scenarios/", () => {
  const files = readdirSync(path.join(repo, "scenarios")).filter((f) => f.endsWith(".yml"));

  it.each(files)("%s: users per task, its workload, and a suggested count from the measured capacity", (file) => {
    const scenario = loadScenario(path.join(repo, "scenarios", file));
    const plan = makePlan(planOf({ config: effectiveConfig(scenario), scenarios: scenario.scenarios, phasesMs: scenario.durationMs, count: 1, regions: ["eu-west-2"] }));
    expect(plan.users!.peak, plan.lines.join("\n")).toBeGreaterThan(0);
    expect(plan.holds).toBe(holdsPerTask(plan.users!.workload, 4096, 8192));
    // The count that brings the binding dimension to one task's worth: at it, every dimension fits.
    const binding = shares(plan.users!, 1, 4096, 8192)[0];
    expect(plan.binding).toEqual(binding);
    expect(plan.suggestedCount).toBe(Math.max(1, Math.ceil(binding.share - 1e-9)));
    // Every dimension falls as 1/count: at the suggested count, none is over one task's worth.
    for (const d of shares(plan.users!, 1, 4096, 8192)) expect(d.share / plan.suggestedCount!).toBeLessThanOrEqual(1);
    expect(plan.cost!.total).toBeGreaterThan(0);
  });
});

describe("the guard", () => {
  const plan = (total: number, upTo = total) => ({ ...makePlan(planOf()), cost: { ...makePlan(planOf()).cost!, total, upTo } });

  it("refuses above --max-cost and starts below it without asking", async () => {
    await expect(guardCost(plan(12), { maxCostUsd: 10 })).rejects.toThrow(new FanoutInputError("not starting any task: the estimate $12.00 is above --max-cost $10.00"));
    await expect(guardCost(plan(120), { maxCostUsd: 200 })).resolves.toBeUndefined();
    // With --spot, the guard judges the dearest case: every task on on-demand.
    await expect(guardCost(plan(8, 30), { maxCostUsd: 20 })).rejects.toThrow("the estimate $30.00 (its high end: every task on on-demand, traffic at its most) is above --max-cost $20.00");
  });

  it(`asks above ${usd(ASK_ABOVE_USD)}, needs --yes where nobody can answer, and starts nothing unless told yes`, async () => {
    await expect(guardCost(plan(ASK_ABOVE_USD), {})).resolves.toBeUndefined();
    await expect(guardCost(plan(40), {})).rejects.toThrow(/above \$25\.00; add --yes, or --max-cost <usd>, to start it without asking/);
    await expect(guardCost(plan(40), { yes: true })).resolves.toBeUndefined();
    const asked: string[] = [];
    await expect(guardCost(plan(40), { ask: async (q) => (asked.push(q), false) })).rejects.toThrow("not confirmed");
    await expect(guardCost(plan(40), { ask: async () => true })).resolves.toBeUndefined();
    expect(asked).toEqual(["the estimate $40.00 is above $25.00. Start the run? [y/N] "]);
    await expect(guardCost({ ...plan(40), cost: undefined }, {})).resolves.toBeUndefined();
  });
});

// `cable-fanout plan <scenario>`: the block a run prints before its first RunTask, and nothing
// started. Without credentials or a deployed stack it still prices the run (from --cpu/--memory or
// the stack's default size) and says what it could not check.
import type { Backend, Region, RegionFacts } from "../backend.js";
import { effectiveOverrides, type RunOptions } from "../run/run-options.js";
import { planTiming } from "../run/timing.js";
import { openRegions } from "../run/runner.js";
import { FanoutInputError } from "../errors.js";
import { planPayloads } from "../payloads.js";
import { loadScenario } from "../scenario.js";
import { guardCost, type LaunchPlan, makePlan, planInput } from "./launch.js";

export interface PlanOutcome {
  plan: LaunchPlan;
  /** What would stop the run: preflight problems, and a refusal by --max-cost. */
  refusals: string[];
}

export async function planCommand(options: RunOptions, deps: { backend: Backend; log: (line: string) => void; warn: (line: string) => void }): Promise<PlanOutcome> {
  const { backend } = deps;
  const overrides = effectiveOverrides(options);
  const scenario = loadScenario(options.scenarioFile, overrides, options.bundleRoot);
  // Every payload read now, as the run reads them before its first task: a file csv-parse refuses is a refusal.
  const unreadable: string[] = [];
  try {
    planPayloads(scenario, options.environment);
  } catch (err) {
    if (!(err instanceof FanoutInputError)) throw err;
    unreadable.push(err.message);
  }
  const timing = planTiming(backend.timing, options, scenario.durationMs);
  let regions: Region[] = [];
  let unreached: string | undefined;
  try {
    regions = await openRegions(backend, options.regions);
  } catch (err) {
    // No account yet, no credentials, a region not deployed: the estimate stands without them.
    unreached = `the regions could not be reached, so no quota, address or stack size was read (${(err as Error).message.split("\n")[0]})`;
  }
  const checked = await Promise.all(
    regions.map((r) => r.preflight({ count: options.count, spot: options.spot, spotOnly: options.spotOnly, cpu: options.cpu, memory: options.memory, secretRefs: options.secretRefs, env: options.taskEnv })),
  );
  const facts = new Map<string, RegionFacts>(regions.map((r, i) => [r.name, checked[i].facts]));
  const plan = makePlan(planInput(options, backend.kind, scenario, overrides, { maxDurationMs: timing.maxDurationMs, startDelayMs: timing.startDelayMs }, facts, unreached));
  for (const line of plan.lines) deps.log(line);
  for (const line of checked.flatMap((c) => c.warnings)) deps.warn(`warning: ${line}`);
  const refusals = [...unreadable, ...(plan.refusals ?? []), ...checked.flatMap((c) => c.problems)];
  if (options.maxCostUsd !== undefined) {
    await guardCost({ ...plan, refusals: [] }, { maxCostUsd: options.maxCostUsd }).catch((err: Error) => refusals.push(err.message.replace(/^not starting any task: /, "")));
  }
  for (const line of refusals) deps.log(`would not start: ${line}`);
  deps.log(refusals.length > 0 ? "plan: the run would not start (nothing was started)" : "plan: nothing was started");
  return { plan, refusals };
}

import type { z } from "zod";
import { formatIssues, type CableConfig } from "./config.js";
import { closest } from "./did-you-mean.js";
import { ScenarioError } from "./errors.js";
import type { FlowOwner, Script } from "./script.js";
import type { CheckContext, StepDefinition } from "./steps/define.js";
import { isStepName, STEPS, type StepName } from "./steps/table.js";

// The scenario's flows, checked before any load starts: every step from its one declaration in
// steps/table.ts (schema, rules, compiler); `config.cable` is config.ts's.

export type { StepName } from "./steps/table.js";

/** Each step's schema, by name (preflight.ts reads their field names for "did you mean"). */
export const stepSchemas = Object.fromEntries(Object.entries(STEPS).map(([name, definition]) => [name, definition.schema])) as {
  [K in StepName]: (typeof STEPS)[K]["schema"];
};

function stepKey(step: Record<string, unknown>): string | undefined {
  return Object.keys(step).find(isStepName) ?? Object.keys(step)[0];
}

interface Scope {
  connected: boolean;
  /** Subscribed channels: the name steps use → the channel's own name. */
  channels: Map<string, string>;
}

interface FlowContext {
  where: string;
  processor: unknown;
  config: CableConfig;
  target?: string;
}

/**
 * Checks one flow; `where` names the scenario. Channels are resolved in document order, so a
 * `perform` on a channel that no earlier step subscribes to is a mistake. Returns the problems.
 */
export function checkFlow(flow: unknown, ctx: FlowContext, scope: Scope = { connected: false, channels: new Map() }, path = "step"): string[] {
  const { where, processor, config, target } = ctx;
  if (!Array.isArray(flow)) return [`${where}: "flow" must be a list of steps`];
  const known = Object.keys(STEPS);
  const problems: string[] = [];
  flow.forEach((raw: unknown, index) => {
    const at = `${where}, ${path} ${index + 1}`;
    if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
      problems.push(`${at}: a step is an object such as {subscribe: {...}}`);
      return;
    }
    const step = raw as Record<string, unknown>;
    const key = stepKey(step);
    if (!key || !isStepName(key)) {
      const guess = key ? closest(key, known) : undefined;
      problems.push(`${at}: unknown step "${key ?? ""}"${guess ? `; did you mean "${guess}"?` : ""} (known: ${known.join(", ")})`);
      return;
    }
    const name = key;
    const definition: StepDefinition<z.ZodTypeAny> = STEPS[name];
    const extra = Object.keys(step).filter((k) => k !== name && !(definition.modifiers ?? []).includes(k));
    if (extra.length) problems.push(`${at} (${name}): unknown field ${extra.map((k) => `"${k}"`).join(", ")} beside "${name}"`);
    const parsed = definition.schema.safeParse(step[name]);
    if (!parsed.success) {
      problems.push(...formatIssues(`${at} (${name})`, parsed.error));
      return;
    }
    const spec: unknown = parsed.data;
    const only = definition.only;
    if (only && only.protocol !== config.protocol) {
      problems.push(`${at} (${name}): not a step of protocol ${config.protocol}: ${only.instead}`);
      return;
    }
    if (definition.needsConnection && !scope.connected) problems.push(`${at} (${name}): no "connect" step comes before it`);
    if (definition.opens) scope.connected = true;
    if (definition.closes) {
      scope.connected = false;
      scope.channels.clear();
    }
    if (definition.subscribes) {
      const { as, channel } = definition.subscribes(spec);
      scope.channels.set(as, channel);
    }
    const context: CheckContext = { at, config, processor, target };
    if (definition.check) problems.push(...definition.check(spec, context, (channel) => scope.channels.get(channel)));
    if (definition.nested) problems.push(...checkFlow(definition.nested(step), ctx, scope, `${path} ${index + 1} loop step`));
    const channel = definition.usesChannel ? (spec as { channel?: unknown }).channel : undefined;
    if (typeof channel === "string" && !scope.channels.has(channel)) {
      problems.push(`${at} (${name}): field "channel": "${channel}" is not subscribed by an earlier step (subscribed: ${[...scope.channels.keys()].join(", ") || "none"})`);
    }
  });
  return problems;
}

/** Every mistake in the script's cable scenarios and hooks, at once, or nothing. */
export function validateScript(script: Script, config: CableConfig, engineName = "cable"): void {
  const problems: string[] = [];
  const processor = script.config.processor;
  const target = typeof script.config.target === "string" ? script.config.target : undefined;
  const uses = (s: FlowOwner) => (s.engine ?? script.config.engine) === engineName;
  (script.scenarios ?? []).forEach((scenario, i) => {
    if (!uses(scenario)) return;
    const where = `scenario ${scenario.name ? `"${String(scenario.name)}"` : `#${i + 1}`}`;
    problems.push(...checkFlow(scenario.flow, { where, processor, config, target }));
  });
  for (const hook of ["before", "after"] as const) {
    const spec = script[hook];
    if (spec && spec.engine === engineName) problems.push(...checkFlow(spec.flow, { where: `${hook} hook`, processor, config, target }));
  }
  if (problems.length) throw new ScenarioError(problems);
}

import { z } from "zod";
import { ScenarioError } from "./errors.js";
import { parsePath } from "./match.js";

// The scenario vocabulary, checked before any load starts. Every string may hold `{{ }}` templates,
// so numeric fields also take a string that Artillery templates at run time.

const templated = z.string().regex(/\{\{.*\}\}/s, "expected a number or a {{ template }}");
const seconds = z.union([z.number().nonnegative(), templated]);
const stringMap = z.record(z.union([z.string(), z.number(), z.boolean()]));
const channelRef = z.string().min(1);

const capture = z
  .object({ json: z.string().superRefine(validPath), as: z.string().min(1) })
  .strict();

function validPath(path: string, ctx: z.RefinementCtx): void {
  try {
    parsePath(path);
  } catch (err) {
    ctx.addIssue({ code: z.ZodIssueCode.custom, message: (err as Error).message });
  }
}

export const stepSchemas = {
  connect: z
    .object({
      url: z.string().optional(),
      headers: stringMap.optional(),
      cookies: z.union([z.string(), stringMap]).optional(),
      query: stringMap.optional(),
      subprotocol: z.union([z.string(), z.array(z.string()).nonempty()]).optional(),
    })
    .strict()
    .nullable(),
  subscribe: z
    .object({ channel: channelRef, params: z.record(z.unknown()).optional(), as: z.string().min(1).optional() })
    .strict(),
  perform: z
    .object({ channel: channelRef, action: z.string().min(1), data: z.record(z.unknown()).optional(), stamp: z.boolean().optional() })
    .strict(),
  receive: z
    .object({
      channel: channelRef,
      match: z.unknown().optional(),
      timeout: seconds.optional(),
      capture: z.union([capture, z.array(capture)]).optional(),
      metric: z.union([z.literal(true), z.string().regex(/^[a-z][a-z0-9_]*$/, "a metric name is lower_snake_case")]).optional(),
    })
    .strict(),
  listen: z.object({ channel: channelRef.optional(), for: seconds }).strict(),
  unsubscribe: z.object({ channel: channelRef }).strict(),
  disconnect: z.union([z.null(), z.object({}).strict()]),
  think: z.union([z.number().nonnegative(), z.string().min(1)]),
  function: z.string().min(1),
  log: z.string(),
  loop: z.array(z.unknown()),
} as const;

export type StepName = keyof typeof stepSchemas;

/** Keys allowed beside a step's own key (Artillery's modifiers). */
const MODIFIERS: Partial<Record<StepName, readonly string[]>> = {
  think: ["jitter"],
  loop: ["count", "over", "whileTrue", "loopValue", "loopElement"],
};

const channelSteps = new Set<StepName>(["perform", "receive", "listen", "unsubscribe"]);

export const configSchema = z
  .object({
    protocol: z.enum(["actioncable"]).default("actioncable"),
    timeout: z.number().positive().default(10),
    headers: z.record(z.string()).default({}),
    origin: z.string().optional(),
    stampField: z.string().min(1).default("ts"),
    inboxSize: z.number().int().positive().default(256),
  })
  .strict();

export type CableConfig = z.infer<typeof configSchema>;

function formatIssues(where: string, error: z.ZodError): string[] {
  return error.issues.map((issue) => {
    const field = issue.path.length ? issue.path.join(".") : "(value)";
    if (issue.code === z.ZodIssueCode.unrecognized_keys) return `${where}: unknown field ${issue.keys.map((k) => `"${k}"`).join(", ")}`;
    return `${where}: field "${field}": ${issue.message}`;
  });
}

export function parseConfig(raw: unknown): CableConfig {
  const result = configSchema.safeParse(raw ?? {});
  if (!result.success) throw new ScenarioError(formatIssues("config.cable", result.error));
  return result.data;
}

function stepKey(step: Record<string, unknown>): StepName | string | undefined {
  return Object.keys(step).find((k) => k in stepSchemas) ?? Object.keys(step)[0];
}

interface Scope {
  connected: boolean;
  channels: Set<string>;
}

/**
 * Checks one flow; `where` names the scenario. Channels are resolved in document order, so a
 * `perform` on a channel that no earlier step subscribes to is a mistake. Returns the problems.
 */
export function checkFlow(flow: unknown, where: string, processor: unknown, scope: Scope = { connected: false, channels: new Set() }, path = "step"): string[] {
  if (!Array.isArray(flow)) return [`${where}: "flow" must be a list of steps`];
  const problems: string[] = [];
  flow.forEach((raw, index) => {
    const at = `${where}, ${path} ${index + 1}`;
    if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
      problems.push(`${at}: a step is an object such as {subscribe: {...}}`);
      return;
    }
    const step = raw as Record<string, unknown>;
    const key = stepKey(step);
    if (!key || !(key in stepSchemas)) {
      problems.push(`${at}: unknown step "${key ?? ""}" (known: ${Object.keys(stepSchemas).join(", ")})`);
      return;
    }
    const name = key as StepName;
    const extra = Object.keys(step).filter((k) => k !== name && !(MODIFIERS[name] ?? []).includes(k));
    if (extra.length) problems.push(`${at} (${name}): unknown field ${extra.map((k) => `"${k}"`).join(", ")} beside "${name}"`);
    const parsed = stepSchemas[name].safeParse(step[name]);
    if (!parsed.success) {
      problems.push(...formatIssues(`${at} (${name})`, parsed.error));
      return;
    }
    const spec = parsed.data as Record<string, unknown> | null;
    switch (name) {
      case "connect":
        scope.connected = true;
        break;
      case "disconnect":
        scope.connected = false;
        scope.channels.clear();
        break;
      case "subscribe":
        if (!scope.connected) problems.push(`${at} (subscribe): no "connect" step comes before it`);
        scope.channels.add(String(spec!.as ?? spec!.channel));
        break;
      case "function":
        if (processor && typeof processor === "object" && typeof (processor as Record<string, unknown>)[step.function as string] !== "function") {
          problems.push(`${at} (function): the processor has no function "${step.function}"`);
        }
        break;
      case "loop":
        problems.push(...checkFlow(step.loop, where, processor, scope, `${path} ${index + 1} loop step`));
        break;
    }
    if (channelSteps.has(name) && spec?.channel !== undefined) {
      const channel = String(spec.channel);
      if (!scope.channels.has(channel)) {
        problems.push(`${at} (${name}): field "channel": "${channel}" is not subscribed by an earlier step (subscribed: ${[...scope.channels].join(", ") || "none"})`);
      }
    }
    if (name === "listen" && !scope.connected) problems.push(`${at} (listen): no "connect" step comes before it`);
  });
  return problems;
}

interface ScriptLike {
  config: Record<string, any>;
  scenarios?: Record<string, any>[];
  before?: Record<string, any>;
  after?: Record<string, any>;
}

/** Every mistake in the script's cable scenarios and hooks, at once, or nothing. */
export function validateScript(script: ScriptLike, engineName = "cable"): void {
  const problems: string[] = [];
  const uses = (s: Record<string, any>) => (s.engine ?? script.config.engine) === engineName;
  (script.scenarios ?? []).forEach((scenario, i) => {
    if (!uses(scenario)) return;
    const where = `scenario ${scenario.name ? `"${scenario.name}"` : `#${i + 1}`}`;
    problems.push(...checkFlow(scenario.flow, where, script.config.processor));
  });
  for (const hook of ["before", "after"] as const) {
    const spec = script[hook];
    if (spec && spec.engine === engineName) problems.push(...checkFlow(spec.flow, `${hook} hook`, script.config.processor));
  }
  if (problems.length) throw new ScenarioError(problems);
}

import { z } from "zod";
import { closest } from "./did-you-mean.js";
import { ScenarioError } from "./errors.js";
import type { CheckContext, StepDefinition } from "./steps/define.js";
import { isStepName, STEPS, type StepName } from "./steps/table.js";

// The scenario vocabulary, checked before any load starts: `config.cable` here, and every step from
// its one declaration in steps/table.ts (schema, rules, compiler).

export type { StepName } from "./steps/table.js";

/** Each step's schema, by name (preflight.ts reads their field names for "did you mean"). */
export const stepSchemas = Object.fromEntries(Object.entries(STEPS).map(([name, definition]) => [name, definition.schema])) as {
  [K in StepName]: (typeof STEPS)[K]["schema"];
};

const anycableSchema = z
  .object({
    /** AnyCable's extended protocol: off, preferred (plain if the server refuses), or required. */
    extended: z.enum(["off", "preferred", "required"]).default("off"),
    /** The secret of `signedStream` (AnyCable's --streams_secret); or ANYCABLE_STREAMS_SECRET. */
    streamsSecret: z.string().min(1).optional(),
    /** AnyCable's HTTP broadcast endpoint; default: the target's origin + /_broadcast. */
    broadcastUrl: z.string().url().optional(),
    /** Bearer key of the broadcast endpoint (AnyCable's --broadcast_key); or ANYCABLE_BROADCAST_KEY. */
    broadcastKey: z.string().min(1).optional(),
    /** How a reconnect asks to restore its session: `?sid=` (query) or the X-ANYCABLE-RESTORE-SID header. */
    restoreWith: z.enum(["query", "header"]).default("query"),
  })
  .strict();

const pusherSchema = z
  .object({
    key: z.string().min(1),
    appId: z.union([z.string().min(1), z.number()]).transform(String).optional(),
    secret: z.string().min(1).optional(),
    authEndpoint: z
      .union([z.string().url(), z.object({ url: z.string().url(), headers: z.record(z.string()).default({}) }).strict()])
      .transform((e) => (typeof e === "string" ? { url: e, headers: {} } : e))
      .optional(),
    api: z.string().url().optional(),
  })
  .strict();

export const configSchema = z
  .object({
    protocol: z.enum(["actioncable", "pusher"]).default("actioncable"),
    pusher: pusherSchema.optional(),
    anycable: anycableSchema.default({}),
    timeout: z.number().positive().default(10),
    /** Seconds between the server's pings (Action Cable: 3; AnyCable's --ping_interval may differ). */
    pingInterval: z.number().positive().optional(),
    /**
     * Seconds without a frame from the server after which a connection is stale: dropped, as real
     * clients drop it (default: two ping intervals for Action Cable and AnyCable, activity_timeout + 30 s for Pusher).
     */
    staleAfter: z.number().positive().optional(),
    headers: z.record(z.string()).default({}),
    origin: z.string().optional(),
    stampField: z.string().min(1).default("ts"),
    inboxSize: z.number().int().positive().default(256),
    /** Source addresses for the sockets, used in turn: past one address's ~28k ephemeral ports. */
    localAddress: z.union([z.string().ip(), z.array(z.string().ip()).nonempty()]).optional(),
    /** Warn when the generator's event loop is this many ms late (it is saturated). */
    lagWarning: z.number().positive().default(100),
    /** Keep Artillery's own arrival timer, which spins for the last 25 ms before each arrival (arrivals.ts). */
    preciseArrivals: z.boolean().default(false),
    /** Defaults of the reconnect step: back-off between attempts, and the time allowed to get back, in seconds. */
    reconnect: z
      .object({
        initialDelay: z.number().positive().default(0.5),
        maxDelay: z.number().positive().default(5),
        timeout: z.number().positive().default(30),
      })
      .strict()
      .default({}),
  })
  .strict()
  .superRefine((c, ctx) => {
    if (c.protocol === "pusher" && !c.pusher) ctx.addIssue({ code: z.ZodIssueCode.custom, path: ["pusher"], message: "protocol pusher needs pusher.key (and appId, secret or authEndpoint as the steps need)" });
  });

export type CableConfig = z.infer<typeof configSchema>;

function formatIssues(where: string, error: z.ZodError): string[] {
  return error.issues.map((issue) => {
    const field = issue.path.length ? issue.path.join(".") : "(value)";
    if (issue.code === z.ZodIssueCode.unrecognized_keys) return `${where}: unknown field ${issue.keys.map((k) => `"${k}"`).join(", ")}`;
    return `${where}: field "${field}": ${issue.message}`;
  });
}

/**
 * Reads `config.cable`. The Pusher app secret may come from the environment
 * (`PUSHER_APP_SECRET`) instead, so that scenarios committed to a repo carry none.
 */
export function parseConfig(raw: unknown, env: NodeJS.ProcessEnv = process.env): CableConfig {
  type Section = Record<string, unknown>;
  const section = (value: unknown): Section | undefined => (value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Section) : undefined);
  const input: Section = { ...section(raw) };
  const pusher = section(input.pusher);
  if (pusher && pusher.secret === undefined && env.PUSHER_APP_SECRET) input.pusher = { ...pusher, secret: env.PUSHER_APP_SECRET };
  const anycable: Section = { ...section(input.anycable) };
  if (anycable.streamsSecret === undefined && env.ANYCABLE_STREAMS_SECRET) anycable.streamsSecret = env.ANYCABLE_STREAMS_SECRET;
  if (anycable.broadcastKey === undefined && env.ANYCABLE_BROADCAST_KEY) anycable.broadcastKey = env.ANYCABLE_BROADCAST_KEY;
  if (Object.keys(anycable).length) input.anycable = anycable;
  const result = configSchema.safeParse(input);
  if (!result.success) throw new ScenarioError(formatIssues("config.cable", result.error));
  return result.data;
}

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
}

/**
 * Checks one flow; `where` names the scenario. Channels are resolved in document order, so a
 * `perform` on a channel that no earlier step subscribes to is a mistake. Returns the problems.
 */
export function checkFlow(flow: unknown, ctx: FlowContext, scope: Scope = { connected: false, channels: new Map() }, path = "step"): string[] {
  const { where, processor, config } = ctx;
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
    const context: CheckContext = { at, config, processor };
    if (definition.check) problems.push(...definition.check(spec, context, (channel) => scope.channels.get(channel)));
    if (definition.nested) problems.push(...checkFlow(definition.nested(step), ctx, scope, `${path} ${index + 1} loop step`));
    const channel = definition.usesChannel ? (spec as { channel?: unknown }).channel : undefined;
    if (typeof channel === "string" && !scope.channels.has(channel)) {
      problems.push(`${at} (${name}): field "channel": "${channel}" is not subscribed by an earlier step (subscribed: ${[...scope.channels.keys()].join(", ") || "none"})`);
    }
  });
  return problems;
}

interface FlowOwner {
  engine?: unknown;
  name?: unknown;
  flow?: unknown;
}

interface ScriptLike {
  config: Record<string, unknown>;
  scenarios?: FlowOwner[];
  before?: FlowOwner;
  after?: FlowOwner;
}

/** Every mistake in the script's cable scenarios and hooks, at once, or nothing. */
export function validateScript(script: ScriptLike, config: CableConfig, engineName = "cable"): void {
  const problems: string[] = [];
  const processor = script.config.processor;
  const uses = (s: FlowOwner) => (s.engine ?? script.config.engine) === engineName;
  (script.scenarios ?? []).forEach((scenario, i) => {
    if (!uses(scenario)) return;
    const where = `scenario ${scenario.name ? `"${String(scenario.name)}"` : `#${i + 1}`}`;
    problems.push(...checkFlow(scenario.flow, { where, processor, config }));
  });
  for (const hook of ["before", "after"] as const) {
    const spec = script[hook];
    if (spec && spec.engine === engineName) problems.push(...checkFlow(spec.flow, { where: `${hook} hook`, processor, config }));
  }
  if (problems.length) throw new ScenarioError(problems);
}

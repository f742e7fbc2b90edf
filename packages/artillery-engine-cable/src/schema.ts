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
    .object({
      channel: channelRef.optional(),
      params: z.record(z.unknown()).optional(),
      as: z.string().min(1).optional(),
      user: z.object({ id: z.union([z.string(), z.number()]), info: z.unknown().optional() }).strict().optional(),
      /** AnyCable `$pubsub`: a public stream by name, or a stream name the engine signs. */
      stream: z.string().min(1).optional(),
      signedStream: z.string().min(1).optional(),
      /** AnyCable ext: ask for what the stream had in the last `since` seconds. */
      history: z.object({ since: seconds }).strict().optional(),
    })
    .strict()
    .refine((s) => s.channel !== undefined || s.stream !== undefined || s.signedStream !== undefined, {
      message: 'give "channel", or an AnyCable "stream" or "signedStream"',
    })
    .refine((s) => s.stream === undefined || (s.channel === undefined && s.signedStream === undefined), {
      message: '"stream" is a $pubsub stream: it takes no "channel" or "signedStream"',
    }),
  perform: z
    .object({ channel: channelRef, action: z.string().min(1), data: z.record(z.unknown()).optional(), stamp: z.boolean().optional() })
    .strict(),
  receive: z
    .object({
      channel: channelRef,
      event: z.string().min(1).optional(),
      match: z.unknown().optional(),
      timeout: seconds.optional(),
      capture: z.union([capture, z.array(capture)]).optional(),
      metric: z.union([z.literal(true), z.string().regex(/^[a-z][a-z0-9_]*$/, "a metric name is lower_snake_case")]).optional(),
    })
    .strict(),
  trigger: z
    .object({ channel: channelRef, event: z.string().min(1), data: z.unknown().optional(), stamp: z.boolean().optional() })
    .strict(),
  publish: z
    .object({
      // Pusher: channels and an event, through its HTTP API.
      channel: z.string().min(1).optional(),
      channels: z.array(z.string().min(1)).nonempty().optional(),
      event: z.string().min(1).optional(),
      // Action Cable: AnyCable streams, through its HTTP broadcast endpoint.
      stream: z.string().min(1).optional(),
      streams: z.array(z.string().min(1)).nonempty().optional(),
      data: z.unknown().optional(),
      stamp: z.boolean().optional(),
    })
    .strict(),
  whisper: z.object({ channel: channelRef, data: z.unknown().optional(), stamp: z.boolean().optional() }).strict(),
  join: z.object({ channel: channelRef, id: z.union([z.string().min(1), z.number()]), info: z.unknown().optional() }).strict(),
  leave: z.object({ channel: channelRef }).strict(),
  reconnect: z
    .object({
      /** "drop": wait for the server to drop the connection (a restart) before reconnecting. */
      after: z.literal("drop").optional(),
      /** Seconds to wait for that drop (default: config.cable.timeout). */
      wait: seconds.optional(),
      /** Seconds from the drop to every channel back, retries included (default: config.cable.reconnect.timeout). */
      timeout: seconds.optional(),
      /** Wait a random 0..jitter seconds before the first attempt. */
      jitter: seconds.optional(),
      /** The back-off between attempts: first and longest pause, in seconds. */
      initialDelay: seconds.optional(),
      maxDelay: seconds.optional(),
      /** AnyCable: ask each channel for what it missed, from the last stream positions seen. */
      history: z.boolean().optional(),
    })
    .strict()
    .nullable(),
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
  // Artillery's per-request `probability`, in percent: sends only, so that a flow's shape stays fixed.
  perform: ["probability"],
  trigger: ["probability"],
  publish: ["probability"],
  loop: ["count", "over", "whileTrue", "loopValue", "loopElement"],
};

const channelSteps = new Set<StepName>(["perform", "trigger", "receive", "listen", "unsubscribe", "whisper", "join", "leave"]);

/** Steps that only one protocol speaks. */
const PROTOCOL_STEPS: Partial<Record<StepName, { protocol: Protocol; instead: string }>> = {
  perform: { protocol: "actioncable", instead: 'Pusher has no actions: use "trigger" (a client event) or "publish" (the HTTP API)' },
  trigger: { protocol: "pusher", instead: 'Action Cable has no client events: use "perform"' },
  whisper: { protocol: "actioncable", instead: "whispers are AnyCable's: use a Pusher client event (trigger)" },
  join: { protocol: "actioncable", instead: "Pusher presence is a presence- channel's subscription" },
  leave: { protocol: "actioncable", instead: "Pusher presence ends with an unsubscribe" },
};

type Protocol = "actioncable" | "pusher";
/** The event names AnyCable's presence frames get (protocol/actioncable.ts): the only Action Cable messages with one. */
const PRESENCE_EVENTS = ["presence:join", "presence:leave", "presence:info"];
const isTemplated = (s: string) => s.includes("{{");

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
  const input = { ...((raw ?? {}) as Record<string, any>) };
  if (input.pusher && input.pusher.secret === undefined && env.PUSHER_APP_SECRET) input.pusher = { ...input.pusher, secret: env.PUSHER_APP_SECRET };
  const anycable = { ...(input.anycable ?? {}) };
  if (anycable.streamsSecret === undefined && env.ANYCABLE_STREAMS_SECRET) anycable.streamsSecret = env.ANYCABLE_STREAMS_SECRET;
  if (anycable.broadcastKey === undefined && env.ANYCABLE_BROADCAST_KEY) anycable.broadcastKey = env.ANYCABLE_BROADCAST_KEY;
  if (Object.keys(anycable).length) input.anycable = anycable;
  const result = configSchema.safeParse(input);
  if (!result.success) throw new ScenarioError(formatIssues("config.cable", result.error));
  return result.data;
}

function checkPublish(at: string, spec: Record<string, any>, config: CableConfig): string[] {
  const one = (a: string, b: string) => (spec[a] === undefined) !== (spec[b] === undefined);
  if (config.protocol === "pusher") {
    const problems: string[] = [];
    if (spec.stream !== undefined || spec.streams !== undefined) problems.push(`${at} (publish): Pusher publishes to "channel" or "channels", not streams`);
    else if (!one("channel", "channels")) problems.push(`${at} (publish): give one of "channel" or "channels"`);
    if (spec.event === undefined) problems.push(`${at} (publish): field "event": Required`);
    if (!config.pusher?.appId || !config.pusher?.secret) {
      problems.push(`${at} (publish): the HTTP API needs config.cable.pusher.appId, and the secret (PUSHER_APP_SECRET or config.cable.pusher.secret)`);
    }
    return problems;
  }
  if (spec.channel !== undefined || spec.channels !== undefined || spec.event !== undefined) {
    return [`${at} (publish): Action Cable publishes to AnyCable "stream" or "streams" (no channel or event)`];
  }
  return one("stream", "streams") ? [] : [`${at} (publish): give one of "stream" or "streams"`];
}

/** The known name within two edits of a typo, if any. */
function closest(word: string, known: string[]): string | undefined {
  const distance = (a: string, b: string) => {
    let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
    for (let i = 1; i <= a.length; i++) {
      const cur = [i];
      for (let j = 1; j <= b.length; j++) cur[j] = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = cur;
    }
    return prev[b.length];
  };
  const [best] = known.map((k) => [k, distance(word, k)] as const).sort((x, y) => x[1] - y[1]);
  return best && best[1] <= 2 ? best[0] : undefined;
}

function stepKey(step: Record<string, unknown>): StepName | string | undefined {
  return Object.keys(step).find((k) => k in stepSchemas) ?? Object.keys(step)[0];
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
      const guess = key ? closest(key, Object.keys(stepSchemas)) : undefined;
      problems.push(`${at}: unknown step "${key ?? ""}"${guess ? `; did you mean "${guess}"?` : ""} (known: ${Object.keys(stepSchemas).join(", ")})`);
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
    const spec = parsed.data as Record<string, any> | null;
    const only = PROTOCOL_STEPS[name];
    if (only && only.protocol !== config.protocol) {
      problems.push(`${at} (${name}): not a step of protocol ${config.protocol}: ${only.instead}`);
      return;
    }
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
        scope.channels.set(String(spec!.as ?? spec!.stream ?? spec!.signedStream ?? spec!.channel), String(spec!.channel ?? "$pubsub"));
        if (config.protocol === "pusher" && (spec!.stream !== undefined || spec!.signedStream !== undefined || spec!.history !== undefined)) {
          problems.push(`${at} (subscribe): "stream", "signedStream" and "history" are AnyCable's (protocol actioncable)`);
        }
        if (spec!.signedStream !== undefined && !config.anycable.streamsSecret) {
          problems.push(`${at} (subscribe): "signedStream" needs ANYCABLE_STREAMS_SECRET or config.cable.anycable.streamsSecret`);
        }
        if (spec!.history !== undefined && config.anycable.extended === "off") {
          problems.push(`${at} (subscribe): "history" needs AnyCable's extended protocol: set config.cable.anycable.extended`);
        }
        if (config.protocol === "pusher" && spec!.channel !== undefined && !isTemplated(spec!.channel)) {
          const channel: string = spec!.channel;
          if ((channel.startsWith("private-") || channel.startsWith("presence-")) && !config.pusher?.secret && !config.pusher?.authEndpoint) {
            problems.push(`${at} (subscribe): "${channel}" needs auth: set PUSHER_APP_SECRET, config.cable.pusher.secret or authEndpoint`);
          }
          if (channel.startsWith("presence-") && !spec!.user) problems.push(`${at} (subscribe): field "user": a presence channel needs user: {id, info}`);
        }
        break;
      case "trigger":
        if (!isTemplated(spec!.event) && !spec!.event.startsWith("client-")) problems.push(`${at} (trigger): field "event": a client event's name starts with "client-" (got "${spec!.event}")`);
        break;
      case "publish":
        problems.push(...checkPublish(at, spec!, config));
        break;
      case "reconnect":
        if (!scope.connected) problems.push(`${at} (reconnect): no "connect" step comes before it`);
        if (spec?.history && config.protocol === "pusher") problems.push(`${at} (reconnect): "history" is AnyCable's (protocol actioncable)`);
        else if (spec?.history && config.anycable.extended === "off") problems.push(`${at} (reconnect): "history" needs AnyCable's extended protocol: set config.cable.anycable.extended`);
        break;
      case "receive":
        if (config.protocol === "actioncable" && spec!.event !== undefined && !isTemplated(spec!.event) && !PRESENCE_EVENTS.includes(spec!.event)) {
          problems.push(
            spec!.event === "whisper"
              ? `${at} (receive): field "event": no server sends a "whisper" frame: anycable-go relays a whisper as a plain message on the channel. Receive it with "match" on a field of its data, e.g. match: {typing: true}`
              : `${at} (receive): field "event": Action Cable messages have no event name; only AnyCable presence events have one (${PRESENCE_EVENTS.join(", ")}). Use "match" on the payload`,
          );
        }
        break;
      case "whisper":
      case "join":
      case "leave":
        if (config.anycable.extended === "off") problems.push(`${at} (${name}): needs AnyCable's extended protocol: set config.cable.anycable.extended`);
        break;
      case "function":
        if (processor && typeof processor === "object" && typeof (processor as Record<string, unknown>)[step.function as string] !== "function") {
          problems.push(`${at} (function): the processor has no function "${step.function}"`);
        }
        break;
      case "loop":
        problems.push(...checkFlow(step.loop, ctx, scope, `${path} ${index + 1} loop step`));
        break;
    }
    if (channelSteps.has(name) && spec?.channel !== undefined) {
      const channel = String(spec.channel);
      const subscribed = scope.channels.get(channel);
      if (subscribed === undefined) {
        problems.push(`${at} (${name}): field "channel": "${channel}" is not subscribed by an earlier step (subscribed: ${[...scope.channels.keys()].join(", ") || "none"})`);
      } else if (name === "trigger" && !isTemplated(subscribed) && !subscribed.startsWith("private-") && !subscribed.startsWith("presence-")) {
        problems.push(`${at} (trigger): field "channel": client events go only on private- or presence- channels (got "${subscribed}")`);
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
export function validateScript(script: ScriptLike, config: CableConfig, engineName = "cable"): void {
  const problems: string[] = [];
  const processor = script.config.processor;
  const uses = (s: Record<string, any>) => (s.engine ?? script.config.engine) === engineName;
  (script.scenarios ?? []).forEach((scenario, i) => {
    if (!uses(scenario)) return;
    const where = `scenario ${scenario.name ? `"${scenario.name}"` : `#${i + 1}`}`;
    problems.push(...checkFlow(scenario.flow, { where, processor, config }));
  });
  for (const hook of ["before", "after"] as const) {
    const spec = script[hook];
    if (spec && spec.engine === engineName) problems.push(...checkFlow(spec.flow, { where: `${hook} hook`, processor, config }));
  }
  if (problems.length) throw new ScenarioError(problems);
}

import { z } from "zod";
import { ScenarioError } from "./errors.js";
import { DEFAULT_MAX_FAILED_USERS, PERCENT, type MaxFailedUsers } from "./failed-users.js";

// `config.cable`: its schema, its type, and how it is read (the environment may supply secrets).
// The steps import the type from here; schema.ts checks flows against the step table.

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

/** A URL that may be templated per virtual user (`{{ }}` is not a URL until Artillery renders it). */
const templatedUrl = z.string().refine((s) => s.includes("{{") || URL.canParse(s), { message: "expected a URL (http:// or https://), or one with {{ templates }}" });

const pusherSchema = z
  .object({
    key: z.string().min(1),
    appId: z.union([z.string().min(1), z.number()]).transform(String).optional(),
    secret: z.string().min(1).optional(),
    /**
     * The app's own channel auth (Laravel's /broadcasting/auth): `url` and `headers` are templated
     * per virtual user, and the user's cookies go with it (session.ts).
     */
    authEndpoint: z
      .union([templatedUrl, z.object({ url: templatedUrl, headers: z.record(z.union([z.string(), z.number()]).transform(String)).default({}) }).strict()])
      .transform((e) => (typeof e === "string" ? { url: e, headers: {} } : e))
      .optional(),
    api: z.string().url().optional(),
  })
  .strict();

export const configSchema = z
  .object({
    protocol: z.enum(["actioncable", "pusher"]).default("actioncable"),
    /** Where the HTTP steps' relative URLs point; default: the target's origin with http(s) for ws(s). */
    http: z.string().url().optional(),
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
    /** The upgrade's Origin header (default: the target's own, as a browser on the app's page sends); false: none. */
    origin: z.union([z.string(), z.literal(false)]).optional(),
    stampField: z.string().min(1).default("ts"),
    inboxSize: z.number().int().positive().default(256),
    /** Source addresses for the sockets, used in turn: past one address's ~28k ephemeral ports. */
    localAddress: z.union([z.string().ip(), z.array(z.string().ip()).nonempty()]).optional(),
    /** Warn when the generator's event loop is this many ms late, saying why: saturated or starved (generator-verdict.ts). */
    lagWarning: z.number().positive().default(100),
    /**
     * The run fails (`artillery run` exits 1) when more virtual users fail than this: a count, a
     * share of the users created ("5%"), or false for no line (failed-users.ts).
     */
    maxFailedUsers: z
      .union([
        z.number().int().nonnegative(),
        z.string().regex(PERCENT, { message: 'expected a count, a share such as "5%", or false' }).transform((s) => s as `${number}%`),
        z.literal(false),
      ])
      .default(DEFAULT_MAX_FAILED_USERS as MaxFailedUsers),
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

/**
 * What a value that fits none of a union's forms got wrong: the issues of the form it came closest
 * to (the one whose first problem lies deepest in the value), not zod's bare "Invalid input".
 */
function closestForm(issue: z.ZodIssue): z.ZodIssue[] {
  if (issue.code !== z.ZodIssueCode.invalid_union) return [issue];
  // A type mismatch at a depth means "another form", weaker than a wrong value at the same depth.
  const reach = (issues: z.ZodIssue[]) => Math.max(...issues.map((i) => i.path.length - (i.code === z.ZodIssueCode.invalid_type ? 0.5 : 0)));
  const forms = issue.unionErrors.map((e) => e.issues).filter((issues) => issues.length > 0);
  if (!forms.length) return [issue];
  const best = forms.reduce((a, b) => (reach(b) > reach(a) ? b : a));
  return best.flatMap(closestForm);
}

/** Zod issues as "where: field …" lines, the form every scenario mistake takes. */
export function formatIssues(where: string, error: z.ZodError): string[] {
  return error.issues.flatMap(closestForm).map((issue) => {
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

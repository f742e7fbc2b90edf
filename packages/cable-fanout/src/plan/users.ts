// How many users a task carries at once, worked out from the script before anything runs: the
// arrivals its phases make, second by second, each staying as long as its flow lasts (the sum of
// its `think`s and `listen`s, loops multiplied out). Every task runs the whole script, so this is a
// task's peak, and the report's "peak connections" of one task should read about the same.
import { durationToMs } from "../scenario.js";
import { type AudienceRate, emptyTraffic, type FlowTraffic, sendTarget, type Spread, subscription } from "./audience.js";
import type { Workload } from "./task-capacity.js";

type Json = Record<string, unknown>;
const isRecord = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value);

export interface UsersEstimate {
  /** Users at once in one task at the phases' peak; an upper bound when `flowSeconds` is unknown. */
  peak: number;
  /** Users the phases start in one task. */
  arrivals: number;
  /** The most users the phases start in one second, in one task. */
  peakArrivalsPerSecond: number;
  /** How long a user's flow lasts (weighted over the scenarios); undefined when some step's length cannot be known. */
  flowSeconds: number | undefined;
  /** The phases' length. */
  phasesSeconds: number;
  /** The measured capacity it is sized by: "chat" for a flow that sends at all, "listen" for one that only connects and receives. */
  workload: Workload;
  /** What the flow does, in the plan's words. */
  does: FlowKind;
  /** Messages a user sends a second over its flow (0 for listeners, and where `unpaced`). */
  sendsPerUserSecond: number;
  /** Some flow sends with nothing between its sends but waits for answers: its rate is the server's round trip, not the script's. */
  unpaced: boolean;
  /** The processor functions the flows call (`function` steps), whose pacing the plan cannot read. */
  functions: string[];
  /** Per channel the script can name: who sends to it and who hears it (audience.ts). */
  audiences: AudienceRate[];
  /** Sends a user makes a second that only the sender hears (echo). */
  echoesPerUserSecond: number;
  /** Sends a user makes a second as HTTP requests (publish), each far dearer than a frame. */
  publishesPerUserSecond: number;
  /** Channels whose audience cannot be read before the run, as written (a room a processor picks, a stream the app subscribes to). */
  unreadable: string[];
  /** The mean size (bytes) of what a send carries as the script writes it: its data as JSON. */
  sendBytes: number;
}

/** Why the users of a script cannot be counted (a templated rate, no phases), as one line. */
export class UsersUnknown extends Error {
  override name = "UsersUnknown";
}

const SENDS = new Set(["perform", "publish", "whisper", "trigger"]);
/** Steps after which a user is reading what the server sends: a subscription's broadcasts are received whether or not a step waits for them. */
const RECEIVES = new Set(["subscribe", "receive", "listen"]);

export type FlowKind = "sends and receives" | "receives" | "sends" | "connects";

/**
 * The script's config (after --overrides and -e) and its scenarios: peak users per task. Throws
 * UsersUnknown when the phases cannot be read (a templated arrival rate).
 */
export function estimateUsers(config: Json, scenarios: unknown[]): UsersEstimate {
  const variables = isRecord(config.variables) ? config.variables : {};
  const perSecond = arrivalsPerSecond(config.phases, variables);
  const flows = scenarios.filter(isRecord).map((s) => ({ weight: typeof s.weight === "number" && s.weight > 0 ? s.weight : 1, steps: Array.isArray(s.flow) ? s.flow : [] }));
  const totalWeight = flows.reduce((n, f) => n + f.weight, 0) || 1;
  let flowSeconds: number | undefined = 0;
  let sends = 0;
  let receives = false;
  const walks = flows.map((flow) => {
    const walk = walkSteps(flow.steps, variables, new Map());
    flowSeconds = flowSeconds === undefined || walk.seconds === undefined ? undefined : flowSeconds + (walk.seconds * flow.weight) / totalWeight;
    sends += (walk.sends * flow.weight) / totalWeight;
    receives ||= walk.receives;
    return { share: flow.weight / totalWeight, walk };
  });
  const unpaced = walks.some(({ walk }) => walk.sends > 0 && walk.seconds === 0);
  const functions = [...new Set(flows.flatMap((f) => functionNames(f.steps)))];
  const arrivals = perSecond.reduce((n, a) => n + a, 0);
  const peak = flowSeconds === undefined ? arrivals : peakWithin(perSecond, Math.max(1, Math.ceil(flowSeconds)));
  return {
    peak: Math.round(peak),
    arrivals: Math.round(arrivals),
    peakArrivalsPerSecond: Math.max(0, ...perSecond),
    flowSeconds,
    phasesSeconds: perSecond.length,
    // A user that sends at all pays for its sends and their echoes: sized by the chat measurement.
    workload: sends > 0 ? "chat" : "listen",
    does: sends > 0 ? (receives ? "sends and receives" : "sends") : receives ? "receives" : "connects",
    sendsPerUserSecond: flowSeconds ? sends / flowSeconds : 0,
    unpaced,
    functions,
    ...audienceRates(walks, flowSeconds),
  };
}

/**
 * Per channel, sends a second per user at the peak and the share of users subscribed, by Little's
 * law: a flow's share of the users at once is its share of arrivals × its length, and its users
 * send its sends over that length.
 */
function audienceRates(walks: { share: number; walk: Walk }[], flowSeconds: number | undefined): Pick<UsersEstimate, "audiences" | "echoesPerUserSecond" | "publishesPerUserSecond" | "unreadable" | "sendBytes"> {
  const unreadable = new Set(walks.flatMap((w) => [...w.walk.traffic.unreadable]));
  const bodies = walks.flatMap((w) => w.walk.traffic.sendBodies);
  const sendBytes = bodies.length > 0 ? bodies.reduce((n, b) => n + b, 0) / bodies.length : 0;
  if (!flowSeconds || walks.some((w) => w.walk.seconds === undefined)) return { audiences: [], echoesPerUserSecond: 0, publishesPerUserSecond: 0, unreadable: [...unreadable], sendBytes };
  const spreads = new Map<string, Spread>();
  for (const { walk } of walks) for (const [key, spread] of walk.traffic.subscribes) spreads.set(key, spread);
  const audiences = new Map<string, AudienceRate>();
  const rate = (key: string, spread: Spread) => audiences.get(key) ?? audiences.set(key, { channel: key, sendsPerUserSecond: 0, subscribedShare: 0, spread }).get(key)!;
  let echoes = 0;
  let publishes = 0;
  for (const { share, walk } of walks) {
    publishes += (share * walk.traffic.publishes) / flowSeconds;
    // Per user at the peak: this flow's users are share × seconds / flowSeconds of them.
    const present = (share * walk.seconds!) / flowSeconds;
    echoes += (share * walk.traffic.echoes) / flowSeconds;
    for (const [key, n] of walk.traffic.sendsTo) {
      const spread = spreads.get(key);
      // A send to a channel no subscription in the script names: only the app knows who hears it.
      if (spread === undefined) unreadable.add(key);
      else rate(key, spread).sendsPerUserSecond += (share * n) / flowSeconds;
    }
    for (const [key, spread] of walk.traffic.subscribes) rate(key, spread).subscribedShare += present;
  }
  return { audiences: [...audiences.values()].filter((a) => a.sendsPerUserSecond > 0), echoesPerUserSecond: echoes, publishesPerUserSecond: publishes, unreadable: [...unreadable], sendBytes };
}

/** Arrivals in each second of the phases (Artillery's arrivalRate, rampTo, arrivalCount and pause). */
export function arrivalsPerSecond(phases: unknown, variables: Json = {}): number[] {
  if (!Array.isArray(phases) || phases.length === 0) throw new UsersUnknown("the script has no config.phases");
  const out: number[] = [];
  phases.forEach((phase, i) => {
    if (!isRecord(phase)) throw new UsersUnknown(`config.phases[${i}] is not a phase`);
    const number = (field: string): number | undefined => {
      if (phase[field] === undefined) return undefined;
      const value = resolve(phase[field], variables);
      const n = typeof value === "number" ? value : Number(value);
      if (!Number.isFinite(n) || n < 0) throw new UsersUnknown(`config.phases[${i}].${field} is not a number ("${String(phase[field])}")`);
      return n;
    };
    const seconds = (field: string) => {
      const ms = durationToMs(resolve(phase[field], variables));
      if (ms === undefined) throw new UsersUnknown(`config.phases[${i}].${field} is not a duration ("${String(phase[field])}")`);
      return Math.round(ms / 1000);
    };
    if (phase.pause !== undefined) {
      for (let s = seconds("pause"); s > 0; s--) out.push(0);
      return;
    }
    const duration = seconds("duration");
    const rate = number("arrivalRate");
    const count = number("arrivalCount");
    const rampTo = number("rampTo");
    for (let s = 0; s < duration; s++) {
      if (count !== undefined) out.push(count / Math.max(1, duration));
      else if (rampTo !== undefined) out.push((rate ?? 0) + ((rampTo - (rate ?? 0)) * (s + 0.5)) / duration);
      else out.push(rate ?? 0);
    }
  });
  return out;
}

/** The most arrivals in any `window` seconds: users at once when each stays `window` seconds. */
export function peakWithin(perSecond: number[], window: number): number {
  let inWindow = 0;
  let peak = 0;
  for (let s = 0; s < perSecond.length; s++) {
    inWindow += perSecond[s];
    if (s >= window) inWindow -= perSecond[s - window];
    peak = Math.max(peak, inWindow);
  }
  return peak;
}

/**
 * A value as Artillery will see it: `{{ name }}` from config.variables (a list's largest number),
 * `{{ $randomNumber(a, b) }}` as its mean, inside a string too ("{{ interval_ms }}ms"); undefined
 * when some template cannot be known before the run.
 */
function resolve(value: unknown, variables: Json): unknown {
  if (typeof value !== "string" || !value.includes("{{")) return value;
  const one = (expr: string): unknown => {
    const random = /^\$randomNumber\(\s*(-?\d+(?:\.\d+)?)\s*,\s*(-?\d+(?:\.\d+)?)\s*\)$/.exec(expr);
    if (random) return (Number(random[1]) + Number(random[2])) / 2;
    if (!/^[A-Za-z_][\w]*$/.test(expr)) return undefined;
    const found = variables[expr];
    if (!Array.isArray(found)) return found;
    const numbers = found.map(Number).filter(Number.isFinite);
    return numbers.length > 0 ? Math.max(...numbers) : undefined;
  };
  const whole = /^\s*\{\{\s*(.+?)\s*\}\}\s*$/.exec(value);
  if (whole) return one(whole[1]);
  let unknown = false;
  const text = value.replace(/\{\{\s*(.+?)\s*\}\}/g, (_m, expr: string) => {
    const v = one(expr);
    if (typeof v !== "number" && typeof v !== "string") unknown = true;
    return String(v);
  });
  return unknown ? undefined : text;
}

interface Walk {
  seconds: number | undefined;
  sends: number;
  receives: boolean;
  traffic: FlowTraffic;
}

/** `aliases`: the subscriptions made so far in this flow, by the name steps call them. */
function walkSteps(steps: unknown[], variables: Json, aliases: Map<string, string>): Walk {
  let seconds: number | undefined = 0;
  let sends = 0;
  let receives = false;
  const traffic = emptyTraffic();
  const add = (s: number | undefined) => (seconds = seconds === undefined || s === undefined ? undefined : seconds + s);
  for (const step of steps) {
    if (!isRecord(step)) continue;
    if (Array.isArray(step.loop)) {
      const over = resolve(step.over, variables);
      const count = Array.isArray(over) ? over.length : Number(resolve(step.count, variables));
      if (!Number.isFinite(count) || count < 0 || step.whileTrue !== undefined) {
        add(undefined);
        continue;
      }
      const inner = walkSteps(step.loop, variables, aliases);
      add(inner.seconds === undefined ? undefined : inner.seconds * count);
      sends += inner.sends * count;
      receives ||= inner.receives;
      mergeTraffic(traffic, inner.traffic, count);
      continue;
    }
    if (step.think !== undefined) add(stepSeconds(step.think, variables));
    else if (isRecord(step.listen)) add(stepSeconds(step.listen.for, variables));
    if (isRecord(step.subscribe)) {
      const sub = subscription(step.subscribe, variables);
      if (sub.name) {
        aliases.set(sub.alias, sub.name.key);
        traffic.subscribes.set(sub.name.key, sub.name.spread);
      } else traffic.unreadable.add(sub.written);
    }
    const kind = Object.keys(step).find((k) => SENDS.has(k));
    if (kind) {
      // Artillery's per-step `probability`, in percent (the engine's send steps take it).
      const p = typeof step.probability === "number" ? Math.min(100, Math.max(0, step.probability)) / 100 : 1;
      sends += p;
      const spec = isRecord(step[kind]) ? (step[kind] as Json) : {};
      traffic.sendBodies.push(JSON.stringify(spec.data ?? {}).length);
      const target = sendTarget(kind, spec, aliases, variables);
      if (kind === "publish") traffic.publishes += p;
      if (target === "echo") traffic.echoes += p;
      else if ("unreadable" in target) traffic.unreadable.add(target.unreadable);
      else for (const key of target.keys) traffic.sendsTo.set(key, (traffic.sendsTo.get(key) ?? 0) + p);
    }
    if (Object.keys(step).some((k) => RECEIVES.has(k))) receives = true;
  }
  return { seconds, sends, receives, traffic };
}

/** The `function` steps of a flow, loops included. */
function functionNames(steps: unknown[]): string[] {
  return steps.flatMap((step) => (!isRecord(step) ? [] : Array.isArray(step.loop) ? functionNames(step.loop) : typeof step.function === "string" ? [step.function] : []));
}

function mergeTraffic(into: FlowTraffic, inner: FlowTraffic, times: number): void {
  into.echoes += inner.echoes * times;
  into.publishes += inner.publishes * times;
  for (const [key, n] of inner.sendsTo) into.sendsTo.set(key, (into.sendsTo.get(key) ?? 0) + n * times);
  for (const [key, spread] of inner.subscribes) into.subscribes.set(key, spread);
  for (const name of inner.unreadable) into.unreadable.add(name);
  into.sendBodies.push(...inner.sendBodies);
}

function stepSeconds(value: unknown, variables: Json): number | undefined {
  const ms = durationToMs(resolve(value, variables));
  return ms === undefined ? undefined : ms / 1000;
}

import { installArrivals } from "./arrivals.js";
import { trace } from "./trace.js";
import { CableConnection, defaultRuntime, type ConnectionRuntime, type ConnectionSettings } from "./connection.js";
import { METRICS, type Events } from "./metrics.js";
import { OpenConnections } from "./open-connections.js";
import { createActionCableProtocol } from "./protocol/actioncable.js";
import { createPusherProtocol } from "./protocol/pusher.js";
import { readTls, type TlsOptions } from "./tls.js";
import type { Protocol } from "./protocol/types.js";
import { cableCode, errorTraits, nameOfCode } from "./error-names.js";
import { CableError, errorCode } from "./errors.js";
import { FailureLine } from "./exit-status.js";
import { checkScript, REPORT_PLUGIN } from "./preflight.js";
import { configSchema, type CableConfig } from "./config.js";
import type { Script } from "./script.js";
import type { ArtilleryHelpers, Compiler } from "./steps/compiler.js";
import { compileStep } from "./steps/index.js";
import { runVirtualUser, sequence, type VirtualUser, type VuContext } from "./vu.js";
import { hasPerUserTemplate } from "./per-user-config.js";
import { render } from "./template.js";
import type { UserAuth } from "./protocol/types.js";

function protocolFor(settings: CableConfig, tls: TlsOptions | undefined): Protocol {
  return settings.protocol === "pusher"
    ? createPusherProtocol(settings.pusher!, settings.timeout * 1000, tls)
    : createActionCableProtocol({ extended: settings.anycable.extended, streamsSecret: settings.anycable.streamsSecret });
}

function hasStep(flow: unknown[], name: string): boolean {
  return flow.some((step) => {
    const s = step as Record<string, unknown>;
    return name in s || (Array.isArray(s.loop) && hasStep(s.loop, name));
  });
}

const readsMessages = (flow: unknown[]) => hasStep(flow, "receive");

/** Whether a failure is a subscription's (error-names.ts): counted in `cable.failed_subscriptions` for `ensure`. */
function isSubscriptionFailure(err: Error): boolean {
  const name = nameOfCode(errorCode(err));
  return name !== undefined && errorTraits(name).subscription === true;
}

/** Counts every VU of a subscribing flow in `cable.failed_subscriptions`: 1 when its subscription failed, else 0. */
function countingFailedSubscriptions(events: Events, callback: (err: Error | null, context: VuContext) => void) {
  return (err: Error | null, context: VuContext) => {
    events.emit("counter", METRICS.failedSubscriptions, err && isSubscriptionFailure(err) ? 1 : 0);
    if (err instanceof CableError && err.code === cableCode("auth_failed") && err.httpStatus !== undefined) events.emit("counter", `${METRICS.authFailed}.${err.httpStatus}`, 1);
    callback(err, context);
  };
}

/**
 * Hands out `config.cable.localAddress` in turn, one per user, kept for all its connections: a
 * browser's sign-in, auth calls and socket come from one address, and an app that limits per
 * address (Laravel's throttle) counts each user against the address it was given.
 */
function sourceAddresses(setting: CableConfig["localAddress"]): (vu: VirtualUser) => string | undefined {
  const addresses = ([] as string[]).concat(setting ?? []);
  if (addresses.length === 0) return () => undefined;
  let next = 0;
  return (vu) => (vu.localAddress ??= addresses[next++ % addresses.length]);
}

/**
 * Artillery's engine contract (lib/core/runner.ts): constructed once per worker thread with the
 * script, then `createScenario` compiles each scenario that says `engine: cable`.
 */
export class CableEngine {
  private readonly settings: CableConfig;
  private readonly config: Record<string, any>;
  private readonly protocol: Protocol;
  /** `config.tls`, with `--insecure` already folded in by Artillery. */
  private readonly tls: TlsOptions | undefined;
  private readonly connectionSettings: ConnectionSettings;
  /** This thread's connections (Artillery constructs the engine once per worker thread). */
  private readonly runtime: ConnectionRuntime;
  /** The script is wrong and the run is being stopped (preflight.ts). */
  private readonly failed: boolean;
  /** `config.cable.maxFailedUsers`, as this thread can judge it. */
  private readonly failureLine: FailureLine;

  constructor(script: Script, _events: Events, private readonly helpers: ArtilleryHelpers) {
    this.config = script.config;
    // preflight.ts: a wrong script stops the run with one message before any VU starts (and why
    // not by throwing here). The defaults below only keep this object whole until then.
    const settings = checkScript(script);
    this.failed = settings === undefined;
    this.settings = settings ?? configSchema.parse({});
    this.tls = this.failed ? undefined : readTls(script.config.tls, script._scriptPath ?? script._configPath).tls;
    this.protocol = protocolFor(this.settings, this.tls);
    this.failureLine = new FailureLine(this.settings.maxFailedUsers, script.config.plugins?.[REPORT_PLUGIN] !== undefined);
    // arrivals.ts: this thread's phases start VUs without spinning a core, unless preciseArrivals.
    if (!this.failed && (script.scenarios ?? []).some((s) => (s.engine ?? script.config.engine) === "cable")) {
      trace("arrival timer: %s", installArrivals(this.settings.preciseArrivals));
    }
    const tracker = new OpenConnections();
    tracker.lagWarningMs = this.settings.lagWarning;
    this.runtime = defaultRuntime(tracker);
    this.connectionSettings = {
      stampField: this.settings.stampField,
      inboxSize: this.settings.inboxSize,
      pingIntervalMs: this.settings.pingInterval === undefined ? undefined : this.settings.pingInterval * 1000,
      staleAfterMs: this.settings.staleAfter === undefined ? undefined : this.settings.staleAfter * 1000,
    };
  }

  /** The authEndpoint as each user sends it (rendered per user only when it has per-user templates), with its cookies and address. */
  private userAuth(events: Events, localAddress: (vu: VirtualUser) => string | undefined): (vu: VirtualUser, context: VuContext) => UserAuth {
    const endpoint = this.settings.pusher?.authEndpoint;
    const perUser = endpoint !== undefined && hasPerUserTemplate(endpoint);
    const timed = (ms: number) => events.emit("histogram", METRICS.authLatency, ms);
    return (vu, context) => ({ endpoint: perUser ? render(endpoint, context) : endpoint, session: vu.session, localAddress: localAddress(vu), timed });
  }

  createScenario(spec: { flow: Record<string, unknown>[] }, events: Events) {
    if (this.failed) return (context: VuContext, callback: (err: Error | null, context: VuContext) => void) => callback(new CableError("invalid_scenario"), context);
    // A flow that never receives keeps no unread messages: listeners hold only their socket.
    const connectionSettings = readsMessages(spec.flow) ? this.connectionSettings : { ...this.connectionSettings, inboxSize: 0 };
    const addresses = sourceAddresses(this.settings.localAddress);
    const compiler: Compiler = {
      settings: this.settings,
      protocol: this.protocol,
      target: this.config.target,
      tls: this.tls,
      helpers: this.helpers,
      processor: typeof this.config.processor === "object" && this.config.processor ? this.config.processor : {},
      thinkDefaults: this.config.defaults?.think ?? {},
      events,
      compile: (step) => compileStep(compiler, step),
      auth: this.userAuth(events, addresses),
      localAddress: addresses,
      connect: (vu, keepChannels = false) => {
        vu.drop(keepChannels);
        vu.connection = new CableConnection(this.protocol, events, connectionSettings, vu.memory, this.runtime);
        return vu.connection;
      },
    };
    const flow = sequence(spec.flow.map(compiler.compile));
    const subscribes = hasStep(spec.flow, "subscribe");
    return (context: VuContext, callback: (err: Error | null, context: VuContext) => void) => {
      const ended = (err: Error | null, after: VuContext) => {
        if (err) this.failureLine.userFailed();
        callback(err, after);
      };
      runVirtualUser(flow, events, context, subscribes ? countingFailedSubscriptions(events, ended) : ended);
    };
  }
}

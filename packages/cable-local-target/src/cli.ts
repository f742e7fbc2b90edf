#!/usr/bin/env node
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { parseFaults, type FaultConfig } from "./faults.js";
import { DEFAULT_PUSHER_APP, DEFAULT_STREAMS_SECRET, type TargetOptions } from "./options.js";
import { startTarget } from "./target.js";

const USAGE = `Usage: cable-local-target [options]

A local Action Cable / AnyCable and Pusher-protocol target for demos, benchmarks and fault tests.
Not a production server. Prints one JSON line with its URLs once listening; stops on SIGINT/SIGTERM.

Server
  --host <addr>                 bind address (default 127.0.0.1)
  --port <n>                    port, 0 for a free one (default 0)
  --ping-interval-ms <n>        Action Cable heartbeat period (default 3000)
  --allow-anonymous             accept Action Cable connections without a uid cookie
  --no-public-streams           refuse $pubsub stream_name (signed names only)
  --streams-secret <s>          secret for $pubsub signed_stream_name (default ${DEFAULT_STREAMS_SECRET})
  --broadcast-key <s>           require "Authorization: Bearer <s>" on POST /_broadcast
  --history-limit <n>           AnyCable extended protocol: messages kept per stream (default 100)
  --history-ttl-ms <n>          how long a message stays in a stream's history (default 300000)
  --sessions-ttl-ms <n>         how long a closed session can be restored with ?sid= (default 300000, 0: never)
  --presence-ttl-ms <n>         how long a closed session stays in presence sets (default 15000)
  --streams-whisper             allow whispers on signed $pubsub streams (public ones always allow them)
  --streams-presence            allow presence on signed $pubsub streams (public ones always allow it)
  --control                     enable POST /_restart[?forget_state=1] (drops every connection: Action Cable
                                with disconnect server_restart + close 1001, Pusher with close 4200)
  --pusher-app-id <s>           (default ${DEFAULT_PUSHER_APP.appId})
  --pusher-key <s>              (default ${DEFAULT_PUSHER_APP.key})
  --pusher-secret <s>           (default ${DEFAULT_PUSHER_APP.secret})
  --activity-timeout <s>        Pusher activity_timeout announced to clients (default 120)
  --no-client-events            refuse Pusher client events
  --error-style <pusher|sockudo>   how refused Pusher subscriptions and client events are answered

Faults (see README)
  --confirm-delay-ms <n>        delay subscription confirmations
  --reject-subscriptions        refuse every subscription
  --drop-ratio <0..1>           drop this share of broadcast deliveries
  --malformed-ratio <0..1>      send this share of broadcast deliveries cut in half
  --broadcast-delay-ms <n>      hold every broadcast delivery back this long (a slow server on purpose)
  --close-after-ms <n>          close each connection this long after it opened
  --close-every-nth <n>         apply --close-after-ms to every Nth connection only
  --close-code <n>              close code for --close-after-ms
  --disconnect-reason <s>       Action Cable disconnect frame before that close
  --disconnect-reconnect        its reconnect flag
  --stop-pinging                no Action Cable pings, no Pusher pongs
  --accept-delay-ms <n>         hold each WebSocket upgrade this long
  --capacity <n>                a known capacity: above n open connections, deliver every broadcast late
  --rate-capacity <n>           a known message-rate capacity: above n broadcasts/s (over the last 5 s),
                                deliver every broadcast late
  --over-capacity-delay-ms <n>  how late, above --capacity or --rate-capacity (default 1000)
  --over-capacity-linger-ms <n> stay that late this long more once the connections are back to --capacity
                                or fewer (a spike with a known recovery time; default 0)
  --leak-mb-per-minute <n>      a known leak: allocate and retain n MiB per minute of uptime
  --leak-max-mb <n>             bound of that leak (default 512)
  --leak-delay-ms-per-minute <n>  hold every broadcast delivery back (minutes of uptime × n) ms more
  --fault-seed <n>              seed for the ratios
  --faults <file.json>          full fault configuration (per-channel overrides), merged under the flags
  -h, --help`;

function number(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (value.trim() === "" || !Number.isFinite(n)) throw new Error(`--${flag}: expected a number, got ${JSON.stringify(value)}`);
  return n;
}

/** Drops undefined entries so that flags left out do not override the faults file. */
function defined<T extends object>(object: T): Partial<T> {
  return Object.fromEntries(Object.entries(object).filter(([, v]) => v !== undefined)) as Partial<T>;
}

export function optionsFromArgs(argv: string[]): TargetOptions | "help" {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    allowPositionals: false,
    options: {
      help: { type: "boolean", short: "h" },
      host: { type: "string" },
      port: { type: "string" },
      "ping-interval-ms": { type: "string" },
      "allow-anonymous": { type: "boolean" },
      "no-public-streams": { type: "boolean" },
      "streams-secret": { type: "string" },
      "broadcast-key": { type: "string" },
      "history-limit": { type: "string" },
      "history-ttl-ms": { type: "string" },
      "sessions-ttl-ms": { type: "string" },
      "presence-ttl-ms": { type: "string" },
      "streams-whisper": { type: "boolean" },
      "streams-presence": { type: "boolean" },
      control: { type: "boolean" },
      "pusher-app-id": { type: "string" },
      "pusher-key": { type: "string" },
      "pusher-secret": { type: "string" },
      "activity-timeout": { type: "string" },
      "no-client-events": { type: "boolean" },
      "error-style": { type: "string" },
      "confirm-delay-ms": { type: "string" },
      "reject-subscriptions": { type: "boolean" },
      "drop-ratio": { type: "string" },
      "malformed-ratio": { type: "string" },
      "broadcast-delay-ms": { type: "string" },
      "close-after-ms": { type: "string" },
      "close-every-nth": { type: "string" },
      "close-code": { type: "string" },
      "disconnect-reason": { type: "string" },
      "disconnect-reconnect": { type: "boolean" },
      "stop-pinging": { type: "boolean" },
      "accept-delay-ms": { type: "string" },
      capacity: { type: "string" },
      "rate-capacity": { type: "string" },
      "over-capacity-delay-ms": { type: "string" },
      "over-capacity-linger-ms": { type: "string" },
      "leak-mb-per-minute": { type: "string" },
      "leak-max-mb": { type: "string" },
      "leak-delay-ms-per-minute": { type: "string" },
      "fault-seed": { type: "string" },
      faults: { type: "string" },
    },
  });
  if (values.help) return "help";
  let fromFile: FaultConfig = {};
  if (values.faults !== undefined) {
    let text: string;
    try {
      text = readFileSync(values.faults, "utf8");
    } catch (error) {
      throw new Error(`--faults: cannot read ${values.faults}: ${(error as Error).message}`);
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch (error) {
      throw new Error(`--faults: ${values.faults} is not JSON: ${(error as Error).message}`);
    }
    fromFile = parseFaults(json, values.faults);
  }
  const flags = defined({
    confirmDelayMs: number("confirm-delay-ms", values["confirm-delay-ms"]),
    rejectSubscriptions: values["reject-subscriptions"],
    dropBroadcastRatio: number("drop-ratio", values["drop-ratio"]),
    malformedRatio: number("malformed-ratio", values["malformed-ratio"]),
    broadcastDelayMs: number("broadcast-delay-ms", values["broadcast-delay-ms"]),
    closeAfterMs: number("close-after-ms", values["close-after-ms"]),
    closeEveryNth: number("close-every-nth", values["close-every-nth"]),
    closeCode: number("close-code", values["close-code"]),
    disconnectReason: values["disconnect-reason"],
    disconnectReconnect: values["disconnect-reconnect"],
    stopPinging: values["stop-pinging"],
    acceptDelayMs: number("accept-delay-ms", values["accept-delay-ms"]),
    capacityConnections: number("capacity", values.capacity),
    rateCapacity: number("rate-capacity", values["rate-capacity"]),
    overCapacityDelayMs: number("over-capacity-delay-ms", values["over-capacity-delay-ms"]),
    overCapacityLingerMs: number("over-capacity-linger-ms", values["over-capacity-linger-ms"]),
    leakMbPerMinute: number("leak-mb-per-minute", values["leak-mb-per-minute"]),
    leakMaxMb: number("leak-max-mb", values["leak-max-mb"]),
    leakDelayMsPerMinute: number("leak-delay-ms-per-minute", values["leak-delay-ms-per-minute"]),
    seed: number("fault-seed", values["fault-seed"]),
  });
  const style = values["error-style"];
  if (style !== undefined && style !== "pusher" && style !== "sockudo") {
    throw new Error(`--error-style: expected pusher or sockudo, got ${JSON.stringify(style)}`);
  }
  return {
    host: values.host,
    port: number("port", values.port),
    cable: defined({
      requireUid: values["allow-anonymous"] ? false : undefined,
      pingIntervalMs: number("ping-interval-ms", values["ping-interval-ms"]),
      publicStreams: values["no-public-streams"] ? false : undefined,
      streamsSecret: values["streams-secret"],
      broadcastKey: values["broadcast-key"],
      historyLimit: number("history-limit", values["history-limit"]),
      historyTtlMs: number("history-ttl-ms", values["history-ttl-ms"]),
      sessionsTtlMs: number("sessions-ttl-ms", values["sessions-ttl-ms"]),
      presenceTtlMs: number("presence-ttl-ms", values["presence-ttl-ms"]),
      streamsWhisper: values["streams-whisper"],
      streamsPresence: values["streams-presence"],
    }),
    pusher: defined({
      appId: values["pusher-app-id"],
      key: values["pusher-key"],
      secret: values["pusher-secret"],
      activityTimeoutS: number("activity-timeout", values["activity-timeout"]),
      clientEvents: values["no-client-events"] ? false : undefined,
      errorStyle: style,
    }),
    faults: parseFaults({ ...fromFile, ...flags }, "faults"),
    control: values.control,
  };
}

async function main(): Promise<void> {
  let options: TargetOptions | "help";
  try {
    options = optionsFromArgs(process.argv.slice(2));
  } catch (error) {
    process.stderr.write(`cable-local-target: ${(error as Error).message}\n\n${USAGE}\n`);
    process.exit(2);
  }
  if (options === "help") {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const target = await startTarget(options);
  // The secret stays out of the output: clients are configured with it by whoever started the target.
  process.stdout.write(
    `${JSON.stringify({
      url: target.url,
      cableUrl: target.cableUrl,
      pusherUrl: target.pusherUrl,
      httpUrl: target.httpUrl,
      pusherAppId: target.pusher.appId,
      pusherKey: target.pusher.key,
    })}\n`,
  );
  const stop = () => void target.close().then(() => process.exit(0));
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
}

if (require.main === module) {
  main().catch((error: Error) => {
    process.stderr.write(`cable-local-target: ${error.message}\n`);
    process.exit(1);
  });
}

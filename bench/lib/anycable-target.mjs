// anycable-go 1.6.16 (the harness's build, cable-test-servers) as a bench target beside the local
// one: the same surface as target.mjs's Target, so every workload runs on both in the same run
// (issue 43: goals are judged on a real server). Its counters come from its own Prometheus endpoint:
// `client_msg_total` (commands received: one subscribe per user here) and `server_msg_total`
// (frames written from the session's queue: welcome, confirmation, broadcasts; not its pings);
// open connections from the `clients_num` gauge, which anycable-go refreshes every
// --stats_refresh_interval (1 s here), so a wait on it may end up to a second late.
import { startAnyCable } from "cable-test-servers";
import { Target } from "./target.mjs";

const METRICS_PATH = "/metrics";
/** How often anycable-go refreshes its gauges (--stats_refresh_interval, in seconds there). */
const STATS_REFRESH_MS = 1_000;

/** `args`: more of anycable-go's flags (the bench's ping experiment: `--ping_interval=30`). */
export async function startAnycableTarget({ args = [] } = {}) {
  const server = await startAnyCable({ args: [`--metrics_http=${METRICS_PATH}`, `--stats_refresh_interval=${STATS_REFRESH_MS / 1000}`, ...args] });
  return new AnycableTarget(server);
}

/** Prometheus' text format, the counters and gauges by name (anycable-go prefixes none with labels here). */
export function parsePrometheus(text) {
  const values = {};
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const [name, value] = line.trim().split(/\s+/);
    const bare = name.replace(/\{.*\}$/, "");
    values[bare] = (values[bare] ?? 0) + Number(value);
  }
  return values;
}

export class AnycableTarget extends Target {
  constructor(server) {
    const origin = new URL(server.url);
    super({ pid: server.pid() }, { cableUrl: server.url, httpUrl: `http://${origin.host}` });
    this.name = "anycable-go";
    this.server = server;
    this.broadcastUrl = server.broadcastUrl;
    // No RPC app: only public `$pubsub` streams are open (--public).
    this.channel = { channel: "$pubsub", stream_name: "all" };
  }

  async health() {
    const res = await fetch(`${this.httpUrl}${METRICS_PATH}`);
    if (!res.ok) throw new Error(`GET ${METRICS_PATH} answered ${res.status}`);
    const m = parsePrometheus(await res.text());
    return { connectionsOpen: m.anycable_go_clients_num ?? m.clients_num ?? 0, framesIn: m.anycable_go_client_msg_total ?? m.client_msg_total ?? 0, framesOut: m.anycable_go_server_msg_total ?? m.server_msg_total ?? 0 };
  }

  /**
   * The counters a measurement starts from, once the gauge of open connections has caught up with
   * the last run's closes: every workload starts with no users connected, and a base read from a
   * gauge still counting them would never let the next run's connections exceed it.
   */
  async baseline() {
    const deadline = Date.now() + 30_000;
    let zeroSince;
    for (;;) {
      const counters = await this.health();
      if (counters.connectionsOpen > 0) zeroSince = undefined;
      else zeroSince ??= Date.now();
      // Zero across one whole refresh of the gauge (--stats_refresh_interval=1).
      if (zeroSince !== undefined && Date.now() - zeroSince >= STATS_REFRESH_MS + 200) return counters;
      if (Date.now() > deadline) throw new Error(`anycable-go still counts ${counters.connectionsOpen} open connections 30 s after the last run`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }

  async stop() {
    await this.server.stop();
  }
}

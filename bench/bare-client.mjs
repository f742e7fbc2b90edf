// The baseline: a bare `ws` client with no Artillery, in a process of its own. It does what the
// engine's lurker does at the least cost Node allows: connect, subscribe, JSON.parse every frame,
// count. Its parent (bench/run.mjs) measures its CPU and memory from /proc, as for every subject.
//
//   node bench/bare-client.mjs '<json options>'
//
// Options: mode "listen" | "latency"; url; identifier; n0 and n (clients: n0 first, then after
// pauseMs the rest at ratePerSecond); localAddresses (round-robin source addresses); deadline
// (epoch ms: the process reports and exits then); latency: iterations, thinkMs.
// It prints one JSON line with its counts when it ends.
import WebSocket from "ws";

const options = JSON.parse(process.argv[2] ?? "{}");
const { mode = "listen", url, identifier, n0 = 0, n, pauseMs = 0, ratePerSecond = 1000, localAddresses = [], deadline } = options;
if (!url || !identifier || !n || !deadline) throw new Error("bare-client: url, identifier, n and deadline are required");

const subscribeFrame = JSON.stringify({ command: "subscribe", identifier });
const stats = { opened: 0, subscribed: 0, received: 0, errors: {}, openPeak: 0, rttMs: [] };
let open = 0;
const sockets = [];

function countError(code) {
  stats.errors[code] = (stats.errors[code] ?? 0) + 1;
}

function connect(index) {
  const localAddress = localAddresses.length ? localAddresses[index % localAddresses.length] : undefined;
  const ws = new WebSocket(url, ["actioncable-v1-json"], { perMessageDeflate: false, localAddress });
  sockets.push(ws);
  ws.on("open", () => {
    stats.opened++;
    if (++open > stats.openPeak) stats.openPeak = open;
  });
  ws.on("close", () => open--);
  ws.on("error", (err) => countError(err.code ?? err.message));
  let rttStartedAt = 0;
  let iterations = 0;
  const echo = () => {
    rttStartedAt = performance.now();
    ws.send(JSON.stringify({ command: "message", identifier, data: JSON.stringify({ seq: iterations, action: "echo" }) }));
  };
  ws.on("message", (data) => {
    const frame = JSON.parse(data.toString());
    if (frame.type === "welcome") ws.send(subscribeFrame);
    else if (frame.type === "confirm_subscription") {
      stats.subscribed++;
      if (mode === "latency") echo();
    } else if (frame.type === undefined && frame.identifier !== undefined) {
      stats.received++;
      if (mode === "latency") {
        stats.rttMs.push(performance.now() - rttStartedAt);
        if (++iterations < options.iterations) setTimeout(echo, options.thinkMs ?? 0);
        else if (stats.rttMs.length === n * options.iterations) finish();
      }
    }
  });
}

function finish() {
  for (const ws of sockets) ws.terminate();
  process.stdout.write(`${JSON.stringify(stats)}\n`);
  process.exit(0);
}
setTimeout(finish, Math.max(0, deadline - Date.now()));

// Connect n0 clients at once, pause, then the rest at the given rate (in ticks of 10 ms). In the
// latency mode the clients arrive spread over a second, as Artillery's arrivals do: started together
// their round trips would queue behind each other at every think.
if (mode === "latency") for (let i = 0; i < n; i++) setTimeout(() => connect(i), (i * 1000) / n);
else {
  for (let i = 0; i < n0; i++) connect(i);
  setTimeout(() => {
    let next = n0;
    const perTick = Math.max(1, Math.round(ratePerSecond / 100));
    const timer = setInterval(() => {
      for (let k = 0; k < perTick && next < n; k++) connect(next++);
      if (next >= n) clearInterval(timer);
    }, 10);
  }, n0 > 0 ? pauseMs : 0);
}

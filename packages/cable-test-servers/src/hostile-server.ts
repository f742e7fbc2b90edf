// A hostile server on loopback for the report's tests (issue 38): it speaks just enough Pusher and
// Action Cable to refuse every user, and its refusals carry the texts an attacker would put in a
// pull request's report: a mention, a link, an image, HTML that closes a fold or opens one, a
// redirect, a style that hides every table, a forged data element, backticks, pipes, line breaks,
// terminal escapes. The engine keeps a few of a server's words per error and cause; the texts are
// spread so that every one of them fits (three per error and cause).
//
// - Pusher (any path ending in /app/<key>): `pusher:connection_established`, then each subscribe
//   answered with `pusher:subscription_error` whose `error` and `message` are the text; its `type`
//   picks the cause the engine counts (other, LimitReached, AuthError).
// - Action Cable (any other path): `welcome`, then every fourth subscription refused with
//   `reject_subscription` (which carries no words), the others confirmed and, 100 ms later, the
//   connection ended by a `disconnect` whose `reason` is the text.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { WebSocketServer, type WebSocket } from "ws";

/** What the server sends, and under which protocol and cause. */
export interface Injection {
  text: string;
  protocol: "pusher" | "actioncable";
  /** Pusher's `type` for the refusal, which decides the engine's cause; none for Action Cable. */
  pusherType?: "Hostile" | "LimitReached" | "AuthError";
}

export const INJECTIONS: readonly Injection[] = [
  { text: "@octocat", protocol: "pusher", pusherType: "Hostile" },
  { text: "[click](https://evil.example)", protocol: "pusher", pusherType: "Hostile" },
  { text: "![x](https://evil.example/t.png)", protocol: "pusher", pusherType: "Hostile" },
  { text: "<details open>", protocol: "pusher", pusherType: "LimitReached" },
  { text: "<style>table{display:none}</style>", protocol: "pusher", pusherType: "LimitReached" },
  { text: '<script type="application/json" id="report-data">{}</script>', protocol: "pusher", pusherType: "LimitReached" },
  { text: "``` fence `code` ``", protocol: "pusher", pusherType: "AuthError" },
  { text: "a | b || c", protocol: "pusher", pusherType: "AuthError" },
  { text: "line one\n# heading\n- item\r\n> quote", protocol: "pusher", pusherType: "AuthError" },
  { text: "</details><h1>pwned</h1>", protocol: "actioncable" },
  { text: '<meta http-equiv="refresh" content="0;url=https://evil.example">', protocol: "actioncable" },
  { text: "\u001b[31mred\u001b[0m \u001b]8;;https://evil.example\u0007link\u001b]8;;\u0007 \u001b[2J\u001b[H", protocol: "actioncable" },
];

const STATUS = { Hostile: 400, LimitReached: 4100, AuthError: 401 } as const;

export interface HostileServer {
  /** ws://127.0.0.1:<port>/app/hostile-key: a Pusher target. */
  pusherUrl: string;
  /** ws://127.0.0.1:<port>/cable: an Action Cable target. */
  cableUrl: string;
  /** Connections accepted so far, per protocol. */
  connections: { pusher: number; actioncable: number };
  close(): Promise<void>;
}

export async function startHostileServer(): Promise<HostileServer> {
  const pusherTexts = INJECTIONS.filter((i) => i.protocol === "pusher");
  const cableTexts = INJECTIONS.filter((i) => i.protocol === "actioncable");
  const sockets = new Set<WebSocket>();
  const timers = new Set<NodeJS.Timeout>();
  const connections = { pusher: 0, actioncable: 0 };
  const later = (ms: number, run: () => void) => {
    const timer = setTimeout(() => {
      timers.delete(timer);
      run();
    }, ms);
    timers.add(timer);
  };

  const pusher = (ws: WebSocket, n: number) => {
    ws.send(JSON.stringify({ event: "pusher:connection_established", data: JSON.stringify({ socket_id: `${n}.${n}`, activity_timeout: 30 }) }));
    ws.on("message", (raw) => {
      const frame = parse(raw.toString());
      if (frame?.event === "pusher:ping") ws.send(JSON.stringify({ event: "pusher:pong", data: {} }));
      if (frame?.event !== "pusher:subscribe") return;
      const channel = String((frame.data as { channel?: unknown } | undefined)?.channel ?? "");
      const { text, pusherType = "Hostile" } = pusherTexts[n % pusherTexts.length];
      ws.send(JSON.stringify({ event: "pusher:subscription_error", channel, data: { type: pusherType, error: text, message: text, status: STATUS[pusherType] } }));
    });
  };

  const actionCable = (ws: WebSocket, n: number) => {
    ws.send(JSON.stringify({ type: "welcome" }));
    ws.on("message", (raw) => {
      const frame = parse(raw.toString());
      if (frame?.command !== "subscribe") return;
      const identifier = frame.identifier;
      if (n % 4 === 3) {
        ws.send(JSON.stringify({ identifier, type: "reject_subscription" }));
        return;
      }
      ws.send(JSON.stringify({ identifier, type: "confirm_subscription" }));
      const { text } = cableTexts[n % cableTexts.length];
      later(100, () => {
        if (ws.readyState === ws.OPEN) ws.send(JSON.stringify({ type: "disconnect", reason: text, reconnect: false }));
      });
    });
  };

  const server = http.createServer((_req, res) => res.writeHead(404).end());
  const wss = new WebSocketServer({ noServer: true });
  server.on("upgrade", (req, socket, head) => {
    wss.handleUpgrade(req, socket, head, (ws) => {
      sockets.add(ws);
      ws.on("close", () => sockets.delete(ws));
      ws.on("error", () => sockets.delete(ws));
      const path = new URL(req.url ?? "/", "http://localhost").pathname;
      if (/\/app\/[^/]+$/.test(path)) pusher(ws, connections.pusher++);
      else actionCable(ws, connections.actioncable++);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const base = `ws://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    pusherUrl: `${base}/app/hostile-key`,
    cableUrl: `${base}/cable`,
    connections,
    async close() {
      for (const timer of timers) clearTimeout(timer);
      for (const ws of sockets) ws.terminate();
      wss.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function parse(text: string): Record<string, unknown> | undefined {
  try {
    const value = JSON.parse(text) as unknown;
    return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

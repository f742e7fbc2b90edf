// The live page's server: report.html's page, drawn from the run so far, at a secret URL on
// loopback, kept up to date by server-sent events, then the final report.html itself. One for a
// fan-out run (cable-fanout --live) or one `artillery run` (the plugin's `live: true`).
//
// What it serves: GET /<token>/ (the page with every period so far, so a reload misses nothing) and
// GET /<token>/events (the stream: an `update` with the page's parts whenever they change, and
// `final` once the report is written, on which the page reloads into it). Anything else is 404, a
// wrong token included, and says nothing. The token (128 random bits) is the only key: the
// address is loopback unless the user binds elsewhere (--live-host), which the caller says aloud.
//
// The page's text is report.html's (html.ts), under the same rule for text from outside; the
// updates carry the same parts, which the page puts in place of its own (report-live.js).
import { randomBytes, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { jsonForScript, pageHtml, type PageParts } from "./html.js";

export interface LiveServerOptions {
  host: string;
  /** 0: any free port. */
  port: number;
}

/** What went out: the page's own cost, measured (docs/report.md). */
export interface LiveTransfer {
  /** Updates sent (each to every open stream). */
  updates: number;
  /** Bytes of event data written to streams, all streams together. */
  eventBytes: number;
  /** Bytes of page served. */
  pageBytes: number;
  pagesServed: number;
}

/** Open streams at once: a page left open in many tabs must not grow the runner's memory without end. */
const MAX_STREAMS = 32;
/** How long the final report waits for open pages to reload into it before the server closes. */
const FINAL_WAIT_MS = 5_000;
/** A comment line now and then keeps proxies and idle timers from closing a quiet stream. */
const KEEPALIVE_MS = 15_000;

const SECURITY_HEADERS = {
  "Cache-Control": "no-store",
  "X-Content-Type-Options": "nosniff",
  // The token is in the URL: never sent on to anywhere else.
  "Referrer-Policy": "no-referrer",
  "X-Frame-Options": "DENY",
};

export class LivePageServer {
  readonly url: string;
  readonly transfer: LiveTransfer = { updates: 0, eventBytes: 0, pageBytes: 0, pagesServed: 0 };
  private parts: PageParts | undefined;
  private statusHtml = "";
  private lastEvent = "";
  private lastParts = "";
  private lastStatus = "";
  private finalHtml: string | undefined;
  private readonly streams = new Set<ServerResponse>();
  private readonly keepalive: NodeJS.Timeout;

  private constructor(
    private readonly server: Server,
    private readonly token: string,
    host: string,
    port: number,
  ) {
    const shownHost = host.includes(":") ? `[${host}]` : host;
    this.url = `http://${shownHost}:${port}/${token}/`;
    this.keepalive = setInterval(() => this.write(": keepalive\n\n"), KEEPALIVE_MS).unref();
  }

  static async start(options: LiveServerOptions): Promise<LivePageServer> {
    const token = randomBytes(16).toString("base64url");
    let page: LivePageServer | undefined;
    const server = createServer((req, res) => (page ? page.handle(req, res) : notFound(res)));
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(options.port, options.host, () => {
        server.off("error", reject);
        resolve();
      });
    });
    // A page left open must not keep the process alive once the run is over.
    server.unref();
    const { port } = server.address() as AddressInfo;
    page = new LivePageServer(server, token, options.host, port);
    return page;
  }

  /**
   * The page's parts now; sent to every open page when they differ from the last sent. `readAt`:
   * when the figures were read (the feed's poll), which the page keeps beside when it drew them.
   */
  update(parts: PageParts, readAt?: number): void {
    if (this.finalHtml !== undefined) return;
    this.parts = parts;
    // The figures as report.html's own data has them (to 0.1): the page at the end draws the same.
    const data = jsonForScript(parts);
    if (data === this.lastParts) return;
    this.lastParts = data;
    const event = `event: update\ndata: ${readAt === undefined ? data : `${data.slice(0, -1)},"readAt":${Math.round(readAt)}}`}\n\n`;
    this.lastEvent = event;
    if (this.streams.size > 0) this.transfer.updates++;
    this.write(event);
  }

  /**
   * Where the run is (HTML the caller made from escaped text): changes every poll (the clock), so
   * it travels on its own, small, and the figures only when they changed.
   */
  status(html: string): void {
    if (this.finalHtml !== undefined || html === this.statusHtml) return;
    this.statusHtml = html;
    this.lastStatus = `event: status\ndata: ${JSON.stringify({ html })}\n\n`;
    this.write(this.lastStatus);
  }

  /**
   * The run's report.html: from now on the page is it. Open pages reload into it; resolves once they
   * have (their streams closed) or after FINAL_WAIT_MS, then the server closes.
   */
  async final(html: string | undefined): Promise<void> {
    if (html !== undefined) this.finalHtml = html;
    // No report (collecting failed): the last figures, said to be the last, not a run still going.
    else if (this.parts) this.finalHtml = pageHtml({ ...this.parts, state: "warning", summary: `<p><strong>The run has ended, and its report could not be written: these are its last live figures.</strong></p>\n${this.parts.summary}` });
    else this.finalHtml = NO_REPORT_PAGE;
    this.write("event: final\ndata: {}\n\n");
    const deadline = Date.now() + FINAL_WAIT_MS;
    while (this.streams.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    // A page that reloads fetches the report before its stream's close is seen: a moment for that fetch.
    await new Promise((r) => setTimeout(r, this.transfer.pagesServed > 0 ? 200 : 0));
    await this.close();
  }

  async close(): Promise<void> {
    clearInterval(this.keepalive);
    for (const res of this.streams) res.end();
    this.streams.clear();
    await new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const path = (req.url ?? "").split("?")[0];
    const slash = path.indexOf("/", 1);
    if (req.method !== "GET" || slash === -1 || !this.tokenMatches(path.slice(1, slash))) return notFound(res);
    const rest = path.slice(slash);
    if (rest === "/") return this.page(res);
    if (rest === "/events") return this.events(req, res);
    notFound(res);
  }

  private tokenMatches(given: string): boolean {
    const a = Buffer.from(given);
    const b = Buffer.from(this.token);
    return a.length === b.length && timingSafeEqual(a, b);
  }

  private page(res: ServerResponse): void {
    const html = this.finalHtml ?? (this.parts ? pageHtml(this.parts, { status: this.statusHtml }) : WAITING_PAGE);
    const body = Buffer.from(html);
    this.transfer.pageBytes += body.length;
    this.transfer.pagesServed++;
    res.writeHead(200, { ...SECURITY_HEADERS, "Content-Type": "text/html; charset=utf-8", "Content-Length": body.length });
    res.end(body);
  }

  private events(req: IncomingMessage, res: ServerResponse): void {
    if (this.finalHtml !== undefined) {
      // A page that (re)connects after the end: told so, it reloads into the report.
      res.writeHead(200, { ...SECURITY_HEADERS, "Content-Type": "text/event-stream; charset=utf-8" });
      res.end("event: final\ndata: {}\n\n");
      return;
    }
    if (this.streams.size >= MAX_STREAMS) {
      res.writeHead(503, SECURITY_HEADERS);
      res.end();
      return;
    }
    res.writeHead(200, { ...SECURITY_HEADERS, "Content-Type": "text/event-stream; charset=utf-8", Connection: "keep-alive" });
    // Retry soon after a dropped stream; the page then gets the latest parts at once.
    res.write("retry: 2000\n\n");
    for (const event of [this.lastEvent, this.lastStatus]) {
      if (!event) continue;
      res.write(event);
      this.transfer.eventBytes += Buffer.byteLength(event);
    }
    this.streams.add(res);
    const drop = () => this.streams.delete(res);
    req.on("close", drop);
    res.on("error", drop);
  }

  private write(event: string): void {
    const bytes = Buffer.byteLength(event);
    for (const res of this.streams) {
      res.write(event);
      this.transfer.eventBytes += bytes;
    }
  }
}

function notFound(res: ServerResponse): void {
  res.writeHead(404, { ...SECURITY_HEADERS, "Content-Type": "text/plain; charset=utf-8" });
  res.end("not found\n");
}

/** A page of one line and no script (before the first period, or when the run left nothing to show). */
function notePage(title: string, text: string, refreshS?: number): string {
  return [
    "<!doctype html>",
    '<html lang="en"><head><meta charset="utf-8">',
    `<meta http-equiv="Content-Security-Policy" content="default-src 'none'">`,
    ...(refreshS !== undefined ? [`<meta http-equiv="refresh" content="${refreshS}">`] : []),
    `<title>${title}</title></head>`,
    `<body><p>${text}</p></body></html>`,
    "",
  ].join("\n");
}

/** Before the first period: a page that reloads itself every few seconds. */
const WAITING_PAGE = notePage("Waiting for the first period", "The run has not reported its first 10 s period yet; this page reloads by itself.", 3);

/** The run ended without a report (collecting failed) and before any period: nothing to show. */
const NO_REPORT_PAGE = notePage("No report", "The run ended before any period was reported, and no report was written.");

// --live[=PORT] and --live-host as every command that can serve the live page declares them (run,
// compare, attach, capacity); cli-options.ts's liveFlags parses what they give.
import type { Command } from "commander";

export const liveOptions = (c: Command): Command =>
  c
    .option("--live [port]", "serve the run's live page (the figures as they come, then report.html) on this port, as --live=8080; --live alone: any free port. The URL, with its access token, is printed")
    .option("--live-host <host>", "where the live page listens (default 127.0.0.1); any other address makes it reachable by whoever can reach that host and port and has the printed URL");

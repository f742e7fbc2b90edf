#!/usr/bin/env node
import { main } from "../dist/cli.js";

// A closed stdout or stderr (`… | head`) ends the CLI quietly, as Unix tools do.
for (const stream of [process.stdout, process.stderr]) stream.on("error", (err) => process.exit(err.code === "EPIPE" ? (process.exitCode ?? 0) : 1));

process.exitCode = await main(process.argv.slice(2), process.env);

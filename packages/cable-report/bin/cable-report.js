#!/usr/bin/env node
"use strict";
// A closed stdout or stderr (`… --help | head`) ends the CLI quietly, as Unix tools do.
for (const stream of [process.stdout, process.stderr]) stream.on("error", (err) => process.exit(err.code === "EPIPE" ? (process.exitCode ?? 0) : 1));
// `cable-report trend` may read an S3 history: its status comes later.
require("../dist/cli.js").cli(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});

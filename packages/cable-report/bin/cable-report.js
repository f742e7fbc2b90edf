#!/usr/bin/env node
"use strict";
process.exitCode = require("../dist/cli.js").main(process.argv.slice(2));

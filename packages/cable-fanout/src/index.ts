// The package is its CLI (bin/cable-fanout.js); no other package imports its internals, so the
// entry point exports only the CLI's main.
export { main } from "./cli.js";

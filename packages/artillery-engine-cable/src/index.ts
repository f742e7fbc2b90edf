import { CableEngine } from "./engine.js";

// Artillery loads engines with import() and takes `ns.default ?? ns`: a CommonJS `module.exports`
// is what it needs (tsc's `exports.default` is "not a constructor").
export = CableEngine;

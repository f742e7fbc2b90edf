export { Plugin, LEGACY_METRICS_FORMAT } from "./plugin.js";

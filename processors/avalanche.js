// Processor functions for scenarios/avalanche.yml: one client's time from asking for the socket to
// its subscription's confirmation, which websocket-bench reports per wave.
const { performance } = require("node:perf_hooks");

function startClock(context, _events, done) {
  context.vars.avalancheStartedAt = performance.now();
  done();
}

function recordConnectToConfirm(context, events, done) {
  events.emit("histogram", "cable.connect_to_confirm", performance.now() - context.vars.avalancheStartedAt);
  done();
}

module.exports = { startClock, recordConnectToConfirm };

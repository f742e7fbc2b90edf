// Processor functions for the capacity scenarios (scenarios/capacity-*.yml), which
// `cable-fanout capacity` runs as a stair. Each user loops `whileTrue: capacityRunning`: the loop
// ends when the search says stop (its probe plugin, in Artillery's main thread, tells every worker
// thread over a BroadcastChannel), or after `capacity_max_s` seconds (config.variables) at the
// latest, so that the same scenario also ends on its own under a plain `artillery run`.
const { BroadcastChannel } = require("node:worker_threads");

let stopped = false;
const channel = new BroadcastChannel("cable-capacity");
channel.onmessage = (event) => {
  if (event.data === "stop") stopped = true;
};
// A channel that nobody closes must not keep a worker thread alive.
channel.unref();

/** Artillery's `whileTrue`: called after each pass of the loop; `next(false)` ends it. */
function capacityRunning(context, next) {
  const now = Date.now();
  if (context.vars.capacity_since === undefined) context.vars.capacity_since = now;
  const maxMs = (Number(context.vars.capacity_max_s) || 3600) * 1000;
  next(!stopped && now - context.vars.capacity_since < maxMs);
}

/** Joins one of `rooms` rooms (config.variables.rooms), spread evenly by a random pick. */
function pickCapacityRoom(context, _events, done) {
  const rooms = Number(context.vars.rooms) || 10;
  context.vars.room = `room-${1 + Math.floor(Math.random() * rooms)}`;
  done();
}

module.exports = { capacityRunning, pickCapacityRoom };

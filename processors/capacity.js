// Processor functions for the capacity scenarios (scenarios/capacity-*.yml), which
// `cable-fanout capacity` runs as a stair. Each user loops `whileTrue: capacityRunning`: the loop
// ends when the search says stop (its probe plugin, in Artillery's main thread, tells every worker
// thread over a BroadcastChannel), or after `capacity_max_s` seconds (config.variables) at the
// latest, so that the same scenario also ends on its own under a plain `artillery run`.
//
// Each pass of the loop sends `capacity_sends` messages (0 or 1, a loop count), then `capacityPace`
// decides the next pass and how long to listen before it (`capacity_turn_s`):
//  - by users (the default): a send in `capacity_send_percent` % of the turns (5), turns of
//    `capacity_turn_s` seconds (2): the message rate grows with the users;
//  - by rate (`cable-fanout capacity --vary rate`, or -v '{"capacity_users": 200, "capacity_rate": 50}'):
//    `capacity_rate` messages a second from `capacity_users` users together (every region), so each
//    user sends once every capacity_users / capacity_rate seconds, on its own schedule that starts
//    at a random point of its first interval (so that the sends spread evenly over the second).
const { BroadcastChannel } = require("node:worker_threads");

let stopped = false;
const channel = new BroadcastChannel("cable-capacity");
channel.onmessage = (event) => {
  if (event.data === "stop") stopped = true;
};
// A channel that nobody closes must not keep a worker thread alive.
channel.unref();

/** The longest listen between two passes: how soon a user hears the stop. */
const TURN_S = 2;

/** Artillery's `whileTrue`: called after each pass of the loop; `next(false)` ends it. */
function capacityRunning(context, next) {
  const now = Date.now();
  if (context.vars.capacity_since === undefined) context.vars.capacity_since = now;
  const maxMs = (Number(context.vars.capacity_max_s) || 3600) * 1000;
  next(!stopped && now - context.vars.capacity_since < maxMs);
}

/** Joins one of `rooms` rooms (config.variables.rooms), spread evenly by a random pick; nothing is sent before the first pace. */
function pickCapacityRoom(context, _events, done) {
  const rooms = Number(context.vars.rooms) || 10;
  context.vars.room = `room-${1 + Math.floor(Math.random() * rooms)}`;
  context.vars.capacity_sends = 0;
  context.vars.capacity_turn_s = 0;
  done();
}

/** Sets `capacity_sends` (this user's sends in the next pass) and `capacity_turn_s` (how long to listen until then). */
function capacityPace(context, _events, done) {
  const vars = context.vars;
  const rate = Number(vars.capacity_rate);
  const users = Number(vars.capacity_users);
  if (!(rate > 0 && users > 0)) {
    const percent = vars.capacity_send_percent === undefined ? 5 : Number(vars.capacity_send_percent);
    vars.capacity_sends = Math.random() * 100 < percent ? 1 : 0;
    vars.capacity_turn_s = TURN_S;
    return done();
  }
  const now = Date.now();
  const intervalMs = (1000 * users) / rate;
  if (vars.capacity_next_send === undefined) vars.capacity_next_send = now + Math.random() * intervalMs;
  // A user that fell behind (a send that took longer than its interval) skips what it missed
  // rather than bursting: the step's measured send rate shows the shortfall.
  if (vars.capacity_next_send < now - intervalMs) vars.capacity_next_send = now;
  const untilMs = vars.capacity_next_send - now;
  if (untilMs <= TURN_S * 1000) {
    vars.capacity_sends = 1;
    vars.capacity_turn_s = Math.max(0, untilMs) / 1000;
    vars.capacity_next_send += intervalMs;
  } else {
    vars.capacity_sends = 0;
    vars.capacity_turn_s = TURN_S;
  }
  done();
}

module.exports = { capacityRunning, pickCapacityRoom, capacityPace };

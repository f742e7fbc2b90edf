// Processor functions for scenarios/pubsub-rooms.yml (Artillery's `function` step).

/** Joins one of `rooms` rooms at random (config.variables.rooms, default 100), as the RelayBox test does. */
function pickRoom(context, _events, done) {
  const rooms = Number(context.vars.rooms) || 100;
  context.vars.room = `room-${1 + Math.floor(Math.random() * rooms)}`;
  done();
}

module.exports = { pickRoom };

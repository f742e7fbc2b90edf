// Processor for the benchmark's Artillery scenarios: every VU listens until the same wall-clock
// deadline (BENCH_DEADLINE, epoch ms), however late it arrived, so that the run ends soon after
// the harness has measured and no VU leaves before the broadcasts.
module.exports = {
  /** A user that arrives and leaves (bench/whole-process.mjs's arrivals): what a VU costs by itself. */
  arrive(_context, _events, done) {
    done();
  },
  untilDeadline(context, _events, done) {
    const seconds = Math.max(0.1, (Number(process.env.BENCH_DEADLINE) - Date.now()) / 1000);
    context.vars.listenFor = seconds.toFixed(3);
    context.vars.listenForMs = Math.round(seconds * 1000);
    done();
  },
  /** The RelayBox replay's rooms (seeds/004): one of `rooms` at random, private so that each subscription is signed. */
  pickPrivateRoom(context, _events, done) {
    context.vars.room = `private-room-${1 + Math.floor(Math.random() * (Number(context.vars.rooms) || 100))}`;
    done();
  },
};

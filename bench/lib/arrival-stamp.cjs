// Processor for the arrival-accuracy runs: the first step of every VU records when it started
// (epoch ms, sub-millisecond) and nothing else, so the run measures Artillery's arrival timer
// with the cable engine loaded and nothing in its way. Buffered, flushed to BENCH_ARRIVALS_FILE
// every 250 ms and when the worker thread exits.
const { appendFileSync } = require("node:fs");

const file = process.env.BENCH_ARRIVALS_FILE;
let pending = [];
function flush() {
  if (!file || pending.length === 0) return;
  appendFileSync(file, `${pending.join("\n")}\n`);
  pending = [];
}
setInterval(flush, 250).unref();
process.on("exit", flush);

module.exports = {
  stampArrival(_context, _events, done) {
    pending.push((performance.timeOrigin + performance.now()).toFixed(3));
    done();
  },
};

// Processor functions for scenarios/avalanche.yml and scenarios/pusher-avalanche.yml: clients
// connect in waves of a fixed size, as websocket-bench's `connect --concurrent N` does, and each
// client's time from asking for the socket to its subscription's confirmation is recorded.
//
// The flow is: waitForWave, startClock, connect, subscribe, recordConnectToConfirm, waveDone, …
//
// waitForWave: each VU takes a ticket in arrival order and waits. Tickets are grouped into waves of
// `wave` VUs (a variable, default 2000). A wave is released all at once when
//   - it is closed: it holds `wave` VUs, or no VU has arrived for `wave_idle` s (default 0.5: the
//     step's last, partial wave, or a run smaller than one wave), and
//   - the wave before it has finished: every one of its VUs has called waveDone (subscribed) or
//     failed, or `wave_timeout` s (default 30) have passed since it was released.
// A VU that arrives after a gap of `wave_idle` s starts a new step: the waves never mix two steps.
// Failed VUs: a processor gets no per-VU hook when a VU fails, but the engine emits one `error` on the
// thread's shared events for every VU that ends on a failure; each one counts as a finished VU of the
// oldest wave still in flight. An error that is not a VU's end (a malformed frame, or a held VU of an
// earlier step that the server drops meanwhile) is counted too, and releases the next wave early by
// that much: `wave_timeout` is the bound for whatever still goes uncounted. All waiting ends by itself:
// every wave is released at most `wave_timeout` s after the one before it, and the gate keeps no
// timer once no VU waits.
//
// Per thread: the gate is this module's state, and every Artillery worker thread loads its own copy
// of the processor (its own module registry), so the waves are per worker thread; threads cannot
// share a counter without a round trip through the main thread. An `arrivalCount` phase, as in both
// avalanche scenarios, runs wholly on Artillery's first worker thread (Artillery's divideWork pauses
// the others), so one Artillery process has one gate and the shape is websocket-bench's exactly.
// With `arrivalRate` phases the arrivals are split over Artillery's W worker threads (cores − 1, at
// least 1), each with a gate of its own: W × `wave` connect at once; set `wave` to N / W for N.
// Several generators (`cable-fanout run --count K`, or several regions) each run the whole scenario
// with a gate of their own: for websocket-bench's shape use one (`--count 1`), or divide both the
// steps' arrivalCount and `wave` by the number of generators.
//
// Metrics: cable.connect_to_confirm (ms, per VU, from startClock to the confirmation: TCP connect
// included); avalanche.step_<n>.connect_to_confirm, the same per step (websocket-bench's per-step rtt,
// whatever 10 s period a step falls in); avalanche.wave_duration (ms, one sample per wave: from its
// release to its last VU's confirmation or failure); counters avalanche.waves (waves released) and
// avalanche.wave_timeouts (waves released because the wave before had not finished in wave_timeout).
const { performance } = require("node:perf_hooks");

const DEFAULTS = { wave: 2000, wave_timeout: 30, wave_idle: 0.5 };

/** This thread's gate. */
const gate = {
  /** Waves not yet released, oldest first; only the last one may still take tickets. */
  pending: [],
  /** Released waves that have not finished, oldest first. */
  inFlight: [],
  /** Released waves by number, until they finish (waveDone finds its wave here). */
  byNumber: new Map(),
  /** The wave released last: the next one waits for it. */
  lastReleased: undefined,
  lastArrival: undefined,
  waves: 0,
  steps: 0,
  timer: undefined,
  /** The settings of the last ticket (the same for every VU of a run). */
  settings: undefined,
  events: undefined,
  listening: new WeakSet(),
};

function setting(context, name, integer) {
  const raw = context.vars[name];
  const value = raw === undefined || raw === "" ? DEFAULTS[name] : Number(raw);
  if (!Number.isFinite(value) || value <= 0 || (integer && !Number.isInteger(value))) {
    throw new Error(`avalanche: the variable "${name}" must be a positive ${integer ? "integer" : "number"}, not ${JSON.stringify(raw)}`);
  }
  return value;
}

function closeIfIdle(now) {
  const tail = gate.pending[gate.pending.length - 1];
  if (tail && !tail.closed && now - gate.lastArrival >= gate.settings.idleMs) tail.closed = true;
}

function release(wave, now, afterTimeout) {
  gate.pending.shift();
  wave.releasedAt = now;
  wave.size = wave.waiters.length;
  gate.lastReleased = wave;
  gate.inFlight.push(wave);
  gate.byNumber.set(wave.number, wave);
  gate.events.emit("counter", "avalanche.waves", 1);
  if (afterTimeout) gate.events.emit("counter", "avalanche.wave_timeouts", 1);
  const waiters = wave.waiters;
  wave.waiters = undefined;
  for (const go of waiters) go();
}

/** Releases what may go now, and arms one timer for the next thing that can change that. */
function pump() {
  clearTimeout(gate.timer);
  gate.timer = undefined;
  const now = performance.now();
  closeIfIdle(now);
  const { timeoutMs, idleMs } = gate.settings;
  while (gate.pending.length > 0) {
    const next = gate.pending[0];
    if (!next.closed) {
      gate.timer = setTimeout(pump, Math.max(0, gate.lastArrival + idleMs - now) + 1);
      return;
    }
    const before = gate.lastReleased;
    const waiting = before !== undefined && before.finishedAt === undefined;
    if (waiting && now - before.releasedAt < timeoutMs) {
      gate.timer = setTimeout(pump, before.releasedAt + timeoutMs - now + 1);
      return;
    }
    release(next, now, waiting);
  }
}

function finish(wave) {
  wave.finished++;
  if (wave.finished < wave.size || wave.finishedAt !== undefined) return;
  wave.finishedAt = performance.now();
  gate.events.emit("histogram", "avalanche.wave_duration", wave.finishedAt - wave.releasedAt);
  gate.inFlight.splice(gate.inFlight.indexOf(wave), 1);
  gate.byNumber.delete(wave.number);
  if (gate.pending.length > 0) pump();
}

/** One `error` per failed VU: it finished, unconfirmed, as part of the oldest wave in flight. */
function onError() {
  const wave = gate.inFlight.find((w) => w.finished < w.size);
  if (wave) finish(wave);
}

function waitForWave(context, events, done) {
  let settings;
  try {
    settings = { size: setting(context, "wave", true), timeoutMs: setting(context, "wave_timeout") * 1000, idleMs: setting(context, "wave_idle") * 1000 };
  } catch (err) {
    return done(err);
  }
  gate.settings = settings;
  gate.events = events;
  if (!gate.listening.has(events)) {
    gate.listening.add(events);
    events.on("error", onError);
  }
  const now = performance.now();
  if (gate.lastArrival !== undefined) closeIfIdle(now);
  if (gate.lastArrival === undefined || now - gate.lastArrival >= settings.idleMs) gate.steps++;
  gate.lastArrival = now;
  let tail = gate.pending[gate.pending.length - 1];
  if (!tail || tail.closed) {
    tail = { number: ++gate.waves, waiters: [], closed: false, finished: 0 };
    gate.pending.push(tail);
  }
  tail.waiters.push(() => done());
  if (tail.waiters.length >= settings.size) tail.closed = true;
  context.vars.avalancheWave = tail.number;
  context.vars.avalancheStep = gate.steps;
  // A ticket changes what may go only when it fills a wave or nothing is scheduled yet; an idle
  // timer armed before it re-arms itself from the new last arrival.
  if (tail.closed || gate.timer === undefined) pump();
}

function waveDone(context, _events, done) {
  const wave = gate.byNumber.get(context.vars.avalancheWave);
  if (wave && !context.vars.avalancheWaveDone) {
    context.vars.avalancheWaveDone = true;
    finish(wave);
  }
  done();
}

function startClock(context, _events, done) {
  context.vars.avalancheStartedAt = performance.now();
  done();
}

function recordConnectToConfirm(context, events, done) {
  const ms = performance.now() - context.vars.avalancheStartedAt;
  events.emit("histogram", "cable.connect_to_confirm", ms);
  if (context.vars.avalancheStep !== undefined) events.emit("histogram", `avalanche.step_${context.vars.avalancheStep}.connect_to_confirm`, ms);
  done();
}

module.exports = { waitForWave, waveDone, startClock, recordConnectToConfirm };

// Preloaded into every measured process and its worker threads (NODE_OPTIONS="--expose-gc
// --require …"): SIGUSR2 makes every thread run a full garbage collection, so that the harness
// samples RSS with live memory only. Without it, Artillery's start-up garbage (about 50 MB, freed
// by whichever GC comes next) swamps the few MB that hundreds of idle connections add.
const { BroadcastChannel, isMainThread } = require("node:worker_threads");

const channel = new BroadcastChannel("cable-bench-gc");
channel.unref();
channel.onmessage = () => globalThis.gc?.();
if (isMainThread) {
  process.on("SIGUSR2", () => {
    channel.postMessage("gc");
    globalThis.gc?.();
  });
}

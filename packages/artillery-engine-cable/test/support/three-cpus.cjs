// Preloaded into `artillery run` by a test: Artillery spawns os.cpus().length − 1 worker threads,
// so on a 2-core machine it would run one; this makes it run three.
const os = require("node:os");
const cpus = os.cpus();
os.cpus = () => [cpus[0], cpus[0], cpus[0], cpus[0]];

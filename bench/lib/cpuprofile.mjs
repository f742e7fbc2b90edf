// Summarising V8 CPU profiles (.cpuprofile, written by --cpu-prof for the main thread and each
// worker thread): self time per function within a time window, and per area of the code.

/** Which part of the stack a function belongs to, from its script URL. */
export function areaOf(url, functionName) {
  if (!url) return functionName.startsWith("(") ? functionName : "native";
  // ws first: the engine's own copy lives under artillery-engine-cable/node_modules/ws.
  if (/node_modules\/ws\//.test(url)) return "ws";
  if (url.includes("artillery-engine-cable")) return "engine";
  if (/node_modules\/(artillery|@artilleryio)/.test(url) || url.includes("/artillery/")) return "artillery";
  if (url.startsWith("node:")) return "node";
  return "other";
}

/**
 * Self time (µs) per function of one profile, counting only samples whose timestamp falls in one
 * of `windows` ({hrStartUs, hrEndUs}, CLOCK_MONOTONIC µs like the profile's); all samples when no
 * window is given. Returns [{key, functionName, location, area, selfUs}].
 */
export function selfTimes(profile, windows) {
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  const totals = new Map();
  let t = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i];
    // A sample's time is the interval up to the next sample.
    const duration = profile.timeDeltas[i + 1] ?? 0;
    if (windows && !windows.some((w) => t >= w.hrStartUs && t <= w.hrEndUs)) continue;
    const { callFrame } = nodes.get(profile.samples[i]);
    const location = callFrame.url ? `${shortUrl(callFrame.url)}:${callFrame.lineNumber + 1}` : "";
    const key = `${callFrame.functionName || "(anonymous)"} ${location}`;
    const entry = totals.get(key) ?? { key, functionName: callFrame.functionName || "(anonymous)", location, area: areaOf(callFrame.url, callFrame.functionName), selfUs: 0 };
    entry.selfUs += duration;
    totals.set(key, entry);
  }
  return [...totals.values()];
}

/** Adds up several profiles' self times (the threads of one process) and sorts them, largest first. */
export function mergeSelfTimes(lists) {
  const totals = new Map();
  for (const entry of lists.flat()) {
    const prior = totals.get(entry.key);
    totals.set(entry.key, prior ? { ...prior, selfUs: prior.selfUs + entry.selfUs } : { ...entry });
  }
  return [...totals.values()].sort((a, b) => b.selfUs - a.selfUs);
}

export function byArea(entries) {
  const areas = {};
  for (const e of entries) areas[e.area] = (areas[e.area] ?? 0) + e.selfUs;
  return Object.entries(areas).sort((a, b) => b[1] - a[1]);
}

function shortUrl(url) {
  const m = /node_modules\/(.*)$/.exec(url) ?? /packages\/(.*)$/.exec(url);
  return m ? m[1] : url.replace(/^file:\/\//, "");
}

export { startTarget, SERVER_SOFTWARE, type LocalTarget } from "./target.js";
export { parseTargetOptions, DEFAULT_PUSHER_APP, DEFAULT_STREAMS_SECRET, type TargetOptions } from "./options.js";
export { parseFaults, type FaultConfig, type ChannelFaults } from "./faults.js";
export { signStreamName, verifySignedStreamName } from "./anycable/signed-streams.js";
export { channelAuth, apiSignature, apiStringToSign, md5Hex } from "./pusher/signatures.js";
export type { CounterSnapshot } from "./counters.js";

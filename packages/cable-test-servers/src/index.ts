export { freePort, spawnServer, type RunningServer } from "./process.js";
export { startRails, type RailsServer } from "./rails.js";
export { startSockudo, sockudoBinary, type SockudoServer } from "./sockudo.js";
export { startAnyCable, anycableBinary, type AnyCableOptions, type AnyCableServer } from "./anycable.js";
export { establishedConnections, establishedPeers, waitForConnections } from "./connections.js";
export { startTcpProxy, type TcpProxy } from "./proxy.js";
export { counter, runArtillery, samples, type ArtilleryRun, type ArtilleryReport, type RunOptions } from "./artillery.js";
export { makeTestCa, startTlsTerminator, type TestCa, type TlsTerminator } from "./tls.js";

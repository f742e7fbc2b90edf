import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from "node:dns";
import { BlockList, isIP } from "node:net";
import { CableError } from "./errors.js";

// Where the engine never connects, for HTTP calls (sidecall.ts) and sockets (socket.ts) alike.

/**
 * Where no request of a user goes, whoever names it (a scenario's URL, a captured value, a
 * redirect, a name that resolves there): link-local addresses, among them the cloud's metadata
 * services, where a Fargate task reads its role's credentials (169.254.170.2) and an EC2 instance
 * its own (169.254.169.254, and fd00:ec2::254 over IPv6). IPv4-mapped IPv6 forms match too.
 */
const REFUSED = new BlockList();
REFUSED.addSubnet("169.254.0.0", 16, "ipv4");
REFUSED.addSubnet("fe80::", 10, "ipv6");
REFUSED.addAddress("fd00:ec2::254", "ipv6");

export function isRefusedAddress(ip: string): boolean {
  const family = isIP(ip);
  return family !== 0 && REFUSED.check(ip, family === 6 ? "ipv6" : "ipv4");
}

/** The code of an address the guard refused after DNS, mapped to `cable.http_address_refused`. */
export const ADDRESS_REFUSED = "ERR_CABLE_ADDRESS_REFUSED";

const refusedError = (host: string, address: string) =>
  Object.assign(new Error(`${host} resolves to ${address}, a link-local or metadata address`), { code: ADDRESS_REFUSED });

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;
type Lookup = (hostname: string, options: LookupOptions, callback: LookupCallback) => void;

/**
 * dns.lookup, refusing a name that resolves to a REFUSED address: checked on the address the socket
 * then connects to, so that a name resolving elsewhere at the check and here at the connect cannot
 * pass either.
 */
export const lookupRefusing = (resolve: Lookup = dnsLookup as Lookup): Lookup => (hostname, options, callback) => {
  resolve(hostname, options, (err, address, family) => {
    if (err) return callback(err, address, family);
    const list = typeof address === "string" ? [{ address, family: family ?? 4 }] : address;
    const refused = list.find((a) => isRefusedAddress(a.address));
    if (refused) return callback(refusedError(hostname, refused.address), address, family);
    callback(null, address, family);
  });
};
export const guardedLookup = lookupRefusing();

/** An IP literal in a URL's host (`[fe80::1]` without its brackets). */
const hostAddress = (url: URL) => url.hostname.replace(/^\[(.*)\]$/, "$1");

/** Refuses a URL whose host is a REFUSED address, before any socket; names are checked at their lookup. */
export function checkDestination(url: string): void {
  const u = new URL(url);
  const host = hostAddress(u);
  if (isRefusedAddress(host)) throw new CableError("http_address_refused", `refused: ${u.protocol}//${u.host} is a link-local or metadata address`);
}

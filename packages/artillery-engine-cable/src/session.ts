import { Cookie, CookieJar, MemoryCookieStore } from "tough-cookie";

/**
 * The caps a browser puts on its jar, so that an app (or a hostile server) cannot make a virtual
 * user carry more than a browser would: RFC 6265 §6.1 asks a user agent for at least 4096 bytes a
 * cookie, 50 a domain and 3000 in all; Chromium keeps 180 a domain and 3300 in all
 * (net/cookies/cookie_monster.cc kDomainMaxCookies, kMaxCookies) and refuses a name and value over
 * 4096 bytes (kMaxCookieNamePlusValueSize); Firefox keeps 180 a host and 3000 in all
 * (network.cookie.maxPerHost, network.cookie.maxNumber). The oldest of a domain goes first.
 */
export const COOKIE_CAPS = {
  /** Name and value of one cookie, in bytes: a longer one is refused. */
  bytesPerCookie: 4096,
  perDomain: 180,
  perUser: 3000,
  /**
   * The `Cookie` header of one request or upgrade, in bytes: Node's own HTTP server refuses a
   * request whose headers pass 16 KiB (`--max-http-header-size`), nginx a header line over 8 KiB
   * (large_client_header_buffers): a bigger one reaches no server. The jar's cookies beyond it are
   * left off, most specific path and oldest first kept (RFC 6265 §5.4's order).
   */
  headerBytes: 16 * 1024,
} as const;

/** Called with the number of cookies the jar refused, evicted, or left off a header over its caps. */
export type OnDropped = (count: number) => void;

/**
 * One virtual user's browser-side state: its cookie jar. HTTP steps fill it from every answer's
 * `Set-Cookie` (redirects included); the WebSocket upgrade, the Pusher `authEndpoint` and every other
 * HTTP call of the user send from it, by RFC 6265's domain, path and Secure rules (tough-cookie,
 * the jar Artillery's own HTTP engine uses). Cookies ignore ports, as browsers do: a session cookie
 * set by the app on :8000 goes with the socket to :8080 on the same host, and Secure ones only over
 * https and wss. Bounded as a browser's jar is (COOKIE_CAPS).
 */
export class Session {
  private readonly cookieStore = new MemoryCookieStore();
  private readonly jar = new CookieJar(this.cookieStore);
  private count = 0;

  constructor(private readonly onDropped: OnDropped = () => {}) {}

  /** The `Cookie` header the user's browser would send to `url`, if any, within COOKIE_CAPS.headerBytes. */
  cookieFor(url: string): string | undefined {
    const cookies = this.jar.getCookiesSync(url);
    if (cookies.length === 0) return undefined;
    let header = "";
    let kept = 0;
    for (const cookie of cookies) {
      const pair = cookie.cookieString();
      const next = header ? `${header}; ${pair}` : pair;
      if (Buffer.byteLength(next) > COOKIE_CAPS.headerBytes) break;
      header = next;
      kept++;
    }
    if (kept < cookies.length) this.onDropped(cookies.length - kept);
    return header || undefined;
  }

  /** Keeps an answer's `Set-Cookie` lines; one the jar refuses (a foreign domain, a bad date, over the size cap) is dropped, as a browser drops it. */
  store(url: string, setCookie: string | string[] | undefined): void {
    if (setCookie === undefined) return;
    const lines = typeof setCookie === "string" ? [setCookie] : setCookie;
    // An answer with more lines than the jar holds keeps its last ones, as the evictions would.
    const from = Math.max(0, lines.length - COOKIE_CAPS.perUser);
    let dropped = from;
    const touched = new Set<string>();
    for (let i = from; i < lines.length; i++) {
      const parsed = Cookie.parse(lines[i]);
      if (!parsed || Buffer.byteLength(parsed.key) + Buffer.byteLength(parsed.value) > COOKIE_CAPS.bytesPerCookie) {
        dropped++;
        continue;
      }
      const kept = this.jar.setCookieSync(parsed, url, { ignoreError: true });
      if (kept?.domain) touched.add(kept.domain);
    }
    dropped += this.evict(touched);
    if (dropped > 0) this.onDropped(dropped);
  }

  /** Evicts the oldest cookies of each domain over its cap, then the oldest of the user over its own; returns how many. */
  private evict(domains: Set<string>): number {
    let evicted = 0;
    let all = 0;
    for (const [domain, paths] of Object.entries(this.cookieStore.idx)) {
      const cookies = Object.values(paths ?? {}).flatMap((byKey) => Object.values(byKey ?? {}));
      if (domains.has(domain) && cookies.length > COOKIE_CAPS.perDomain) {
        evicted += this.remove(oldest(cookies, cookies.length - COOKIE_CAPS.perDomain));
        all += COOKIE_CAPS.perDomain;
      } else all += cookies.length;
    }
    this.count = all;
    if (this.count > COOKIE_CAPS.perUser) {
      const cookies = Object.values(this.cookieStore.idx).flatMap((paths) => Object.values(paths ?? {}).flatMap((byKey) => Object.values(byKey ?? {})));
      const over = this.remove(oldest(cookies, this.count - COOKIE_CAPS.perUser));
      evicted += over;
      this.count -= over;
    }
    return evicted;
  }

  private remove(cookies: Cookie[]): number {
    // MemoryCookieStore calls back at once: the sync form of its API.
    for (const c of cookies) this.cookieStore.removeCookie(c.domain!, c.path!, c.key, () => {});
    return cookies.length;
  }

  /** How many cookies the jar holds (tests, and the caps). */
  get size(): number {
    return this.count;
  }

  /**
   * The value of the readable `XSRF-TOKEN` cookie for `url`, decoded as axios decodes it before
   * sending it back as `X-XSRF-TOKEN` (Laravel's cookie is URL-encoded: its `%3D` must go back as `=`).
   */
  xsrfToken(url: string): string | undefined {
    const cookie = this.jar.getCookiesSync(url).find((c) => c.key === "XSRF-TOKEN");
    if (!cookie) return undefined;
    try {
      return decodeURIComponent(cookie.value);
    } catch {
      return cookie.value;
    }
  }
}

const oldest = (cookies: Cookie[], n: number) => [...cookies].sort((a, b) => a.creationIndex - b.creationIndex).slice(0, n);

/** Headers with the session's cookies added for `url`: a `Cookie` header the caller set keeps its own pairs after the jar's. */
export function withCookies(session: Session | undefined, url: string, headers: Record<string, string>): Record<string, string> {
  const fromJar = session?.cookieFor(url);
  if (!fromJar) return headers;
  const own = Object.keys(headers).find((k) => k.toLowerCase() === "cookie");
  if (!own) return { ...headers, Cookie: fromJar };
  const { [own]: ownCookie, ...rest } = headers;
  return { ...rest, Cookie: `${fromJar}; ${ownCookie}` };
}

/** The value of a header as Node sends it: names are case-insensitive, and of two spellings the last set wins. */
export function headerOf(headers: Record<string, string>, name: string): string | undefined {
  let value: string | undefined;
  for (const [key, v] of Object.entries(headers)) if (key.toLowerCase() === name.toLowerCase()) value = v;
  return value;
}

export const hasHeader = (headers: Record<string, string>, name: string) => headerOf(headers, name) !== undefined;

/** The headers but those named (lower case), whatever their spelling. */
export const withoutHeaders = (headers: Record<string, string>, names: ReadonlySet<string>) => Object.fromEntries(Object.entries(headers).filter(([k]) => !names.has(k.toLowerCase())));

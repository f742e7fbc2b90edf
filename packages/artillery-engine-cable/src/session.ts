import { CookieJar } from "tough-cookie";

/**
 * One virtual user's browser-side state: its cookie jar. HTTP steps fill it from every answer's
 * `Set-Cookie` (redirects included); the WebSocket upgrade, the Pusher `authEndpoint` and every other
 * HTTP call of the user send from it, by RFC 6265's domain, path and Secure rules (tough-cookie,
 * the jar Artillery's own HTTP engine uses). Cookies ignore ports, as browsers do: a session cookie
 * set by the app on :8000 goes with the socket to :8080 on the same host, and Secure ones only over
 * https and wss.
 */
export class Session {
  private readonly jar = new CookieJar();

  /** The `Cookie` header the user's browser would send to `url`, if any. */
  cookieFor(url: string): string | undefined {
    return this.jar.getCookieStringSync(url) || undefined;
  }

  /** Keeps an answer's `Set-Cookie` lines; one the jar refuses (a foreign domain, a bad date) is dropped, as a browser drops it. */
  store(url: string, setCookie: string | string[] | undefined): void {
    if (setCookie === undefined) return;
    for (const line of typeof setCookie === "string" ? [setCookie] : setCookie) {
      this.jar.setCookieSync(line, url, { ignoreError: true });
    }
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

/** Headers with the session's cookies added for `url`: a `Cookie` header the caller set keeps its own pairs after the jar's. */
export function withCookies(session: Session | undefined, url: string, headers: Record<string, string>): Record<string, string> {
  const fromJar = session?.cookieFor(url);
  if (!fromJar) return headers;
  const own = Object.keys(headers).find((k) => k.toLowerCase() === "cookie");
  if (!own) return { ...headers, Cookie: fromJar };
  const { [own]: ownCookie, ...rest } = headers;
  return { ...rest, Cookie: `${fromJar}; ${ownCookie}` };
}

export const hasHeader = (headers: Record<string, string>, name: string) => Object.keys(headers).some((k) => k.toLowerCase() === name.toLowerCase());

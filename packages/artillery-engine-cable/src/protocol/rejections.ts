// Why a server refused a subscription, as a small fixed set of causes: the counters stay bounded
// (`cable.subscription_rejected.<cause>`), whatever text a server writes, and report.md says in
// words what each cause means and where it is fixed (a server's limit, a secret, the app's code).

export const REJECT_CAUSES = ["limit_reached", "unauthorized", "app_rejected", "other"] as const;
export type RejectCause = (typeof REJECT_CAUSES)[number];

/** What a Pusher server says when it refuses: `pusher:subscription_error`'s data, or a `pusher:error`'s code and message. */
export interface PusherRefusal {
  type?: unknown;
  status?: unknown;
  code?: unknown;
  error?: unknown;
  message?: unknown;
}

/**
 * The cause of a Pusher refusal. Soketi: `{type: "LimitReached", status: 4100, error: "The maximum
 * members per presence channel limit was reached"}`, `{type: "AuthError", status: 401}`; Sockudo
 * and Reverb: `pusher:error` 4009 for a bad signature; Pusher's own: `AuthError` 401/403.
 */
export function pusherRejectCause(refusal: PusherRefusal | undefined): RejectCause {
  if (!refusal) return "other";
  const type = typeof refusal.type === "string" ? refusal.type : "";
  const status = typeof refusal.status === "number" ? refusal.status : typeof refusal.code === "number" ? refusal.code : undefined;
  const text = `${typeof refusal.error === "string" ? refusal.error : ""} ${typeof refusal.message === "string" ? refusal.message : ""}`;
  if (/limit/i.test(type) || status === 4100 || status === 4004 || /\b(limit|maximum|quota|capacity)\b/i.test(text)) return "limit_reached";
  if (/auth/i.test(type) || status === 401 || status === 403 || status === 4009 || /unauthori[sz]ed|signature|forbidden/i.test(text)) return "unauthorized";
  return "other";
}

import { z } from "zod";

/**
 * The body of AnyCable's HTTP broadcast, `POST /_broadcast` (docs/broadcasting.md, "Publication
 * format"): one publication or an array of them. `meta` is accepted; `exclude_socket` needs the
 * extended protocol's session ids, which this target does not issue yet, so it is ignored.
 */
const publication = z.object({
  stream: z.string().min(1),
  data: z.string(),
  meta: z.record(z.string(), z.unknown()).optional(),
});

const batch = z.array(publication).max(10_000);

export type Publication = z.infer<typeof publication>;

export function parseBroadcastBody(raw: string): Publication[] {
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    throw new Error("body is not JSON");
  }
  // Validated by shape rather than as a union, so that errors name the field instead of "Invalid input".
  const result = Array.isArray(json) ? batch.safeParse(json) : publication.safeParse(json);
  if (!result.success) {
    throw new Error(result.error.issues.map((i) => `${["body", ...i.path].join(".")}: ${i.message}`).join("; "));
  }
  return Array.isArray(result.data) ? result.data : [result.data];
}

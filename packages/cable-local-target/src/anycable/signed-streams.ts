import { createHmac, timingSafeEqual } from "node:crypto";

/**
 * AnyCable signed stream names (docs/signed_streams.md, "Signing algorithm", the same as Rails'
 * MessageVerifier): base64(JSON(stream)) + "--" + hex(HMAC-SHA256(secret, base64 part)).
 */
export function signStreamName(stream: string, secret: string): string {
  const encoded = Buffer.from(JSON.stringify(stream)).toString("base64");
  return `${encoded}--${createHmac("sha256", secret).update(encoded).digest("hex")}`;
}

/** The stream name a signed name stands for, or undefined if the signature does not match. */
export function verifySignedStreamName(signed: string, secret: string): string | undefined {
  const separator = signed.lastIndexOf("--");
  if (separator <= 0) return undefined;
  const encoded = signed.slice(0, separator);
  const given = Buffer.from(signed.slice(separator + 2), "utf8");
  const expected = Buffer.from(createHmac("sha256", secret).update(encoded).digest("hex"), "utf8");
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
  try {
    // The anycable gem signs with urlsafe base64 (AnyCable::Streams.signed); Node's decoder takes both alphabets.
    const stream: unknown = JSON.parse(Buffer.from(encoded, "base64").toString("utf8"));
    return typeof stream === "string" ? stream : undefined;
  } catch {
    return undefined;
  }
}

import { createHmac } from "node:crypto";

/**
 * A signed stream name, as AnyCable checks it with `--streams_secret` and as turbo-rails'
 * `signed_stream_name` makes it (anycable-go docs/signed_streams.md, "Signing algorithm"; Rails'
 * MessageVerifier): base64(JSON(stream)) + "--" + hex(HMAC-SHA256(secret, base64 part)).
 */
export function signStreamName(stream: string, secret: string): string {
  const encoded = Buffer.from(JSON.stringify(stream)).toString("base64");
  return `${encoded}--${createHmac("sha256", secret).update(encoded).digest("hex")}`;
}

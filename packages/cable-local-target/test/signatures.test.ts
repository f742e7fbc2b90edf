import { createHmac } from "node:crypto";
import { describe, expect, test } from "vitest";
import { signStreamName, verifySignedStreamName } from "../src/anycable/signed-streams.js";
import { apiAuthError, apiSignature, apiStringToSign, channelAuth, md5Hex, verifyChannelAuth } from "../src/pusher/signatures.js";

// Credentials of the worked examples in Pusher's docs.
const key = "278d425bdf160c739803";
const secret = "7ad3773142a6692b25b8";

describe("Pusher channel auth", () => {
  test("private channel: the worked example of pusher.com/docs/channels/library_auth_reference/auth-signatures", () => {
    expect(channelAuth(key, secret, "1234.1234", "private-foobar")).toBe(
      "278d425bdf160c739803:58df8b0c36d6982b82c3ecf6b4662e34fe8c25bba48f5369f135bf843651c3a4",
    );
  });

  test("presence channel: the worked example of the same page (channel_data signed as sent)", () => {
    const channelData = '{"user_id":10,"user_info":{"name":"Mr. Pusher"}}';
    expect(channelAuth(key, secret, "1234.1234", "presence-foobar", channelData)).toBe(
      "278d425bdf160c739803:afaed3695da2ffd16931f457e338e6c9f2921fa133ce7dac49f529792be6304c",
    );
  });

  test("verification refuses another socket, another channel, another key, and non-strings", () => {
    const auth = channelAuth(key, secret, "1234.1234", "private-foobar");
    expect(verifyChannelAuth(auth, key, secret, "1234.1234", "private-foobar")).toBe(true);
    expect(verifyChannelAuth(auth, key, secret, "1234.5678", "private-foobar")).toBe(false);
    expect(verifyChannelAuth(auth, key, secret, "1234.1234", "private-other")).toBe(false);
    expect(verifyChannelAuth(auth, "otherkey", secret, "1234.1234", "private-foobar")).toBe(false);
    expect(verifyChannelAuth(undefined, key, secret, "1234.1234", "private-foobar")).toBe(false);
  });
});

describe("Pusher HTTP API signature", () => {
  // pusher.com/docs/channels/library_auth_reference/rest-api, "Worked authentication example".
  const body = '{"name":"foo","channels":["project-3"],"data":"{\\"some\\":\\"data\\"}"}';
  const params = { auth_key: key, auth_timestamp: "1353088179", auth_version: "1.0", body_md5: "ec365a775a4cd0599faeb73354201b6f" };

  test("body_md5 and the signature of the worked example", () => {
    expect(md5Hex(body)).toBe("ec365a775a4cd0599faeb73354201b6f");
    expect(apiStringToSign("POST", "/apps/3/events", params)).toBe(
      "POST\n/apps/3/events\nauth_key=278d425bdf160c739803&auth_timestamp=1353088179&auth_version=1.0&body_md5=ec365a775a4cd0599faeb73354201b6f",
    );
    expect(apiSignature(secret, "POST", "/apps/3/events", params)).toBe("da454824c97ba181a32ccc17a72625ba02771f50b50e1e7430e47a1f3f457e6c");
  });

  test("the signed string sorts lower-cased keys and ignores auth_signature", () => {
    expect(apiStringToSign("post", "/p", { b: "2", A: "1", auth_signature: "x" })).toBe("POST\n/p\na=1&b=2");
  });

  test("verification: the worked example passes at its own time, and each tampering fails", () => {
    const request = { method: "POST", path: "/apps/3/events", params: { ...params, auth_signature: "da454824c97ba181a32ccc17a72625ba02771f50b50e1e7430e47a1f3f457e6c" }, body };
    expect(apiAuthError(request, key, secret, 1353088179)).toBeUndefined();
    expect(apiAuthError(request, key, secret, 1353088179 + 601)).toMatch(/Timestamp expired/);
    expect(apiAuthError({ ...request, body: body.replace("foo", "bar") }, key, secret, 1353088179)).toMatch(/body_md5/);
    expect(apiAuthError({ ...request, path: "/apps/4/events" }, key, secret, 1353088179)).toMatch(/Invalid signature/);
    expect(apiAuthError(request, "otherkey", secret, 1353088179)).toMatch(/auth_key/);
    expect(apiAuthError(request, key, "othersecret", 1353088179)).toMatch(/Invalid signature/);
  });
});

describe("AnyCable signed stream names", () => {
  test("match the algorithm of AnyCable's docs (signed_streams.md, Node.js version)", () => {
    const encoded = Buffer.from(JSON.stringify("chat/2024")).toString("base64");
    const digest = createHmac("sha256", "s3cret").update(encoded).digest("hex");
    expect(signStreamName("chat/2024", "s3cret")).toBe(`${encoded}--${digest}`);
    expect(encoded).toBe("ImNoYXQvMjAyNCI=");
  });

  test("verify round-trips and refuses a wrong secret or a tampered name", () => {
    const signed = signStreamName("notifications/17", "s3cret");
    expect(verifySignedStreamName(signed, "s3cret")).toBe("notifications/17");
    expect(verifySignedStreamName(signed, "other")).toBeUndefined();
    const [encoded, digest] = signed.split("--");
    const tampered = Buffer.from(JSON.stringify("notifications/18")).toString("base64");
    expect(verifySignedStreamName(`${tampered}--${digest}`, "s3cret")).toBeUndefined();
    expect(verifySignedStreamName(encoded, "s3cret")).toBeUndefined();
  });

  test("accepts the anycable gem's urlsafe base64 too", () => {
    // A stream whose JSON encodes to base64 with "+" or "/" in it: "??>" gives "Ij8/PiI=".
    const stream = "??>";
    const urlsafe = Buffer.from(JSON.stringify(stream)).toString("base64url") + "=";
    const digest = createHmac("sha256", "s3cret").update(urlsafe).digest("hex");
    expect(urlsafe).toContain("_");
    expect(verifySignedStreamName(`${urlsafe}--${digest}`, "s3cret")).toBe(stream);
  });
});

// report.md says what a certificate error means and what to do, under the table, for the keys counted.
import { describe, expect, it } from "vitest";
import { renderMarkdown } from "../src/markdown.js";
import { ServerWordsSample } from "../src/plugin.js";
import { mergeRegions } from "../src/results.js";
import { taskOf } from "./fixtures.js";

const run = (counters: Record<string, number>) =>
  mergeRegions([{ name: "eu-west-2", files: ["t.json"], tasks: [taskOf({ counters: { "vusers.created": 20, ...counters }, histograms: {} }, "t.json")] }]);

describe("error hints", () => {
  it("explains each TLS key the run counted, and nothing when none", () => {
    const md = renderMarkdown(run({ "vusers.failed": 20, "errors.cable.tls_untrusted": 20 }));
    expect(md).toContain("**What the errors mean**");
    expect(md).toContain("- `cable.tls_untrusted` (20): the server's certificate is not signed by a CA Node trusts");
    expect(md).toContain("`config.tls.ca: ./ca.pem`");
    expect(md).not.toContain("cable.tls_hostname");
    expect(renderMarkdown(run({ "vusers.completed": 20 }))).not.toContain("What the errors mean");
  });

  it("says why subscriptions were refused, by cause, and which setting raises a server's limit", () => {
    const md = renderMarkdown(
      run({
        "vusers.failed": 820,
        "errors.cable.subscription_rejected": 820,
        "cable.subscription_rejected.limit_reached": 800,
        "cable.subscription_rejected.unauthorized": 20,
      }),
    );
    expect(md).toContain("- `cable.subscription_rejected` (820): the server refused subscriptions");
    expect(md).toContain("  - `limit_reached` (800): a server limit: presence members per channel (Soketi allows 100 unless `SOKETI_PRESENCE_MAX_MEMBERS` raises it");
    expect(md).toContain("  - `unauthorized` (20): the signature did not verify");
    expect(md.indexOf("`limit_reached`")).toBeLessThan(md.indexOf("`unauthorized`"));
    expect(md).not.toContain("`app_rejected`");
  });

  it("names the app's own reject for Action Cable, and Pusher's error codes", () => {
    const md = renderMarkdown(run({ "errors.cable.subscription_rejected": 5, "cable.subscription_rejected.app_rejected": 5, "errors.cable.pusher_4100": 3 }));
    expect(md).toContain("  - `app_rejected` (5): the app's own channel refused it");
    expect(md).toContain("- `cable.pusher_4100` (3): the server is over capacity");
    const restart = renderMarkdown(run({ "errors.cable.server_disconnect": 7, "cable.server_disconnect.server_restart": 6, "cable.server_disconnect.other": 1 }));
    expect(restart).toContain("  - `server_restart` (6): the server restarted");
    expect(restart).toContain("  - `other` (1): a reason the engine does not name");
  });

  it("quotes the server's own words under their cause, and only there", () => {
    const merged = run({ "errors.cable.subscription_rejected": 4, "cable.subscription_rejected.limit_reached": 3, "cable.subscription_rejected.other": 1 });
    merged.serverWords = [
      { error: "cable.subscription_rejected", cause: "limit_reached", text: "The maximum members per presence channel limit was reached" },
      { error: "cable.subscription_rejected", cause: "other", text: "weird `thing` | here" },
      { error: "cable.server_disconnect", cause: "other", text: "not counted in this run" },
    ];
    const md = renderMarkdown(merged);
    expect(md).toContain('raises it; Sockudo `presence.max_members_per_channel`), or connections per app');
    // Quoted in code spans, which GitHub renders inert (src/text.ts).
    expect(md).toContain(". The server said: `The maximum members per presence channel limit was reached`");
    expect(md).toContain("The server said: ``weird `thing` | here``");
    expect(md).not.toContain("not counted in this run");
  });
});

describe("the plugin's sample of the server's words", () => {
  it("keeps each distinct text once, three per error and cause, and ignores anything else on the log", () => {
    const sample = new ServerWordsSample();
    for (let i = 0; i < 5; i++) sample.offer({ error: "cable.subscription_rejected", cause: "other", text: `t${i % 4}` });
    sample.offer({ error: "cable.subscription_rejected", cause: "other", text: "t0" });
    sample.offer(undefined);
    sample.offer({ error: 1, cause: "x", text: "y" });
    sample.offer({ error: "cable.server_disconnect", cause: "other", text: "t0" });
    expect(sample.list()).toEqual([
      { error: "cable.subscription_rejected", cause: "other", text: "t0" },
      { error: "cable.subscription_rejected", cause: "other", text: "t1" },
      { error: "cable.subscription_rejected", cause: "other", text: "t2" },
      { error: "cable.server_disconnect", cause: "other", text: "t0" },
    ]);
  });
});

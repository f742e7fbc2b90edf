// report.md says what a certificate error means and what to do, under the table, for the keys counted.
import { describe, expect, it } from "vitest";
import { renderMarkdown } from "../src/markdown.js";
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
});

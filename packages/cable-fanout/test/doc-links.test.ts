import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

// The documentation holds together: every relative link in the root README, docs/*.md, the packages'
// READMEs and infra/README.md points to a file that exists (and, into a markdown page, to a heading
// it has, by GitHub's anchor rule); the root README stays short and links every page of docs/.
const ROOT = path.resolve(__dirname, "../../..");

function docFiles(): string[] {
  const docs = readdirSync(path.join(ROOT, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => `docs/${f}`);
  const packages = readdirSync(path.join(ROOT, "packages"))
    .map((p) => `packages/${p}/README.md`)
    .filter((f) => existsSync(path.join(ROOT, f)));
  return ["README.md", ...docs, ...packages, "infra/README.md"];
}

/** The markdown without fenced code blocks and inline code spans (a link there is text, not a link). */
function prose(markdown: string): string {
  const lines: string[] = [];
  let fence: string | undefined;
  for (const line of markdown.split("\n")) {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (fence) {
      if (marker && marker[0] === fence[0] && marker.length >= fence.length && line.trim() === marker) fence = undefined;
      lines.push("");
      continue;
    }
    if (marker) {
      fence = marker;
      lines.push("");
      continue;
    }
    lines.push(line.replace(/(`+)[^`]*?\1/g, ""));
  }
  return lines.join("\n");
}

/** GitHub's anchors for a page's headings (github-slugger: lower case, punctuation out, spaces to hyphens, repeats numbered). */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  let fence: string | undefined;
  for (const line of markdown.split("\n")) {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (fence) {
      if (marker && marker[0] === fence[0] && line.trim() === marker) fence = undefined;
      continue;
    }
    if (marker) {
      fence = marker;
      continue;
    }
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1];
    if (heading === undefined) {
      for (const [, id] of line.matchAll(/<a\s+(?:name|id)="([^"]+)"/g)) out.add(id);
      continue;
    }
    const text = heading.replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1").replace(/<[^>]+>/g, "");
    const base = text
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, "")
      .replace(/ /g, "-");
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/** Every relative link and image of a page: [text](target), ![alt](target), [ref]: target. */
function relativeLinks(markdown: string): string[] {
  const text = prose(markdown);
  const targets = [
    ...[...text.matchAll(/!?\[(?:[^\]]|\][^(])*?\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]),
    ...[...text.matchAll(/^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$/gm)].map((m) => m[1]),
  ];
  return targets.filter((t) => !/^[a-z][a-z0-9+.-]*:/i.test(t));
}

function brokenLinks(file: string): string[] {
  const source = readFileSync(path.join(ROOT, file), "utf8");
  const broken: string[] = [];
  for (const link of relativeLinks(source)) {
    const [rawPath, fragment] = link.split("#", 2) as [string, string | undefined];
    const target = rawPath === "" ? path.join(ROOT, file) : path.resolve(path.dirname(path.join(ROOT, file)), decodeURIComponent(rawPath));
    if (!target.startsWith(ROOT + path.sep) && target !== ROOT) {
      broken.push(`${link} (outside the repository)`);
      continue;
    }
    if (!existsSync(target)) {
      broken.push(`${link} (no such file)`);
      continue;
    }
    if (fragment && target.endsWith(".md") && statSync(target).isFile()) {
      if (!anchors(readFileSync(target, "utf8")).has(decodeURIComponent(fragment).toLowerCase())) broken.push(`${link} (no heading #${fragment})`);
    }
  }
  return broken;
}

describe("the documentation's links", () => {
  it.each(docFiles())("%s: every relative link points to a file that exists, and a heading it has", (file) => {
    expect(brokenLinks(file)).toEqual([]);
  });

  it("README.md is short (under 220 lines) and links every page of docs/", () => {
    const readme = readFileSync(path.join(ROOT, "README.md"), "utf8");
    expect(readme.trimEnd().split("\n").length).toBeLessThan(220);
    const linked = new Set(relativeLinks(readme).map((l) => path.normalize(l.split("#")[0])));
    const pages = readdirSync(path.join(ROOT, "docs")).filter((f) => f.endsWith(".md"));
    expect(pages.filter((p) => !linked.has(`docs/${p}`))).toEqual([]);
  });

  it("finds links, skips code, and computes GitHub's anchors (the checker itself)", () => {
    const page = "# `config.cable`\n## wss:// and certificates\n## Signing in as your app's users\n## A\n## A\n";
    expect([...anchors(page)]).toEqual(["configcable", "wss-and-certificates", "signing-in-as-your-apps-users", "a", "a-1"]);
    const links = relativeLinks("[a](x.md#y) ![b](img.png) `[c](not.md)`\n```\n[d](code.md)\n```\n[e](https://example.com) [f]: ref.md\n[g]: g.md\n");
    expect(links).toEqual(["x.md#y", "img.png", "g.md"]);
  });
});

// The server's words for a refusal: cleaned, bounded, logged once per distinct text (src/server-words.ts).
import { beforeEach, describe, expect, test } from "vitest";
import { cleanWords, resetServerWordsForTest, sampleServerWords, type ServerWords } from "../src/server-words.js";

describe("the server's words", () => {
  beforeEach(() => resetServerWordsForTest());

  test("one printable line, long tokens cut out, at most 160 characters", () => {
    expect(cleanWords("  The maximum members\nper presence channel\tlimit was reached ")).toBe("The maximum members per presence channel limit was reached");
    expect(cleanWords("bad signature 0123456789abcdef0123456789abcdef for app")).toBe("bad signature … for app");
    expect(cleanWords("x".repeat(10) + " " + "word ".repeat(100)).length).toBeLessThanOrEqual(160);
    // Terminal escapes go whole: colours, screen clears, OSC-8 links with their target, titles; and line breaks and bidi overrides.
    expect(cleanWords("\u0000\u001b[31m")).toBe("");
    expect(cleanWords("\u001b[2J\u001b[1;1Hlimit \u001b[1mreached\u001b[0m")).toBe("limit reached");
    expect(cleanWords("see \u001b]8;;https://evil.example\u001b\\here\u001b]8;;\u001b\\ now")).toBe("see here now");
    expect(cleanWords("\u001b]0;pwned\u0007denied \u009b31mred")).toBe("denied red");
    expect(cleanWords("denied\r\ncable: forged line \u202eoverride\u2028next")).toBe("denied cable: forged line override next");
  });

  test("each distinct text once, three per error and cause at most", () => {
    const logged: ServerWords[] = [];
    const log = (w: ServerWords) => logged.push(w);
    for (let i = 0; i < 10; i++) sampleServerWords("cable.subscription_rejected", "other", "same words", log);
    for (let i = 0; i < 10; i++) sampleServerWords("cable.subscription_rejected", "other", `words ${i}`, log);
    sampleServerWords("cable.subscription_rejected", "limit_reached", "The maximum members per presence channel limit was reached", log);
    sampleServerWords("cable.subscription_rejected", "other", "   ", log);
    expect(logged.map((w) => w.text)).toEqual(["same words", "words 0", "words 1", "The maximum members per presence channel limit was reached"]);
  });
});

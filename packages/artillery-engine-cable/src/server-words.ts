// The server's own words for a refusal (Soketi's "The maximum members per presence channel limit was
// reached", a disconnect reason the engine does not name): never a counter's name, but the first few
// distinct ones of each error and cause go to the run's log once, where the cable-report plugin keeps
// them as samples for report.md. Per worker thread; bounded in count and length.

/** Distinct texts kept per error and cause, per worker thread. */
const MAX_PER_KEY = 3;
const MAX_TEXT = 160;
/** Keys kept at most: a hostile server inventing causes cannot grow the map. */
const MAX_KEYS = 64;

const seen = new Map<string, Set<string>>();

export interface ServerWords {
  /** The error key, without `errors.` (`cable.subscription_rejected`). */
  error: string;
  cause: string;
  text: string;
}

/**
 * Terminal escape sequences whole (CSI: colours, cursor moves, screen clears; OSC: titles and
 * OSC-8 links, to BEL or ST; DCS, SOS, PM and APC strings; two-byte escapes), so that none of their
 * text is left to read as words either.
 */
const ESCAPES = /\u001b\[[0-?]*[ -/]*[@-~]?|\u009b[0-?]*[ -/]*[@-~]?|\u001b[\]PX^_][^\u0007\u001b\u009c]*(?:\u0007|\u001b\\|\u009c)?|[\u009d\u0090\u0098\u009e\u009f][^\u0007\u001b\u009c]*(?:\u0007|\u001b\\|\u009c)?|\u001b[ -~]?/g;
/** Control characters, and the invisible ones that reorder or break a line (bidi overrides, separators). */
const CONTROLS = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]+/g;

/**
 * Text from a server as one printable line: no escape sequence, control character or line break,
 * so that it cannot colour, clear or rewrite a terminal, nor forge a line of its own. Used for the
 * server's words and for every trace line (trace.ts).
 */
export function printable(raw: string): string {
  return raw.replace(ESCAPES, " ").replace(CONTROLS, " ").replace(/\s+/g, " ").trim();
}

/** One line of printable text, without long tokens (a signature, a key) a server might echo back. */
export function cleanWords(raw: string): string {
  const text = printable(raw)
    .replace(/[A-Za-z0-9+/=_-]{24,}/g, "…")
    .replace(/\s+/g, " ")
    .trim();
  return text.length > MAX_TEXT ? `${text.slice(0, MAX_TEXT - 1)}…` : text;
}

/** Logs the server's words once per distinct text (up to MAX_PER_KEY per error and cause); returns what it logged. */
export function sampleServerWords(error: string, cause: string, raw: string, log: (words: ServerWords, line: string) => void = artilleryLog): ServerWords | undefined {
  return sample(error, cause, raw, (text) => `the server said ${JSON.stringify(text)}`, log);
}

/**
 * The engine's own words on a failure, sampled as the server's are (a capture that found nothing,
 * with the step, the variables and what the answer was): they hold the scenario's text and the
 * answer's status, so they go through the same rule for outside text.
 */
export function sampleWords(error: string, cause: string, raw: string, log: (words: ServerWords, line: string) => void = artilleryLog): ServerWords | undefined {
  return sample(error, cause, raw, (text) => text, log);
}

function sample(error: string, cause: string, raw: string, say: (text: string) => string, log: (words: ServerWords, line: string) => void): ServerWords | undefined {
  const text = cleanWords(raw);
  if (!text) return undefined;
  const key = `${error} ${cause}`;
  let texts = seen.get(key);
  if (!texts) {
    if (seen.size >= MAX_KEYS) return undefined;
    seen.set(key, (texts = new Set()));
  }
  if (texts.has(text) || texts.size >= MAX_PER_KEY) return undefined;
  texts.add(text);
  const words = { error, cause, text };
  log(words, `cable: ${error} (${cause}): ${say(text)}`);
  return words;
}

const explained = new Set<string>();

/**
 * The first failure of a name with a hint (error-names.ts) says the hint once per worker thread,
 * so that a console shows what a `errors.cable.http_429` means, not only its count. A hint that
 * ends in ":" is followed by the words of each failure, which say it (sampleWords, sampleServerWords).
 */
export function explainOnce(code: string, hint: string | undefined, log: (line: string) => void = (line) => artilleryLog(undefined, line)): void {
  if (hint === undefined || hint.endsWith(":") || explained.has(code)) return;
  explained.add(code);
  log(`cable: ${code}: ${hint}`);
}

/** Tests only. */
export function resetServerWordsForTest(): void {
  seen.clear();
  explained.clear();
}

// Artillery forwards a worker's `log` events, options included, to the main thread, where its
// console reporter prints the line and the cable-report plugin reads `cableServerWords`.
function artilleryLog(words: ServerWords | undefined, line: string): void {
  const artillery = (globalThis as { artillery?: { globalEvents?: { emit(event: string, ...args: unknown[]): unknown } } }).artillery;
  artillery?.globalEvents?.emit("log", words ? { cableServerWords: words } : {}, line);
}

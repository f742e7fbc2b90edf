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

/** One line of printable text, without long tokens (a signature, a key) a server might echo back. */
export function cleanWords(raw: string): string {
  const text = raw
    .replace(/[\u0000-\u001f\u007f-\u009f]+/g, " ")
    .replace(/[A-Za-z0-9+/=_-]{24,}/g, "…")
    .replace(/\s+/g, " ")
    .trim();
  return text.length > MAX_TEXT ? `${text.slice(0, MAX_TEXT - 1)}…` : text;
}

/** Logs the server's words once per distinct text (up to MAX_PER_KEY per error and cause); returns what it logged. */
export function sampleServerWords(error: string, cause: string, raw: string, log: (words: ServerWords, line: string) => void = artilleryLog): ServerWords | undefined {
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
  log(words, `cable: ${error} (${cause}): the server said ${JSON.stringify(text)}`);
  return words;
}

/** Tests only. */
export function resetServerWordsForTest(): void {
  seen.clear();
}

// Artillery forwards a worker's `log` events, options included, to the main thread, where its
// console reporter prints the line and the cable-report plugin reads `cableServerWords`.
function artilleryLog(words: ServerWords, line: string): void {
  const artillery = (globalThis as { artillery?: { globalEvents?: { emit(event: string, ...args: unknown[]): unknown } } }).artillery;
  artillery?.globalEvents?.emit("log", { cableServerWords: words }, line);
}

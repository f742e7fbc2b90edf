// The question a costly run asks before it starts: only of a person at a terminal. In CI (stdin not
// a TTY) there is nobody to answer, and the guard wants --yes or --max-cost instead.
import { createInterface } from "node:readline/promises";

export function askAtTerminal(input: NodeJS.ReadStream = process.stdin, output: NodeJS.WriteStream = process.stderr): { ask?: (question: string) => Promise<boolean> } {
  if (!input.isTTY) return {};
  return {
    async ask(question: string): Promise<boolean> {
      const rl = createInterface({ input, output });
      try {
        return /^y(es)?$/i.test((await rl.question(question)).trim());
      } finally {
        rl.close();
      }
    },
  };
}

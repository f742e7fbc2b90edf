/** Bad input or usage: the message names the file, field or flag. The CLI exits 2. */
export class FanoutInputError extends Error {
  override name = "FanoutInputError";
}

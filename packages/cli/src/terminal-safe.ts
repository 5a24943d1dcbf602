/** Text from a server made fit to print: nothing in it may steer the terminal. */

/**
 * What a terminal acts on instead of showing: C0 controls but \n and \t (ESC starts CSI and OSC 8
 * sequences, \r rewrites the line), DEL, C1 controls (U+009B is an 8-bit CSI), and the bidi controls
 * that reorder what is shown.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point.
const UNSAFE_FOR_TERMINALS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/**
 * Text as a terminal may print it: each character it would act on written as a visible `\uXXXX`. In
 * JSON output those characters only occur inside strings, where `\uXXXX` is their own escape: the
 * JSON stays valid and means the same.
 */
export function terminalSafe(text: string): string {
  return text.replace(UNSAFE_FOR_TERMINALS, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

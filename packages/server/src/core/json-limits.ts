/** Bounds on a JSON body's shape (nesting depth, number of values), checked on its bytes before it is parsed. */
import { WireError } from "./errors.js";

/** How deep a body may nest when nothing else is said. */
export const DEFAULT_MAX_DEPTH = 64;

/** How many values (object members and array items, counted together) a body may hold when nothing else is said. */
export const DEFAULT_MAX_VALUES = 10_000;

/** The bounds {@link scanJson} enforces. */
export interface JsonLimits {
  /** Objects and arrays nest at most this deep. */
  maxDepth: number;
  /** At most this many values in all: object members, array items and the containers themselves. */
  maxValues: number;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;

/**
 * Checks a JSON text's depth and size before `JSON.parse` builds it, in one pass over its bytes: a hostile
 * shape (60,000 keys in one object, 10,000 levels of arrays) is refused for about a millisecond per MiB,
 * where building it and walking it would cost tens of milliseconds, mostly in dictionary-mode objects.
 * Strings are skipped with `indexOf`, so a long string costs next to nothing. Returns the number of values
 * counted (commas plus containers: an upper bound of the members and items, enough for a bound); invalid
 * JSON is not judged here, `JSON.parse` refuses it next.
 *
 * @example
 * scanJson(bytes, { maxDepth: 64, maxValues: 100_000 }); // throws a 400 WireError past either bound
 */
export function scanJson(bytes: Uint8Array, limits: JsonLimits): number {
  const { maxDepth, maxValues } = limits;
  const length = bytes.length;
  let depth = 0;
  let values = 0;
  let i = 0;
  while (i < length) {
    const byte = bytes[i] as number;
    if (byte === QUOTE) {
      i = stringEnd(bytes, i + 1);
      continue;
    }
    if (byte === OPEN_OBJECT || byte === OPEN_ARRAY) {
      if (++depth > maxDepth) throw tooDeep(maxDepth);
      if (++values > maxValues) throw tooMany(maxValues);
    } else if (byte === CLOSE_OBJECT || byte === CLOSE_ARRAY) {
      depth--;
    } else if (byte === COMMA && ++values > maxValues) {
      throw tooMany(maxValues);
    }
    i++;
  }
  return values;
}

/** The index after the quote that closes the string whose first character is at `from` (the length when none does). */
function stringEnd(bytes: Uint8Array, from: number): number {
  let at = from;
  for (;;) {
    const quote = bytes.indexOf(QUOTE, at);
    if (quote === -1) return bytes.length;
    // A quote preceded by an odd number of backslashes is escaped.
    let backslashes = 0;
    for (let k = quote - 1; k >= from && bytes[k] === BACKSLASH; k--) backslashes++;
    if ((backslashes & 1) === 0) return quote + 1;
    at = quote + 1;
  }
}

/** The 400 for a body nested deeper than `max` levels. */
export function tooDeep(max: number): WireError {
  return new WireError("bad_request", "The request body is nested too deeply", {
    developerMessage: `Objects and arrays may nest at most ${max} levels deep.`,
  });
}

function tooMany(max: number): WireError {
  return new WireError("bad_request", "The request body holds too many values", {
    developerMessage: `A body may hold at most ${max} object members and array items in all.`,
  });
}

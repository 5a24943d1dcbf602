/** Bounds on a JSON body's shape (nesting depth, number of values), checked on its text before it is parsed. */
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
const QUOTE_CHAR = '"';
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;

/**
 * Checks a JSON text's depth and size before `JSON.parse` builds it, in one pass over its text: a hostile
 * shape (60,000 keys in one object, 10,000 levels of arrays) is refused for about a millisecond per MiB,
 * where building it and walking it would cost tens of milliseconds, mostly in dictionary-mode objects.
 * Strings are skipped with `indexOf`, so a long string costs next to nothing. Returns the number of values
 * counted (commas plus containers: an upper bound of the members and items, enough for a bound); invalid
 * JSON is not judged here, `JSON.parse` refuses it next.
 *
 * @example
 * scanJson(text, { maxDepth: 64, maxValues: 100_000 }); // throws a 400 WireError past either bound
 */
export function scanJson(text: string, limits: JsonLimits): number {
  const scanner = new JsonScanner(limits);
  scanner.push(text);
  return scanner.values;
}

/**
 * {@link scanJson} over a body that arrives in pieces (each chunk as it is decoded): each piece is judged as it
 * comes, so a body past a bound is refused after the bytes that break it, not after all of it has been read. The
 * text, not its UTF-8 bytes: a JSON structural character is ASCII either way, never part of a longer character,
 * and a host that decodes the body itself (a fetch `Request`'s `text()`) then needs no bytes made for the scan.
 */
export class JsonScanner {
  /** Values counted so far. */
  values = 0;
  private depth = 0;
  private inString = false;
  /** Backslashes that ended the previous piece inside a string: their parity says whether the next character is escaped. */
  private carry = 0;

  constructor(private readonly limits: JsonLimits) {}

  /** Scans the next piece of the text; throws a 400 WireError once the body is past a bound. */
  push(text: string): void {
    const { maxDepth, maxValues } = this.limits;
    const length = text.length;
    let i = 0;
    while (i < length) {
      if (this.inString) {
        const quote = text.indexOf(QUOTE_CHAR, i);
        const end = quote === -1 ? length : quote;
        // The backslashes right before the quote (or the piece's end), with those the last piece ended on.
        let run = 0;
        let k = end - 1;
        while (k >= i && text.charCodeAt(k) === BACKSLASH) {
          run++;
          k--;
        }
        if (k < i) {
          run += this.carry;
        }
        this.carry = 0;
        if (quote === -1) {
          this.carry = run;
          return;
        }
        i = quote + 1;
        // A quote after an odd number of backslashes is escaped: the string goes on.
        if ((run & 1) === 0) {
          this.inString = false;
        }
        continue;
      }
      const code = text.charCodeAt(i);
      if (code === QUOTE) {
        this.inString = true;
      } else if (code === OPEN_OBJECT || code === OPEN_ARRAY) {
        if (++this.depth > maxDepth) {
          throw tooDeep(maxDepth);
        }
        if (++this.values > maxValues) {
          throw tooMany(maxValues);
        }
      } else if (code === CLOSE_OBJECT || code === CLOSE_ARRAY) {
        this.depth--;
      } else if (code === COMMA && ++this.values > maxValues) {
        throw tooMany(maxValues);
      }
      i++;
    }
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

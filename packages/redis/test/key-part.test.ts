// keyPart, which names every Redis key: it never throws (a lone surrogate included), never yields `:`, and no two strings share a result.
import { verifies } from "@otc/test-helpers/verifies";
import { describe, expect, it } from "vitest";
import { keyPart } from "../src/connection.js";

/** Every string of one UTF-16 code unit, and of two: the surrogates paired, lone, reversed, beside other characters. */
function samples(): string[] {
  const units = Array.from({ length: 0x10000 }, (_, unit) => String.fromCharCode(unit));
  const tricky = [
    "\ud800",
    "\udbff",
    "\udc00",
    "\udfff",
    "\ufffd",
    "%",
    "u",
    "D",
    ":",
    "a",
    "é",
    "%uD800",
    "%EF%BF%BD",
  ];
  const pairs = tricky.flatMap((first) => tricky.map((second) => first + second));
  return [...units, ...pairs, "\ud83d\ude00", "\ude00\ud83d", "a\ud800b\udc00c", "\ud800\ud800\udc00"];
}

describe("keyPart", () => {
  verifies(
    "limits.lone-surrogate-ids",
    "encodes every string, lone surrogates included, into distinct printable ASCII without `:`",
    () => {
      const seen = new Map<string, string>();
      const wrong: string[] = [];
      for (const part of samples()) {
        const encoded = keyPart(part);
        if (!/^[\x21-\x39\x3b-\x7e]*$/.test(encoded)) {
          wrong.push(`${JSON.stringify(part)} gives ${encoded}`);
        }
        const earlier = seen.get(encoded);
        if (earlier !== undefined && earlier !== part) {
          wrong.push(`${JSON.stringify(earlier)} and ${JSON.stringify(part)} share ${encoded}`);
        }
        seen.set(encoded, part);
      }
      expect(wrong).toEqual([]);
      expect(seen.size).toBeGreaterThan(0x10000);
    },
  );

  it("keeps the plain URI encoding of a well-formed string, so keys written before stay the same", () => {
    for (const part of ["anonymous", "jwt:a b", "api-key:0", "é\ud83d\ude00", "%uD800"]) {
      expect(keyPart(part)).toBe(encodeURIComponent(part));
    }
    expect(keyPart("\ud800")).toBe("%uD800");
    expect(keyPart("a\udc00\ud83d\ude00\ud800")).toBe("a%uDC00%F0%9F%98%80%uD800");
  });
});

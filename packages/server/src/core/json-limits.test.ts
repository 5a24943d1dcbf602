// scanJson and JsonScanner against JSON.parse: the same count whatever the chunking, and the bounds refused.
import { verifies } from "@otc/test-helpers/verifies";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { JsonScanner, scanJson } from "./json-limits.js";

const NO_LIMITS = { maxDepth: 1_000_000, maxValues: Number.MAX_SAFE_INTEGER };

/** What the scanner counts, from the parsed value: each container, plus one per entry after its first. */
function expectedValues(value: unknown): number {
  if (typeof value !== "object" || value === null) {
    return 0;
  }
  const entries = Array.isArray(value) ? value : Object.values(value);
  return 1 + Math.max(0, entries.length - 1) + entries.reduce((sum: number, entry) => sum + expectedValues(entry), 0);
}

function scanInChunks(text: string, size: number, limits = NO_LIMITS): number {
  const scanner = new JsonScanner(limits);
  for (let at = 0; at < text.length; at += size) {
    scanner.push(text.slice(at, at + size));
  }
  return scanner.values;
}

describe("scanJson", () => {
  it("counts what JSON.parse builds, whole or in chunks of any size, strings with quotes and backslashes included", () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.integer({ min: 1, max: 9 }), (value, size) => {
        const text = JSON.stringify(value);
        const expected = expectedValues(value);
        expect(scanJson(text, NO_LIMITS)).toBe(expected);
        expect(scanInChunks(text, size)).toBe(expected);
      }),
      { numRuns: 500 },
    );
  });

  it("counts the same over text with characters beyond ASCII, split anywhere", () => {
    fc.assert(
      fc.property(fc.jsonValue({ stringUnit: "binary" }), fc.integer({ min: 1, max: 9 }), (value, size) => {
        const text = JSON.stringify(value);
        expect(scanInChunks(text, size)).toBe(expectedValues(value));
      }),
      { numRuns: 300 },
    );
  });

  it.each([
    ['{"a":"x\\\\"}', 1],
    ['{"a":"\\"","b":[1,2]}', 4],
    ['["\\\\\\"", "],[{"]', 2],
  ])("counts %s as %i in chunks of one byte", (text, expected) => {
    expect(scanInChunks(text, 1)).toBe(expected);
    expect(scanJson(text, NO_LIMITS)).toBe(expected);
  });

  verifies(
    "limits.nesting-depth",
    "refuses a body nested past maxDepth, and one with more values than maxValues",
    () => {
      expect(() => scanJson("[[[1]]]", { maxDepth: 2, maxValues: 100 })).toThrow("nested too deeply");
      expect(() => scanJson("[1,2,3,4]", { maxDepth: 5, maxValues: 3 })).toThrow("too many values");
      expect(scanJson("[1,2,3]", { maxDepth: 1, maxValues: 3 })).toBe(3);
      // Brackets and commas inside strings are data.
      expect(scanJson('["[[[,,,"]', { maxDepth: 1, maxValues: 1 })).toBe(1);
    },
  );
});

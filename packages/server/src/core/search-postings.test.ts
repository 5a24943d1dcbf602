// The search index's range lookups: a prefix's range of the sorted terms found by halving, as a walk finds it.
import { describe, expect, it } from "vitest";
import { lowerBound, prefixEnd } from "./search-postings.js";

const walked = (terms: readonly string[], prefix: string, from: number) => {
  let to = from;
  while (to < terms.length && (terms[to] as string).startsWith(prefix)) {
    to++;
  }
  return to;
};

describe("prefixEnd", () => {
  const terms = ["a", "ab", "abc", "abd", "ac", "b", "ba", "z", "z\uffff", "z\uffffa", "\uffff", "\uffff\uffff"].sort(
    (x, y) => (x < y ? -1 : x > y ? 1 : 0),
  );
  const prefixes = ["a", "ab", "abc", "abz", "b", "c", "z", "z\uffff", "\uffff", "\uffff\uffff", "aa", "", "é"];

  it.each(prefixes)("ends the range of %j where a walk over the terms does", (prefix) => {
    const from = lowerBound(terms, prefix);
    expect(prefixEnd(terms, prefix, from)).toBe(walked(terms, prefix, from));
  });

  it("agrees with a walk over random terms", () => {
    let seed = 7;
    const next = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed;
    };
    const alphabet = "abcz\u00e9\uffff";
    const word = () =>
      Array.from({ length: 1 + (next() % 4) }, () => alphabet[next() % alphabet.length] as string).join("");
    const sorted = [...new Set(Array.from({ length: 400 }, word))].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));
    for (let i = 0; i < 500; i++) {
      const prefix = word();
      const from = lowerBound(sorted, prefix);
      expect(prefixEnd(sorted, prefix, from)).toBe(walked(sorted, prefix, from));
    }
  });
});

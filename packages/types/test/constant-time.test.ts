// constantTimeEqual against what it replaces: node:crypto's timingSafeEqual of the two SHA-256 digests, and `===`.
import { createHash, timingSafeEqual } from "node:crypto";
import { describe, expect, it, vi } from "vitest";
import { constantTimeEqual } from "../src/index.js";

const digest = (text: string) => createHash("sha256").update(text).digest();

const KEY = "an-api-key-of-32-characters-long";

/** Each row: what it tests, what a request sent, what the server holds, and whether they are equal. */
const ROWS: [string, string, string, boolean][] = [
  ["the same key", KEY, KEY, true],
  ["a difference in the last character", `${KEY.slice(0, -1)}G`, KEY, false],
  ["a difference in the first character", `A${KEY.slice(1)}`, KEY, false],
  ["a prefix of the key", KEY.slice(0, -1), KEY, false],
  ["the key and one more character", `${KEY}!`, KEY, false],
  ["nothing sent", "", KEY, false],
  ["something sent for an empty secret", KEY, "", false],
  ["both empty", "", "", true],
  ["one character", "x", "x", true],
  ["non-ASCII", "clé", "clé", true],
  // Node reads header bytes as latin1: a UTF-8 "é" arrives as two characters, and matches no "é".
  ["UTF-8 read as latin1", "clÃ©", "clé", false],
  ["a trailing NUL", "key\u0000", "key", false],
  ["the same astral character", "😀", "😀", true],
  ["another astral character", "😀", "😁", false],
  ["10,000 characters", "a".repeat(10_000), "a".repeat(10_000), true],
  ["10,000 characters, the last differing", `${"a".repeat(9_999)}b`, "a".repeat(10_000), false],
];

describe("constantTimeEqual", () => {
  it.each(ROWS)("%s", (_what, candidate, secret, equal) => {
    expect(constantTimeEqual(candidate, secret)).toBe(equal);
    expect(constantTimeEqual(candidate, secret)).toBe(candidate === secret);
    expect(constantTimeEqual(candidate, secret)).toBe(timingSafeEqual(digest(candidate), digest(secret)));
  });

  it("does the same work for every candidate: as many reads as the secret has characters, however long the candidate", () => {
    const reads = vi.spyOn(String.prototype, "charCodeAt");
    try {
      for (const candidate of ["", "x", KEY, `${KEY.slice(0, -1)}G`, `A${KEY.slice(1)}`, "x".repeat(1_000_000)]) {
        reads.mockClear();
        constantTimeEqual(candidate, KEY);
        expect(reads, `${candidate.length} characters`).toHaveBeenCalledTimes(2 * KEY.length);
      }
    } finally {
      reads.mockRestore();
    }
  });

  it("is symmetric", () => {
    for (const [, candidate, secret] of ROWS) {
      expect(constantTimeEqual(secret, candidate)).toBe(constantTimeEqual(candidate, secret));
    }
  });
});

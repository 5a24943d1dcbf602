// SHA-256 and base64url without node:crypto give what node:crypto and Buffer gave: stored fingerprints stay valid.
import { createHash } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { canonicalJson, sha256Base64url } from "./fingerprint.js";

describe("fingerprint", () => {
  it.each(["", "abc", "ü😀\ud800", '["Test.Tool@1.0.0",{"x":1},null]'])("hashes %j as node:crypto does", (text) => {
    expect(sha256Base64url(text)).toBe(createHash("sha256").update(text).digest("base64url"));
  });

  it("hashes any text as node:crypto does", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 300 }), (text) => {
        expect(sha256Base64url(text)).toBe(createHash("sha256").update(text).digest("base64url"));
      }),
    );
  });

  it("writes canonical JSON as the first implementation did, byte for byte: kept fingerprints still match", () => {
    // The implementation fingerprints were first made with; a value parsed from JSON, or a library's output.
    const first = (value: unknown): string => {
      if (Array.isArray(value)) {
        return `[${value.map(first).join(",")}]`;
      }
      if (typeof value === "object" && value !== null) {
        const entries = Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
        return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${first(item)}`).join(",")}}`;
      }
      return JSON.stringify(value) ?? "null";
    };
    fc.assert(
      fc.property(fc.anything({ withObjectString: true, withNullPrototype: true, withSparseArray: true }), (value) => {
        expect(canonicalJson(value)).toBe(first(value));
      }),
    );
    expect(canonicalJson({ b: [1, { d: undefined, c: "é" }], a: null })).toBe('{"a":null,"b":[1,{"c":"é","d":null}]}');
  });
});

// The digest of each runtime gives the same bytes: node:crypto's (Node, Bun, Deno) and @noble/hashes' (workerd, the
// browser), so fingerprints a server on one kept in a shared store stay valid on the other; both are what they were.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { sha256Base64url as nodeDigest } from "./digest.js";
import { sha256Base64url as webDigest } from "./digest-web.js";
import { canonicalJson, sha256Base64url } from "./fingerprint.js";

describe("fingerprint", () => {
  it("hashes with the runtime's digest, the same bytes on every runtime", () => {
    expect(sha256Base64url).toBe(nodeDigest);
    // SHA-256("abc"), FIPS 180-2's example, in base64url.
    expect(nodeDigest("abc")).toBe("ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0");
    expect(webDigest("abc")).toBe("ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0");
  });

  it.each(["", "abc", "ü😀\ud800", "\udc00x\ud800", '["Test.Tool@1.0.0",{"x":1},null]'])("hashes %j alike", (text) => {
    expect(webDigest(text)).toBe(nodeDigest(text));
  });

  it("hashes any text alike, lone surrogates and long texts included", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 300 }), (text) => {
        expect(webDigest(text)).toBe(nodeDigest(text));
      }),
    );
    fc.assert(
      fc.property(fc.string({ unit: "grapheme", minLength: 1_000, maxLength: 5_000 }), (text) => {
        expect(webDigest(text)).toBe(nodeDigest(text));
      }),
      { numRuns: 20 },
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

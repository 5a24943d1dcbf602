// SHA-256 and base64url without node:crypto give what node:crypto and Buffer gave: stored fingerprints stay valid.
import { createHash } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { base64url, sha256Base64url } from "./web-crypto.js";

describe("web-crypto", () => {
  it("writes base64url as Buffer does, for every length", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 70 }), (bytes) => {
        expect(base64url(bytes)).toBe(Buffer.from(bytes).toString("base64url"));
      }),
    );
  });

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
});

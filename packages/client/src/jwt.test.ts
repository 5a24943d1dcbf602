// The JWT signer: lifetime limits, caching, and re-signing before expiry (with a test clock).
import { decodeJwt, decodeProtectedHeader } from "jose";
import { describe, expect, it } from "vitest";
import { type JwtOptions, jwtSigner } from "./jwt.js";

describe("jwtSigner", () => {
  it("signs HS256 with exp = iat + ttl, the sub, and aud when given", async () => {
    const token = await jwtSigner({ secret: "s", audience: "a", subject: "agent", ttlSeconds: 120 }, () => 1_000_000)();
    expect(decodeProtectedHeader(token)).toEqual({ alg: "HS256", typ: "JWT" });
    expect(decodeJwt(token)).toEqual({ iat: 1000, exp: 1120, aud: "a", sub: "agent" });
  });

  it("reuses the token until it nears expiry, then signs a new one", async () => {
    let now = 0;
    const sign = jwtSigner({ secret: "s", subject: "agent", ttlSeconds: 300 }, () => now);
    const first = await sign();
    now = 269_000; // 31 s left
    expect(await sign()).toBe(first);
    now = 271_000; // 29 s left
    expect(await sign()).not.toBe(first);
  });

  it("signs once for concurrent callers", async () => {
    const sign = jwtSigner({ secret: "s", subject: "agent" });
    const tokens = await Promise.all([sign(), sign(), sign()]);
    expect(new Set(tokens).size).toBe(1);
  });

  it.each([0, -1, 901, Number.NaN])("refuses a ttl of %s seconds", (ttl) => {
    expect(() => jwtSigner({ secret: "s", subject: "agent", ttlSeconds: ttl })).toThrow(RangeError);
  });

  // A JWT without a sub has no principal of its own: servers refuse it, so the signer never makes one.
  it.each([undefined, "", 5])("refuses a subject of %j", (subject) => {
    expect(() => jwtSigner({ secret: "s", subject } as unknown as JwtOptions)).toThrow(
      "jwt.subject must be a non-empty string",
    );
  });
});

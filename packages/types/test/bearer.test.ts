// parseBearer against RFC 6750 section 2.1 (`Authorization: Bearer <token>`) and RFC 9110 section 11 (credentials).
import { describe, expect, it } from "vitest";
import { parseBearer } from "../src/index.js";

const JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl";

describe("parseBearer", () => {
  it.each<[string, string | undefined, string | undefined]>([
    ["a JWT", `Bearer ${JWT}`, JWT],
    ["token68's every character class", "Bearer aZ09-._~+/==", "aZ09-._~+/=="],
    ["the scheme in lowercase (it is case-insensitive)", "bearer abc", "abc"],
    ["the scheme in uppercase", "BEARER abc", "abc"],
    ["several spaces before the token (1*SP)", "Bearer    abc", "abc"],
    ["a tab before the token", "Bearer\tabc", "abc"],
    ["spaces after the token", "Bearer abc  ", "abc"],
    // Not token68, but an API key sent as a bearer token may hold them: compared as sent, not refused here.
    ["visible characters outside token68", "Bearer a!b#c,d", "a!b#c,d"],
    ["no header", undefined, undefined],
    ["an empty header", "", undefined],
    ["the scheme alone", "Bearer", undefined],
    ["the scheme and a space", "Bearer ", undefined],
    ["no space after the scheme", "Bearerabc", undefined],
    ["two tokens", "Bearer abc def", undefined],
    ["another scheme", "Basic Zm9vOmJhcg==", undefined],
    ["a scheme that starts like Bearer", "Bearers abc", undefined],
    ["whitespace before the scheme", " Bearer abc", undefined],
    ["a line break in the token", "Bearer abc\ndef", undefined],
  ])("%s", (_what, header, token) => {
    expect(parseBearer(header)).toBe(token);
  });
});

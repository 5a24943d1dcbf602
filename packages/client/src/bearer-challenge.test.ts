// parseBearerChallenge: RFC 9110's challenge grammar (tokens, quoted strings, several challenges in one value), what
// it gives for the Bearer one, and what it refuses, without throwing and at a cost linear in the header.
import { describe, expect, it } from "vitest";
import { type BearerChallenge, MAX_CHALLENGE_CHARS, parseBearerChallenge } from "./bearer-challenge.js";

describe("parseBearerChallenge", () => {
  it.each<[string, string, BearerChallenge]>([
    ["a Bearer without parameters", "Bearer", { scopes: [] }],
    ["the scheme in any case", "bEaReR realm=oxp", { realm: "oxp", scopes: [] }],
    [
      "an oauth server's 401",
      'Bearer resource_metadata="https://oxp.test/.well-known/oauth-protected-resource", scope="oxp:tools:read oxp:tools:call"',
      {
        resourceMetadata: "https://oxp.test/.well-known/oauth-protected-resource",
        scopes: ["oxp:tools:read", "oxp:tools:call"],
      },
    ],
    [
      "an oauth server's 403",
      'Bearer error="insufficient_scope", scope="oxp:tools:call mail.send", resource_metadata="https://oxp.test/m"',
      { error: "insufficient_scope", scopes: ["oxp:tools:call", "mail.send"], resourceMetadata: "https://oxp.test/m" },
    ],
    [
      "quoted strings holding escaped quotes, backslashes and commas",
      'Bearer realm="a \\"quoted\\", realm", error_description="one\\\\two, three"',
      { realm: 'a "quoted", realm', errorDescription: "one\\two, three", scopes: [] },
    ],
    [
      "parameter names in any case, spaces around `=`",
      "Bearer ERROR = invalid_token ,Scope=a",
      { error: "invalid_token", scopes: ["a"] },
    ],
    ["an empty quoted value", 'Bearer realm=""', { realm: "", scopes: [] }],
    ["extra spaces between scopes", 'Bearer scope="  a   b "', { scopes: ["a", "b"] }],
    [
      "the Bearer challenge among others, after a token68 and parameters",
      'Basic dXNlcjpwYXNz==, Newauth realm="apps", type=1, title="Login to \\"apps\\"", Bearer error="invalid_token", DPoP algs="ES256"',
      { error: "invalid_token", scopes: [] },
    ],
    ["the first of two Bearer challenges", 'Bearer realm="one", Bearer realm="two"', { realm: "one", scopes: [] }],
    ["header lines joined with commas, empty elements among them", ' , Basic realm="x", , Bearer , ', { scopes: [] }],
    ["a Bearer followed at once by another scheme", 'Bearer, Basic realm="x"', { scopes: [] }],
  ])("reads %s", (_name, header, want) => {
    expect(parseBearerChallenge(header)).toEqual(want);
  });

  it.each([
    ["no header", null],
    ["an empty header", ""],
    ["no Bearer challenge", 'Basic realm="x", DPoP algs="ES256"'],
    ["a scheme that only starts with bearer", 'Bearers realm="x"'],
    ["an unterminated quoted string", 'Bearer realm="x'],
    ["a backslash at the very end", 'Bearer realm="x\\'],
    ["a control character in a quoted string", 'Bearer realm="a\u0001b"'],
    ["two parameters without a comma", 'Bearer realm="x" error="y"'],
    ["a parameter given twice", 'Bearer scope="a", scope="b"'],
    ["a parameter without a value", "Bearer realm=, error=x"],
    ["a quote where a scheme belongs", '"Bearer realm=x"'],
    ["garbage", "}{ \u0000 ;;; ==="],
    ["a scheme glued to a quote", 'Bearer"x"'],
  ])("gives undefined for %s, without throwing", (_name, header) => {
    expect(parseBearerChallenge(header)).toBeUndefined();
  });

  it("never throws on arbitrary input", () => {
    // A fixed sequence (no randomness): headers built from the grammar's own punctuation, where parsers trip.
    const alphabet = ['"', "\\", ",", "=", " ", "\t", "Bearer", "realm", "a", "\u0000", "é", "/"];
    let seed = 1;
    const next = () => {
      seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0;
      return seed;
    };
    for (let i = 0; i < 2_000; i++) {
      let header = "";
      for (let length = next() % 24; length > 0; length--) {
        header += alphabet[next() % alphabet.length];
      }
      expect(() => parseBearerChallenge(header)).not.toThrow();
    }
  });

  it("reads a header at the length limit, and refuses a longer one unread", () => {
    const scopes = Array.from({ length: 2_000 }, (_, i) => `s${i}`);
    const header = `Bearer scope="${scopes.join(" ")}"`;
    expect(header.length).toBeLessThan(MAX_CHALLENGE_CHARS);
    expect(parseBearerChallenge(header)?.scopes).toHaveLength(2_000);
    expect(parseBearerChallenge(`Bearer realm="${"x".repeat(MAX_CHALLENGE_CHARS)}"`)).toBeUndefined();
    expect(parseBearerChallenge(`Bearer realm="${"x".repeat(10 * 1024 * 1024)}"`)).toBeUndefined();
  });

  it("costs time linear in the header: sixteen times the parameters, sixteen times the time", () => {
    // Many parameters, each ending where the next starts: a parser that rescans what follows each one is quadratic.
    const header = (params: number) =>
      `Bearer ${Array.from({ length: params }, (_, i) => (i % 2 ? `p${i}="\\""` : `p${i}=v`)).join(",")}`;
    const small = header(100);
    const large = header(1_600);
    expect(large.length).toBeLessThan(MAX_CHALLENGE_CHARS);
    /** The least CPU time, over rounds, of parsing `text` `times` times, in ms. */
    const cpuMs = (text: string, times: number) => {
      let best = Number.POSITIVE_INFINITY;
      for (let round = 0; round < 15; round++) {
        const started = process.cpuUsage();
        for (let i = 0; i < times; i++) {
          parseBearerChallenge(text);
        }
        const spent = process.cpuUsage(started);
        best = Math.min(best, (spent.user + spent.system) / 1000);
      }
      return best;
    };
    cpuMs(large, 10); // warm up
    // The small header 16 times as often: the same parameters read in all, so linear is about 1; rescanning the rest at each parameter makes it 4 or more.
    const ratio = cpuMs(large, 10) / Math.max(cpuMs(small, 160), 0.001);
    expect(ratio, `large/small CPU time ratio ${ratio.toFixed(2)}`).toBeLessThan(2.5);
  });
});

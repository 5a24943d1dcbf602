// API keys (docs/protocol.md 5): each key is its own principal, whether the server holds a few keys (compared in turn)
// or many (found by digest); the first of two equal keys names the principal; nothing but a whole key is admitted.
import { describe, expect, it } from "vitest";
import { WireError } from "../core/errors.js";
import { createAuthenticator } from "./authentication.js";

const keysOf = (count: number) => Array.from({ length: count }, (_, i) => `key-${i}-${"k".repeat(i % 7)}-secret`);

/** The principal `apiKey` is admitted as, or the kind of the error it is refused with. */
function principalOf(keys: readonly string[], apiKey: string): string {
  const authenticate = createAuthenticator({ apiKeys: keys });
  try {
    const admission = authenticate?.({ apiKey });
    return admission instanceof Promise ? "pending" : (admission?.principal ?? "none");
  } catch (error) {
    return error instanceof WireError ? error.kind : "thrown";
  }
}

describe.each([3, 8, 9, 101])("%i API keys", (count) => {
  const keys = keysOf(count);

  it("admits each key as its own principal", () => {
    expect(keys.map((key) => principalOf(keys, key))).toEqual(keys.map((_key, i) => `api-key:${i}`));
  });

  it.each([
    ["a prefix of a key", (key: string) => key.slice(0, -1)],
    ["a key with one more character", (key: string) => `${key}x`],
    ["a key with one character changed", (key: string) => `${key.slice(0, -1)}X`],
    ["a key in other case", (key: string) => key.toUpperCase()],
  ])("refuses %s", (_case, change) => {
    expect(keys.map((key) => principalOf(keys, change(key)))).toEqual(keys.map(() => "unauthorized"));
  });

  it("names the first of two equal keys", () => {
    const twice = [...keys, keys[1] as string];
    expect(principalOf(twice, keys[1] as string)).toBe("api-key:1");
  });
});

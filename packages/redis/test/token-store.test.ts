// RedisTokenStore against a real redis-server: what is kept, for how long, and under which key.
import { ManualClock } from "@otc/test-helpers/manual-clock";
import { type RedisServer, startRedisServer } from "@otc/test-helpers/redis-server";
import { verifies } from "@otc/test-helpers/verifies";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RedisTokenStore, RedisUnavailableError } from "../src/index.js";

let server: RedisServer;
let admin: Redis;
let tokens: RedisTokenStore;
const ann = { principal: "api-key:0", userId: "ann" };

beforeAll(async () => {
  server = await startRedisServer();
  admin = new Redis(server.url);
  tokens = new RedisTokenStore(server.url, { maxTtlMs: 120_000 });
});
afterAll(async () => {
  await tokens.close();
  admin.disconnect();
  await server.close();
});

describe("RedisTokenStore", () => {
  it("keeps a token until its expiry, as the key's TTL, and shares it with another connection", async () => {
    const expiresAt = Date.now() + 60_000;
    await tokens.set(ann, "google", { token: "secret-1", scopes: ["read"], expiresAt });
    const other = new RedisTokenStore(server.url);
    try {
      expect(await other.get(ann, "google")).toEqual({ token: "secret-1", scopes: ["read"], expiresAt });
    } finally {
      await other.close();
    }
    const ttl = await admin.pttl(tokens.keyOf(ann, "google"));
    expect(ttl).toBeGreaterThan(55_000);
    expect(ttl).toBeLessThanOrEqual(60_000);
    // Exactly the token, its scopes and its expiry: nothing else about the user is written.
    expect(JSON.parse((await admin.get(tokens.keyOf(ann, "google"))) ?? "null")).toEqual({
      token: "secret-1",
      scopes: ["read"],
      expiresAt,
    });
  });

  it("caps a token without expiry at maxTtlMs, and drops expired ones", async () => {
    await tokens.set(ann, "forever", { token: "t", scopes: [] });
    const ttl = await admin.pttl(tokens.keyOf(ann, "forever"));
    expect(ttl).toBeGreaterThan(100_000);
    expect(ttl).toBeLessThanOrEqual(120_000);
    await tokens.set(ann, "old", { token: "t", scopes: [], expiresAt: Date.now() - 1 });
    expect(await tokens.get(ann, "old")).toBeUndefined();
    expect(await admin.exists(tokens.keyOf(ann, "old"))).toBe(0);
  });

  it("answers no token past its expiry by the store's clock, even while Redis still holds its key", async () => {
    const clock = new ManualClock();
    const clocked = new RedisTokenStore(server.url, { clock });
    try {
      await clocked.set(ann, "short", { token: "t", scopes: [], expiresAt: clock.now() + 60_000 });
      // The key's TTL is the time left by the store's clock.
      expect(await admin.pttl(clocked.keyOf(ann, "short"))).toBeGreaterThan(55_000);
      expect(await clocked.get(ann, "short")).toMatchObject({ token: "t" });
      clock.skip(60_000);
      expect(await clocked.get(ann, "short")).toBeUndefined();
      // Redis's own clock has not moved: the key is still there, and it is the store's check that answered.
      expect(await admin.exists(clocked.keyOf(ann, "short"))).toBe(1);
    } finally {
      await clocked.close();
    }
  });

  it("keys tokens on principal, user and provider, so none can reach another's", async () => {
    await tokens.set({ principal: "a:b", userId: "c" }, "p", { token: "one", scopes: [] });
    expect(await tokens.get({ principal: "a", userId: "b:c" }, "p")).toBeUndefined();
    expect(await tokens.get({ principal: "a:b", userId: "c" }, "p")).toMatchObject({ token: "one" });
    expect(await tokens.get({ principal: "other", userId: "c" }, "p")).toBeUndefined();
    await tokens.delete({ principal: "a:b", userId: "c" }, "p");
    expect(await tokens.get({ principal: "a:b", userId: "c" }, "p")).toBeUndefined();
  });

  verifies(
    "limits.lone-surrogate-ids",
    "keeps a token for a user id with a lone surrogate apart from every other user's",
    async () => {
      const lone = { principal: "jwt:\udfff", userId: "\ud800" };
      await tokens.set(lone, "google", { token: "lone", scopes: [] });
      expect(await tokens.get(lone, "google")).toMatchObject({ token: "lone" });
      for (const userId of ["\udc00", "\ufffd", "%uD800"]) {
        expect(await tokens.get({ principal: "jwt:\udfff", userId }, "google")).toBeUndefined();
      }
      await tokens.delete(lone, "google");
      expect(await tokens.get(lone, "google")).toBeUndefined();
    },
  );

  it("fails as a corrupt record without quoting the stored value, which may be a token", async () => {
    await admin.set(tokens.keyOf(ann, "corrupt"), '{"token":"secret-token-123');
    const error = await tokens.get(ann, "corrupt").catch((failure: unknown) => failure);
    expect(error).toBeInstanceOf(RedisUnavailableError);
    expect((error as Error).message).toMatch(/corrupt record/);
    expect(JSON.stringify({ ...(error as object), message: (error as Error).message })).not.toContain(
      "secret-token-123",
    );
  });
});

// createRedisState: three stores on one connection, from a URL or a caller's client, closed as documented; errors carry no secrets.
import { ManualClock } from "@otc/test-helpers/manual-clock";
import { type RedisServer, startRedisServer } from "@otc/test-helpers/redis-server";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRedisState, RedisUnavailableError } from "../src/index.js";

let server: RedisServer;

beforeAll(async () => {
  server = await startRedisServer();
});
afterAll(async () => {
  await server.close();
});

describe("createRedisState", () => {
  it("puts the three stores on one connection and closes it when made from a URL", async () => {
    const state = createRedisState(server.url, { keyPrefix: "s1:", challenges: { maxPendingPerOwner: 1 } });
    await state.ready();
    const owner = { principal: "anonymous", userId: "ann" };
    await state.tokenStore.set(owner, "google", { token: "t", scopes: [] });
    await state.challengeStore.add("google.1", { owner, scopes: [] });
    await state.challengeStore.add("google.2", { owner, scopes: [] });
    expect(await state.challengeStore.get("google.1")).toBeUndefined();
    expect(await state.idempotencyStore.claim({ principal: "anonymous", callId: "c" }, "fp", 10_000)).toBeUndefined();
    await state.close();
    await expect.poll(() => state.connection.client.status).toBe("end");
    await expect(state.tokenStore.get(owner, "google")).rejects.toBeInstanceOf(RedisUnavailableError);
  });

  it("gives its clock to the three stores, unless one is given its own", async () => {
    const clock = new ManualClock();
    const own = new ManualClock(clock.now() + 1_000);
    const state = createRedisState(server.url, { keyPrefix: "s3:", clock, challenges: { clock: own, ttlMs: 60_000 } });
    try {
      const owner = { principal: "anonymous", userId: "cy" };
      const key = { principal: "anonymous", callId: "leased" };
      await state.idempotencyStore.claim(key, "fp", 10_000);
      await state.idempotencyStore.renew(key, "fp", 5_000);
      expect((await state.idempotencyStore.get(key))?.leaseUntil).toBe(clock.now() + 5_000);
      await state.tokenStore.set(owner, "google", { token: "t", scopes: [], expiresAt: clock.now() + 60_000 });
      clock.skip(60_000);
      expect(await state.tokenStore.get(owner, "google")).toBeUndefined();
      expect((await state.challengeStore.add("google.3", { owner, scopes: [] })).expiresAt).toBe(own.now() + 60_000);
    } finally {
      await state.close();
    }
  });

  it("uses a caller's client and leaves it open", async () => {
    const client = new Redis(server.url, { lazyConnect: true });
    const state = createRedisState(client, { keyPrefix: "s2:" });
    const owner = { principal: "anonymous", userId: "bob" };
    await state.tokenStore.set(owner, "google", { token: "t2", scopes: ["x"] });
    expect(await client.get(state.tokenStore.keyOf(owner, "google"))).toContain("t2");
    await state.close();
    expect(client.status).toBe("ready");
    client.disconnect();
  });

  it("fails fast while Redis is unreachable, with errors that hold no token", async () => {
    const own = await startRedisServer();
    const state = createRedisState(own.url, { readyTimeoutMs: 200, commandTimeoutMs: 300 });
    await state.ready();
    await own.stop();
    try {
      const started = Date.now();
      const error = await state.tokenStore
        .set({ principal: "anonymous", userId: "ann" }, "google", { token: "very-secret-token", scopes: [] })
        .catch((failure: unknown) => failure);
      expect(error).toBeInstanceOf(RedisUnavailableError);
      expect(JSON.stringify({ ...(error as object), message: (error as Error).message })).not.toContain(
        "very-secret-token",
      );
      expect(Date.now() - started).toBeLessThan(3_000);
      // ioredis may still call the connection ready for a moment after the socket ended.
      await expect
        .poll(() =>
          state.ready().then(
            () => "ready",
            (failure: unknown) => failure,
          ),
        )
        .toBeInstanceOf(RedisUnavailableError);
    } finally {
      await state.close();
      await own.close();
    }
  });

  it("takes back the listeners it put on a caller's client, once closed or once the client ends", async () => {
    const client = new Redis(server.url, { lazyConnect: true });
    const before = { error: client.listenerCount("error"), ready: client.listenerCount("ready") };
    const state = createRedisState(client, { keyPrefix: "s3:" });
    await state.ready();
    await state.idempotencyStore.claim({ principal: "anonymous", callId: "c" }, "fp", 10_000);
    await state.close();
    expect(client.listenerCount("error")).toBe(before.error);
    expect(client.listenerCount("ready")).toBe(before.ready);
    client.disconnect();

    // A client that never connects: the readiness waits fail, and once it ends nothing is left on it.
    const own = await startRedisServer();
    await own.stop();
    const unreachable = new Redis(own.url, {
      lazyConnect: true,
      enableOfflineQueue: false,
      retryStrategy: (attempt) => (attempt <= 3 ? 200 : null),
    });
    unreachable.on("error", () => {});
    const baseline = { ready: unreachable.listenerCount("ready"), end: unreachable.listenerCount("end") };
    const stranded = createRedisState(unreachable, { readyTimeoutMs: 100 });
    for (let i = 0; i < 3; i++) {
      await expect(stranded.ready(100)).rejects.toBeInstanceOf(RedisUnavailableError);
    }
    expect(unreachable.listenerCount("ready")).toBeGreaterThan(baseline.ready);
    // ioredis gives up after its retries: the wait for "ready" goes with the client, before any close.
    await expect.poll(() => unreachable.status).toBe("end");
    // Left: only the maxmemory-policy check, waiting for a first "ready" until close.
    expect(unreachable.listenerCount("ready")).toBe(baseline.ready + 1);
    expect(unreachable.listenerCount("end")).toBe(baseline.end);
    await stranded.close();
    expect(unreachable.listenerCount("ready")).toBe(baseline.ready);
    await own.close();
  });
});

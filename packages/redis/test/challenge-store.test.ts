// RedisChallengeStore against a real redis-server: the same bounds as the in-memory store (per owner, per principal, in total), shared by several connections.
import { ChallengeStoreFullError } from "@otc/server";
import { ManualClock } from "@otc/test-helpers/manual-clock";
import { type RedisServer, startRedisServer } from "@otc/test-helpers/redis-server";
import { until } from "@otc/test-helpers/until";
import { verifies } from "@otc/test-helpers/verifies";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RedisChallengeStore, type RedisChallengeStoreOptions, RedisUnavailableError } from "../src/index.js";

let server: RedisServer;
let admin: Redis;
const stores: RedisChallengeStore[] = [];
let next = 0;
let prefixes = 0;

/** Stores on separate connections sharing one fresh key prefix, so each test starts empty. */
function stores2(options: RedisChallengeStoreOptions = {}): [RedisChallengeStore, RedisChallengeStore] {
  const keyPrefix = `t${prefixes++}:`;
  const made: [RedisChallengeStore, RedisChallengeStore] = [
    new RedisChallengeStore(server.url, { ...options, keyPrefix }),
    new RedisChallengeStore(server.url, { ...options, keyPrefix }),
  ];
  stores.push(...made);
  return made;
}
const id = () => `google.c-${next++}`;
const owner = (userId: string, principal = "anonymous") => ({ principal, userId });
/** Redis's own clock (TIME), in milliseconds: the one challenges are stamped, ordered and expired by. */
async function redisNow(): Promise<number> {
  const [seconds, micros] = await admin.time();
  return Number(seconds) * 1_000 + Math.floor(Number(micros) / 1_000);
}

beforeAll(async () => {
  server = await startRedisServer();
  admin = new Redis(server.url);
});
afterAll(async () => {
  await Promise.all(stores.map((store) => store.close()));
  admin.disconnect();
  await server.close();
});

describe("RedisChallengeStore", () => {
  it("holds a challenge with its data, visible and decidable through another connection", async () => {
    const [a, b] = stores2();
    const c = id();
    const added = await a.add(c, { owner: owner("ann"), scopes: ["gmail"], data: { csrf: "xyz" } });
    expect(added).toMatchObject({ owner: owner("ann"), scopes: ["gmail"], status: "pending", data: { csrf: "xyz" } });
    expect(await b.get(c)).toMatchObject({
      owner: owner("ann"),
      scopes: ["gmail"],
      status: "pending",
      data: { csrf: "xyz" },
    });
    expect(await b.decide(c, "completed")).toBe("completed");
    expect((await a.get(c))?.status).toBe("completed");
    expect(await b.get("google.unknown")).toBeUndefined();
    expect(await b.decide("google.unknown", "failed")).toBeUndefined();
  });

  it("keeps the first of concurrent decisions from several connections", async () => {
    const [a, b] = stores2();
    const c = id();
    await a.add(c, { owner: owner("ann"), scopes: [] });
    const decisions = await Promise.all([
      a.decide(c, "completed"),
      b.decide(c, "failed"),
      a.decide(c, "failed"),
      b.decide(c, "completed"),
    ]);
    const first = decisions[0];
    expect(["completed", "failed"]).toContain(first);
    // Every caller learns the status that stood; all of them agree.
    expect(new Set(decisions).size).toBe(1);
    expect((await b.get(c))?.status).toBe(first);
  });

  it("drops an owner's oldest pending challenge beyond the per-owner cap, not counting decided ones", async () => {
    const [a, b] = stores2({ maxPendingPerOwner: 2 });
    const [a1, a2, b1, a3, a4] = [id(), id(), id(), id(), id()];
    await a.add(a1, { owner: owner("u", "a"), scopes: [] });
    await b.add(a2, { owner: owner("u", "a"), scopes: [] });
    await a.add(b1, { owner: owner("u", "b"), scopes: [] });
    await b.decide(a1, "completed");
    await a.add(a3, { owner: owner("u", "a"), scopes: [] });
    expect((await a.get(a1))?.status).toBe("completed");
    expect((await a.get(a2))?.status).toBe("pending");
    await b.add(a4, { owner: owner("u", "a"), scopes: [] });
    expect(await a.get(a2)).toBeUndefined();
    expect((await a.get(a3))?.status).toBe("pending");
    expect((await a.get(b1))?.status).toBe("pending");
  });

  verifies(
    "requirements.challenges-per-principal",
    "caps each principal's challenges, pending or decided, over all its user ids, dropping only its own oldest",
    async () => {
      const [a, b] = stores2({ maxChallengesPerPrincipal: 3, maxChallenges: 6 });
      const [a1, b1, a2, a3, a4] = [id(), id(), id(), id(), id()];
      // A principal's challenges are ordered by when they expire, to the millisecond of Redis's clock: two added in
      // the same millisecond are equally old (and the store may drop either), so each waits for Redis's next one.
      const later = async () => {
        const now = await redisNow();
        await until(async () => (await redisNow()) > now, { what: "Redis's clock to move on" });
      };
      await a.add(a1, { owner: owner("u1", "a"), scopes: [] });
      await later();
      await b.add(b1, { owner: owner("u1", "b"), scopes: [] });
      await later();
      await a.add(a2, { owner: owner("u2", "a"), scopes: [] });
      await later();
      await b.add(a3, { owner: owner("u3", "a"), scopes: [] });
      await later();
      await b.decide(a1, "completed");
      // a holds 3: its fourth drops a1, decided, the oldest of its own; b's stays.
      await a.add(a4, { owner: owner("u4", "a"), scopes: [] });
      expect(await b.get(a1)).toBeUndefined();
      expect((await b.get(a2))?.status).toBe("pending");
      expect((await a.get(b1))?.status).toBe("pending");
      // However many more a starts, from either connection, it holds 3 and the total never fills for b.
      const more = Array.from({ length: 60 }, () => id());
      for (const [i, c] of more.entries()) {
        await [a, b][i % 2]?.add(c, { owner: owner(`v${i}`, "a"), scopes: [] });
      }
      const keyPrefix = a.keyOf("").split("challenge:")[0];
      expect(await admin.zcard(`${keyPrefix}challenges`)).toBe(4);
      expect(await admin.zcard(`${keyPrefix}challenge-principal:a`)).toBe(3);
      const [b2, b3, b4] = [id(), id(), id()];
      await a.add(b2, { owner: owner("u2", "b"), scopes: [] });
      await b.add(b3, { owner: owner("u3", "b"), scopes: [] });
      for (const c of [...more.slice(-3), b1, b2, b3]) {
        expect((await a.get(c))?.status).toBe("pending");
      }
      // b at its cap too: its own oldest goes, never a's.
      await a.add(b4, { owner: owner("u4", "b"), scopes: [] });
      expect(await b.get(b1)).toBeUndefined();
      expect((await b.get(more.at(-3) ?? ""))?.status).toBe("pending");
      // The dropped ones left every set: the owner's pending sets hold only live challenges.
      expect(await admin.zcard(`${keyPrefix}challenge-owner:b:u1`)).toBe(0);
      expect(await admin.zcard(`${keyPrefix}challenges`)).toBe(6);
    },
  );

  verifies(
    ["requirements.challenges-per-principal", "requirements.consent-challenges-bounded"],
    "with the default bounds, one principal's 12,000 challenges never deny another principal's",
    async () => {
      const [a, b] = stores2();
      const flood = Array.from({ length: 12_000 }, () => id());
      // In order, 200 at a time (auto-pipelined), from both connections.
      for (let from = 0; from < flood.length; from += 200) {
        await Promise.all(
          flood
            .slice(from, from + 200)
            .map((c, i) => [a, b][i % 2]?.add(c, { owner: owner(`user-${from + i}`, "jwt:a"), scopes: [] })),
        );
      }
      const keyPrefix = a.keyOf("").split("challenge:")[0];
      expect(await admin.zcard(`${keyPrefix}challenges`)).toBe(1_000);
      await expect(b.add(id(), { owner: owner("ann", "api-key:1"), scopes: [] })).resolves.toMatchObject({
        status: "pending",
      });
      expect((await a.get(flood.at(-1) ?? ""))?.status).toBe("pending");
      expect(await a.get(flood[0] ?? "")).toBeUndefined();
    },
  );

  verifies(
    "requirements.challenges-per-principal",
    "lets a principal at its cap replace its oldest even when the total is full",
    async () => {
      const [a, b] = stores2({ maxChallenges: 3, maxChallengesPerPrincipal: 2 });
      const [b1, a1, a2, a3] = [id(), id(), id(), id()];
      await a.add(b1, { owner: owner("bob", "b"), scopes: [] });
      await b.add(a1, { owner: owner("ann", "a"), scopes: [] });
      await a.add(a2, { owner: owner("cy", "a"), scopes: [] });
      await expect(b.add(id(), { owner: owner("dee", "c"), scopes: [] })).rejects.toBeInstanceOf(
        ChallengeStoreFullError,
      );
      await b.decide(a2, "failed");
      await b.add(a3, { owner: owner("eve", "a"), scopes: [] });
      expect(await a.get(a1)).toBeUndefined();
      expect((await a.get(a2))?.status).toBe("failed");
      expect((await a.get(b1))?.status).toBe("pending");
    },
  );

  it("refuses a challenge beyond the total, with when the oldest expires, unless the owner's own make room", async () => {
    const [a, b] = stores2({ maxChallenges: 3, maxPendingPerOwner: 2, ttlMs: 60_000 });
    await a.add(id(), { owner: owner("ann"), scopes: [] });
    await b.add(id(), { owner: owner("bob"), scopes: [] });
    await a.add(id(), { owner: owner("cy"), scopes: [] });
    const refused = await b.add(id(), { owner: owner("dee"), scopes: [] }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ChallengeStoreFullError);
    expect((refused as ChallengeStoreFullError).retryAfterMs).toBeGreaterThan(50_000);
    expect((refused as ChallengeStoreFullError).retryAfterMs).toBeLessThanOrEqual(60_000);
    expect((refused as ChallengeStoreFullError).maxChallenges).toBe(3);
    // ann is under her cap of 2: a second one is refused too.
    await expect(a.add(id(), { owner: owner("ann"), scopes: [] })).rejects.toBeInstanceOf(ChallengeStoreFullError);
  });

  it("lets an owner at the cap replace their oldest even when the total is full", async () => {
    const [a, b] = stores2({ maxChallenges: 2, maxPendingPerOwner: 2 });
    const [one, two, three] = [id(), id(), id()];
    await a.add(one, { owner: owner("ann"), scopes: [] });
    await b.add(two, { owner: owner("ann"), scopes: [] });
    await a.add(three, { owner: owner("ann"), scopes: [] });
    expect(await b.get(one)).toBeUndefined();
    expect((await b.get(two))?.status).toBe("pending");
    expect((await b.get(three))?.status).toBe("pending");
  });

  it("expires challenges, pending or decided, after the TTL, and frees room", async () => {
    const [a, b] = stores2({ ttlMs: 1_000, maxChallenges: 2 });
    const [pending, decided] = [id(), id()];
    await a.add(pending, { owner: owner("ann"), scopes: [] });
    await a.add(decided, { owner: owner("bob"), scopes: [] });
    await b.decide(decided, "failed");
    await expect(a.add(id(), { owner: owner("cy"), scopes: [] })).rejects.toBeInstanceOf(ChallengeStoreFullError);
    // Redis expires them, and drops them from its index, by its own clock, which no clock of the test moves: wait
    // until that clock passed both, as long as it takes.
    const index = `${a.keyOf("").split("challenge:")[0]}challenges`;
    await until(
      async () =>
        (await admin.exists(a.keyOf(pending), a.keyOf(decided))) === 0 &&
        (await admin.zcount(index, `(${await redisNow()}`, "+inf")) === 0,
      { what: "Redis to expire the challenges" },
    );
    expect(await b.get(pending)).toBeUndefined();
    expect(await b.get(decided)).toBeUndefined();
    expect(await b.decide(pending, "completed")).toBeUndefined();
    await expect(a.add(id(), { owner: owner("cy"), scopes: [] })).resolves.toMatchObject({ status: "pending" });
  });

  it("gives a challenge's expiresAt by the store's clock, from the time Redis has left for it", async () => {
    const clock = new ManualClock();
    const [a, b] = stores2({ ttlMs: 60_000, clock });
    const c = id();
    expect((await a.add(c, { owner: owner("ann"), scopes: [] })).expiresAt).toBe(clock.now() + 60_000);
    const read = (await b.get(c))?.expiresAt ?? 0;
    expect(read).toBeGreaterThan(clock.now() + 50_000);
    expect(read).toBeLessThanOrEqual(clock.now() + 60_000);
  });

  it("replaces a challenge added again under the same id, and leaves only expiring keys behind", async () => {
    const [a] = stores2({ ttlMs: 60_000 });
    const c = id();
    await a.add(c, { owner: owner("ann"), scopes: ["one"] });
    await a.add(c, { owner: owner("bob"), scopes: ["two"] });
    expect(await a.get(c)).toMatchObject({ owner: owner("bob"), scopes: ["two"] });
    const keys = await admin.keys(`${a.keyOf("").split("challenge:")[0]}*`);
    expect(keys.length).toBeGreaterThan(0);
    for (const key of keys) {
      expect(await admin.pttl(key)).toBeGreaterThan(0);
    }
  });

  it("never shortens the shared index's TTL: an instance with a shorter ttlMs leaves the longer one", async () => {
    const keyPrefix = `t${prefixes++}:`;
    const long = new RedisChallengeStore(server.url, { keyPrefix, ttlMs: 60_000 });
    const short = new RedisChallengeStore(server.url, { keyPrefix, ttlMs: 1_000 });
    stores.push(long, short);
    const first = id();
    await long.add(first, { owner: owner("ann"), scopes: [] });
    await short.add(id(), { owner: owner("ann"), scopes: [] });
    await short.add(id(), { owner: owner("bob"), scopes: [] });
    // The index still outlives the 60 s challenge it holds, as does ann's pending set.
    expect(await admin.pttl(`${keyPrefix}challenges`)).toBeGreaterThan(50_000);
    expect(await admin.pttl(`${keyPrefix}challenge-owner:anonymous:ann`)).toBeGreaterThan(50_000);
    expect(await admin.zscore(`${keyPrefix}challenges`, long.keyOf(first))).not.toBeNull();
  });

  it("fails as a corrupt record without quoting the stored value", async () => {
    const [a] = stores2();
    const c = id();
    await a.add(c, { owner: owner("ann"), scopes: [], data: { csrf: "x" } });
    await admin.hset(a.keyOf(c), "d", '{"csrf":"secret-csrf');
    const error = await a.get(c).catch((failure: unknown) => failure);
    expect(error).toBeInstanceOf(RedisUnavailableError);
    expect((error as Error).message).toMatch(/corrupt record/);
    expect((error as Error).message).not.toContain("secret-csrf");
  });

  it("rejects bounds that are not positive integers", () => {
    expect(() => new RedisChallengeStore(server.url, { ttlMs: 0 })).toThrow(/ttlMs/);
    expect(() => new RedisChallengeStore(server.url, { maxPendingPerOwner: 1.5 })).toThrow(/maxPendingPerOwner/);
    expect(() => new RedisChallengeStore(server.url, { maxChallengesPerPrincipal: 0 })).toThrow(
      /maxChallengesPerPrincipal/,
    );
  });

  verifies(
    "limits.lone-surrogate-ids",
    "holds challenges whose id, principal or user id has a lone surrogate, each under a key of its own",
    async () => {
      const [a, b] = stores2({ maxPendingPerOwner: 1 });
      const [lone, other, replacement] = ["google.\ud800", "google.\udc00", "google.\ufffd"];
      await a.add(lone, { owner: owner("\ud800", "jwt:\udfff"), scopes: ["s"] });
      await a.add(other, { owner: owner("\udc00", "jwt:\udfff"), scopes: [] });
      await a.add(replacement, { owner: owner("\ufffd", "jwt:\udfff"), scopes: [] });
      expect(await b.get(lone)).toMatchObject({ owner: owner("\ud800", "jwt:\udfff"), status: "pending" });
      // Three owners, not one: the per-owner cap of 1 dropped none of them.
      for (const c of [lone, other, replacement]) {
        expect((await b.get(c))?.status).toBe("pending");
      }
      expect(await b.decide(lone, "completed")).toBe("completed");
      expect((await a.get(other))?.status).toBe("pending");
      expect(new Set([lone, other, replacement].map((c) => a.keyOf(c))).size).toBe(3);
    },
  );
});

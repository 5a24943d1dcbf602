// RedisChallengeStore against a real redis-server: the same bounds as the in-memory store, shared by several connections.
import { ChallengeStoreFullError } from "@otc/server";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RedisChallengeStore, type RedisChallengeStoreOptions, RedisUnavailableError } from "../src/index.js";
import { type RedisServer, startRedisServer } from "./redis-server.js";

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
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(await b.get(pending)).toBeUndefined();
    expect(await b.get(decided)).toBeUndefined();
    expect(await b.decide(pending, "completed")).toBeUndefined();
    await expect(a.add(id(), { owner: owner("cy"), scopes: [] })).resolves.toMatchObject({ status: "pending" });
  });

  it("replaces a challenge added again under the same id, and leaves only expiring keys behind", async () => {
    const [a] = stores2({ ttlMs: 60_000 });
    const c = id();
    await a.add(c, { owner: owner("ann"), scopes: ["one"] });
    await a.add(c, { owner: owner("bob"), scopes: ["two"] });
    expect(await a.get(c)).toMatchObject({ owner: owner("bob"), scopes: ["two"] });
    const keys = await admin.keys(`${a.keyOf("").split("challenge:")[0]}*`);
    expect(keys.length).toBeGreaterThan(0);
    for (const key of keys) expect(await admin.pttl(key)).toBeGreaterThan(0);
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
  });
});

// MemoryChallengeStore: the bounds every challenge store keeps (TTL, per-owner pending cap, total cap), first decision stands, amortized O(1).
import { describe, expect, it } from "vitest";
import { ChallengeStoreFullError, MemoryChallengeStore } from "./challenge-store.js";

const owner = (userId: string, principal = "anonymous") => ({ principal, userId });

describe("MemoryChallengeStore", () => {
  it("holds a pending challenge with its data, and hands out copies", async () => {
    const store = new MemoryChallengeStore();
    const added = await store.add("c1", { owner: owner("ann"), scopes: ["s"], data: { csrf: "x" } });
    expect(added).toMatchObject({ owner: owner("ann"), scopes: ["s"], status: "pending", data: { csrf: "x" } });
    (added.scopes as string[]).push("changed");
    expect((await store.get("c1"))?.scopes).toEqual(["s"]);
    expect(await store.get("unknown")).toBeUndefined();
    expect(store.size).toBe(1);
  });

  it("keeps the first decision", async () => {
    const store = new MemoryChallengeStore();
    await store.add("c1", { owner: owner("ann"), scopes: [] });
    expect(await store.decide("c1", "failed")).toBe("failed");
    expect(await store.decide("c1", "completed")).toBe("failed");
    expect((await store.get("c1"))?.status).toBe("failed");
    expect(await store.decide("unknown", "completed")).toBeUndefined();
  });

  it("drops an owner's oldest pending beyond the cap, keyed on principal and user, decided ones not counted", async () => {
    const store = new MemoryChallengeStore({ maxPendingPerOwner: 2 });
    await store.add("a1", { owner: owner("u", "a"), scopes: [] });
    await store.add("a2", { owner: owner("u", "a"), scopes: [] });
    await store.add("b1", { owner: owner("u", "b"), scopes: [] });
    await store.decide("a1", "completed");
    await store.add("a3", { owner: owner("u", "a"), scopes: [] });
    expect((await store.get("a2"))?.status).toBe("pending");
    await store.add("a4", { owner: owner("u", "a"), scopes: [] });
    expect(await store.get("a2")).toBeUndefined();
    expect((await store.get("a1"))?.status).toBe("completed");
    expect((await store.get("b1"))?.status).toBe("pending");
    expect(store.size).toBe(4);
  });

  it("refuses beyond the total with when the oldest expires, and takes one again once it has", async () => {
    let now = 1_000_000;
    const store = new MemoryChallengeStore({ maxChallenges: 2, ttlMs: 60_000, now: () => now });
    await store.add("one", { owner: owner("ann"), scopes: [] });
    now += 10_000;
    await store.add("two", { owner: owner("bob"), scopes: [] });
    const refused = await store.add("three", { owner: owner("cy"), scopes: [] }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ChallengeStoreFullError);
    expect((refused as ChallengeStoreFullError).retryAfterMs).toBe(50_000);
    expect((refused as ChallengeStoreFullError).maxChallenges).toBe(2);
    now += 50_000;
    await expect(store.add("three", { owner: owner("cy"), scopes: [] })).resolves.toMatchObject({ status: "pending" });
    expect(await store.get("one")).toBeUndefined();
    expect(store.size).toBe(2);
  });

  it("lets an owner at the cap replace their oldest even when the total is full, and replaces a reused id", async () => {
    const store = new MemoryChallengeStore({ maxChallenges: 2, maxPendingPerOwner: 2 });
    for (const id of ["one", "two", "three"]) await store.add(id, { owner: owner("ann"), scopes: [] });
    expect(await store.get("one")).toBeUndefined();
    await store.add("two", { owner: owner("ann"), scopes: ["again"] });
    expect((await store.get("two"))?.scopes).toEqual(["again"]);
    expect(store.size).toBe(2);
  });

  it("expires challenges, pending or decided, after the TTL", async () => {
    let now = 0;
    const store = new MemoryChallengeStore({ ttlMs: 20, now: () => now });
    await store.add("p", { owner: owner("ann"), scopes: [] });
    await store.add("d", { owner: owner("bob"), scopes: [] });
    await store.decide("d", "completed");
    now = 20;
    expect(await store.get("p")).toBeUndefined();
    expect(await store.decide("d", "failed")).toBeUndefined();
    expect(store.size).toBe(0);
  });

  it("rejects bounds that are not positive integers", () => {
    expect(() => new MemoryChallengeStore({ ttlMs: 0 })).toThrow(/ttlMs/);
    expect(() => new MemoryChallengeStore({ maxPendingPerOwner: 1.5 })).toThrow(/maxPendingPerOwner/);
    expect(() => new MemoryChallengeStore({ maxChallenges: -1 })).toThrow(/maxChallenges/);
  });

  it("adds in time that does not grow with how many are held", async () => {
    const store = new MemoryChallengeStore({ maxChallenges: 20_000 });
    const batches: number[] = [];
    for (let from = 0; from < 20_000; from += 1_000) {
      const started = performance.now();
      for (let i = from; i < from + 1_000; i++) await store.add(`c${i}`, { owner: owner(`user-${i}`), scopes: [] });
      batches.push(performance.now() - started);
    }
    expect(store.size).toBe(20_000);
    // A ratio, not a time; the fastest of three batches at each end, so one garbage collection does not decide it.
    const first = Math.min(...batches.slice(0, 3));
    const last = Math.min(...batches.slice(-3));
    expect(last, `batches of 1,000 (ms): ${batches.map((ms) => ms.toFixed(1)).join(", ")}`).toBeLessThan(first * 3);
  });
});

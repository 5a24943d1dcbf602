// MemoryChallengeStore: the bounds every challenge store keeps (TTL, per-owner pending cap, per-principal cap, total cap), first decision stands (its cost per add: challenge-store.slow.test.ts).
import { verifies } from "@otc/test-helpers/verifies";
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

  verifies(
    "requirements.challenges-per-principal",
    "caps each principal's challenges, pending or decided, over all its user ids, dropping only its own oldest",
    async () => {
      const store = new MemoryChallengeStore({ maxChallengesPerPrincipal: 3, maxChallenges: 6 });
      await store.add("a1", { owner: owner("u1", "a"), scopes: [] });
      await store.add("b1", { owner: owner("u1", "b"), scopes: [] });
      await store.add("a2", { owner: owner("u2", "a"), scopes: [] });
      await store.add("a3", { owner: owner("u3", "a"), scopes: [] });
      await store.decide("a1", "completed");
      // a holds 3: its fourth drops a1, decided, the oldest of its own; b's stays.
      await store.add("a4", { owner: owner("u4", "a"), scopes: [] });
      expect(await store.get("a1")).toBeUndefined();
      expect((await store.get("a2"))?.status).toBe("pending");
      expect((await store.get("b1"))?.status).toBe("pending");
      expect(store.size).toBe(4);
      // However many more a starts, with new user ids each, it holds 3 and the total never fills for b.
      for (let i = 5; i < 100; i++) {
        await store.add(`a${i}`, { owner: owner(`u${i}`, "a"), scopes: [] });
      }
      expect(store.size).toBe(4);
      await store.add("b2", { owner: owner("u2", "b"), scopes: [] });
      await store.add("b3", { owner: owner("u3", "b"), scopes: [] });
      expect(store.size).toBe(6);
      for (const id of ["a97", "a98", "a99", "b1", "b2"]) {
        expect((await store.get(id))?.status).toBe("pending");
      }
      // b at its cap too: its own oldest goes, never a's.
      await store.add("b4", { owner: owner("u4", "b"), scopes: [] });
      expect(await store.get("b1")).toBeUndefined();
      expect((await store.get("a97"))?.status).toBe("pending");
    },
  );

  verifies(
    ["requirements.challenges-per-principal", "requirements.consent-challenges-bounded"],
    "with the default bounds, one principal's 12,000 challenges never deny another principal's",
    async () => {
      const store = new MemoryChallengeStore();
      for (let i = 0; i < 12_000; i++) {
        await store.add(`flood-${i}`, { owner: owner(`user-${i}`, "jwt:a"), scopes: [] });
      }
      expect(store.size).toBe(1_000);
      await expect(store.add("victim", { owner: owner("ann", "api-key:1"), scopes: [] })).resolves.toMatchObject({
        status: "pending",
      });
      // The flooder's newest are held, its oldest dropped.
      expect((await store.get("flood-11999"))?.status).toBe("pending");
      expect(await store.get("flood-10999")).toBeUndefined();
    },
  );

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
    for (const id of ["one", "two", "three"]) {
      await store.add(id, { owner: owner("ann"), scopes: [] });
    }
    expect(await store.get("one")).toBeUndefined();
    await store.add("two", { owner: owner("ann"), scopes: ["again"] });
    expect((await store.get("two"))?.scopes).toEqual(["again"]);
    expect(store.size).toBe(2);
  });

  verifies(
    "requirements.challenges-per-principal",
    "lets a principal at its cap replace its oldest even when the total is full",
    async () => {
      const store = new MemoryChallengeStore({ maxChallenges: 3, maxChallengesPerPrincipal: 2 });
      await store.add("b1", { owner: owner("bob", "b"), scopes: [] });
      await store.add("a1", { owner: owner("ann", "a"), scopes: [] });
      await store.add("a2", { owner: owner("cy", "a"), scopes: [] });
      await expect(store.add("c1", { owner: owner("dee", "c"), scopes: [] })).rejects.toBeInstanceOf(
        ChallengeStoreFullError,
      );
      await store.decide("a2", "failed");
      await store.add("a3", { owner: owner("eve", "a"), scopes: [] });
      expect(await store.get("a1")).toBeUndefined();
      expect((await store.get("a2"))?.status).toBe("failed");
      expect((await store.get("b1"))?.status).toBe("pending");
      expect(store.size).toBe(3);
    },
  );

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
    expect(() => new MemoryChallengeStore({ maxChallengesPerPrincipal: 0 })).toThrow(/maxChallengesPerPrincipal/);
  });
});

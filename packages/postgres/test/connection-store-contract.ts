// What every ConnectionStore must do, as one suite each store's test file runs against its own store: the memory store of @otc/server, PostgreSQL and PGlite.
import {
  type ConnectionRecord,
  type ConnectionStore,
  type ConnectionStoreBounds,
  ConnectionStoreFullError,
  type SealedTokens,
} from "@otc/server";
import { afterEach, describe, expect, it } from "vitest";

/** A store made for one test, and what the suite needs to know of it. */
export interface ContractSubject {
  store: ConnectionStore;
  /** Another instance on the same storage (another pool on the same database), for stores shared by several. */
  other?: ConnectionStore;
  /**
   * Resolves once `count` callers wait for a connection's lock that another caller holds (on either instance). A
   * store with no way to count them resolves once every caller that is not blocked would have run.
   */
  lockWaiters(count: number): Promise<void>;
  /**
   * Moves the clock the store's lock time limit follows, for a store whose limit is a test clock's (the memory
   * store's); a store without it waits out its time limit for real.
   */
  advance?(ms: number): Promise<void>;
  close(): Promise<void>;
}

/** A resolvable promise: work that waits for the test. */
export function gate(): { promise: Promise<void>; open(): void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

const T0 = 1_764_000_000_123;

/** A connection, as a test would have the server write it. */
export function record(overrides: Partial<ConnectionRecord> = {}): ConnectionRecord {
  return {
    id: "conn-1",
    principal: "app",
    userId: "alice",
    provider: "gmail",
    status: "active",
    scopes: ["mail.read", "mail.send"],
    account: "alice@example.com",
    createdAt: T0,
    updatedAt: T0,
    expiresAt: T0 + 3_600_000,
    tokens: { kid: "k1", iv: "aXY", data: "c2VhbGVk" },
    version: 1,
    ...overrides,
  };
}

/** Runs the contract against the stores `make` makes (a fresh, empty one per test). */
export function connectionStoreContract(
  name: string,
  make: (bounds?: ConnectionStoreBounds) => Promise<ContractSubject>,
): void {
  describe(`${name}: the ConnectionStore contract`, () => {
    const made: ContractSubject[] = [];
    const subject = async (bounds?: ConnectionStoreBounds) => {
      const it = await make(bounds);
      made.push(it);
      return it;
    };
    afterEach(async () => {
      await Promise.all(made.splice(0).map((it) => it.close()));
    });

    it("answers a connection as it was written, and nothing for an unknown id", async () => {
      const { store } = await subject();
      const written = record();
      await store.insert(written);
      expect(await store.get("conn-1")).toStrictEqual(written);
      expect(await store.get("nope")).toBeUndefined();
    });

    it("keeps its own copy: a record changed after it is written or once it is read changes nothing stored", async () => {
      const { store } = await subject();
      const written = record();
      await store.insert(written);
      written.scopes.push("inserted");
      (written.tokens as SealedTokens).data = "changed after insert";
      const read = (await store.get("conn-1")) as ConnectionRecord;
      expect(read).toStrictEqual(record());
      read.scopes.push("read");
      (read.tokens as SealedTokens).iv = "changed after get";
      const [listed] = await store.list("app", "alice");
      (listed as ConnectionRecord).scopes.length = 0;
      const next = record({ version: 2, status: "auth_required" });
      expect(await store.update(next, 1)).toBe(true);
      next.scopes.push("updated");
      (next.tokens as SealedTokens).kid = "changed after update";
      expect(await store.get("conn-1")).toStrictEqual(record({ version: 2, status: "auth_required" }));
    });

    it("keeps the optional fields absent when they were", async () => {
      const { store } = await subject();
      const pending = record({ status: "pending", scopes: [] });
      delete pending.account;
      delete pending.expiresAt;
      delete pending.tokens;
      await store.insert(pending);
      expect(await store.get("conn-1")).toStrictEqual(pending);
    });

    it("lists a user's connections newest first, ties by id, and no one else's", async () => {
      const { store } = await subject();
      await store.insert(record({ id: "b", createdAt: T0 }));
      await store.insert(record({ id: "c", createdAt: T0 + 1 }));
      await store.insert(record({ id: "a", createdAt: T0 }));
      await store.insert(record({ id: "B", createdAt: T0 }));
      await store.insert(record({ id: "bob-1", userId: "bob" }));
      await store.insert(record({ id: "other-app", principal: "other" }));
      const listed = await store.list("app", "alice");
      expect(listed.map((each) => each.id)).toEqual(["c", "B", "a", "b"]);
      expect((await store.list("app", "bob")).map((each) => each.id)).toEqual(["bob-1"]);
      expect(await store.list("app", "carol")).toEqual([]);
    });

    it("refuses a second connection with the same id", async () => {
      const { store } = await subject();
      await store.insert(record());
      await expect(store.insert(record({ userId: "bob" }))).rejects.toThrow(/exists/);
      expect(await store.list("app", "bob")).toEqual([]);
    });

    it("refuses an insert past the bound per user, and past the bound in all", async () => {
      const { store } = await subject({ maxPerUser: 2, maxTotal: 3 });
      await store.insert(record({ id: "a1" }));
      await store.insert(record({ id: "a2" }));
      const perUser = store.insert(record({ id: "a3" }));
      await expect(perUser).rejects.toBeInstanceOf(ConnectionStoreFullError);
      await expect(perUser).rejects.toMatchObject({ bound: "user" });
      await store.insert(record({ id: "b1", userId: "bob" }));
      const total = store.insert(record({ id: "c1", userId: "carol" }));
      await expect(total).rejects.toMatchObject({ name: "ConnectionStoreFullError", bound: "total" });
      // A delete makes room again.
      await store.delete("a1");
      await store.insert(record({ id: "c1", userId: "carol" }));
      expect((await store.list("app", "carol")).map((each) => each.id)).toEqual(["c1"]);
    });

    it("lets one of two concurrent inserts at the bound through", async () => {
      const { store, other = store } = await subject({ maxPerUser: 3 });
      await store.insert(record({ id: "a1" }));
      await store.insert(record({ id: "a2" }));
      const outcomes = await Promise.allSettled([
        store.insert(record({ id: "a3" })),
        other.insert(record({ id: "a4" })),
      ]);
      expect(outcomes.filter((outcome) => outcome.status === "fulfilled")).toHaveLength(1);
      const refused = outcomes.find((outcome) => outcome.status === "rejected");
      expect(refused?.reason).toBeInstanceOf(ConnectionStoreFullError);
      expect(await store.list("app", "alice")).toHaveLength(3);
    });

    it("updates only from the version stored: a stale write is refused", async () => {
      const { store, other = store } = await subject();
      await store.insert(record());
      const refreshed = record({ version: 2, updatedAt: T0 + 5, expiresAt: T0 + 7_200_000, scopes: ["mail.read"] });
      expect(await store.update(refreshed, 1)).toBe(true);
      // Another instance read version 1 before the refresh and writes from it: refused.
      expect(await other.update(record({ version: 2, status: "revoked" }), 1)).toBe(false);
      expect(await store.get("conn-1")).toStrictEqual(refreshed);
      expect(await store.update(record({ id: "gone", version: 2 }), 1)).toBe(false);
    });

    it("deletes a connection, and an unknown id quietly", async () => {
      const { store } = await subject();
      await store.insert(record());
      await store.delete("conn-1");
      await store.delete("conn-1");
      expect(await store.get("conn-1")).toBeUndefined();
      expect(await store.list("app", "alice")).toEqual([]);
    });

    it("answers what the locked work answers, and rejects with what it throws, letting go either way", async () => {
      const { store } = await subject();
      expect(await store.withLock("conn-1", 5_000, async () => 42)).toBe(42);
      await expect(
        store.withLock("conn-1", 5_000, async () => {
          throw new Error("refresh failed");
        }),
      ).rejects.toThrow("refresh failed");
      expect(await store.withLock("conn-1", 5_000, async () => "free again")).toBe("free again");
    });

    it("serializes two callers of one connection's lock: the second sees the first's write", async () => {
      const { store, lockWaiters } = await subject();
      await store.insert(record());
      const firstIn = gate();
      const secondIn = gate();
      const letFirstFinish = gate();
      try {
        const first = store.withLock("conn-1", 30_000, async () => {
          firstIn.open();
          await letFirstFinish.promise;
          return store.update(record({ version: 2, expiresAt: T0 + 7_200_000 }), 1);
        });
        await firstIn.promise;
        const second = store.withLock("conn-1", 30_000, async () => {
          secondIn.open();
          return store.get("conn-1");
        });
        // Whichever comes first: the second caller waiting (right), or in its work while the first holds the lock.
        expect(await Promise.race([lockWaiters(1).then(() => "waits"), secondIn.promise.then(() => "ran")])).toBe(
          "waits",
        );
        letFirstFinish.open();
        expect(await first).toBe(true);
        expect((await second)?.version).toBe(2);
      } finally {
        letFirstFinish.open();
      }
      // Another connection's lock is another lock: it does not wait.
      const held = gate();
      const holding = store.withLock("conn-1", 30_000, () => held.promise);
      try {
        expect(await store.withLock("conn-2", 30_000, async () => "not blocked")).toBe("not blocked");
      } finally {
        held.open();
        await holding;
      }
    });

    it("refreshes once when two instances find the token expiring at once", async () => {
      const { store, other = store, lockWaiters } = await subject();
      await store.insert(record({ expiresAt: T0 + 1_000 }));
      let refreshes = 0;
      const entered = [gate(), gate()] as const;
      const letRefresh = gate();
      // What the server does: under the lock, read the connection again, and refresh only if it still expires soon.
      const refreshIfExpiring = (instance: ConnectionStore, which: 0 | 1) =>
        instance.withLock("conn-1", 30_000, async () => {
          entered[which].open();
          const current = await instance.get("conn-1");
          if (!current || (current.expiresAt ?? 0) > T0 + 60_000) {
            return "fresh already";
          }
          await letRefresh.promise;
          refreshes++;
          const next = { ...current, expiresAt: T0 + 3_600_000, version: current.version + 1 };
          return (await instance.update(next, current.version)) ? "refreshed" : "lost the race";
        });
      try {
        const first = refreshIfExpiring(store, 0);
        await entered[0].promise;
        const second = refreshIfExpiring(other, 1);
        expect(await Promise.race([lockWaiters(1).then(() => "waits"), entered[1].promise.then(() => "ran")])).toBe(
          "waits",
        );
        letRefresh.open();
        expect(await Promise.all([first, second])).toEqual(["refreshed", "fresh already"]);
        expect(refreshes).toBe(1);
        expect((await store.get("conn-1"))?.version).toBe(2);
      } finally {
        letRefresh.open();
      }
    });
  });
}

/** The lock's time limit, for the stores that honour it: a caller that waits longer gives up with an error. */
export function lockTimeoutContract(
  name: string,
  make: () => Promise<ContractSubject>,
  isTimeout: (error: unknown) => boolean,
): void {
  describe(`${name}: the lock's time limit`, () => {
    // The one real time limit of these suites, for the SQL stores: their lock's timeout is PostgreSQL's lock_timeout
    // (or their process's timers), which no test clock reaches. Short, and only ever waited out by a caller meant to
    // give up. A store on a test clock has it moved instead.
    const GIVE_UP_MS = 50;

    it("gives up on a lock held past timeoutMs, on one instance and across two, and the lock still works after", async () => {
      const it = await make();
      const held = gate();
      try {
        const { store, other = store } = it;
        const holderIn = gate();
        const holding = store.withLock("conn-1", 30_000, async () => {
          holderIn.open();
          await held.promise;
          return "held";
        });
        await holderIn.promise;
        for (const instance of new Set([store, other])) {
          let ran = false;
          const waited = instance.withLock("conn-1", GIVE_UP_MS, async () => {
            ran = true;
          });
          const outcome = waited.then(
            () => undefined,
            (thrown: unknown) => thrown,
          );
          await it.advance?.(GIVE_UP_MS);
          const error = await outcome;
          expect(isTimeout(error), String(error)).toBe(true);
          expect(ran).toBe(false);
        }
        held.open();
        expect(await holding).toBe("held");
        expect(await other.withLock("conn-1", 30_000, async () => "after")).toBe("after");
        expect(await store.withLock("conn-1", 30_000, async () => "after")).toBe("after");
      } finally {
        held.open();
        await it.close();
      }
    });
  });
}

// The in-memory idempotency store's bounds: entries and bytes, per principal and in total, never a running call.
import { ManualClock } from "@otc/test-helpers/manual-clock";
import { verifies } from "@otc/test-helpers/verifies";
import type { CallToolResponse } from "@otc/types";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { IdempotencyStoreFullError, MemoryIdempotencyStore, utf8ByteLength } from "./idempotency-store.js";

const ok = (callId: string, value: unknown = null): CallToolResponse => ({
  call_id: callId,
  duration: 1,
  success: true,
  value,
});

/** Claims and completes one key, as the core does for a finished call. */
async function finish(store: MemoryIdempotencyStore, principal: string, callId: string, value: unknown = null) {
  const key = { principal, callId };
  expect(await store.claim(key, "f", 60_000)).toBeUndefined();
  await store.complete(key, { fingerprint: "f", response: ok(callId, value) }, 60_000);
}

describe("MemoryIdempotencyStore", () => {
  verifies(
    ["idempotency.per-principal", "limits.bounded-resources"],
    "keeps its write queues within a multiple of the records it holds, however many keys come and go",
    async () => {
      const store = new MemoryIdempotencyStore({ maxEntriesPerPrincipal: 10 });
      for (let i = 0; i < 50_000; i++) {
        await finish(store, "p", `c-${i}`);
      }
      expect(store.size).toBe(10);
      const internals = store as unknown as {
        writes: { length: number };
        principals: Map<string, { queue: { length: number } }>;
      };
      // Before the fix both queues kept every key ever written (50,000 here): a slow leak under fresh call_ids.
      expect(internals.writes.length).toBeLessThan(2_100);
      expect(internals.principals.get("p")?.queue.length).toBeLessThan(2_100);
    },
  );

  it("keeps equal call_ids of two principals apart", async () => {
    const store = new MemoryIdempotencyStore();
    await finish(store, "alice", "k", 1);
    expect(await store.get({ principal: "bob", callId: "k" })).toBeUndefined();
    await finish(store, "bob", "k", 2);
    expect((await store.get({ principal: "alice", callId: "k" }))?.response).toMatchObject({ value: 1 });
    expect((await store.get({ principal: "bob", callId: "k" }))?.response).toMatchObject({ value: 2 });
  });

  verifies(
    "idempotency.per-principal-quota",
    "past a principal's entry quota, drops that principal's own oldest finished records only",
    async () => {
      const store = new MemoryIdempotencyStore({ maxEntriesPerPrincipal: 3 });
      await finish(store, "bob", "b0");
      for (const id of ["a1", "a2", "a3", "a4", "a5"]) {
        await finish(store, "alice", id);
      }
      expect(await store.get({ principal: "alice", callId: "a1" })).toBeUndefined();
      expect(await store.get({ principal: "alice", callId: "a2" })).toBeUndefined();
      expect(await store.get({ principal: "alice", callId: "a5" })).toBeDefined();
      expect(await store.get({ principal: "bob", callId: "b0" })).toBeDefined();
    },
  );

  verifies(
    "idempotency.per-principal-quota",
    "never drops a call still running: a principal whose quota is all running calls is refused",
    async () => {
      const store = new MemoryIdempotencyStore({ maxEntriesPerPrincipal: 2 });
      await store.claim({ principal: "alice", callId: "r1" }, "f", 60_000);
      await store.claim({ principal: "alice", callId: "r2" }, "f", 60_000);
      await expect(store.claim({ principal: "alice", callId: "r3" }, "f", 60_000)).rejects.toBeInstanceOf(
        IdempotencyStoreFullError,
      );
      expect(await store.get({ principal: "alice", callId: "r1" })).toEqual({ fingerprint: "f" });
      expect(await store.claim({ principal: "bob", callId: "r1" }, "f", 60_000)).toBeUndefined();
    },
  );

  verifies(
    ["idempotency.full-store-503", "idempotency.bounded-store"],
    "refuses new keys when the whole store is full rather than drop another principal's records",
    async () => {
      const store = new MemoryIdempotencyStore({ maxEntries: 2 });
      await finish(store, "alice", "a1");
      await finish(store, "bob", "b1");
      const refused = await store.claim({ principal: "carol", callId: "c1" }, "f", 60_000).catch((error) => error);
      expect(refused).toBeInstanceOf(IdempotencyStoreFullError);
      expect(refused.retryAfterMs).toBeGreaterThan(50_000);
      expect(await store.get({ principal: "alice", callId: "a1" })).toBeDefined();
      expect(await store.get({ principal: "bob", callId: "b1" })).toBeDefined();
    },
  );

  verifies("idempotency.bounded-store", "is bounded in bytes: large responses count by their size", async () => {
    const store = new MemoryIdempotencyStore({ maxBytesPerPrincipal: 1_000_000, maxResponseBytes: 400_000 });
    for (let i = 0; i < 10; i++) {
      await finish(store, "alice", `k${i}`, "x".repeat(300_000));
    }
    expect(store.bytes).toBeLessThanOrEqual(1_000_000);
    expect(store.size).toBe(3);
    expect(await store.get({ principal: "alice", callId: "k9" })).toBeDefined();
  });

  verifies(
    "idempotency.oversized-response-not-kept",
    "keeps no response over maxResponseBytes and frees its key, so a replay runs again",
    async () => {
      const store = new MemoryIdempotencyStore({ maxResponseBytes: 1_000 });
      await finish(store, "alice", "big", "x".repeat(2_000));
      expect(await store.get({ principal: "alice", callId: "big" })).toBeUndefined();
      expect(store.bytes).toBe(0);
    },
  );

  it("frees the bytes of expired records", async () => {
    let now = 0;
    const store = new MemoryIdempotencyStore({ now: () => now });
    await finish(store, "alice", "old", "x".repeat(10_000));
    now = 60_000;
    await finish(store, "alice", "new");
    expect(store.size).toBe(1);
    expect(store.bytes).toBeLessThan(10_000);
  });

  it("hands out a fresh copy of a stored response", async () => {
    const store = new MemoryIdempotencyStore();
    await finish(store, "alice", "k", { list: [1] });
    const first = await store.get({ principal: "alice", callId: "k" });
    if (first?.response?.success) {
      (first.response.value as { list: number[] }).list.push(2);
    }
    expect((await store.get({ principal: "alice", callId: "k" }))?.response).toMatchObject({ value: { list: [1] } });
  });
});

describe("utf8ByteLength", () => {
  it.each<[string, string, number]>([
    ["empty", "", 0],
    ["ASCII", '{"a":1}', 7],
    ["two-byte", "é", 2],
    ["three-byte", "€", 3],
    ["a surrogate pair", "😀", 4],
    ["a lone high surrogate, written as U+FFFD", "\ud800", 3],
    ["a lone low surrogate", "a\udc00b", 5],
    ["a high surrogate at the end", "x\ud83d", 4],
  ])("counts %s as Buffer.byteLength does", (_case, text, bytes) => {
    expect(utf8ByteLength(text)).toBe(bytes);
    expect(utf8ByteLength(text)).toBe(Buffer.byteLength(text));
  });

  it("measures a string longer than its scratch buffer, pairs and lone surrogates at every offset", () => {
    for (const unit of ["😀", "é", "\ud800", "€"]) {
      for (let pad = 0; pad < 4; pad++) {
        const text = "a".repeat(pad) + unit.repeat(40_000);
        expect(utf8ByteLength(text)).toBe(Buffer.byteLength(text));
      }
    }
  });

  it("agrees with Buffer.byteLength on any UTF-16 string", () => {
    const units = fc.array(fc.integer({ min: 0, max: 0xffff }), { maxLength: 40 });
    fc.assert(
      fc.property(units, (codes) => {
        const text = String.fromCharCode(...codes);
        expect(utf8ByteLength(text)).toBe(Buffer.byteLength(text));
      }),
    );
  });

  it("is what a kept response costs: a response over maxResponseBytes in UTF-8 (not in characters) is not kept", async () => {
    const response = ok("k", "€".repeat(100));
    const size = utf8ByteLength(JSON.stringify(response));
    const store = new MemoryIdempotencyStore({ maxResponseBytes: size - 1 });
    await store.claim({ principal: "p", callId: "k" }, "f", 1_000);
    await store.complete({ principal: "p", callId: "k" }, { fingerprint: "f", response }, 1_000);
    expect(await store.get({ principal: "p", callId: "k" })).toBeUndefined();
    const roomy = new MemoryIdempotencyStore({ maxResponseBytes: size });
    await roomy.claim({ principal: "p", callId: "k" }, "f", 1_000);
    await roomy.complete({ principal: "p", callId: "k" }, { fingerprint: "f", response }, 1_000);
    expect(await roomy.get({ principal: "p", callId: "k" })).toMatchObject({ response });
  });
});

describe("MemoryIdempotencyStore.waitFor", () => {
  const key = { principal: "p", callId: "c" };
  const failed: CallToolResponse = {
    call_id: "c",
    duration: 1,
    success: false,
    error: { message: "busy", can_retry: true },
  };

  verifies(
    "idempotency.shared-store",
    "wakes a waiter at each end of the first call, without polling: completed, abandoned, released, freed",
    async () => {
      const clock = new ManualClock();
      const store = new MemoryIdempotencyStore({ clock });
      const ends: [string, (store: MemoryIdempotencyStore) => Promise<void>, unknown][] = [
        [
          "completed",
          (s) => s.complete(key, { fingerprint: "f", response: ok("c", 1) }, 60_000),
          { response: ok("c", 1) },
        ],
        ["abandoned", (s) => s.abandon(key, "f", 60_000), { abandoned: true }],
        ["released to its waiters", (s) => s.release(key, failed), { response: failed }],
      ];
      for (const [, end, expected] of ends) {
        await store.release(key);
        expect(await store.claim(key, "f", 60_000)).toBeUndefined();
        const waiting = store.waitFor(key, "f", 60_000);
        // Only the wait's own time limit is pending: nothing looks the key up again on a timer.
        expect(clock.pending).toBe(1);
        await end(store);
        expect(await waiting).toMatchObject({ fingerprint: "f", ...(expected as object) });
        expect(clock.pending).toBe(0);
      }
      await store.release(key);
      expect(await store.claim(key, "f", 60_000)).toBeUndefined();
      const freed = store.waitFor(key, "f", 60_000);
      await store.release(key);
      expect(await freed).toBeUndefined();
      // Held for another call: not this waiter's.
      expect(await store.claim(key, "g", 60_000)).toBeUndefined();
      expect(await store.waitFor(key, "f", 60_000)).toBeUndefined();
    },
  );

  verifies("tasks.lease", "gives up on a run whose lease ran out, and at its own time limit", async () => {
    const clock = new ManualClock();
    const store = new MemoryIdempotencyStore({ clock });
    expect(await store.claim(key, "f", 600_000)).toBeUndefined();
    await store.renew(key, "f", 300);
    let result: unknown = "pending";
    const waiting = store.waitFor(key, "f", 60_000).then((entry) => {
      result = entry;
    });
    await clock.advance(200);
    // Renewed in time: still waiting.
    await store.renew(key, "f", 300);
    await clock.advance(200);
    expect(result).toBe("pending");
    await clock.advance(200);
    await waiting;
    expect(result).toBeUndefined();
    const other = { principal: "p", callId: "d" };
    expect(await store.claim(other, "f", 600_000)).toBeUndefined();
    const late = store.waitFor(other, "f", 1_000);
    await clock.advance(1_000);
    expect(await late).toBeUndefined();
    expect(clock.pending).toBe(0);
  });
});

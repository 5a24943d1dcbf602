// RedisIdempotencyStore against a real redis-server: atomic claims across connections, TTLs, bounds, pub/sub waits, outages.
import { IdempotencyStoreFullError } from "@otc/server";
import { ManualClock } from "@otc/test-helpers/manual-clock";
import { type RedisServer, startRedisServer } from "@otc/test-helpers/redis-server";
import { until } from "@otc/test-helpers/until";
import { verifies } from "@otc/test-helpers/verifies";
import type { CallToolResponse } from "@otc/types";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createRedisState,
  RedisEvictionPolicyWarning,
  RedisIdempotencyStore,
  RedisUnavailableError,
} from "../src/index.js";
import { startTcpProxy } from "./tcp-proxy.js";

let server: RedisServer;
let admin: Redis;
const stores: RedisIdempotencyStore[] = [];
let next = 0;

/** A store on its own connection, as another instance would have. */
function store(options: ConstructorParameters<typeof RedisIdempotencyStore>[1] = {}) {
  const made = new RedisIdempotencyStore(server.url, options);
  stores.push(made);
  return made;
}
const key = (principal = "anonymous") => ({ principal, callId: `call-${next++}` });
/** Resolves once `count` connections listen on the channel `name`: the waiters' SUBSCRIBEs reached Redis. */
const subscribed = (name: string, count = 1) =>
  until(async () => Number((await admin.pubsub("NUMSUB", name))[1]) === count, { what: `${count} on ${name}` });
/**
 * Resolves once Redis has expired `keys`. Their TTLs run on Redis's own clock, which no clock of the test moves: the
 * test waits for as long as that takes, and no longer.
 */
const lapsed = (...keys: string[]) =>
  until(async () => (await admin.exists(...keys)) === 0, { what: "Redis to expire the keys" });
/** What `promise` resolved with, and whether that took under 3 s: far below the 15 s limits the waits are given. */
async function timed<T>(promise: Promise<T>): Promise<{ value: T; fast: boolean }> {
  const started = Date.now();
  const value = await promise;
  return { value, fast: Date.now() - started < 3_000 };
}
const failed = (callId: string, message: string): CallToolResponse => ({
  call_id: callId,
  duration: 500,
  success: false,
  error: { message, can_retry: true },
});
const ok = (callId: string, value: unknown): CallToolResponse => ({
  call_id: callId,
  duration: 1,
  success: true,
  value,
});

beforeAll(async () => {
  server = await startRedisServer();
  admin = new Redis(server.url);
});
afterAll(async () => {
  await Promise.all(stores.map((made) => made.close()));
  admin.disconnect();
  await server.close();
});

describe("RedisIdempotencyStore", () => {
  it("lets exactly one of many concurrent claims from separate connections take a key", async () => {
    const [a, b, c] = [store(), store(), store()];
    const k = key();
    const claims = await Promise.all(
      Array.from({ length: 30 }, (_, i) => [a, b, c][i % 3]?.claim(k, "fp", 10_000) ?? Promise.reject()),
    );
    expect(claims.filter((held) => held === undefined)).toHaveLength(1);
    expect(claims.filter((held) => held !== undefined)).toEqual(Array(29).fill({ fingerprint: "fp" }));
  });

  it("keeps a finished response for the retention it is given, and replays it to any instance", async () => {
    const [a, b] = [store(), store()];
    const k = key();
    expect(await a.claim(k, "fp", 10_000)).toBeUndefined();
    expect(await admin.pttl(a.keyOf(k))).toBeLessThanOrEqual(10_000);
    await a.complete(k, { fingerprint: "fp", response: ok(k.callId, { n: 1 }) }, 60_000);
    expect(await b.claim(k, "fp", 10_000)).toEqual({ fingerprint: "fp", response: ok(k.callId, { n: 1 }) });
    expect(await b.get(k)).toEqual({ fingerprint: "fp", response: ok(k.callId, { n: 1 }) });
    const ttl = await admin.pttl(a.keyOf(k));
    expect(ttl).toBeGreaterThan(10_000);
    expect(ttl).toBeLessThanOrEqual(60_000);
  });

  it("lets a claim lapse after its TTL, so a dead instance's key is not held forever", async () => {
    const a = store();
    const k = key();
    expect(await a.claim(k, "fp", 1_000)).toBeUndefined();
    expect(await a.claim(k, "fp", 1_000)).toEqual({ fingerprint: "fp" });
    await lapsed(a.keyOf(k));
    expect(await a.claim(k, "fp", 10_000)).toBeUndefined();
  });

  it("does not let a late finisher overwrite a key another call took after its claim lapsed", async () => {
    const a = store();
    const k = key();
    await a.claim(k, "first", 100);
    await lapsed(a.keyOf(k));
    expect(await a.claim(k, "second", 10_000)).toBeUndefined();
    await a.complete(k, { fingerprint: "first", response: ok(k.callId, 1) }, 60_000);
    expect(await a.get(k)).toEqual({ fingerprint: "second" });
  });

  it("frees a key instead of keeping a response over maxResponseBytes", async () => {
    const a = store({ maxResponseBytes: 1_000 });
    const k = key();
    await a.claim(k, "fp", 10_000);
    await a.complete(k, { fingerprint: "fp", response: ok(k.callId, "x".repeat(2_000)) }, 60_000);
    expect(await a.get(k)).toBeUndefined();
    expect(await admin.exists(a.keyOf(k))).toBe(0);
    const small = key();
    await a.claim(small, "fp", 10_000);
    await a.complete(small, { fingerprint: "fp", response: ok(small.callId, "x".repeat(500)) }, 60_000);
    expect((await a.get(small))?.response).toEqual(ok(small.callId, "x".repeat(500)));
  });

  it("marks abandoned runs, and frees released keys", async () => {
    const a = store();
    const k = key();
    await a.claim(k, "fp", 10_000);
    await a.abandon(k, "fp", 60_000);
    expect(await a.get(k)).toEqual({ fingerprint: "fp", abandoned: true });
    await a.release(k);
    expect(await a.get(k)).toBeUndefined();
    expect(await a.claim(k, "fp", 10_000)).toBeUndefined();
  });

  it("builds keys no principal or call_id can collide in, under the key prefix", async () => {
    const a = store({ keyPrefix: "tenant-1:" });
    const one = { principal: "a:b", callId: "c" };
    const two = { principal: "a", callId: "b:c" };
    expect(a.keyOf(one)).not.toBe(a.keyOf(two));
    expect(a.keyOf(one).startsWith("tenant-1:")).toBe(true);
    expect(await a.claim(one, "fp1", 10_000)).toBeUndefined();
    expect(await a.claim(two, "fp2", 10_000)).toBeUndefined();
    const other = store({ keyPrefix: "tenant-2:" });
    expect(await other.claim(one, "fp3", 10_000)).toBeUndefined();
    expect(await admin.keys("tenant-1:idem:*")).toHaveLength(2);
    // The per-principal accounting is under the prefix too, and nothing is written outside it.
    expect((await admin.keys("*")).filter((name) => !/^(oxp|tenant-1|tenant-2):/.test(name))).toEqual([]);
  });

  verifies(
    "limits.lone-surrogate-ids",
    "keeps a call_id or principal with a lone surrogate under a key of its own, and wakes its waiters",
    async () => {
      const [a, b] = [store(), store()];
      const lone = { principal: "jwt:\udfff", callId: "\ud800" };
      expect(await a.claim(lone, "fp", 10_000)).toBeUndefined();
      const waiting = b.waitFor(lone, "fp", 15_000);
      await subscribed(b.keyOf(lone));
      await a.complete(lone, { fingerprint: "fp", response: ok("\ud800", "done") }, 60_000);
      expect(await waiting).toEqual({ fingerprint: "fp", response: ok("\ud800", "done") });
      expect(await b.get(lone)).toEqual({ fingerprint: "fp", response: ok("\ud800", "done") });
      for (const callId of ["\udc00", "\ufffd", "%uD800"]) {
        expect(await b.claim({ principal: "jwt:\udfff", callId }, "other", 10_000)).toBeUndefined();
      }
    },
  );

  it("wakes a waiter on another connection when the key completes, without polling", async () => {
    const clock = new ManualClock();
    const [a, b] = [store(), store({ clock })];
    const k = key();
    await a.claim(k, "fp", 10_000);
    await admin.config("RESETSTAT");
    const waiting = b.waitFor(k, "fp", 15_000);
    await subscribed(b.keyOf(k));
    // A second of waiting by the waiter's clock: a store that polled would read the key at each of its turns.
    await clock.advance(1_000);
    await a.complete(k, { fingerprint: "fp", response: ok(k.callId, "done") }, 60_000);
    // Its clock is far below maxMs, so the message woke it. And the second cost a read or two, not one every few ms.
    expect(await waiting).toEqual({ fingerprint: "fp", response: ok(k.callId, "done") });
    const stats = (await admin.info("commandstats")).match(/cmdstat_hgetall:calls=(\d+)/);
    expect(Number(stats?.[1] ?? 0)).toBeLessThanOrEqual(3);
  });

  it("answers a waiter at once when the key is freed, held for another fingerprint, or already finished", async () => {
    const [a, b] = [store(), store()];
    // maxMs is long, so an undefined that came from the time limit would take 15 s: it must come at once.
    const freed = key();
    await a.claim(freed, "fp", 10_000);
    const waiting = timed(b.waitFor(freed, "fp", 15_000));
    await subscribed(b.keyOf(freed));
    await a.release(freed);
    expect(await waiting).toEqual({ value: undefined, fast: true });

    const other = key();
    await a.claim(other, "someone-else", 10_000);
    expect(await timed(b.waitFor(other, "fp", 15_000))).toEqual({ value: undefined, fast: true });

    const finished = key();
    await a.claim(finished, "fp", 10_000);
    await a.complete(finished, { fingerprint: "fp", response: ok(finished.callId, 1) }, 60_000);
    expect(await b.waitFor(finished, "fp", 15_000)).toMatchObject({ response: { value: 1 } });

    const abandoned = key();
    await a.claim(abandoned, "fp", 10_000);
    const waitingAbandoned = b.waitFor(abandoned, "fp", 15_000);
    await a.abandon(abandoned, "fp", 60_000);
    expect(await waitingAbandoned).toEqual({ fingerprint: "fp", abandoned: true });
  });

  it("gives up after maxMs, and several waiters on one key all wake", async () => {
    const clock = new ManualClock();
    const [a, b, c] = [store(), store({ clock }), store()];
    const k = key();
    await a.claim(k, "fp", 10_000);
    const givingUp = b.waitFor(k, "fp", 100);
    await clock.untilPending(1);
    await clock.advance(100);
    expect(await givingUp).toBeUndefined();
    const waiters = [b.waitFor(k, "fp", 15_000), b.waitFor(k, "fp", 15_000), c.waitFor(k, "fp", 15_000)];
    await subscribed(b.keyOf(k), 2);
    await a.complete(k, { fingerprint: "fp", response: ok(k.callId, 7) }, 60_000);
    for (const entry of await Promise.all(waiters)) {
      expect(entry?.response).toEqual(ok(k.callId, 7));
    }
  });

  it("refuses a claim with IdempotencyStoreFullError when Redis is at maxmemory", async () => {
    const a = store({ fullRetryAfterMs: 3_000 });
    await a.claim(key(), "warm-up", 10_000);
    await admin.config("SET", "maxmemory-policy", "noeviction");
    await admin.config("SET", "maxmemory", "1");
    try {
      const refused = await a.claim(key(), "fp", 10_000).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(IdempotencyStoreFullError);
      expect((refused as IdempotencyStoreFullError).retryAfterMs).toBe(3_000);
    } finally {
      await admin.config("SET", "maxmemory", "0");
    }
    expect(await a.claim(key(), "fp", 10_000)).toBeUndefined();
  });
});

describe("RedisIdempotencyStore while Redis is down", () => {
  it("fails fast with RedisUnavailableError, and reconnects by itself once Redis is back", async () => {
    const own = await startRedisServer();
    const a = new RedisIdempotencyStore(own.url, { readyTimeoutMs: 300, commandTimeoutMs: 500 });
    const ownAdmin = new Redis(own.url);
    try {
      const k = key();
      expect(await a.claim(k, "fp", 10_000)).toBeUndefined();
      await ownAdmin.config("RESETSTAT");
      const waiting = a.waitFor(k, "fp", 15_000);
      // The waiter subscribed, and Redis answered its first read of the key (which follows the SUBSCRIBE), before it goes down.
      await until(async () => /cmdstat_hgetall:calls=1,/.test(await ownAdmin.info("commandstats")), {
        what: "the waiter's first read",
      });
      ownAdmin.disconnect();
      await own.stop();
      const started = Date.now();
      const failures = await Promise.all(
        Array.from({ length: 20 }, () => a.claim(key(), "fp", 10_000).catch((error: unknown) => error)),
      );
      for (const failure of failures) {
        expect(failure).toBeInstanceOf(RedisUnavailableError);
      }
      expect(Date.now() - started).toBeLessThan(5_000);
      await own.start();
      // The restarted Redis lost the key: once the subscriber is back the waiter reads it again and sees
      // it freed, within a reconnect (backoff at most 1 s), not at its 15 s limit.
      expect(await timed(waiting)).toEqual({ value: undefined, fast: true });
      await expect.poll(() => a.claim(key(), "fp", 10_000).catch((error: unknown) => error)).toBeUndefined();
    } finally {
      ownAdmin.disconnect();
      await a.close();
      await own.close();
    }
  });
});

describe("RedisIdempotencyStore releases with a response for the waiters", () => {
  it("does not keep a released response, but hands it to the duplicates waiting on other connections", async () => {
    const [a, b, c] = [store(), store(), store()];
    const k = key();
    await a.claim(k, "fp", 10_000);
    const waiters = [timed(b.waitFor(k, "fp", 15_000)), timed(c.waitFor(k, "fp", 15_000))];
    await subscribed(b.keyOf(k), 2);
    const failure = failed(k.callId, "Try again");
    await a.release(k, failure);
    for (const waited of await Promise.all(waiters)) {
      expect(waited).toEqual({ value: { fingerprint: "fp", response: failure }, fast: true });
    }
    // Not kept: the key is free, and a later retry claims it and runs again.
    expect(await admin.exists(a.keyOf(k))).toBe(0);
    expect(await b.claim(k, "fp", 10_000)).toBeUndefined();
  });

  it("answers a waiter that reads the key already freed only after the release's message could arrive", async () => {
    // The subscriber's side is slow: the SUBSCRIBE's confirmation, then the release's message, each
    // arrive 500 ms late, while the waiter's read of the (already freed) key answers at once.
    const proxy = await startTcpProxy(server.port);
    const waiterSide = new RedisIdempotencyStore(proxy.url);
    const a = store();
    try {
      const k = key();
      await a.claim(k, "fp", 10_000);
      await waiterSide.waitFor(key(), "warm-up", 1); // the subscriber connection exists and has subscribed
      proxy.delaySubscriberReplies(500);
      const waiting = timed(waiterSide.waitFor(k, "fp", 15_000));
      await expect.poll(async () => (await admin.pubsub("NUMSUB", a.keyOf(k)))[1], { interval: 5 }).toBe(1);
      const failure = failed(k.callId, "Try again");
      await a.release(k, failure);
      expect(await waiting).toEqual({ value: { fingerprint: "fp", response: failure }, fast: true });
    } finally {
      proxy.delaySubscriberReplies(0);
      await waiterSide.close();
      await proxy.close();
    }
  });

  it("does not hand a released response to a waiter for another fingerprint", async () => {
    const [a, b] = [store(), store()];
    const k = key();
    await a.claim(k, "fp", 10_000);
    // Waits as "fp", while the key gets reclaimed by "other" after a lapse: simulated by a direct rewrite.
    const waiting = timed(b.waitFor(k, "fp", 15_000));
    await subscribed(b.keyOf(k));
    await admin.hset(a.keyOf(k), "f", "other");
    await a.release(k, failed(k.callId, "not yours"));
    expect(await waiting).toEqual({ value: undefined, fast: true });
  });

  it("hands waiters a response too large to keep, up to maxPublishedResponseBytes, and the plain signal past it", async () => {
    const a = store({ maxResponseBytes: 1_000, maxPublishedResponseBytes: 5_000 });
    const b = store();
    const large = key();
    await a.claim(large, "fp", 10_000);
    const waiting = timed(b.waitFor(large, "fp", 15_000));
    await subscribed(b.keyOf(large));
    const response = ok(large.callId, "x".repeat(2_000));
    await a.complete(large, { fingerprint: "fp", response }, 60_000);
    expect(await waiting).toEqual({ value: { fingerprint: "fp", response }, fast: true });
    expect(await admin.exists(a.keyOf(large))).toBe(0);

    const huge = key();
    await a.claim(huge, "fp", 10_000);
    const waitingHuge = timed(b.waitFor(huge, "fp", 15_000));
    await subscribed(b.keyOf(huge));
    await a.complete(huge, { fingerprint: "fp", response: ok(huge.callId, "x".repeat(6_000)) }, 60_000);
    // Freed without the response: the waiter learns it at once and runs the call itself.
    expect(await waitingHuge).toEqual({ value: undefined, fast: true });
    const retried = failed(huge.callId, "x".repeat(6_000));
    await a.claim(huge, "fp", 10_000);
    const waitingRetry = timed(b.waitFor(huge, "fp", 15_000));
    await subscribed(b.keyOf(huge));
    await a.release(huge, retried);
    expect(await waitingRetry).toEqual({ value: undefined, fast: true });
  });
});

describe("RedisIdempotencyStore per-principal quotas", () => {
  it("refuses a principal whose running calls fill its entries quota, and never touches another principal's", async () => {
    const a = store({ maxEntriesPerPrincipal: 3 });
    const others = [key("modest"), key("modest")];
    for (const k of others) {
      await a.claim(k, "fp", 10_000);
    }
    await a.complete(others[0] ?? key(), { fingerprint: "fp", response: ok("m", 0) }, 60_000);
    const running = [key("greedy"), key("greedy"), key("greedy")];
    for (const k of running) {
      expect(await a.claim(k, "fp", 10_000)).toBeUndefined();
    }
    const refused = await a.claim(key("greedy"), "fp", 10_000).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(IdempotencyStoreFullError);
    // About when the oldest of its running claims lapses: their 10 s.
    expect((refused as IdempotencyStoreFullError).retryAfterMs).toBeGreaterThan(5_000);
    expect((refused as IdempotencyStoreFullError).retryAfterMs).toBeLessThanOrEqual(10_000);
    // Refused, not evicted: its running calls and the other principal's records are all still there.
    for (const k of [...running, ...others]) {
      expect(await a.get(k)).toBeDefined();
    }
    // Another principal on the same store still claims.
    expect(await a.claim(key("modest"), "fp", 10_000)).toBeUndefined();
    // A replay of a held key is not a new key: still answered.
    expect(await a.claim(running[0] ?? key(), "fp", 10_000)).toEqual({ fingerprint: "fp" });
  });

  it("drops the principal's own oldest finished records past its entries quota, never a running one", async () => {
    const a = store({ maxEntriesPerPrincipal: 3 });
    const [oldest, newer, running] = [key("busy"), key("busy"), key("busy")];
    for (const k of [oldest, newer, running]) {
      await a.claim(k, "fp", 10_000);
    }
    await a.complete(oldest, { fingerprint: "fp", response: ok(oldest.callId, 1) }, 60_000);
    await a.complete(newer, { fingerprint: "fp", response: ok(newer.callId, 2) }, 60_000);
    const bystander = key("bystander");
    await a.claim(bystander, "fp", 10_000);
    await a.complete(bystander, { fingerprint: "fp", response: ok(bystander.callId, 3) }, 60_000);
    expect(await a.claim(key("busy"), "fp", 10_000)).toBeUndefined();
    expect(await a.get(oldest)).toBeUndefined();
    expect((await a.get(newer))?.response).toEqual(ok(newer.callId, 2));
    expect(await a.get(running)).toEqual({ fingerprint: "fp" });
    expect((await a.get(bystander))?.response).toEqual(ok(bystander.callId, 3));
    // Now two running and one finished: one more goes by dropping `newer`, then running calls fill it.
    expect(await a.claim(key("busy"), "fp", 10_000)).toBeUndefined();
    expect(await a.get(newer)).toBeUndefined();
    await expect(a.claim(key("busy"), "fp", 10_000)).rejects.toBeInstanceOf(IdempotencyStoreFullError);
  });

  it("holds a principal to its bytes quota: drops its oldest finished, keeps no response that cannot fit", async () => {
    const a = store({ maxBytesPerPrincipal: 1_500 });
    const b = store();
    const first = key("heavy");
    expect(await a.claim(first, "fp", 10_000)).toBeUndefined();
    // About 1,250 bytes with its 900-character response: a second claim (about 300) does not fit beside it.
    await a.complete(first, { fingerprint: "fp", response: ok(first.callId, "x".repeat(900)) }, 60_000);
    expect((await a.get(first))?.response).toBeDefined();
    const second = key("heavy");
    expect(await a.claim(second, "fp", 10_000)).toBeUndefined();
    expect(await a.get(first)).toBeUndefined();
    // A response larger than the quota itself is not kept; the waiters still get it.
    const waiting = timed(b.waitFor(second, "fp", 15_000));
    await subscribed(b.keyOf(second));
    const response = ok(second.callId, "y".repeat(1_300));
    await a.complete(second, { fingerprint: "fp", response }, 60_000);
    expect(await waiting).toEqual({ value: { fingerprint: "fp", response }, fast: true });
    expect(await a.get(second)).toBeUndefined();
  });

  it("frees the room of lapsed claims on the next claim", async () => {
    const a = store({ maxEntriesPerPrincipal: 2 });
    for (let i = 0; i < 2; i++) {
      await a.claim(key("lapsing"), "fp", 1_000);
    }
    await expect(a.claim(key("lapsing"), "fp", 1_000)).rejects.toBeInstanceOf(IdempotencyStoreFullError);
    // The claims lapse by Redis's own clock (TIME), which no clock of the test moves: wait until it passed both.
    const expiry = a.keyOf(key("lapsing")).replace(/idem:([^:]+):.*$/, "idem-expiry:$1");
    await until(
      async () => {
        const [seconds, micros] = await admin.time();
        const now = Number(seconds) * 1_000 + Math.floor(Number(micros) / 1_000);
        return (await admin.zcount(expiry, `(${now}`, "+inf")) === 0;
      },
      { what: "Redis's clock to pass the claims' expiry" },
    );
    expect(await a.claim(key("lapsing"), "fp", 10_000)).toBeUndefined();
    expect(await a.claim(key("lapsing"), "fp", 10_000)).toBeUndefined();
  });

  it("counts exactly: the accounting keys empty out and expire with the principal's records", async () => {
    const a = store();
    const principal = `tidy-${next}`;
    const keys = [key(principal), key(principal)];
    for (const k of keys) {
      await a.claim(k, "fp", 10_000);
    }
    const bytesKey = a.keyOf(keys[0] ?? key()).replace(/idem:([^:]+):.*$/, "idem-bytes:$1");
    expect(Number(await admin.get(bytesKey))).toBeGreaterThan(0);
    expect(await admin.pttl(bytesKey)).toBeGreaterThan(5_000);
    for (const k of keys) {
      await a.release(k);
    }
    expect(
      await admin.exists(
        bytesKey,
        bytesKey.replace("idem-bytes", "idem-expiry"),
        bytesKey.replace("idem-bytes", "idem-size"),
        bytesKey.replace("idem-bytes", "idem-finished"),
      ),
    ).toBe(0);
  });
});

describe("RedisIdempotencyStore corrupt records", () => {
  it("fails as a corrupt record without quoting the stored value", async () => {
    const a = store();
    const k = key();
    await admin.hset(a.keyOf(k), "f", "fp", "r", '{"token":"secret-abc');
    for (const read of [() => a.get(k), () => a.claim(k, "fp", 10_000)]) {
      const error = await read().catch((failure: unknown) => failure);
      expect(error).toBeInstanceOf(RedisUnavailableError);
      expect((error as Error).message).toMatch(/corrupt record/);
      expect(JSON.stringify({ ...(error as object), message: (error as Error).message })).not.toContain("secret-abc");
    }
  });
});

describe("RedisIdempotencyStore and Redis's maxmemory-policy", () => {
  it("reports an evicting policy to onError once connected, and nothing for noeviction", async () => {
    const own = await startRedisServer();
    const seen: Error[] = [];
    const admin2 = new Redis(own.url);
    // redis-server's own default is noeviction: ready() reads it, and nothing is reported.
    const state = createRedisState(own.url, { onError: (error) => seen.push(error) });
    try {
      await state.ready();
      expect(seen).toEqual([]);
      await admin2.config("SET", "maxmemory-policy", "allkeys-lru");
      // A store made on its own checks as soon as it is connected, without being asked.
      const later = new RedisIdempotencyStore(own.url, { onError: (error) => seen.push(error) });
      try {
        await expect.poll(() => seen.length).toBe(1);
        expect(seen[0]).toBeInstanceOf(RedisEvictionPolicyWarning);
        expect((seen[0] as RedisEvictionPolicyWarning).policy).toBe("allkeys-lru");
        expect(seen[0]?.message).toMatch(/noeviction/);
      } finally {
        await later.close();
      }
    } finally {
      await state.close();
      admin2.disconnect();
      await own.close();
    }
  });
});

describe("RedisIdempotencyStore after its subscriber reconnects", () => {
  it("subscribes again before reading the keys, so a completion in between still wakes the waiter", async () => {
    const proxy = await startTcpProxy(server.port);
    const waiterSide = new RedisIdempotencyStore(proxy.url);
    const a = store();
    try {
      const k = key();
      await a.claim(k, "fp", 10_000);
      const waiting = waiterSide.waitFor(k, "fp", 15_000);
      await expect.poll(async () => (await admin.pubsub("NUMSUB", a.keyOf(k)))[1]).toBe(1);
      // The subscriber connection drops; its SUBSCRIBE after reconnecting is held back by the proxy...
      const held = proxy.holdSubscribes();
      await admin.client("KILL", "TYPE", "pubsub");
      await held;
      // ...and a store that read its keys at "ready" has had its answer: the store's commands are answered in order,
      // so a read it sent then is answered before this one. Only then does the call complete.
      await waiterSide.get(k);
      await a.complete(k, { fingerprint: "fp", response: ok(k.callId, "done") }, 60_000);
      proxy.releaseSubscribes();
      expect(await timed(waiting)).toEqual({
        value: { fingerprint: "fp", response: ok(k.callId, "done") },
        fast: true,
      });
    } finally {
      proxy.releaseSubscribes();
      await waiterSide.close();
      await proxy.close();
    }
  });
});

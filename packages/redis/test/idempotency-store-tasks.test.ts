// RedisIdempotencyStore and the tasks extension (docs/protocol.md 9.3), against a real redis-server: how a call ended, progress, leases and their takeover, cancel requests and watchers, between separate connections as separate instances would have.
import { IdempotencyStoreFullError } from "@otc/server";
import { ManualClock } from "@otc/test-helpers/manual-clock";
import { type RedisServer, startRedisServer } from "@otc/test-helpers/redis-server";
import { until } from "@otc/test-helpers/until";
import { verifies } from "@otc/test-helpers/verifies";
import type { CallToolResponse } from "@otc/types";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RedisIdempotencyStore } from "../src/index.js";

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
const key = (principal = "anonymous") => ({ principal, callId: `task-${next++}` });
/** Two instances on one clock, which the test moves: leases pass, and are renewed, when it says. */
function twoOnOneClock() {
  const clock = new ManualClock();
  return { clock, a: store({ clock }), b: store({ clock }) };
}
const ok = (callId: string, value: unknown): CallToolResponse => ({
  call_id: callId,
  duration: 1,
  success: true,
  value,
});
const failed = (callId: string, canRetry: boolean): CallToolResponse => ({
  call_id: callId,
  duration: 1,
  success: false,
  error: { message: "It failed", can_retry: canRetry },
});
/** How many connections listen on the channel of `name`. */
const listeners = async (name: string) => Number((await admin.pubsub("NUMSUB", name))[1]);
/** A watcher that records what it hears. */
function recorder() {
  const events: string[] = [];
  return { events, listener: (event: string) => events.push(event) };
}
/**
 * Counts the reads (HGETALL) of the key `name` that clients send, as Redis runs them (a script's own reads are not
 * counted): a test waits for a store's reads instead of guessing how long they take.
 */
async function readsOf(name: string): Promise<{ count: () => number; stop: () => void }> {
  const monitor = await admin.monitor();
  let count = 0;
  monitor.on("monitor", (_time: string, args: string[], source: string) => {
    if (source !== "lua" && args[0]?.toLowerCase() === "hgetall" && args[1] === name) {
      count++;
    }
  });
  return { count: () => count, stop: () => monitor.disconnect() };
}
/** The principal's accounted bytes (the sum the scripts keep). */
const bytesOf = (made: RedisIdempotencyStore, principal: string) =>
  admin
    .get(made.keyOf({ principal, callId: "x" }).replace(/idem:([^:]+):.*$/, "idem-bytes:$1"))
    .then((value) => Number(value ?? 0));

beforeAll(async () => {
  server = await startRedisServer();
  admin = new Redis(server.url);
});
afterAll(async () => {
  await Promise.all(stores.map((made) => made.close()));
  admin.disconnect();
  await server.close();
});

describe("RedisIdempotencyStore: how a call ended", () => {
  verifies("tasks.one-record", "keeps a cancelled call as cancelled, and replays it", async () => {
    const [a, b] = [store(), store()];
    const k = key();
    await a.claim(k, "fp", 10_000);
    await a.complete(k, { fingerprint: "fp", response: failed(k.callId, false), cancelled: true }, 60_000);
    expect(await b.get(k)).toEqual({ fingerprint: "fp", response: failed(k.callId, false), cancelled: true });
    expect(await b.claim(k, "fp", 10_000)).toEqual({
      fingerprint: "fp",
      response: failed(k.callId, false),
      cancelled: true,
    });
  });

  verifies(
    "tasks.one-record",
    "keeps a retryable failure for its status, but lets exactly one new claim replace it",
    async () => {
      const [a, b, c] = [store(), store(), store()];
      const k = key();
      await a.claim(k, "fp", 10_000);
      await a.complete(k, { fingerprint: "fp", response: failed(k.callId, true), rerunnable: true }, 60_000);
      expect(await b.get(k)).toEqual({ fingerprint: "fp", response: failed(k.callId, true), rerunnable: true });
      const claims = await Promise.all(
        Array.from({ length: 30 }, (_, i) => [a, b, c][i % 3]?.claim(k, "fp", 10_000) ?? Promise.reject()),
      );
      expect(claims.filter((held) => held === undefined)).toHaveLength(1);
      expect(claims.filter((held) => held !== undefined)).toEqual(Array(29).fill({ fingerprint: "fp" }));
      // The new claim is a running record: nothing of the kept failure is left in it.
      expect(await admin.hkeys(a.keyOf(k))).toEqual(expect.not.arrayContaining(["r", "n", "c"]));
    },
  );

  it("keeps the accounting exact when a claim replaces a kept retryable failure", async () => {
    const a = store();
    const principal = `rerun-${next}`;
    const k = key(principal);
    await a.claim(k, "fp", 10_000);
    const claimed = await bytesOf(a, principal);
    await a.complete(k, { fingerprint: "fp", response: failed(k.callId, true), rerunnable: true }, 60_000);
    expect(await bytesOf(a, principal)).toBeGreaterThan(claimed);
    expect(await a.claim(k, "fp", 10_000)).toBeUndefined();
    expect(await bytesOf(a, principal)).toBe(claimed);
    const finished = a.keyOf(k).replace(/idem:([^:]+):.*$/, "idem-finished:$1");
    expect(await admin.zcard(finished)).toBe(0);
  });
});

describe("RedisIdempotencyStore: progress", () => {
  it("keeps a running call's latest progress and its number, newer numbers only, for its own run", async () => {
    const [a, b] = [store(), store()];
    const k = key();
    await a.claim(k, "fp", 10_000);
    await a.progress(k, "fp", { progress: { progress: 1, total: 4, message: "One" }, seq: 1 });
    await a.progress(k, "fp", { progress: { progress: 2, total: 4 }, seq: 2 });
    // An older number (a message overtaken on the way) and another fingerprint's change nothing.
    await a.progress(k, "fp", { progress: { progress: 1 }, seq: 1 });
    await b.progress(k, "other", { progress: { progress: 3 }, seq: 3 });
    expect(await b.get(k)).toEqual({ fingerprint: "fp", progress: { progress: 2, total: 4 }, progressSeq: 2 });
    await a.complete(k, { fingerprint: "fp", response: ok(k.callId, 1) }, 60_000);
    // A finished call's record is its response; a progress after it is dropped.
    await a.progress(k, "fp", { progress: { progress: 4 }, seq: 4 });
    expect(await b.get(k)).toEqual({ fingerprint: "fp", response: ok(k.callId, 1) });
    // And a key nobody holds gets no record from a progress.
    const free = key();
    await a.progress(free, "fp", { progress: { progress: 1 }, seq: 1 });
    expect(await admin.exists(a.keyOf(free))).toBe(0);
  });

  it("counts a progress in the principal's bytes, and keeps none its bytes quota cannot take", async () => {
    const a = store({ maxBytesPerPrincipal: 2_000 });
    const principal = `progress-${next}`;
    const k = key(principal);
    await a.claim(k, "fp", 10_000);
    const claimed = await bytesOf(a, principal);
    const progress = { progress: 1, message: "x".repeat(1_000) };
    await a.progress(k, "fp", { progress, seq: 1 });
    expect(await bytesOf(a, principal)).toBe(claimed + JSON.stringify(progress).length);
    // Replaced, not added: the latest progress is what the record holds.
    await a.progress(k, "fp", { progress: { progress: 2 }, seq: 2 });
    expect(await bytesOf(a, principal)).toBe(claimed + JSON.stringify({ progress: 2 }).length);
    // A 2,000-byte message does not fit beside the claim: not kept, and the last one stays.
    await a.progress(k, "fp", { progress: { progress: 3, message: "y".repeat(2_000) }, seq: 3 });
    expect((await a.get(k))?.progress).toEqual({ progress: 2 });
    // Completion accounts the record as its response alone.
    await a.complete(k, { fingerprint: "fp", response: ok(k.callId, 1) }, 60_000);
    const finishedBytes = await bytesOf(a, principal);
    expect(finishedBytes).toBe(claimed + JSON.stringify(ok(k.callId, 1)).length);
  });

  it("drops the principal's oldest finished record to keep a progress, never another principal's", async () => {
    const a = store({ maxBytesPerPrincipal: 2_500 });
    const principal = `crowded-${next}`;
    const old = key(principal);
    await a.claim(old, "fp", 10_000);
    await a.complete(old, { fingerprint: "fp", response: ok(old.callId, "z".repeat(1_000)) }, 60_000);
    const bystander = key(`bystander-${next}`);
    await a.claim(bystander, "fp", 10_000);
    const running = key(principal);
    await a.claim(running, "fp", 10_000);
    await a.progress(running, "fp", { progress: { progress: 1, message: "m".repeat(1_000) }, seq: 1 });
    expect((await a.get(running))?.progressSeq).toBe(1);
    expect(await a.get(old)).toBeUndefined();
    expect(await a.get(bystander)).toEqual({ fingerprint: "fp" });
  });
});

describe("RedisIdempotencyStore: leases", () => {
  verifies("tasks.lease", "renews a running call's lease in its record, for its own run only", async () => {
    const clock = new ManualClock();
    const [a, b] = [store({ clock }), store({ clock })];
    const k = key();
    await a.claim(k, "fp", 10_000);
    // By the renewing store's clock.
    await a.renew(k, "fp", 5_000);
    const lease = (await b.get(k))?.leaseUntil ?? 0;
    expect(lease).toBe(clock.now() + 5_000);
    await b.renew(k, "other", 60_000);
    expect((await b.get(k))?.leaseUntil).toBe(lease);
    await a.complete(k, { fingerprint: "fp", response: ok(k.callId, 1) }, 60_000);
    await a.renew(k, "fp", 60_000);
    expect(await b.get(k)).toEqual({ fingerprint: "fp", response: ok(k.callId, 1) });
  });

  verifies("tasks.lease", "lets exactly one claim take over a run whose lease passed, and none before", async () => {
    // One clock for the three instances: the lease passes as the test moves it.
    const clock = new ManualClock();
    const [a, b, c] = [store({ clock }), store({ clock }), store({ clock })];
    const k = key();
    await a.claim(k, "fp", 60_000);
    await a.renew(k, "fp", 300);
    await a.progress(k, "fp", { progress: { progress: 7 }, seq: 3 });
    expect(await b.claim(k, "fp", 60_000)).toMatchObject({ fingerprint: "fp", progressSeq: 3 });
    // At the lease's last millisecond the run is still vouched for; one later, it is not.
    await clock.advance(300);
    expect(await c.claim(k, "fp", 60_000)).toMatchObject({ fingerprint: "fp", progressSeq: 3 });
    await clock.advance(1);
    const claims = await Promise.all(
      Array.from({ length: 20 }, (_, i) => [b, c][i % 2]?.claim(k, "fp", 60_000) ?? Promise.reject()),
    );
    expect(claims.filter((held) => held === undefined)).toHaveLength(1);
    // The new run starts afresh: no lease yet, no progress of the dead run.
    expect(claims.filter((held) => held !== undefined)).toEqual(Array(19).fill({ fingerprint: "fp" }));
  });

  /** A key whose first run (on `a`) lost it: its lease passed, and `b` claimed the call again and vouches for it. */
  async function takenOver({ clock, a, b }: ReturnType<typeof twoOnOneClock>) {
    const k = key();
    await a.claim(k, "fp", 60_000);
    await a.renew(k, "fp", 100);
    await clock.advance(200);
    expect(await b.claim(k, "fp", 60_000)).toBeUndefined();
    await b.renew(k, "fp", 60_000);
    return { k, lease: (await b.get(k))?.leaseUntil };
  }

  verifies(
    "tasks.lease",
    "fences the run that lost its key: its late progress, renewal, abandon and complete leave the new run alone",
    async () => {
      const instances = twoOnOneClock();
      const { a, b } = instances;
      const { k, lease } = await takenOver(instances);
      // The first run goes on (its instance was only cut off) and writes late, with the same fingerprint.
      await a.progress(k, "fp", { progress: { progress: 99 }, seq: 99 });
      await a.renew(k, "fp", 1);
      await a.abandon(k, "fp", 60_000);
      expect(await b.get(k)).toEqual({ fingerprint: "fp", leaseUntil: lease });
      await a.complete(k, { fingerprint: "fp", response: ok(k.callId, "late") }, 60_000);
      expect(await b.get(k)).toEqual({ fingerprint: "fp", leaseUntil: lease });
      // The new run's own writes go through.
      await b.progress(k, "fp", { progress: { progress: 1 }, seq: 1 });
      await b.complete(k, { fingerprint: "fp", response: ok(k.callId, "new") }, 60_000);
      expect(await a.get(k)).toEqual({ fingerprint: "fp", response: ok(k.callId, "new") });
    },
  );

  verifies("tasks.lease", "fences the late release of the run that lost its key", async () => {
    const instances = twoOnOneClock();
    const { a, b } = instances;
    const { k, lease } = await takenOver(instances);
    await a.release(k, failed(k.callId, true));
    expect(await b.get(k)).toEqual({ fingerprint: "fp", leaseUntil: lease });
  });

  it("keeps a finished record's token: a late finisher of an earlier run cannot overwrite the new run's result", async () => {
    const instances = twoOnOneClock();
    const { a, b } = instances;
    const { k } = await takenOver(instances);
    await b.complete(k, { fingerprint: "fp", response: ok(k.callId, "new") }, 60_000);
    await a.complete(k, { fingerprint: "fp", response: ok(k.callId, "late") }, 60_000);
    expect((await a.get(k))?.response).toEqual(ok(k.callId, "new"));
  });

  it("refuses a write that names no token on a record claimed with one", async () => {
    const [a, b] = [store(), store()];
    const k = key();
    await a.claim(k, "fp", 60_000);
    // b never claimed the key: it knows no token.
    await b.complete(k, { fingerprint: "fp", response: ok(k.callId, "not mine") }, 60_000);
    await b.release(k);
    expect(await a.get(k)).toEqual({ fingerprint: "fp" });
  });

  it("renews a lease even when Redis is at maxmemory, so a live run never passes for dead", async () => {
    const a = store();
    const k = key();
    await a.claim(k, "fp", 60_000);
    await a.renew(k, "fp", 1_000);
    await admin.config("SET", "maxmemory-policy", "noeviction");
    await admin.config("SET", "maxmemory", "1");
    try {
      await expect(a.claim(key(), "fp", 10_000)).rejects.toBeInstanceOf(IdempotencyStoreFullError);
      const before = Date.now();
      await a.renew(k, "fp", 60_000);
      expect((await a.get(k))?.leaseUntil).toBeGreaterThanOrEqual(before + 60_000);
    } finally {
      await admin.config("SET", "maxmemory", "0");
    }
  });

  it("wakes a waiter when the lease of the run it waits for passes, so it can claim the call", async () => {
    const { clock, a, b } = twoOnOneClock();
    const k = key();
    await a.claim(k, "fp", 60_000);
    await a.renew(k, "fp", 500);
    let answered = false;
    const waiting = b.waitFor(k, "fp", 15_000).finally(() => {
      answered = true;
    });
    // Its limit, and the timer for the lease it read (or an answer, too early).
    await Promise.race([clock.untilPending(2), waiting]);
    await clock.advance(400);
    expect(answered).toBe(false);
    // Its instance stops renewing: the waiter answers soon after the lease, not at its 15 s limit.
    await clock.advance(200);
    expect(await waiting).toBeUndefined();
    expect(await b.claim(k, "fp", 60_000)).toBeUndefined();
  });

  it("keeps a waiter waiting while the run's instance renews its lease", async () => {
    const { clock, a, b } = twoOnOneClock();
    const k = key();
    await a.claim(k, "fp", 60_000);
    await a.renew(k, "fp", 300);
    const waiting = b.waitFor(k, "fp", 15_000);
    // Its limit, and the timer for the lease it read (or an answer, too early).
    await Promise.race([clock.untilPending(2), waiting]);
    // A second of renewals, every 100 ms for 300 ms more: the waiter reads each lease it was armed for, renewed.
    for (let step = 0; step < 10; step++) {
      await clock.advance(100);
      await a.renew(k, "fp", 300);
    }
    await a.complete(k, { fingerprint: "fp", response: ok(k.callId, "done") }, 60_000);
    expect(await waiting).toEqual({ fingerprint: "fp", response: ok(k.callId, "done") });
  });
});

describe("RedisIdempotencyStore: watchers and cancel", () => {
  verifies(
    "tasks.shared-store",
    "tells watchers on another connection of progress, cancel requests and the end",
    async () => {
      const [a, b, c] = [store(), store(), store()];
      const k = key();
      await a.claim(k, "fp", 10_000);
      const onB = recorder();
      const onA = recorder();
      const stopB = b.watch(k, onB.listener);
      const stopA = a.watch(k, onA.listener);
      await expect.poll(() => listeners(a.keyOf(k))).toBe(2);
      await a.progress(k, "fp", { progress: { progress: 1 }, seq: 1 });
      await expect.poll(() => onB.events).toEqual(["progress"]);
      // A cancel asked through a third instance reaches the one running the call, and the others.
      await c.cancel(k);
      await expect.poll(() => onA.events).toEqual(["progress", "cancel"]);
      await a.complete(k, { fingerprint: "fp", response: failed(k.callId, false), cancelled: true }, 60_000);
      await expect.poll(() => onB.events).toEqual(["progress", "cancel", "settled"]);
      stopA();
      stopB();
      await expect.poll(() => listeners(a.keyOf(k))).toBe(0);
    },
  );

  it("tells watchers 'settled' for every wake-up that ends a wait: released, released with a response, abandoned", async () => {
    const [a, b] = [store(), store()];
    for (const end of [
      (k: ReturnType<typeof key>) => a.release(k),
      (k: ReturnType<typeof key>) => a.release(k, failed(k.callId, true)),
      (k: ReturnType<typeof key>) => a.abandon(k, "fp", 60_000),
      (k: ReturnType<typeof key>) => a.complete(k, { fingerprint: "fp", response: ok(k.callId, "x".repeat(2e6)) }, 1),
    ]) {
      const k = key();
      await a.claim(k, "fp", 10_000);
      const seen = recorder();
      const stop = b.watch(k, seen.listener);
      await expect.poll(() => listeners(b.keyOf(k))).toBe(1);
      await end(k);
      await expect.poll(() => seen.events).toEqual(["settled"]);
      stop();
    }
  });

  it("does not wake waiters for progress or cancel, and a waiter's end leaves a watcher subscribed", async () => {
    const clock = new ManualClock();
    const [a, b] = [store(), store({ clock })];
    const k = key();
    await a.claim(k, "fp", 10_000);
    const reads = await readsOf(b.keyOf(k));
    const seen = recorder();
    const stop = b.watch(k, seen.listener);
    await expect.poll(() => listeners(b.keyOf(k))).toBe(1);
    const waiting = b.waitFor(k, "fp", 15_000);
    // The watcher's first read of the key and the waiter's are done before the count starts.
    await until(() => reads.count() === 2, { what: "the watcher's and the waiter's first reads" });
    reads.stop();
    await admin.config("RESETSTAT");
    for (let seq = 1; seq <= 10; seq++) {
      await a.progress(k, "fp", { progress: { progress: seq }, seq });
    }
    await a.cancel(k);
    await expect.poll(() => seen.events.length).toBe(11);
    // Not a read of the key per message: the waiter sleeps through them.
    const stats = (await admin.info("commandstats")).match(/cmdstat_hgetall:calls=(\d+)/);
    expect(Number(stats?.[1] ?? 0)).toBe(0);
    // A waiter that ends (here at its limit, on a key already subscribed by the watcher) keeps the watcher's subscription.
    const ending = b.waitFor(k, "fp", 50);
    await clock.untilPending(2);
    await clock.advance(50);
    expect(await ending).toBeUndefined();
    expect(await listeners(b.keyOf(k))).toBe(1);
    await a.complete(k, { fingerprint: "fp", response: ok(k.callId, 1) }, 60_000);
    expect(await waiting).toEqual({ fingerprint: "fp", response: ok(k.callId, 1) });
    await expect.poll(() => seen.events.at(-1)).toBe("settled");
    stop();
    await expect.poll(() => listeners(b.keyOf(k))).toBe(0);
  });

  it("keeps the channel subscribed while a waiter still needs it after the last watcher stops", async () => {
    const [a, b] = [store(), store()];
    const k = key();
    await a.claim(k, "fp", 10_000);
    const stop = b.watch(k, () => {});
    const waiting = b.waitFor(k, "fp", 15_000);
    await expect.poll(() => listeners(b.keyOf(k))).toBe(1);
    stop();
    stop(); // twice: nothing more happens
    // b's subscriber connection sends its commands in order: once Redis has the SUBSCRIBE of a watch started now, it
    // has any UNSUBSCRIBE the stops sent before it.
    const probe = key();
    const stopProbe = b.watch(probe, () => {});
    await expect.poll(() => listeners(b.keyOf(probe))).toBe(1);
    stopProbe();
    expect(await listeners(b.keyOf(k))).toBe(1);
    await a.complete(k, { fingerprint: "fp", response: ok(k.callId, 2) }, 60_000);
    expect(await waiting).toEqual({ fingerprint: "fp", response: ok(k.callId, 2) });
    await expect.poll(() => listeners(b.keyOf(k))).toBe(0);
  });

  verifies("tasks.lease", "tells watchers 'settled' once when the lease of the run passes", async () => {
    const { clock, a, b } = twoOnOneClock();
    const k = key();
    await a.claim(k, "fp", 60_000);
    const seen = recorder();
    // Watching before the run's first lease: the lease's first write is published, and read.
    const stop = b.watch(k, seen.listener);
    await expect.poll(() => listeners(b.keyOf(k))).toBe(1);
    await a.renew(k, "fp", 400);
    // The watcher read the lease: its timer is set for it.
    await clock.untilPending(1);
    await clock.advance(250);
    await a.renew(k, "fp", 400);
    await clock.advance(250);
    expect(seen.events).toEqual([]);
    // Past the renewed lease (650), with nobody renewing it.
    await clock.advance(200);
    await until(() => seen.events.length > 0, { what: "the watcher to hear the lease pass" });
    expect(seen.events).toEqual(["settled"]);
    // Later still, it hears nothing more: b answers its reads in order, so one sent now comes after any the timers sent.
    await clock.advance(300);
    await b.get(k);
    expect(seen.events).toEqual(["settled"]);
    stop();
  });

  it("tells a watcher of a call that ended before its subscription took (the soak's late long polls)", async () => {
    const [a, b] = [store(), store()];
    const k = key();
    await a.claim(k, "fp", 10_000);
    await a.complete(k, { fingerprint: "fp", response: failed(k.callId, false), cancelled: true }, 60_000);
    const seen = recorder();
    const stop = b.watch(k, seen.listener);
    await expect.poll(() => seen.events).toEqual(["settled"]);
    stop();
  });

  it("bounds its watchers: past maxWatchers, watch registers nothing", async () => {
    const b = store({ maxWatchers: 3 });
    const a = store();
    const keys = [key(), key(), key(), key()];
    const seen = recorder();
    const stops = keys.map((k) => b.watch(k, seen.listener));
    await expect.poll(() => listeners(b.keyOf(keys[2] ?? key()))).toBe(1);
    expect(await listeners(b.keyOf(keys[3] ?? key()))).toBe(0);
    await a.cancel(keys[3] ?? key());
    await a.cancel(keys[0] ?? key());
    await expect.poll(() => seen.events).toEqual(["cancel"]);
    // A watcher stopped makes room for another.
    stops[0]?.();
    const last = key();
    b.watch(last, seen.listener);
    await expect.poll(() => listeners(b.keyOf(last))).toBe(1);
    for (const stop of stops) {
      stop();
    }
  });

  verifies(
    "tasks.cancel",
    "keeps a cancel in the running call's record: the instance hears it when it subscribes and when it renews",
    async () => {
      const [a, b] = [store(), store()];
      const k = key();
      await a.claim(k, "fp", 10_000);
      await a.renew(k, "fp", 5_000);
      // Asked while nobody listens: the message goes to nobody, the request stays in the record.
      await b.cancel(k);
      expect(await admin.hget(a.keyOf(k), "k")).toBe("1");
      const seen = recorder();
      const stop = a.watch(k, seen.listener);
      await expect.poll(() => seen.events).toEqual(["cancel"]);
      await a.renew(k, "fp", 5_000);
      expect(seen.events).toEqual(["cancel", "cancel"]);
      // Once the call ended there is nothing to cancel: the record keeps no request.
      await a.complete(k, { fingerprint: "fp", response: failed(k.callId, false), cancelled: true }, 60_000);
      await b.cancel(k);
      expect(await admin.hget(a.keyOf(k), "k")).toBeNull();
      stop();
    },
  );

  it("drops a kept cancel when a claim takes the key over: the new run is not cancelled", async () => {
    const { clock, a, b } = twoOnOneClock();
    const k = key();
    await a.claim(k, "fp", 10_000);
    await a.renew(k, "fp", 100);
    await b.cancel(k);
    await clock.advance(150);
    // The lease passed: B's claim takes the call over, and runs it anew.
    expect(await b.claim(k, "fp", 10_000)).toBeUndefined();
    expect(await admin.hget(b.keyOf(k), "k")).toBeNull();
    const seen = recorder();
    const stop = b.watch(k, seen.listener);
    await expect.poll(() => listeners(b.keyOf(k))).toBe(1);
    // A renewal that found a cancel kept tells the watchers before it resolves; and B's watcher reads the lease this
    // first renewal publishes (setting its timer for it), and would tell them of a kept cancel in the same step.
    await b.renew(k, "fp", 5_000);
    await clock.untilPending(1);
    expect(seen.events).toEqual([]);
    stop();
  });

  it("still sends a cancel at maxmemory, where it cannot keep it", async () => {
    const [a, b] = [store(), store()];
    const k = key();
    await a.claim(k, "fp", 10_000);
    const seen = recorder();
    const stop = a.watch(k, seen.listener);
    await expect.poll(() => listeners(a.keyOf(k))).toBe(1);
    await admin.config("SET", "maxmemory-policy", "noeviction");
    await admin.config("SET", "maxmemory", "1");
    try {
      await b.cancel(k);
      await expect.poll(() => seen.events).toEqual(["cancel"]);
      expect(await admin.hget(a.keyOf(k), "k")).toBeNull();
    } finally {
      await admin.config("SET", "maxmemory", "0");
    }
    stop();
  });

  it("subscribes its watched channels again after the subscriber reconnects, and tells the watchers to look", async () => {
    const [a, b] = [store(), store()];
    const k = key();
    await a.claim(k, "fp", 10_000);
    const seen = recorder();
    const stop = b.watch(k, seen.listener);
    await expect.poll(() => listeners(a.keyOf(k))).toBe(1);
    await admin.client("KILL", "TYPE", "pubsub");
    // Back, it looks again (the call is still running: "progress"), and hears what follows.
    await expect.poll(() => seen.events).toEqual(["progress"]);
    await a.cancel(k);
    await expect.poll(() => seen.events).toEqual(["progress", "cancel"]);
    stop();
  });
});

/** `call_id` idempotency records in Redis: atomic claims, TTLs, and pub/sub wake-ups for calls waiting on another instance. */
import {
  type IdempotencyEntry,
  type IdempotencyKey,
  type IdempotencyStore,
  IdempotencyStoreFullError,
} from "@otc/server/node";
import type { CallToolResponse } from "@otc/types";
import type { Redis } from "ioredis";
import {
  isOutOfMemory,
  keyPart,
  parseStored,
  RedisConnection,
  type RedisConnectionOptions,
  RedisUnavailableError,
} from "./connection.js";

/** Options of {@link RedisIdempotencyStore}. */
export interface RedisIdempotencyStoreOptions extends RedisConnectionOptions {
  /** A response larger than this (serialized) is returned but not kept, so a replay runs again. Default 1 MiB. */
  maxResponseBytes?: number;
  /**
   * A response that is not kept (a retryable failure, or one too large to keep) still goes to the
   * duplicates waiting on its key, inside the pub/sub message, when it is at most this large; a larger
   * one sends the plain "freed" signal (the waiters then run the call again). Default 4 MiB, below
   * Redis's default pub/sub output-buffer limits.
   */
  maxPublishedResponseBytes?: number;
  /**
   * The most records (running or finished) one principal holds. Past it, that principal's own oldest
   * finished records are dropped; when its running calls alone fill it, its new call_ids are refused
   * ({@link IdempotencyStoreFullError}). Never another principal's. Default 10,000.
   */
  maxEntriesPerPrincipal?: number;
  /** The most bytes one principal's records take, enforced as `maxEntriesPerPrincipal` is. Default 16 MiB. */
  maxBytesPerPrincipal?: number;
  /** The `Retry-After` given when Redis refuses a claim because `maxmemory` is reached. Default 5,000 ms. */
  fullRetryAfterMs?: number;
}

/*
 * A record is a hash: `f` the fingerprint, `r` the response's JSON once finished, `a` = "1" while an
 * abandoned run holds the key. Every change that can end a wait is published on a channel named like
 * the key, in the same script, so no waiter can miss it between the change and the message. The
 * message is `r` (finished), `a` (abandoned), `x` (freed), or `R<length of f>:<f><response JSON>`:
 * freed, with a response that was not kept but is the waiters' answer.
 *
 * Each principal's records are accounted in four keys: KEYS[2] a sorted set of all of them (member =
 * record key, score = its expiry in Redis's ms clock), KEYS[3] a hash of each one's size, KEYS[4] the
 * sizes' sum, KEYS[5] a sorted set of its finished records only (same scores: with one retention, the
 * oldest finished first). Expired members are dropped lazily, each once (amortized constant time per
 * write). Past a quota, the principal's own oldest finished records go (protocol 3.7); running and
 * abandoned ones never do. The four expire a minute after the principal's last record, or go with it.
 */
const ACCOUNTING = `
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function size_of(member)
  return tonumber(redis.call('HGET', KEYS[3], member) or '0')
end
local function forget(member)
  local size = size_of(member)
  redis.call('HDEL', KEYS[3], member)
  redis.call('ZREM', KEYS[2], member)
  redis.call('ZREM', KEYS[5], member)
  if size > 0 then redis.call('DECRBY', KEYS[4], size) end
end
local function expired(now)
  return redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', string.format('%d', now))
end
local function sweep(stale)
  for _, member in ipairs(stale) do
    -- Its record lapsed at this same instant or before; deleting it too keeps the accounting exact.
    if member ~= KEYS[1] then redis.call('DEL', member) end
    forget(member)
  end
end
-- Reads only: which of the principal's finished records, oldest first, must go for a new record of
-- size bytes to fit its quotas (an empty list if it fits), or nil when dropping all would not do.
local function plan(stale, size, max_entries, max_bytes)
  local entries = redis.call('ZCARD', KEYS[2])
  local used = tonumber(redis.call('GET', KEYS[4]) or '0')
  local gone = {}
  for _, member in ipairs(stale) do gone[member] = true end
  -- The key's own old accounting (a lapsed claim, the claim a settle replaces) holds no room either.
  if redis.call('ZSCORE', KEYS[2], KEYS[1]) then gone[KEYS[1]] = true end
  for member in pairs(gone) do
    entries = entries - 1
    used = used - size_of(member)
  end
  local evict = {}
  if entries < max_entries and used + size <= max_bytes then return evict end
  if entries - redis.call('ZCARD', KEYS[5]) >= max_entries then return nil end
  -- Usually one or two go: read a few, and more (doubling) only when needed.
  local from, count = 0, 4
  while true do
    local batch = redis.call('ZRANGE', KEYS[5], from, from + count - 1)
    if #batch == 0 then return nil end
    for _, member in ipairs(batch) do
      if not gone[member] then
        table.insert(evict, member)
        entries = entries - 1
        used = used - size_of(member)
        if entries < max_entries and used + size <= max_bytes then return evict end
      end
    end
    from = from + count
    count = math.min(count * 2, 1024)
  end
end
local function drop(evict)
  for _, member in ipairs(evict) do
    redis.call('DEL', member)
    forget(member)
  end
end
local function account(size, expires, finished)
  local score = string.format('%d', expires)
  redis.call('ZADD', KEYS[2], score, KEYS[1])
  if finished then redis.call('ZADD', KEYS[5], score, KEYS[1]) end
  redis.call('HSET', KEYS[3], KEYS[1], size)
  redis.call('INCRBY', KEYS[4], size)
end
-- The accounting keys outlive the principal's longest record (plus a minute, so a burst of writes
-- does not renew them each time); once it has none, they go.
local function extend(ttl, finished)
  local want = ttl + 60000
  if redis.call('PTTL', KEYS[2]) < ttl then
    for i = 2, 4 do redis.call('PEXPIRE', KEYS[i], want) end
  end
  if finished and redis.call('PTTL', KEYS[5]) < ttl then redis.call('PEXPIRE', KEYS[5], want) end
end
local function tidy()
  if redis.call('ZCARD', KEYS[2]) == 0 then redis.call('DEL', KEYS[2], KEYS[3], KEYS[4], KEYS[5]) end
end
local function publish_freed(f, response)
  if f and response ~= '' then
    redis.call('PUBLISH', KEYS[1], 'R' .. string.len(f) .. ':' .. f .. response)
  else
    redis.call('PUBLISH', KEYS[1], 'x')
  end
end
`;

/**
 * Takes the key if it is free (answers nil), dropping the principal's oldest finished records if its
 * quotas need it; otherwise answers what holds it, or "full" (the principal's quota is taken by runs
 * still going) with the milliseconds until its oldest record expires.
 * ARGV: fingerprint, ttl ms, max entries, max bytes, per-record overhead.
 */
const CLAIM = `${ACCOUNTING}
local held = redis.call('HGETALL', KEYS[1])
if #held > 0 then return {'held', held} end
local now = now_ms()
local size = tonumber(ARGV[5]) + string.len(KEYS[1]) + string.len(ARGV[1])
local stale = expired(now)
local evict = plan(stale, size, tonumber(ARGV[3]), tonumber(ARGV[4]))
if not evict then
  sweep(stale)
  local oldest = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
  tidy()
  return {'full', string.format('%d', math.max(0, (tonumber(oldest[2]) or now) - now))}
end
-- Redis checks maxmemory at a script's first write (and never after): it must be the record's, so
-- that at the limit the claim is refused with OOM before anything was dropped.
local ttl = tonumber(ARGV[2])
redis.call('HSET', KEYS[1], 'f', ARGV[1])
redis.call('PEXPIRE', KEYS[1], ttl)
drop(evict)
sweep(stale)
forget(KEYS[1])
account(size, now + ttl, false)
extend(ttl, false)
return false`;

/**
 * Writes a finished or abandoned record, unless another call (another fingerprint) took the key after
 * this one's claim lapsed: a late finisher must not overwrite it. A finished record is fitted into the
 * principal's quotas by dropping its oldest finished ones; if even that cannot make room, it is not
 * kept: the key is freed and the response published to the waiters. An abandoned mark (it replaces
 * the run's own claim) is always written.
 * ARGV: fingerprint, field, value, ttl ms, max entries, max bytes, overhead, "1" for a finished record,
 * the response to publish if not kept ("" for the plain signal).
 */
const SETTLE = `${ACCOUNTING}
local f = redis.call('HGET', KEYS[1], 'f')
if f and f ~= ARGV[1] then return 0 end
local now = now_ms()
local size = tonumber(ARGV[7]) + string.len(KEYS[1]) + string.len(ARGV[1]) + string.len(ARGV[3])
local finished = ARGV[8] == '1'
local stale = expired(now)
local evict = {}
if finished then evict = plan(stale, size, tonumber(ARGV[5]), tonumber(ARGV[6])) end
redis.call('DEL', KEYS[1])
if not evict then
  sweep(stale)
  forget(KEYS[1])
  tidy()
  publish_freed(ARGV[1], ARGV[9])
  return 2
end
drop(evict)
sweep(stale)
forget(KEYS[1])
local ttl = tonumber(ARGV[4])
redis.call('HSET', KEYS[1], 'f', ARGV[1], ARGV[2], ARGV[3])
redis.call('PEXPIRE', KEYS[1], ttl)
account(size, now + ttl, finished)
extend(ttl, finished)
redis.call('PUBLISH', KEYS[1], ARGV[2])
return 1`;

/**
 * Frees the key (unless ARGV[1], when not "", names a fingerprint and another one holds the key) and
 * publishes ARGV[2] as the waiters' response ("" for the plain signal).
 */
const RELEASE = `${ACCOUNTING}
local f = redis.call('HGET', KEYS[1], 'f')
if f and ARGV[1] ~= '' and f ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
local now = now_ms()
forget(KEYS[1])
sweep(expired(now))
tidy()
publish_freed(f, ARGV[2])
return 1`;

const MIB = 1024 * 1024;
/** What a record costs in Redis besides its key, fingerprint and response: the hash, its TTL, the accounting entries. */
const RECORD_OVERHEAD_BYTES = 256;

/** A record's hash, as HGETALL answers it inside a script (a flat list) or as a client (an object). */
function toEntry(fields: Record<string, string>): IdempotencyEntry | undefined {
  if (fields.f === undefined) {
    return undefined;
  }
  const entry: IdempotencyEntry = { fingerprint: fields.f };
  if (fields.r !== undefined) {
    entry.response = parseStored<CallToolResponse>(fields.r);
  }
  if (fields.a === "1") {
    entry.abandoned = true;
  }
  return entry;
}

function pairs(flat: unknown): Record<string, string> {
  const fields: Record<string, string> = {};
  if (!Array.isArray(flat)) {
    return fields;
  }
  for (let i = 0; i + 1 < flat.length; i += 2) {
    fields[String(flat[i])] = String(flat[i + 1]);
  }
  return fields;
}

/** A "freed, with a response for the waiters" message (see above), or undefined for any other (or a corrupt one). */
function releasedIn(message: string): { fingerprint: string; response: CallToolResponse } | undefined {
  const found = /^R(\d+):/.exec(message);
  if (!found?.[1]) {
    return undefined;
  }
  // The length is Lua's, in bytes.
  const rest = Buffer.from(message.slice(found[0].length));
  const length = Number(found[1]);
  try {
    return {
      fingerprint: rest.subarray(0, length).toString(),
      response: parseStored<CallToolResponse>(rest.subarray(length).toString()),
    };
  } catch {
    return undefined;
  }
}

const ttl = (ms: number) => Math.max(1, Math.ceil(ms));

interface Waiter {
  /** Reads the key again and settles if it says so. */
  check(): void;
  /** A message arrived on the key's channel. */
  notify(released: { fingerprint: string; response: CallToolResponse } | undefined): void;
}

/** The waiters on one channel, and the SUBSCRIBE every one of them waits for before its first read. */
interface Channel {
  waiters: Set<Waiter>;
  subscribed: Promise<unknown>;
}

/**
 * Idempotency records shared by every instance on one Redis. `claim` is one atomic script (the key
 * is free, or the answer is what holds it), records expire with the TTLs the server passes (the
 * claim's lapses if the instance running the call dies), and `waitFor` sleeps on pub/sub rather than
 * polling. Bounds: every key has a TTL; each principal holds at most `maxEntriesPerPrincipal` records
 * and `maxBytesPerPrincipal` bytes (past them its own oldest finished records go, and when its running
 * calls alone fill them its new keys are refused; another principal's are never touched); responses
 * over `maxResponseBytes` are not kept; and when Redis reaches `maxmemory` (with the `noeviction`
 * policy) a claim is refused with a 503 rather than a record dropped.
 */
export class RedisIdempotencyStore implements IdempotencyStore {
  private readonly connection: RedisConnection;
  private readonly ownsConnection: boolean;
  private readonly maxResponseBytes: number;
  private readonly maxPublishedResponseBytes: number;
  private readonly maxEntriesPerPrincipal: number;
  private readonly maxBytesPerPrincipal: number;
  private readonly fullRetryAfterMs: number;
  /** Waiters by channel (= record key); a channel is subscribed while it has any. */
  private readonly channels = new Map<string, Channel>();
  private listening: Redis | undefined;

  /**
   * From a Redis URL or client (see {@link RedisConnection}), or a connection shared with other stores.
   * Once connected it reads Redis's `maxmemory-policy` and reports an evicting one to `onError`.
   */
  constructor(redis: string | Redis | RedisConnection, options: RedisIdempotencyStoreOptions = {}) {
    this.ownsConnection = !(redis instanceof RedisConnection);
    this.connection = redis instanceof RedisConnection ? redis : new RedisConnection(redis, options);
    this.maxResponseBytes = options.maxResponseBytes ?? MIB;
    this.maxPublishedResponseBytes = options.maxPublishedResponseBytes ?? 4 * MIB;
    this.maxEntriesPerPrincipal = options.maxEntriesPerPrincipal ?? 10_000;
    this.maxBytesPerPrincipal = options.maxBytesPerPrincipal ?? 16 * MIB;
    this.fullRetryAfterMs = options.fullRetryAfterMs ?? 5_000;
    this.connection.watchEvictionPolicy();
  }

  /** The Redis key of a record: exposed for tests and operators. */
  keyOf(key: IdempotencyKey): string {
    return `${this.connection.prefix}idem:${keyPart(key.principal)}:${keyPart(key.callId)}`;
  }

  /** The record key and the principal's four accounting keys, in the scripts' KEYS order. */
  private keysOf(key: IdempotencyKey): [string, string, string, string, string] {
    const { prefix } = this.connection;
    const principal = keyPart(key.principal);
    return [
      this.keyOf(key),
      `${prefix}idem-expiry:${principal}`,
      `${prefix}idem-size:${principal}`,
      `${prefix}idem-bytes:${principal}`,
      `${prefix}idem-finished:${principal}`,
    ];
  }

  async claim(key: IdempotencyKey, fingerprint: string, ttlMs: number): Promise<IdempotencyEntry | undefined> {
    let answer: unknown;
    try {
      answer = await this.connection.script(
        "claim",
        5,
        CLAIM,
        ...this.keysOf(key),
        fingerprint,
        ttl(ttlMs),
        this.maxEntriesPerPrincipal,
        this.maxBytesPerPrincipal,
        RECORD_OVERHEAD_BYTES,
      );
    } catch (error) {
      if (isOutOfMemory(error)) {
        throw new IdempotencyStoreFullError(this.fullRetryAfterMs);
      }
      throw error;
    }
    if (!Array.isArray(answer)) {
      return undefined;
    }
    const [outcome, detail] = answer as [string, unknown];
    if (outcome === "full") {
      throw new IdempotencyStoreFullError(Math.max(1_000, Number(detail)));
    }
    return toEntry(pairs(detail));
  }

  async complete(
    key: IdempotencyKey,
    entry: { fingerprint: string; response: CallToolResponse },
    ttlMs: number,
  ): Promise<void> {
    const response = JSON.stringify(entry.response);
    const bytes = Buffer.byteLength(response);
    const published = bytes <= this.maxPublishedResponseBytes ? response : "";
    if (bytes > this.maxResponseBytes) {
      // Not kept, but still the answer of the duplicates waiting for this run.
      await this.connection.script("release", 5, RELEASE, ...this.keysOf(key), entry.fingerprint, published);
      return;
    }
    await this.connection.script(
      "settle",
      5,
      SETTLE,
      ...this.keysOf(key),
      entry.fingerprint,
      "r",
      response,
      ttl(ttlMs),
      this.maxEntriesPerPrincipal,
      this.maxBytesPerPrincipal,
      RECORD_OVERHEAD_BYTES,
      "1",
      published,
    );
  }

  async abandon(key: IdempotencyKey, fingerprint: string, ttlMs: number): Promise<void> {
    // Not refused over the quota: the mark replaces the run's own claim, and dropping it would let a second run start.
    await this.connection.script(
      "settle",
      5,
      SETTLE,
      ...this.keysOf(key),
      fingerprint,
      "a",
      "1",
      ttl(ttlMs),
      this.maxEntriesPerPrincipal,
      this.maxBytesPerPrincipal,
      RECORD_OVERHEAD_BYTES,
      "0",
      "",
    );
  }

  /**
   * Frees the key. `response` (a retryable failure) is not kept, but goes to the duplicates waiting on
   * the key on every instance, in the pub/sub message, when at most `maxPublishedResponseBytes`.
   */
  async release(key: IdempotencyKey, response?: CallToolResponse): Promise<void> {
    let published = "";
    if (response !== undefined) {
      const json = JSON.stringify(response);
      if (Buffer.byteLength(json) <= this.maxPublishedResponseBytes) {
        published = json;
      }
    }
    await this.connection.script("release", 5, RELEASE, ...this.keysOf(key), "", published);
  }

  async get(key: IdempotencyKey): Promise<IdempotencyEntry | undefined> {
    return toEntry(await this.connection.run((client) => client.hgetall(this.keyOf(key))));
  }

  /**
   * Resolves once `key` holds a finished response or an abandoned run (the entry), is released with a
   * response for its waiters (`{fingerprint, response}`), is freed or held for another fingerprint
   * (undefined), or `maxMs` passed (undefined). Subscribes to the key's channel first and reads the key
   * after, so a change landing in between is seen by the read.
   */
  async waitFor(key: IdempotencyKey, fingerprint: string, maxMs: number): Promise<IdempotencyEntry | undefined> {
    const channel = this.keyOf(key);
    const subscriber = await this.listen();
    return new Promise<IdempotencyEntry | undefined>((resolve, reject) => {
      let done = false;
      const finish = (outcome: () => void) => {
        if (done) {
          return;
        }
        done = true;
        clearTimeout(timer);
        const held = this.channels.get(channel);
        held?.waiters.delete(waiter);
        if (held?.waiters.size === 0) {
          this.channels.delete(channel);
          subscriber.unsubscribe(channel).catch(() => {});
        }
        outcome();
      };
      const waiter: Waiter = {
        check: () => {
          this.get(key).then(
            (entry) => {
              if (entry && entry.fingerprint === fingerprint) {
                if (entry.response || entry.abandoned) {
                  finish(() => resolve(entry));
                }
                return;
              }
              // Freed: if that was a release with a response, its message was published before this
              // read ran, so it is queued on the subscriber ahead of a PING's reply. Answer after it.
              subscriber
                .ping()
                .catch(() => {})
                .then(() => finish(() => resolve(undefined)));
            },
            (error: unknown) => finish(() => reject(error)),
          );
        },
        notify: (released) => {
          if (released?.fingerprint === fingerprint) {
            finish(() => resolve({ fingerprint, response: released.response }));
          } else {
            waiter.check();
          }
        },
      };
      const timer = setTimeout(() => finish(() => resolve(undefined)), Math.max(0, maxMs));
      let held = this.channels.get(channel);
      if (!held) {
        held = { waiters: new Set(), subscribed: subscriber.subscribe(channel) };
        this.channels.set(channel, held);
      }
      held.waiters.add(waiter);
      // The first read waits until Redis confirmed the subscription, for a second waiter on the channel too.
      held.subscribed.then(
        () => waiter.check(),
        (error: unknown) =>
          finish(() => reject(new RedisUnavailableError(`Redis SUBSCRIBE failed: ${(error as Error).message}`))),
      );
    });
  }

  /** The subscriber connection, with its message and reconnect handlers attached once. */
  private async listen(): Promise<Redis> {
    const subscriber = await this.connection.subscriber();
    if (this.listening !== subscriber) {
      this.listening = subscriber;
      subscriber.on("message", (channel: string, message: string) => {
        const waiters = this.channels.get(channel)?.waiters;
        if (!waiters?.size) {
          return;
        }
        const released = releasedIn(message);
        for (const waiter of waiters) {
          waiter.notify(released);
        }
      });
      // Messages published while the connection was down are lost. After a reconnect (ioredis does not
      // resubscribe: autoResubscribe is off) the channels are subscribed again, and only once Redis
      // confirmed does every waiter read its key: a change after that read is sure to be published to it.
      subscriber.on("ready", () => {
        const names = [...this.channels.keys()];
        if (names.length === 0) {
          return;
        }
        const subscribed = subscriber.subscribe(...names);
        for (const held of this.channels.values()) {
          held.subscribed = subscribed;
        }
        subscribed.then(
          () => {
            for (const held of this.channels.values()) {
              for (const waiter of held.waiters) {
                waiter.check();
              }
            }
          },
          // The connection dropped again: its next "ready" subscribes again. Waiters end at their maxMs at worst.
          () => {},
        );
      });
    }
    return subscriber;
  }

  /** Closes the connection when it is this store's own (not one shared through {@link createRedisState}). */
  async close(): Promise<void> {
    if (this.ownsConnection) {
      await this.connection.close();
    }
  }
}

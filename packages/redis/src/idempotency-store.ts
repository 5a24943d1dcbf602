/** `call_id` idempotency records in Redis: atomic claims, TTLs, leases, and pub/sub wake-ups for calls followed from another instance. */
import { randomBytes } from "node:crypto";
import { unrefTimer } from "@otc/server/core";
import {
  type Clock,
  type ClockTimer,
  type CompletedEntry,
  type IdempotencyEntry,
  type IdempotencyKey,
  type IdempotencyStore,
  IdempotencyStoreFullError,
  systemClock,
  type TaskEvent,
  type TaskStore,
} from "@otc/server/node";
import type { CallProgress, CallToolResponse } from "@otc/types";
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
  /**
   * The most listeners {@link RedisIdempotencyStore.watch} holds at once, all keys together (the tasks extension:
   * each asynchronous call this instance runs, and each status long poll or event stream following a call another
   * instance runs). Past it, `watch` registers nothing: that follower then learns of changes only when it reads the
   * call again. Default 50,000.
   */
  maxWatchers?: number;
  /**
   * The clock the store's own time rules follow: the leases it writes (`renew`) and reads (`claim`, `waitFor`,
   * `watch`), its waits' limits, and the timers that wake followers when a lease passes or subscribe a channel again.
   * Give it the server's `clock`. The TTLs Redis keeps (a claim's, a record's retention) run on Redis's own clock,
   * which no clock here moves. Default `systemClock`.
   */
  clock?: Clock;
}

/*
 * A record is a hash: `f` the fingerprint, `t` the token of the claim that wrote it (below), `r` the
 * response's JSON once finished, with `c` = "1" if the call was cancelled and `n` = "1" if it is a
 * retryable failure kept for its status only (a claim replaces it); `a` = "1" while an abandoned run
 * holds the key. While an asynchronous run goes on (the tasks extension, docs/protocol.md 9.3), `l` is
 * its lease (epoch ms until which its instance vouches for it), `p` its latest progress's JSON and `s`
 * that progress's number; `k` = "1" once a cancel was asked for while the call ran. Every change that
 * can end a wait is published on a channel named like the key, in the same script, so no waiter can
 * miss it between the change and the message. The message is
 * `r` (finished), `a` (abandoned), `x` (freed), or `R<length of f>:<f><response JSON>`: freed, with a
 * response that was not kept but is the waiters' answer. Watchers hear those as "settled", and three
 * more messages that wake no waiter: `p` (a progress was kept), `c` (a cancel is asked for: the
 * instance running the call aborts it) and `l` (the run's first lease was set: followers read it, to
 * learn when it passes).
 *
 * A cancel is kept, not only published: the script that publishes `c` sets `k` in the same step. The
 * instance running the call may not hear the message (its subscriber was reconnecting, or its
 * SUBSCRIBE not yet confirmed); it finds `k` when it reads the record after subscribing (again) and
 * when it renews the run's lease, and its watchers then hear "cancel" all the same. A claim that
 * replaces the record (a new run of the call) drops `k` with the rest.
 *
 * Fencing. A claim writes a random token `t`, which the claiming store remembers for the run it
 * started; that run's later writes (complete, abandon, release, progress, renew) name it, and a script
 * refuses a write whose token is not the record's. The key was then claimed again after this run's
 * claim lapsed or its lease passed (its instance stopped renewing: paused, or cut off from Redis), and
 * the key is the new run's. The fingerprint alone cannot tell them apart: the new claim is the same
 * call. A write that names no token (its store does not know one: it never claimed the key, or forgot
 * the token past MAX_HELD_CLAIMS) is refused on a record that has one: that run's claim then lapses,
 * as a claim whose instance died does. A record without a token (written by an older version) is
 * checked by fingerprint only.
 *
 * Leases are in the clock of the instance that renews them (its store's `clock`), and a claim compares
 * them with the claimer's clock (sent as an argument), not Redis's TIME: the server reads leases with
 * its own clock (a call past its lease is reported ended, retryable), so what an instance reports as
 * ended its claim can take over, and a waiter that sees a lease pass and claims again never finds the
 * claim disagree. Instances' clocks must then agree to well within a lease (30 s by default, renewed
 * every 10 s), and a server's store must follow the server's clock.
 *
 * Each principal's records are accounted in four keys: KEYS[2] a sorted set of all of them (member =
 * record key, score = its expiry in Redis's ms clock), KEYS[3] a hash of each one's size, KEYS[4] the
 * sizes' sum, KEYS[5] a sorted set of its finished records only (same scores: with one retention, the
 * oldest finished first). A record's size counts its key, fingerprint, response and progress.
 * Expired members are dropped lazily, each once (amortized constant time per
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
 * still going) with the milliseconds until its oldest record expires. A kept retryable failure holds
 * nothing, nor does a run whose lease passed (its instance stopped vouching for it): the claim
 * replaces either, in this same script, so two claims can never both take it.
 * ARGV: fingerprint, ttl ms, max entries, max bytes, per-record overhead, the claim's token, the
 * claimer's clock (epoch ms, for leases).
 */
const CLAIM = `${ACCOUNTING}
local held = redis.call('HGETALL', KEYS[1])
local replacing = false
if #held > 0 then
  local field = {}
  for i = 1, #held - 1, 2 do field[held[i]] = held[i + 1] end
  local dead = not field.r and not field.a and field.l ~= nil and tonumber(field.l) < tonumber(ARGV[7])
  if field.n ~= '1' and not dead then return {'held', held} end
  replacing = true
end
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
-- that at the limit the claim is refused with OOM before anything was dropped. A record replaced
-- loses its other fields after, not before.
local ttl = tonumber(ARGV[2])
redis.call('HSET', KEYS[1], 'f', ARGV[1], 't', ARGV[6])
if replacing then redis.call('HDEL', KEYS[1], 'r', 'a', 'c', 'n', 'l', 'p', 's', 'k') end
redis.call('PEXPIRE', KEYS[1], ttl)
drop(evict)
sweep(stale)
forget(KEYS[1])
account(size, now + ttl, false)
extend(ttl, false)
return false`;

/**
 * Writes a finished or abandoned record, unless another call (another fingerprint) took the key after
 * this one's claim lapsed, or another run of this call did (another token; see "Fencing" above): a late
 * finisher must not overwrite it. A finished record is fitted into the
 * principal's quotas by dropping its oldest finished ones; if even that cannot make room, it is not
 * kept: the key is freed and the response published to the waiters. An abandoned mark (it replaces
 * the run's own claim) is always written. The record keeps its run's token: a late write of an
 * earlier run is refused against it too.
 * ARGV: fingerprint, field, value, ttl ms, max entries, max bytes, overhead, "1" for a finished record,
 * the response to publish if not kept ("" for the plain signal), the run's token ("" if unknown), how
 * the call ended ("c" cancelled, "n" rerunnable, both, or "").
 */
const SETTLE = `${ACCOUNTING}
local f, t = unpack(redis.call('HMGET', KEYS[1], 'f', 't'))
if f and f ~= ARGV[1] then return 0 end
if f and t and t ~= ARGV[10] then return 0 end
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
local fields = {'f', ARGV[1], ARGV[2], ARGV[3]}
if ARGV[10] ~= '' then table.insert(fields, 't'); table.insert(fields, ARGV[10]) end
if string.find(ARGV[11], 'c', 1, true) then table.insert(fields, 'c'); table.insert(fields, '1') end
if string.find(ARGV[11], 'n', 1, true) then table.insert(fields, 'n'); table.insert(fields, '1') end
redis.call('HSET', KEYS[1], unpack(fields))
redis.call('PEXPIRE', KEYS[1], ttl)
account(size, now + ttl, finished)
extend(ttl, finished)
redis.call('PUBLISH', KEYS[1], ARGV[2])
return 1`;

/**
 * Frees the key (unless ARGV[1], when not "", names a fingerprint and another one holds the key, or
 * the key's token is not ARGV[3]) and publishes ARGV[2] as the waiters' response ("" for the plain
 * signal).
 */
const RELEASE = `${ACCOUNTING}
local f, t = unpack(redis.call('HMGET', KEYS[1], 'f', 't'))
if f and ARGV[1] ~= '' and f ~= ARGV[1] then return 0 end
if f and t and t ~= ARGV[3] then return 0 end
redis.call('DEL', KEYS[1])
local now = now_ms()
forget(KEYS[1])
sweep(expired(now))
tidy()
publish_freed(f, ARGV[2])
return 1`;

/**
 * Keeps a running call's latest progress and its number, if the key is still held by this run (its
 * fingerprint and token) and has not ended, and the number is newer than the one kept. The progress
 * counts in the record's size: when the principal's bytes quota cannot take it even after dropping its
 * oldest finished records, it is not kept. Publishes `p`.
 * ARGV: fingerprint, token ("" if unknown), progress JSON, its number, max entries, max bytes, overhead.
 */
const PROGRESS = `${ACCOUNTING}
local f, t, r, a, s = unpack(redis.call('HMGET', KEYS[1], 'f', 't', 'r', 'a', 's'))
if f ~= ARGV[1] or r or a then return 0 end
if t and t ~= ARGV[2] then return 0 end
if s and tonumber(s) >= tonumber(ARGV[4]) then return 0 end
local now = now_ms()
local size = tonumber(ARGV[7]) + string.len(KEYS[1]) + string.len(f) + string.len(ARGV[3])
local stale = expired(now)
local evict = plan(stale, size, tonumber(ARGV[5]), tonumber(ARGV[6]))
if not evict then return 0 end
-- The first write may grow memory: at maxmemory the progress is refused, nothing else changed.
redis.call('HSET', KEYS[1], 'p', ARGV[3], 's', ARGV[4])
drop(evict)
sweep(stale)
-- The record's size changes, not its expiry (absent from the accounting only if it lapsed this very ms).
if redis.call('ZSCORE', KEYS[2], KEYS[1]) then
  redis.call('INCRBY', KEYS[4], size - size_of(KEYS[1]))
  redis.call('HSET', KEYS[3], KEYS[1], size)
end
redis.call('PUBLISH', KEYS[1], 'p')
return 1`;

/**
 * Sets a running call's lease (ARGV[3], epoch ms in the renewing instance's clock) if the key is still
 * held by this run and has not ended; publishes `l` when it is the run's first. Answers 2 when a cancel
 * was asked for (`k`), 1 otherwise, 0 when the key is not this run's. A renewal writes a
 * number of the same width in place of the last one: it must not be refused at maxmemory, or a live run
 * would pass for dead. Redis checks maxmemory only when a script's first write may grow memory, so an
 * HDEL (which never does) comes first.
 * ARGV: fingerprint, token ("" if unknown), lease until.
 */
const RENEW = `
local f, t, r, a, l, k = unpack(redis.call('HMGET', KEYS[1], 'f', 't', 'r', 'a', 'l', 'k'))
if f ~= ARGV[1] or r or a then return 0 end
if t and t ~= ARGV[2] then return 0 end
redis.call('HDEL', KEYS[1], 'l')
redis.call('HSET', KEYS[1], 'l', ARGV[3])
if not l then redis.call('PUBLISH', KEYS[1], 'l') end
if k then return 2 end
return 1`;

/**
 * Asks the instance running a call to cancel it: keeps the request in the record (`k`) while the call
 * runs, and publishes `c`, in one step (see "A cancel is kept" above). At maxmemory the request is only
 * published (pcall: the HSET refused with OOM does not stop the script), as it was before it was kept.
 */
const CANCEL = `
local f, r, a = unpack(redis.call('HMGET', KEYS[1], 'f', 'r', 'a'))
if f and not r and not a then redis.pcall('HSET', KEYS[1], 'k', '1') end
redis.call('PUBLISH', KEYS[1], 'c')
return 1`;

const MIB = 1024 * 1024;
/** What a record costs in Redis besides its key, fingerprint, response and progress: the hash, its TTL, token and lease, the accounting entries. */
const RECORD_OVERHEAD_BYTES = 256;
/**
 * A progress larger than this (serialized) is not kept. The server never sends one: it cuts a progress's message to
 * 1,000 characters (at most 3,000 bytes in UTF-8), so this only bounds what another caller of the store could send.
 */
const MAX_PROGRESS_BYTES = 8 * 1024;
/** The most claim tokens a store remembers (one per call it runs); past it the oldest goes, and its run can no longer write its record. */
const MAX_HELD_CLAIMS = 100_000;
/** How long after a followed run's lease a store reads it again: timers may fire a little early by the wall clock. */
const LEASE_SLACK_MS = 25;
/** How long a store waits before subscribing a watched channel again, after Redis refused or was unreachable. */
const RESUBSCRIBE_MS = 1_000;

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
  if (fields.c === "1") {
    entry.cancelled = true;
  }
  if (fields.n === "1") {
    entry.rerunnable = true;
  }
  if (fields.p !== undefined) {
    entry.progress = parseStored<CallProgress>(fields.p);
    entry.progressSeq = Number(fields.s ?? 0);
  }
  if (fields.l !== undefined) {
    entry.leaseUntil = Number(fields.l);
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

/** The lease of a run still going that `entry` holds, if it has one. */
const leaseOf = (entry: IdempotencyEntry | undefined) =>
  entry && entry.response === undefined && !entry.abandoned ? entry.leaseUntil : undefined;

const ttl = (ms: number) => Math.max(1, Math.ceil(ms));

interface Waiter {
  /** Reads the key again and settles if it says so. */
  check(): void;
  /** A message that can end a wait arrived on the key's channel. */
  notify(released: { fingerprint: string; response: CallToolResponse } | undefined): void;
}

/**
 * Who follows one key: the waiters and watchers on its channel, the SUBSCRIBE every one of them waits for
 * before its first read, and a timer for the lease of the run that holds it.
 */
interface Channel {
  /** The channel's name: the record's key. */
  name: string;
  key: IdempotencyKey;
  waiters: Set<Waiter>;
  watchers: Set<(event: TaskEvent) => void>;
  subscribed: Promise<unknown>;
  /** A SUBSCRIBE for it was sent: leaving it sends UNSUBSCRIBE. */
  sent: boolean;
  /** The lease the timer is set for, and the timer: when it passes, the key is read again. */
  leaseAt?: number;
  leaseTimer?: ClockTimer;
  /** The lease whose passing the followers were told of: they are told once. */
  deadAt?: number;
}

/**
 * Idempotency records shared by every instance on one Redis. `claim` is one atomic script (the key
 * is free, or the answer is what holds it), records expire with the TTLs the server passes (the
 * claim's lapses if the instance running the call dies), and `waitFor` sleeps on pub/sub rather than
 * polling. The tasks extension (docs/protocol.md 9.3) goes through it too: a run's progress and lease
 * are kept in its record, `watch` follows a key over pub/sub (and wakes when the lease of the run
 * holding it passes), `cancel` asks the instance running a call to abort it, and a claim takes over a
 * run whose lease passed, fenced by a token so that run's late writes cannot touch the new one.
 * Bounds: every key has a TTL; each principal holds at most `maxEntriesPerPrincipal` records
 * and `maxBytesPerPrincipal` bytes (progress included; past them its own oldest finished records go,
 * and when its running calls alone fill them its new keys are refused; another principal's are never
 * touched); responses over `maxResponseBytes` are not kept; watchers are at most `maxWatchers`; and
 * when Redis reaches `maxmemory` (with the `noeviction` policy) a claim is refused with a 503 rather
 * than a record dropped.
 */
export class RedisIdempotencyStore implements IdempotencyStore, TaskStore {
  private readonly connection: RedisConnection;
  private readonly ownsConnection: boolean;
  private readonly maxResponseBytes: number;
  private readonly maxPublishedResponseBytes: number;
  private readonly maxEntriesPerPrincipal: number;
  private readonly maxBytesPerPrincipal: number;
  private readonly fullRetryAfterMs: number;
  private readonly maxWatchers: number;
  private readonly clock: Clock;
  /** Followers by channel (= record key); a channel is subscribed while it has any. */
  private readonly channels = new Map<string, Channel>();
  /** How many watchers all channels hold. */
  private watcherCount = 0;
  /** The token of each claim this store holds (see "Fencing" above), by record key, oldest write first. */
  private readonly claims = new Map<string, { token: string; until: number }>();
  private listening: Redis | undefined;
  private closed = false;

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
    this.maxWatchers = options.maxWatchers ?? 50_000;
    this.clock = options.clock ?? systemClock;
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

  /** Remembers the token of a claim this store took, for `ttlMs` (renewed by `abandon`). */
  private hold(id: string, token: string, ttlMs: number): void {
    const now = this.clock.now();
    this.claims.delete(id);
    this.claims.set(id, { token, until: now + ttlMs });
    // Oldest write first: the lapsed ones at the head go, and the oldest past the bound.
    for (const [oldest, claim] of this.claims) {
      if (this.claims.size <= MAX_HELD_CLAIMS && claim.until > now) {
        break;
      }
      this.claims.delete(oldest);
    }
  }

  /** The token of this store's claim of `id`, or "" when it holds none (refused by a record that has one). */
  private tokenOf(id: string): string {
    return this.claims.get(id)?.token ?? "";
  }

  /**
   * Takes `key` (answers undefined) or answers what holds it. A kept retryable failure (`rerunnable`) holds
   * nothing, nor does a run whose lease passed by this instance's clock: the claim replaces either, atomically.
   */
  async claim(key: IdempotencyKey, fingerprint: string, ttlMs: number): Promise<IdempotencyEntry | undefined> {
    const token = randomBytes(12).toString("base64url");
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
        token,
        this.clock.now(),
      );
    } catch (error) {
      if (isOutOfMemory(error)) {
        throw new IdempotencyStoreFullError(this.fullRetryAfterMs);
      }
      throw error;
    }
    if (!Array.isArray(answer)) {
      this.hold(this.keyOf(key), token, ttlMs);
      return undefined;
    }
    const [outcome, detail] = answer as [string, unknown];
    if (outcome === "full") {
      throw new IdempotencyStoreFullError(Math.max(1_000, Number(detail)));
    }
    return toEntry(pairs(detail));
  }

  /**
   * Stores a claimed key's finished response for `ttlMs`, with how the call ended (`cancelled`, `rerunnable`),
   * unless the key was claimed again since (another call, or another run of this one: see "Fencing"). A response
   * too large to keep frees the key instead, and goes to the duplicates waiting on it.
   */
  async complete(key: IdempotencyKey, entry: CompletedEntry, ttlMs: number): Promise<void> {
    const id = this.keyOf(key);
    const token = this.tokenOf(id);
    this.claims.delete(id);
    const response = JSON.stringify(entry.response);
    const bytes = Buffer.byteLength(response);
    const published = bytes <= this.maxPublishedResponseBytes ? response : "";
    if (bytes > this.maxResponseBytes) {
      // Not kept, but still the answer of the duplicates waiting for this run.
      await this.connection.script("release", 5, RELEASE, ...this.keysOf(key), entry.fingerprint, published, token);
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
      token,
      `${entry.cancelled ? "c" : ""}${entry.rerunnable ? "n" : ""}`,
    );
  }

  async abandon(key: IdempotencyKey, fingerprint: string, ttlMs: number): Promise<void> {
    const id = this.keyOf(key);
    const token = this.tokenOf(id);
    if (token) {
      // Held until the run settles and releases the key, however long that takes.
      this.hold(id, token, ttlMs);
    }
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
      token,
      "",
    );
  }

  /**
   * Frees the key (unless another run of the call took it since: see "Fencing"). `response` (a retryable failure)
   * is not kept, but goes to the duplicates waiting on the key on every instance, in the pub/sub message, when at
   * most `maxPublishedResponseBytes`.
   */
  async release(key: IdempotencyKey, response?: CallToolResponse): Promise<void> {
    const id = this.keyOf(key);
    const token = this.tokenOf(id);
    this.claims.delete(id);
    let published = "";
    if (response !== undefined) {
      const json = JSON.stringify(response);
      if (Buffer.byteLength(json) <= this.maxPublishedResponseBytes) {
        published = json;
      }
    }
    await this.connection.script("release", 5, RELEASE, ...this.keysOf(key), "", published, token);
  }

  async get(key: IdempotencyKey): Promise<IdempotencyEntry | undefined> {
    return toEntry(await this.connection.run((client) => client.hgetall(this.keyOf(key))));
  }

  /**
   * Keeps a running call's latest progress (numbered `update.seq`) in its record and tells the key's watchers,
   * if this run still holds the key and the number is newer than the one kept. Counts in the principal's bytes.
   * Resolves whether it was kept.
   */
  async progress(
    key: IdempotencyKey,
    fingerprint: string,
    update: { progress: CallProgress; seq: number },
  ): Promise<boolean> {
    const progress = JSON.stringify(update.progress);
    if (Buffer.byteLength(progress) > MAX_PROGRESS_BYTES || !Number.isSafeInteger(update.seq)) {
      return false;
    }
    const kept = await this.connection.script(
      "progress",
      5,
      PROGRESS,
      ...this.keysOf(key),
      fingerprint,
      this.tokenOf(this.keyOf(key)),
      progress,
      update.seq,
      this.maxEntriesPerPrincipal,
      this.maxBytesPerPrincipal,
      RECORD_OVERHEAD_BYTES,
    );
    return kept === 1;
  }

  /**
   * Vouches for a running call for `leaseMs` more: its lease becomes this instance's clock plus `leaseMs` (see the
   * note on clocks above), if this run still holds the key and has not ended. When a cancel was asked for meanwhile
   * (kept in the record: its message may not have reached this instance), the key's watchers hear "cancel".
   */
  async renew(key: IdempotencyKey, fingerprint: string, leaseMs: number): Promise<void> {
    const id = this.keyOf(key);
    const renewed = await this.connection.script(
      "renew",
      1,
      RENEW,
      id,
      fingerprint,
      this.tokenOf(id),
      Math.ceil(this.clock.now() + leaseMs),
    );
    const held = this.channels.get(id);
    if (renewed === 2 && held) {
      this.tell(held, "cancel");
    }
  }

  /**
   * Asks the instance running `key`'s call to cancel it: keeps the request in the call's record and publishes `c` on
   * the key's channel, in one step. The instance hears the message, or (its subscriber was reconnecting) finds the
   * request when it subscribes again or renews the run's lease. A watcher of this store on the key is subscribed
   * before it goes out, so it hears what the cancel leads to.
   */
  async cancel(key: IdempotencyKey): Promise<void> {
    const name = this.keyOf(key);
    await this.channels.get(name)?.subscribed.catch(() => {});
    await this.connection.script("cancel", 1, CANCEL, name);
  }

  /**
   * Calls `listener` on each change of `key`, from any instance: "progress" when a progress was kept, "cancel" when
   * a cancel is asked for, "settled" when the call finished, was abandoned or freed, or when the lease of its run
   * passed (nobody vouches for it any more). Returns the function that stops it. Past `maxWatchers` it registers
   * nothing (and returns a function that does nothing).
   *
   * @example
   * const stop = store.watch({ principal: "anonymous", callId: "c-1" }, (event) => console.log(event));
   * // later
   * stop();
   */
  watch(key: IdempotencyKey, listener: (event: TaskEvent) => void): () => void {
    if (this.closed || this.watcherCount >= this.maxWatchers) {
      return () => {};
    }
    const name = this.keyOf(key);
    let held = this.channels.get(name);
    if (!held) {
      held = { name, key, waiters: new Set(), watchers: new Set(), subscribed: Promise.resolve(), sent: false };
      this.channels.set(name, held);
      this.subscribe(held);
    }
    const channel = held;
    // Its own function, so that one listener watching twice is two watchers, each stopped by its own call.
    const watcher = (event: TaskEvent) => listener(event);
    channel.watchers.add(watcher);
    this.watcherCount++;
    if (channel.watchers.size === 1) {
      // Learns the lease of the run holding the key, to wake when it passes.
      channel.subscribed.then(
        () => this.lookAt(channel, false),
        () => {},
      );
    }
    let watching = true;
    return () => {
      if (watching) {
        watching = false;
        channel.watchers.delete(watcher);
        this.watcherCount--;
        this.leave(channel);
      }
    };
  }

  /**
   * Resolves once `key` holds a finished response or an abandoned run (the entry), is released with a
   * response for its waiters (`{fingerprint, response}`), is freed or held for another fingerprint, or the
   * lease of its run passed (undefined: the caller may claim it), or `maxMs` passed (undefined). Subscribes to
   * the key's channel first and reads the key after, so a change landing in between is seen by the read.
   */
  async waitFor(key: IdempotencyKey, fingerprint: string, maxMs: number): Promise<IdempotencyEntry | undefined> {
    const name = this.keyOf(key);
    const subscriber = await this.listen();
    return new Promise<IdempotencyEntry | undefined>((resolve, reject) => {
      let done = false;
      const finish = (outcome: () => void) => {
        if (done) {
          return;
        }
        done = true;
        this.clock.clearTimeout(timer);
        channel.waiters.delete(waiter);
        this.leave(channel);
        outcome();
      };
      const waiter: Waiter = {
        check: () => {
          this.get(key).then(
            (entry) => {
              if (entry && entry.fingerprint === fingerprint) {
                if (entry.response || entry.abandoned) {
                  finish(() => resolve(entry));
                  return;
                }
                const lease = leaseOf(entry);
                if (lease === undefined) {
                  return;
                }
                if (lease >= this.clock.now()) {
                  this.arm(channel, lease);
                  return;
                }
                // Nobody vouches for the run any more: the caller's claim takes it over.
                finish(() => resolve(undefined));
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
      const timer = this.clock.setTimeout(() => finish(() => resolve(undefined)), Math.max(0, maxMs));
      let held = this.channels.get(name);
      if (!held) {
        held = {
          name,
          key,
          waiters: new Set(),
          watchers: new Set(),
          subscribed: subscriber.subscribe(name),
          sent: true,
        };
        this.channels.set(name, held);
      }
      const channel = held;
      channel.waiters.add(waiter);
      // The first read waits until Redis confirmed the subscription, for a second waiter on the channel too.
      channel.subscribed.then(
        () => waiter.check(),
        (error: unknown) =>
          finish(() => reject(new RedisUnavailableError(`Redis SUBSCRIBE failed: ${(error as Error).message}`))),
      );
    });
  }

  /**
   * Subscribes a channel made by `watch` once the subscriber is ready; when that fails (Redis unreachable), tries
   * again a second later, for as long as it has watchers.
   */
  private subscribe(held: Channel): void {
    const subscribed = this.listen().then((subscriber) => {
      if (this.channels.get(held.name) !== held || held.sent) {
        return undefined;
      }
      held.sent = true;
      return subscriber.subscribe(held.name);
    });
    held.subscribed = subscribed;
    subscribed.catch(() => {
      if (held.subscribed !== subscribed || held.sent) {
        return;
      }
      const timer = this.clock.setTimeout(() => {
        if (!this.closed && this.channels.get(held.name) === held && held.watchers.size > 0 && !held.sent) {
          this.subscribe(held);
          // Changes made meanwhile were not heard: the watchers look again.
          held.subscribed.then(
            () => this.lookAt(held, true),
            () => {},
          );
        }
      }, RESUBSCRIBE_MS);
      unrefTimer(timer);
    });
  }

  /** Forgets a channel nobody follows any more: unsubscribes it, stops its lease timer. */
  private leave(held: Channel): void {
    if (held.waiters.size > 0 || held.watchers.size > 0 || this.channels.get(held.name) !== held) {
      return;
    }
    this.channels.delete(held.name);
    this.clock.clearTimeout(held.leaseTimer);
    if (held.sent) {
      this.listening?.unsubscribe(held.name).catch(() => {});
    }
  }

  /** Tells a channel's watchers of an event; one that throws does not stop the others. */
  private tell(held: Channel, event: TaskEvent): void {
    for (const watcher of [...held.watchers]) {
      try {
        watcher(event);
      } catch {
        // A watcher is the server's own; it handles its own failures.
      }
    }
  }

  /** A message on a followed channel: to its waiters when it can end a wait, and to its watchers. */
  private deliver(held: Channel, message: string): void {
    if (message === "l") {
      // A run's first lease: read it, to wake when it passes.
      this.lookAt(held, false);
      return;
    }
    const event: TaskEvent = message === "p" ? "progress" : message === "c" ? "cancel" : "settled";
    if (event === "settled") {
      this.arm(held, undefined);
      const released = releasedIn(message);
      for (const waiter of held.waiters) {
        waiter.notify(released);
      }
    }
    this.tell(held, event);
  }

  /** Sets the channel's timer for the lease `lease` (or stops it, for none): when it passes, the key is read again. */
  private arm(held: Channel, lease: number | undefined): void {
    if (lease === held.leaseAt) {
      return;
    }
    this.clock.clearTimeout(held.leaseTimer);
    held.leaseTimer = undefined;
    held.leaseAt = lease;
    if (lease === undefined || this.closed) {
      return;
    }
    held.leaseTimer = this.clock.setTimeout(
      () => {
        held.leaseAt = undefined;
        this.lookAt(held, false);
      },
      Math.max(0, lease - this.clock.now()) + LEASE_SLACK_MS,
    );
    unrefTimer(held.leaseTimer);
  }

  /**
   * Reads a followed key again: when its run's lease is due, after its first lease was set, or after the subscriber
   * came back (`resubscribed`: messages published meanwhile were lost, so its watchers are told to look again). A
   * run whose lease passed is over as far as its followers go (docs/protocol.md 9.3 `[tasks.lease]`): its waiters
   * read it and stop waiting, its watchers hear "settled", once; else the timer is set for its lease. A running call
   * whose record holds a cancel request has its watchers told "cancel": the `c` message may have gone to nobody.
   */
  private lookAt(held: Channel, resubscribed: boolean): void {
    if (this.closed) {
      return;
    }
    this.readFollowed(held).then(
      ({ entry, cancelAsked }) => {
        if (this.channels.get(held.name) !== held) {
          return;
        }
        const lease = leaseOf(entry);
        if (lease !== undefined && lease < this.clock.now()) {
          this.arm(held, undefined);
          if (held.deadAt !== lease) {
            held.deadAt = lease;
            for (const waiter of held.waiters) {
              waiter.check();
            }
            this.tell(held, "settled");
          }
          return;
        }
        this.arm(held, lease);
        const running = entry !== undefined && entry.response === undefined && !entry.abandoned;
        if (running && cancelAsked) {
          this.tell(held, "cancel");
        }
        if (resubscribed) {
          this.tell(held, running ? "progress" : "settled");
        } else if (entry !== undefined && !running) {
          // It ended before the subscription took: its message went to nobody, so the watchers learn it here.
          this.tell(held, "settled");
        }
      },
      () => {
        // Redis did not answer: look again in a while, as long as someone follows the key.
        if (this.channels.get(held.name) === held && !this.closed) {
          this.clock.clearTimeout(held.leaseTimer);
          held.leaseAt = undefined;
          held.leaseTimer = this.clock.setTimeout(() => this.lookAt(held, resubscribed), RESUBSCRIBE_MS);
          unrefTimer(held.leaseTimer);
        }
      },
    );
  }

  /** A followed key's record, and whether it holds a cancel request (`k`, which {@link toEntry} leaves out). */
  private async readFollowed(held: Channel): Promise<{ entry: IdempotencyEntry | undefined; cancelAsked: boolean }> {
    const fields = await this.connection.run((client) => client.hgetall(held.name));
    return { entry: toEntry(fields), cancelAsked: fields.k === "1" };
  }

  /** The subscriber connection, with its message and reconnect handlers attached once. */
  private async listen(): Promise<Redis> {
    const subscriber = await this.connection.subscriber();
    if (this.listening !== subscriber) {
      this.listening = subscriber;
      subscriber.on("message", (channel: string, message: string) => {
        const held = this.channels.get(channel);
        if (held) {
          this.deliver(held, message);
        }
      });
      // Messages published while the connection was down are lost. After a reconnect (ioredis does not
      // resubscribe: autoResubscribe is off) the channels are subscribed again, and only once Redis
      // confirmed does every follower read its key: a change after that read is sure to be published to it.
      subscriber.on("ready", () => {
        const names = [...this.channels.keys()];
        if (names.length === 0) {
          return;
        }
        const subscribed = subscriber.subscribe(...names);
        for (const held of this.channels.values()) {
          held.subscribed = subscribed;
          held.sent = true;
        }
        subscribed.then(
          () => {
            for (const held of this.channels.values()) {
              for (const waiter of held.waiters) {
                waiter.check();
              }
              if (held.watchers.size > 0) {
                this.lookAt(held, true);
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
    this.closed = true;
    for (const held of this.channels.values()) {
      this.clock.clearTimeout(held.leaseTimer);
    }
    if (this.ownsConnection) {
      await this.connection.close();
    }
  }
}

/** Authorization challenges in Redis, bounded as the in-memory store is: a TTL each, a per-owner pending cap, a per-principal cap, a total cap. */
import {
  type ChallengeStatus,
  type ChallengeStore,
  ChallengeStoreFullError,
  type ChallengeStoreOptions,
  type Clock,
  challengeStoreBounds,
  type NewChallenge,
  type StoredChallenge,
  systemClock,
  type TokenOwner,
} from "@otc/server/node";
import type { Redis } from "ioredis";
import { isOutOfMemory, keyPart, parseStored, RedisConnection, type RedisConnectionOptions } from "./connection.js";

/** Options of {@link RedisChallengeStore}: the bounds (defaults as {@link MemoryChallengeStore}'s) and the connection's. */
export interface RedisChallengeStoreOptions extends ChallengeStoreOptions, RedisConnectionOptions {
  /**
   * The clock a challenge's `expiresAt` is given in (its time left in Redis, added to this clock's now). The
   * challenges themselves expire, and are ordered and bounded, on Redis's own clock, which no clock here moves.
   * Default `systemClock`.
   */
  clock?: Clock;
}

/*
 * A challenge is a hash: `o` owner JSON, `p` scopes JSON, `d` data JSON, `s` status, `w` the key of
 * its owner's pending set, `q` the key of its principal's set. The index (a sorted set of every
 * challenge key by expiry) gives the total; each principal's set holds its challenges, pending or
 * decided, by expiry (so oldest first); each owner's pending set is ordered by a counter, oldest first.
 * Times come from Redis's own clock (TIME), so instances with skewed clocks agree. Scores and times
 * stay below 2^53 and are formatted with %d: Lua would print larger numbers in exponent form.
 * KEYS: the challenge, its owner's pending set, the index, its principal's set.
 * ARGV: ttl ms, max pending per owner, max in total, max per principal, owner, scopes, data.
 */
const ADD = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl, maxPending, maxTotal, maxPrincipal = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local stale = string.format('%d', now)
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', stale)
redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', stale)
-- A challenge leaves every set it is in; its hash names them (one written before 'q' existed has none).
local function forget(key)
  local w, q = unpack(redis.call('HMGET', key, 'w', 'q'))
  if w then redis.call('ZREM', w, key) end
  if q then redis.call('ZREM', q, key) end
  redis.call('ZREM', KEYS[3], key)
  redis.call('DEL', key)
end
if redis.call('EXISTS', KEYS[1]) == 1 then forget(KEYS[1]) end
local pending = {}
for _, member in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
  if redis.call('HGET', member, 's') == 'pending' then
    table.insert(pending, member)
  else
    redis.call('ZREM', KEYS[2], member)
  end
end
-- The owner's oldest pending past its cap, then the principal's oldest (pending or decided) past its own.
local victims, gone = {}, {}
for i = 1, math.max(0, #pending - maxPending + 1) do
  table.insert(victims, pending[i])
  gone[pending[i]] = true
end
local excess = redis.call('ZCARD', KEYS[4]) - #victims - maxPrincipal + 1
if excess > 0 then
  -- The owner's victims are the principal's too: read past them.
  for _, member in ipairs(redis.call('ZRANGE', KEYS[4], 0, excess + #victims - 1)) do
    if excess <= 0 then break end
    if not gone[member] then
      table.insert(victims, member)
      gone[member] = true
      excess = excess - 1
    end
  end
end
if redis.call('ZCARD', KEYS[3]) - #victims >= maxTotal then
  local oldest = redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')
  return {'full', string.format('%d', math.max(0, (tonumber(oldest[2]) or now) - now))}
end
for _, member in ipairs(victims) do
  forget(member)
  -- A member whose hash already lapsed names no sets: take it out of the principal's here.
  redis.call('ZREM', KEYS[4], member)
end
local last = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')
local order = (tonumber(last[2]) or 0) + 1
local expires = string.format('%d', now + ttl)
redis.call('HSET', KEYS[1], 'o', ARGV[5], 'p', ARGV[6], 'd', ARGV[7], 's', 'pending', 'w', KEYS[2], 'q', KEYS[4])
redis.call('PEXPIRE', KEYS[1], ttl)
redis.call('ZADD', KEYS[3], expires, KEYS[1])
redis.call('ZADD', KEYS[4], expires, KEYS[1])
redis.call('ZADD', KEYS[2], string.format('%d', order), KEYS[1])
-- Shared by every instance (and owner's or principal's by its every challenge): never shorten a TTL another writer set longer.
for i = 2, 4 do
  if redis.call('PTTL', KEYS[i]) < ttl then redis.call('PEXPIRE', KEYS[i], ttl) end
end
return {'ok', expires}`;

const GET = `
local fields = redis.call('HGETALL', KEYS[1])
if #fields == 0 then return false end
return {fields, redis.call('PTTL', KEYS[1])}`;

/** The first decision stands; a decided challenge leaves its owner's pending set (it no longer counts against the cap). */
const DECIDE = `
local s = redis.call('HGET', KEYS[1], 's')
if not s then return false end
if s ~= 'pending' then return s end
redis.call('HSET', KEYS[1], 's', ARGV[1])
local w = redis.call('HGET', KEYS[1], 'w')
if w then redis.call('ZREM', w, KEYS[1]) end
return ARGV[1]`;

/**
 * Challenges shared by every instance on one Redis: one started on instance A can be checked and
 * completed through B. Each operation is one Lua script, so two instances adding or deciding at once
 * cannot break the bounds or both decide. Keys hold the owner, scopes, status and the provider's data
 * (the demo's anti-CSRF token); they expire with the challenge.
 */
export class RedisChallengeStore implements ChallengeStore {
  private readonly connection: RedisConnection;
  private readonly ownsConnection: boolean;
  private readonly bounds: Required<ChallengeStoreOptions>;
  private readonly clock: Clock;

  /** From a Redis URL or client (see {@link RedisConnection}), or a connection shared with other stores. */
  constructor(redis: string | Redis | RedisConnection, options: RedisChallengeStoreOptions = {}) {
    this.bounds = challengeStoreBounds("RedisChallengeStore", options);
    this.clock = options.clock ?? systemClock;
    this.ownsConnection = !(redis instanceof RedisConnection);
    this.connection = redis instanceof RedisConnection ? redis : new RedisConnection(redis, options);
  }

  /** The Redis key of a challenge: exposed for tests and operators. */
  keyOf(id: string): string {
    return `${this.connection.prefix}challenge:${keyPart(id)}`;
  }

  private ownerSetKey(owner: TokenOwner): string {
    return `${this.connection.prefix}challenge-owner:${keyPart(owner.principal)}:${keyPart(owner.userId)}`;
  }

  private principalSetKey(owner: TokenOwner): string {
    return `${this.connection.prefix}challenge-principal:${keyPart(owner.principal)}`;
  }

  async add(id: string, challenge: NewChallenge): Promise<StoredChallenge> {
    const owner: TokenOwner = { principal: challenge.owner.principal, userId: challenge.owner.userId };
    const scopes = [...challenge.scopes];
    const data = { ...challenge.data };
    let answer: unknown;
    try {
      answer = await this.connection.script(
        "challenge_add",
        4,
        ADD,
        this.keyOf(id),
        this.ownerSetKey(owner),
        `${this.connection.prefix}challenges`,
        this.principalSetKey(owner),
        this.bounds.ttlMs,
        this.bounds.maxPendingPerOwner,
        this.bounds.maxChallenges,
        this.bounds.maxChallengesPerPrincipal,
        JSON.stringify(owner),
        JSON.stringify(scopes),
        JSON.stringify(data),
      );
    } catch (error) {
      if (isOutOfMemory(error)) {
        throw new ChallengeStoreFullError(5_000, this.bounds.maxChallenges);
      }
      throw error;
    }
    const [outcome, retryMs] = answer as [string, string];
    if (outcome === "full") {
      throw new ChallengeStoreFullError(Number(retryMs), this.bounds.maxChallenges);
    }
    // The local clock, as \`get\` reads expiries: Redis's clock only orders things inside Redis.
    return { owner, scopes, status: "pending", expiresAt: this.clock.now() + this.bounds.ttlMs, data };
  }

  async get(id: string): Promise<StoredChallenge | undefined> {
    const answer = await this.connection.script("challenge_get", 1, GET, this.keyOf(id));
    if (!answer) {
      return undefined;
    }
    const [flat, pttl] = answer as [string[], number];
    const fields: Record<string, string> = {};
    for (let i = 0; i + 1 < flat.length; i += 2) {
      fields[flat[i] as string] = flat[i + 1] as string;
    }
    if (fields.o === undefined || fields.s === undefined || pttl <= 0) {
      return undefined;
    }
    return {
      owner: parseStored<TokenOwner>(fields.o),
      scopes: parseStored<string[]>(fields.p ?? "[]"),
      status: fields.s as ChallengeStatus,
      expiresAt: this.clock.now() + pttl,
      data: parseStored<Record<string, string>>(fields.d ?? "{}"),
    };
  }

  async decide(id: string, status: "completed" | "failed"): Promise<ChallengeStatus | undefined> {
    const answer = await this.connection.script("challenge_decide", 1, DECIDE, this.keyOf(id), status);
    return (answer ?? undefined) as ChallengeStatus | undefined;
  }

  /** Closes the connection when it is this store's own (not one shared through {@link createRedisState}). */
  async close(): Promise<void> {
    if (this.ownsConnection) {
      await this.connection.close();
    }
  }
}

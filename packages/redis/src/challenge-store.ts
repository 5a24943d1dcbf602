/** Authorization challenges in Redis, bounded as the in-memory store is: a TTL each, a per-owner pending cap, a total cap. */
import {
  type ChallengeStatus,
  type ChallengeStore,
  ChallengeStoreFullError,
  type ChallengeStoreOptions,
  challengeStoreBounds,
  type NewChallenge,
  type StoredChallenge,
  type TokenOwner,
} from "@otc/server";
import type { Redis } from "ioredis";
import { isOutOfMemory, keyPart, parseStored, RedisConnection, type RedisConnectionOptions } from "./connection.js";

/** Options of {@link RedisChallengeStore}: the bounds (defaults as {@link MemoryChallengeStore}'s) and the connection's. */
export interface RedisChallengeStoreOptions extends ChallengeStoreOptions, RedisConnectionOptions {}

/*
 * A challenge is a hash: `o` owner JSON, `p` scopes JSON, `d` data JSON, `s` status, `w` the key of
 * its owner's pending set. The index (a sorted set of every challenge key by expiry) gives the total;
 * each owner's pending set is ordered by a counter, oldest first. Times come from Redis's own clock
 * (TIME), so instances with skewed clocks agree. Scores and times stay below 2^53 and are formatted
 * with %d: Lua would print larger numbers in exponent form.
 */
const ADD = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl, maxPending, maxTotal = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', string.format('%d', now))
local old = redis.call('HGET', KEYS[1], 'w')
if old then
  redis.call('ZREM', old, KEYS[1])
  redis.call('ZREM', KEYS[3], KEYS[1])
  redis.call('DEL', KEYS[1])
end
local pending = {}
for _, member in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
  if redis.call('HGET', member, 's') == 'pending' then
    table.insert(pending, member)
  else
    redis.call('ZREM', KEYS[2], member)
  end
end
local dropped = math.max(0, #pending - maxPending + 1)
if redis.call('ZCARD', KEYS[3]) - dropped >= maxTotal then
  local oldest = redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')
  return {'full', string.format('%d', math.max(0, (tonumber(oldest[2]) or now) - now))}
end
for i = 1, dropped do
  redis.call('DEL', pending[i])
  redis.call('ZREM', KEYS[3], pending[i])
  redis.call('ZREM', KEYS[2], pending[i])
end
local last = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')
local order = (tonumber(last[2]) or 0) + 1
local expires = string.format('%d', now + ttl)
redis.call('HSET', KEYS[1], 'o', ARGV[4], 'p', ARGV[5], 'd', ARGV[6], 's', 'pending', 'w', KEYS[2])
redis.call('PEXPIRE', KEYS[1], ttl)
redis.call('ZADD', KEYS[3], expires, KEYS[1])
redis.call('ZADD', KEYS[2], string.format('%d', order), KEYS[1])
-- Shared by every instance (and owner's by its every challenge): never shorten a TTL another writer set longer.
for i = 2, 3 do
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

  /** From a Redis URL or client (see {@link RedisConnection}), or a connection shared with other stores. */
  constructor(redis: string | Redis | RedisConnection, options: RedisChallengeStoreOptions = {}) {
    this.bounds = challengeStoreBounds("RedisChallengeStore", options);
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

  async add(id: string, challenge: NewChallenge): Promise<StoredChallenge> {
    const owner: TokenOwner = { principal: challenge.owner.principal, userId: challenge.owner.userId };
    const scopes = [...challenge.scopes];
    const data = { ...challenge.data };
    let answer: unknown;
    try {
      answer = await this.connection.script(
        "challenge_add",
        3,
        ADD,
        this.keyOf(id),
        this.ownerSetKey(owner),
        `${this.connection.prefix}challenges`,
        this.bounds.ttlMs,
        this.bounds.maxPendingPerOwner,
        this.bounds.maxChallenges,
        JSON.stringify(owner),
        JSON.stringify(scopes),
        JSON.stringify(data),
      );
    } catch (error) {
      if (isOutOfMemory(error)) throw new ChallengeStoreFullError(5_000, this.bounds.maxChallenges);
      throw error;
    }
    const [outcome, retryMs] = answer as [string, string];
    if (outcome === "full") throw new ChallengeStoreFullError(Number(retryMs), this.bounds.maxChallenges);
    // The local clock, as \`get\` reads expiries: Redis's clock only orders things inside Redis.
    return { owner, scopes, status: "pending", expiresAt: Date.now() + this.bounds.ttlMs, data };
  }

  async get(id: string): Promise<StoredChallenge | undefined> {
    const answer = await this.connection.script("challenge_get", 1, GET, this.keyOf(id));
    if (!answer) return undefined;
    const [flat, pttl] = answer as [string[], number];
    const fields: Record<string, string> = {};
    for (let i = 0; i + 1 < flat.length; i += 2) fields[flat[i] as string] = flat[i + 1] as string;
    if (fields.o === undefined || fields.s === undefined || pttl <= 0) return undefined;
    return {
      owner: parseStored<TokenOwner>(fields.o),
      scopes: parseStored<string[]>(fields.p ?? "[]"),
      status: fields.s as ChallengeStatus,
      expiresAt: Date.now() + pttl,
      data: parseStored<Record<string, string>>(fields.d ?? "{}"),
    };
  }

  async decide(id: string, status: "completed" | "failed"): Promise<ChallengeStatus | undefined> {
    const answer = await this.connection.script("challenge_decide", 1, DECIDE, this.keyOf(id), status);
    return (answer ?? undefined) as ChallengeStatus | undefined;
  }

  /** Closes the connection when it is this store's own (not one shared through {@link createRedisState}). */
  async close(): Promise<void> {
    if (this.ownsConnection) await this.connection.close();
  }
}

/** Held tokens in Redis, one key per (principal, user, provider), each expiring with its token. */
import { type Clock, type StoredToken, systemClock, type TokenOwner, type TokenStore } from "@otc/server/node";
import type { Redis } from "ioredis";
import { keyPart, parseStored, RedisConnection, type RedisConnectionOptions } from "./connection.js";

/** Options of {@link RedisTokenStore}. */
export interface RedisTokenStoreOptions extends RedisConnectionOptions {
  /** How long a token without an expiry is kept, and the longest any token is kept. Default 30 days. */
  maxTtlMs?: number;
  /**
   * The clock a token's `expiresAt` is read against: a token past it is not answered, and the key's TTL is the time
   * left by it. The key then expires on Redis's own clock, which no clock here moves. Default `systemClock`.
   */
  clock?: Clock;
}

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * Tokens shared by every instance on one Redis. A token is written only when a challenge completes,
 * as JSON `{token, scopes, expiresAt}` with its expiry (capped by `maxTtlMs`) as the key's TTL, so
 * Redis drops it when it stops being usable. Nothing here logs a token or puts one in an error.
 */
export class RedisTokenStore implements TokenStore {
  private readonly connection: RedisConnection;
  private readonly ownsConnection: boolean;
  private readonly maxTtlMs: number;
  private readonly clock: Clock;

  /** From a Redis URL or client (see {@link RedisConnection}), or a connection shared with other stores. */
  constructor(redis: string | Redis | RedisConnection, options: RedisTokenStoreOptions = {}) {
    this.ownsConnection = !(redis instanceof RedisConnection);
    this.connection = redis instanceof RedisConnection ? redis : new RedisConnection(redis, options);
    this.maxTtlMs = options.maxTtlMs ?? 30 * DAY_MS;
    this.clock = options.clock ?? systemClock;
  }

  /** The Redis key of a token: exposed for tests and operators. */
  keyOf(owner: TokenOwner, providerId: string): string {
    return `${this.connection.prefix}token:${keyPart(owner.principal)}:${keyPart(owner.userId)}:${keyPart(providerId)}`;
  }

  async get(owner: TokenOwner, providerId: string): Promise<StoredToken | undefined> {
    const raw = await this.connection.run((client) => client.get(this.keyOf(owner, providerId)));
    if (raw === null) {
      return undefined;
    }
    const token = parseStored<StoredToken>(raw);
    // The TTL is rounded up to whole milliseconds by Redis; the expiry itself is exact.
    if (token.expiresAt !== undefined && token.expiresAt <= this.clock.now()) {
      return undefined;
    }
    return token;
  }

  async set(owner: TokenOwner, providerId: string, token: StoredToken): Promise<void> {
    const ttlMs = Math.min(
      this.maxTtlMs,
      token.expiresAt === undefined ? this.maxTtlMs : token.expiresAt - this.clock.now(),
    );
    const key = this.keyOf(owner, providerId);
    if (ttlMs <= 0) {
      await this.connection.run((client) => client.del(key));
      return;
    }
    const value: StoredToken = { token: token.token, scopes: [...token.scopes] };
    if (token.expiresAt !== undefined) {
      value.expiresAt = token.expiresAt;
    }
    await this.connection.run((client) => client.set(key, JSON.stringify(value), "PX", Math.ceil(ttlMs)));
  }

  async delete(owner: TokenOwner, providerId: string): Promise<void> {
    await this.connection.run((client) => client.del(this.keyOf(owner, providerId)));
  }

  /** Closes the connection when it is this store's own (not one shared through {@link createRedisState}). */
  async close(): Promise<void> {
    if (this.ownsConnection) {
      await this.connection.close();
    }
  }
}

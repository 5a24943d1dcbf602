/** `createRedisState`: the three Redis stores on one shared connection, ready to hand to a server. */
import type { Clock } from "@otc/server/node";
import type { Redis } from "ioredis";
import { RedisChallengeStore, type RedisChallengeStoreOptions } from "./challenge-store.js";
import { RedisConnection, type RedisConnectionOptions } from "./connection.js";
import { RedisIdempotencyStore, type RedisIdempotencyStoreOptions } from "./idempotency-store.js";
import { RedisTokenStore, type RedisTokenStoreOptions } from "./token-store.js";

/** Options of {@link createRedisState}: the connection's, the stores' clock, and each store's own. */
export interface RedisStateOptions extends RedisConnectionOptions {
  /**
   * The clock the three stores follow (see each store's `clock`), unless one is given its own: the server's. Redis's
   * own TTLs stay on Redis's clock. Default `systemClock`.
   */
  clock?: Clock;
  idempotency?: Omit<RedisIdempotencyStoreOptions, keyof RedisConnectionOptions>;
  tokens?: Omit<RedisTokenStoreOptions, keyof RedisConnectionOptions>;
  challenges?: Omit<RedisChallengeStoreOptions, keyof RedisConnectionOptions>;
}

/** The shared state of one server instance. */
export interface RedisState {
  idempotencyStore: RedisIdempotencyStore;
  tokenStore: RedisTokenStore;
  challengeStore: RedisChallengeStore;
  /** The connection the stores share: its `client` is the ioredis client. */
  connection: RedisConnection;
  /**
   * Resolves once Redis answers; rejects after `timeoutMs` (default 10 s) when it does not. Optional:
   * the stores wait by themselves (up to `readyTimeoutMs` per command), but a server that awaits this
   * before listening does not answer its first calls with 503s. It also reads Redis's
   * `maxmemory-policy` (when CONFIG is allowed) and tells `onError` a `RedisEvictionPolicyWarning`
   * when that policy evicts keys.
   */
  ready(timeoutMs?: number): Promise<void>;
  /** Closes the subscriber, and the client when it was made from a URL. */
  close(): Promise<void>;
}

/**
 * The idempotency, token and challenge stores on one Redis connection (plus one subscriber connection,
 * made when a call first waits for another instance's run).
 *
 * @example
 * const state = createRedisState(process.env.OXP_REDIS_URL!);
 * const { app } = createDemoApp({ idempotencyStore: state.idempotencyStore, tokenStore: state.tokenStore, challengeStore: state.challengeStore });
 * const running = await listen(app, { port: 8080 });
 * // on shutdown: await running.close(); await state.close();
 */
export function createRedisState(redis: string | Redis, options: RedisStateOptions = {}): RedisState {
  const { idempotency, tokens, challenges, clock, ...connectionOptions } = options;
  const connection = new RedisConnection(redis, connectionOptions);
  return {
    idempotencyStore: new RedisIdempotencyStore(connection, { clock, ...idempotency }),
    tokenStore: new RedisTokenStore(connection, { clock, ...tokens }),
    challengeStore: new RedisChallengeStore(connection, { clock, ...challenges }),
    connection,
    ready: async (timeoutMs = 10_000) => {
      await connection.ready(connection.client, timeoutMs);
      // Reported through onError when it evicts; refused or failed, the check never fails readiness.
      await connection.checkEvictionPolicy().catch(() => {});
    },
    close: () => connection.close(),
  };
}

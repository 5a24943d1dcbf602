/**
 * @otc/redis: Redis-backed shared state for @otc/server, so several instances behind a load balancer
 * honour the same call_ids, tokens and authorization challenges. Every export here is public API.
 */
export { RedisChallengeStore, type RedisChallengeStoreOptions } from "./challenge-store.js";
export {
  failFastOptions,
  RedisConnection,
  type RedisConnectionOptions,
  RedisEvictionPolicyWarning,
  RedisUnavailableError,
} from "./connection.js";
export { RedisIdempotencyStore, type RedisIdempotencyStoreOptions } from "./idempotency-store.js";
export { createRedisState, type RedisState, type RedisStateOptions } from "./state.js";
export { RedisTokenStore, type RedisTokenStoreOptions } from "./token-store.js";

/**
 * @otc/server/node: serve tools over OXP 1.0 on plain node:http, without loading Express (a faster
 * start, the lowest cost per call). The same exports as `@otc/server` but for the Express adapter.
 */
export type {
  AuthorizationProvider,
  ChallengeStatus,
  MemoryTokenStoreOptions,
  StartChallengeInput,
  StoredToken,
  TokenOwner,
  TokenStore,
} from "./core/authorization.js";
export { MemoryTokenStore } from "./core/authorization.js";
export {
  CHALLENGE_STORE_DEFAULTS,
  type ChallengeStore,
  ChallengeStoreFullError,
  type ChallengeStoreOptions,
  challengeOwnerKey,
  challengeStoreBounds,
  MemoryChallengeStore,
  type MemoryChallengeStoreOptions,
  type NewChallenge,
  type StoredChallenge,
} from "./core/challenge-store.js";
export type { WireErrorDetails, WireErrorKind } from "./core/errors.js";
export { ServerConfigError, WireError } from "./core/errors.js";
export type {
  IdempotencyEntry,
  IdempotencyKey,
  IdempotencyStore,
  MemoryIdempotencyStoreOptions,
} from "./core/idempotency-store.js";
export { IdempotencyStoreFullError, MemoryIdempotencyStore } from "./core/idempotency-store.js";
export type { CallEvent, CallObserver, CallOutcome } from "./core/oxp-core.js";
export type {
  OxpToolErrorOptions,
  SchemaObject,
  Tool,
  ToolContext,
  ToolInput,
  ToolLogger,
  ToolOutput,
  ToolSpec,
} from "./core/tool.js";
export { defineTool, OxpToolError } from "./core/tool.js";
export type { AuthenticationOptions, Principal } from "./http/authentication.js";
export type { ListenOptions, RunningServer } from "./http/listen.js";
export { listen } from "./http/listen.js";
export { createLogger, type LoggerOptions } from "./http/logger.js";
export type { PageHandler } from "./http/node-exchange.js";
export type { HandlerOptions, OxpHandler } from "./http/node-handler.js";
export { createHandler } from "./http/node-handler.js";
export type {
  AdapterOptions,
  CorsOptions,
  FetchPage,
  OxpLifecycle,
  OxpRuntime,
  Telemetry,
} from "./http/options.js";
export {
  createTelemetry,
  DEFAULT_DURATION_BUCKETS,
  type MetricsOptions,
  type OxpTelemetry,
  type TelemetryOptions,
  TRACER_NAME,
  type TracingOptions,
} from "./telemetry/index.js";

/** What every runtime entry point exports (`@otc/server/node`, `/fetch`, and through `/node` the root): defining tools, stores, errors, options and the console logger. */

export type { ConnectionsOptions } from "./connections/options.js";
export type { ConnectionProviderOptions } from "./connections/provider.js";
export type { VaultKey } from "./connections/seal.js";
export type { BrowserCheck } from "./connections/vault.js";
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
export type { CallEvent, CallObserver, CallOutcome, CoreLogger } from "./core/call-log.js";
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
export { type Clock, type ClockTimer, systemClock } from "./core/clock.js";
export {
  CONNECTION_STORE_DEFAULTS,
  ConnectionLockTimeoutError,
  type ConnectionRecord,
  type ConnectionStatus,
  type ConnectionStore,
  type ConnectionStoreBounds,
  ConnectionStoreFullError,
  connectionStoreBounds,
  MemoryConnectionStore,
  type MemoryConnectionStoreOptions,
  type SealedTokens,
} from "./core/connection-store.js";
export { type ConsoleLoggerOptions, consoleLogger } from "./core/console-logger.js";
export type { WireErrorDetails, WireErrorKind } from "./core/errors.js";
export { ServerConfigError, WireError } from "./core/errors.js";
export type {
  CompletedEntry,
  IdempotencyEntry,
  IdempotencyKey,
  IdempotencyStore,
  MemoryIdempotencyStoreOptions,
  TaskEvent,
  TaskStore,
} from "./core/idempotency-store.js";
export { IdempotencyStoreFullError, MemoryIdempotencyStore } from "./core/idempotency-store.js";
export type { InputValidatorChoice, IssueKind, SchemaIssue, SchemaValidators } from "./core/input-validation.js";
export { InProcessTaskStore } from "./core/task-board.js";
export type {
  InputSchema,
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
export type { Admission, AuthenticationOptions, Principal } from "./http/authentication.js";
export type { IntrospectionOptions } from "./http/introspection.js";
export {
  ACCESS_TOKEN_ALGORITHMS,
  type AccessTokenAlgorithm,
  CALL_SCOPE,
  type OAuthGrant,
  type OAuthOptions,
  OAuthResource,
  READ_SCOPE,
} from "./http/oauth.js";
export type {
  AdapterOptions,
  CorsOptions,
  FetchPage,
  OxpLifecycle,
  OxpRuntime,
  Telemetry,
} from "./http/options.js";

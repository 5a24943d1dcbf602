/**
 * @otc/server: serve tools over the Open eXecution Protocol (OXP 1.0) with Express 5. Every export
 * here is public API; nothing else in src is. The core without HTTP, for other adapters, is the
 * `@otc/server/core` subpath.
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
export type { WireErrorDetails, WireErrorKind } from "./core/errors.js";
export { ServerConfigError, WireError } from "./core/errors.js";
export type {
  IdempotencyEntry,
  IdempotencyKey,
  IdempotencyStore,
  MemoryIdempotencyStoreOptions,
} from "./core/idempotency-store.js";
export { IdempotencyStoreFullError, MemoryIdempotencyStore } from "./core/idempotency-store.js";
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
export type { OxpApp, OxpLifecycle, OxpRuntime, ServerOptions } from "./http/create-server.js";
export { createServer } from "./http/create-server.js";
export type { ListenOptions, RunningServer } from "./http/listen.js";
export { listen } from "./http/listen.js";
export { createLogger, type LoggerOptions } from "./http/logger.js";

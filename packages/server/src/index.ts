/** @otc/server: serve tools over the Open eXecution Protocol (OXP 1.0) with Express 5. */
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
export { type CallBody, isEnvelope, parseCallBody, wrapResponse } from "./core/call-body.js";
export type { WireErrorDetails, WireErrorKind } from "./core/errors.js";
export { ServerConfigError, WIRE_ERROR_STATUS, WireError } from "./core/errors.js";
export type {
  IdempotencyEntry,
  IdempotencyKey,
  IdempotencyStore,
  MemoryIdempotencyStoreOptions,
} from "./core/idempotency-store.js";
export { IdempotencyStoreFullError, MemoryIdempotencyStore } from "./core/idempotency-store.js";
export type { CallMeta, CoreLogger, OxpCoreOptions } from "./core/oxp-core.js";
export { OxpCore } from "./core/oxp-core.js";
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
export { createServer, toWireError } from "./http/create-server.js";
export type { ListenOptions, RunningServer } from "./http/listen.js";
export { listen } from "./http/listen.js";
export { createLogger, type LoggerOptions, REDACTED_PATHS } from "./http/logger.js";

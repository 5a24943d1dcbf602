/** @otc/client: a typed Open eXecution Protocol (OXP 1.0) client, LLM adapters and typed tool bindings. */
export type { AccessTokenProvider, AccessTokenReason, AccessTokenRequest } from "./access-token.js";
export {
  type AnthropicTool,
  fromModelToolCall,
  latestVersions,
  type OpenAITool,
  toAnthropicTools,
  toModelText,
  toOpenAITools,
} from "./adapters.js";
export type { AsyncCall, AsyncCallOptions, CallStatusOptions, FollowMode } from "./async-call.js";
export { type BearerChallenge, MAX_CHALLENGE_CHARS, parseBearerChallenge } from "./bearer-challenge.js";
export {
  type BoundAsyncCall,
  type BoundAsyncCallOptions,
  type BoundAsyncTools,
  type BoundCallOptions,
  type BoundTools,
  bindAsyncTools,
  bindTools,
  type ToolMap,
  type ToolTypes,
} from "./bindings.js";
export {
  type CallOptions,
  type ClientOptions,
  createClient,
  type FollowCallOptions,
  type Health,
  type IterateToolsOptions,
  type ListToolsOptions,
  MAX_WAIT_SECONDS,
  type OxpClient,
  type RetryOptions,
  type ToolList,
} from "./client.js";
export type { ConnectionOptions, ConnectOptions, WaitForConnectionOptions } from "./connections.js";
export {
  errorFromResponse,
  OxpAccessTokenError,
  OxpAuthenticationError,
  OxpConnectionError,
  OxpCrossOriginError,
  OxpError,
  OxpExtensionUnavailableError,
  type OxpFailedOutcome,
  OxpForbiddenError,
  OxpLocalError,
  OxpModelCallError,
  OxpProtocolError,
  OxpResponseError,
  OxpResponseTooLargeError,
  OxpServerError,
  OxpTimeoutError,
  OxpToolCallError,
  OxpValidationError,
} from "./errors.js";
export { DEFAULT_MAX_RESPONSE_BYTES, MAX_REDIRECTS, sameOrigin } from "./guarded-fetch.js";
export type { ClientClock } from "./internal/clock.js";
export type { JwtOptions } from "./jwt.js";
export type {
  GetToolsOptions,
  IterateSearchOptions,
  SearchToolsOptions,
  ToolSearchHit,
  ToolSearchMatch,
  ToolSearchResults,
  ToolSearchSummary,
  ToolSearchView,
} from "./search.js";
export { normalizeToolDefinition } from "./tool-schemas.js";

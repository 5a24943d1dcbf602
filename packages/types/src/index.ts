/** OXP 1.0 types, JSON Schemas and the bundled OpenAPI document, generated from the project's spec/; and the small helpers every OXP package shares. */
import type { AuthorizationChallengeCheckResponse } from "./generated/authorization-challenge-check-response.js";
import type { paths } from "./generated/openapi.js";

export { parseBearer } from "./bearer.js";
export { constantTimeEqual } from "./constant-time.js";
export { ENVELOPE_SCHEMA } from "./envelope.js";
export type { AuthorizationChallengeCheckResponse } from "./generated/authorization-challenge-check-response.js";
export type { CallProgress } from "./generated/call-progress.js";
export type { CallStatus } from "./generated/call-status.js";
export type { CallToolEnvelope } from "./generated/call-tool-envelope.js";
export type {
  CallToolContext,
  CallToolRequest,
  ToolAuthorizationToken,
  ToolSecretValue,
} from "./generated/call-tool-request.js";
export type {
  CallDuration,
  CallId,
  CallToolFailure,
  CallToolResponse,
  CallToolSuccess,
} from "./generated/call-tool-response.js";
export type { CallToolResultEnvelope } from "./generated/call-tool-result-envelope.js";
export type { Connection } from "./generated/connection.js";
export type { ConnectionFlow } from "./generated/connection-flow.js";
export type { ConnectionListResponse } from "./generated/connection-list-response.js";
export type { ConnectionRequest } from "./generated/connection-request.js";
export type { DiscoveryDocument } from "./generated/discovery-document.js";
export type { components, operations, paths } from "./generated/openapi.js";
export { openapiDocument } from "./generated/openapi-document.js";
export type { ProtectedResourceMetadata } from "./generated/protected-resource-metadata.js";
export {
  AUTHORIZATION_CHALLENGES_PATH_TEMPLATE,
  CHALLENGE_STATUSES,
  CONNECTIONS_PATH,
  CONNECTIONS_PATH_TEMPLATE,
  ENVELOPE_SCHEMA_PATTERN,
  HEALTH_PATH,
  OXP_ROUTES,
  OXP_VERSION,
  SUPPORTED_OXP_VERSIONS,
  TOOLKITS_PATH,
  TOOLS_CALL_PATH,
  TOOLS_CALLS_EVENTS_PATH_TEMPLATE,
  TOOLS_CALLS_PATH_TEMPLATE,
  TOOLS_PATH,
  WELL_KNOWN_OAUTH_PROTECTED_RESOURCE_PATH,
  WELL_KNOWN_OXP_PATH,
} from "./generated/protocol.js";
export {
  AuthorizationChallengeCheckResponseSchema,
  allSchemas,
  CallProgressSchema,
  CallStatusSchema,
  CallToolEnvelopeSchema,
  CallToolRequestSchema,
  CallToolResponseSchema,
  CallToolResultEnvelopeSchema,
  ConnectionFlowSchema,
  ConnectionListResponseSchema,
  ConnectionRequestSchema,
  ConnectionSchema,
  DiscoveryDocumentSchema,
  ProtectedResourceMetadataSchema,
  ServerErrorResponseSchema,
  ToolAnnotationsSchema,
  ToolAuthorizationChallengeSchema,
  ToolDefinitionSchema,
  ToolErrorSchema,
  ToolIdSchema,
  ToolkitListResponseSchema,
  ToolListResponseSchema,
  ToolRequirementsSchema,
  ToolSearchItemSchema,
  ToolSearchResponseSchema,
  ToolVersionSchema,
  ValidationErrorResponseSchema,
} from "./generated/schemas.js";
export type { MissingRequirements, ServerErrorResponse } from "./generated/server-error-response.js";
export type { ToolAnnotations } from "./generated/tool-annotations.js";
export type { ToolAuthorizationChallenge } from "./generated/tool-authorization-challenge.js";
export type { ScopeToken, ToolDefinition, ToolInputSchema, ToolOutputSchema } from "./generated/tool-definition.js";
export type { ToolError } from "./generated/tool-error.js";
export type { ToolId } from "./generated/tool-id.js";
export type { CacheScope, CacheTtlMs, ToolListResponse } from "./generated/tool-list-response.js";
export type {
  ToolAuthorizationRequirement,
  ToolOAuth2Requirement,
  ToolRequirements,
  ToolSecretRequirement,
} from "./generated/tool-requirements.js";
export type { ToolSearchItem } from "./generated/tool-search-item.js";
export type { ToolSearchResponse } from "./generated/tool-search-response.js";
export type { ToolVersion } from "./generated/tool-version.js";
export type { Toolkit, ToolkitListResponse } from "./generated/toolkit-list-response.js";
export type { ValidationErrorResponse } from "./generated/validation-error-response.js";
export {
  type Validator,
  validateAuthorizationChallengeCheckResponse,
  validateCallProgress,
  validateCallStatus,
  validateCallToolEnvelope,
  validateCallToolRequest,
  validateCallToolResponse,
  validateCallToolResultEnvelope,
  validateConnection,
  validateConnectionFlow,
  validateConnectionListResponse,
  validateConnectionRequest,
  validateDiscoveryDocument,
  validateProtectedResourceMetadata,
  validateServerErrorResponse,
  validateToolAnnotations,
  validateToolAuthorizationChallenge,
  validateToolDefinition,
  validateToolError,
  validateToolId,
  validateToolkitListResponse,
  validateToolListResponse,
  validateToolRequirements,
  validateToolSearchItem,
  validateToolSearchResponse,
  validateToolVersion,
  validateValidationErrorResponse,
} from "./generated/validators.js";
export { unwrapInputSchema } from "./input-schema.js";
export { type FormatSchemaErrorsOptions, formatSchemaErrors, type SchemaError } from "./schema-errors.js";
export {
  formatToolId,
  type ParsedToolId,
  parseToolId,
  requestedToolVersion,
  resolveToolVersion,
  type ToolVersionRequest,
} from "./tool-id.js";
export { compareToolVersions } from "./tool-version.js";

/** A challenge's status, as its check_url answers it: one of {@link CHALLENGE_STATUSES}. */
export type ChallengeStatus = AuthorizationChallengeCheckResponse["status"];

/** A key of `paths`: every route of the OXP contract. */
export type OxpPath = keyof paths;

/** The spec's schema for each answer, by route and status: what the `validateResponses` option checks answers against. */
import {
  type Validator,
  validateAuthorizationChallengeCheckResponse,
  validateCallStatus,
  validateCallToolResponse,
  validateCallToolResultEnvelope,
  validateConnectionFlow,
  validateConnectionListResponse,
  validateDiscoveryDocument,
  validateProtectedResourceMetadata,
  validateServerErrorResponse,
  validateToolkitListResponse,
  validateToolListResponse,
  validateToolSearchResponse,
  validateValidationErrorResponse,
} from "@otc/types";
import type { RouteName } from "./routes.js";

/** The validator (precompiled from the spec) of a route's answer with `status`; undefined when the spec gives it no body. */
export function responseValidator(
  route: RouteName,
  status: number,
  envelope: boolean,
  search = false,
): Validator<unknown> | undefined {
  if (status === 304 || status === 204) {
    return undefined;
  }
  if (status === 202) {
    return validateCallStatus;
  }
  if (status === 201) {
    return route === "connections" ? validateConnectionFlow : undefined;
  }
  if (status === 422) {
    return validateValidationErrorResponse;
  }
  if (status !== 200) {
    return validateServerErrorResponse;
  }
  switch (route) {
    case "call":
      return envelope ? validateCallToolResultEnvelope : validateCallToolResponse;
    case "tools":
      return search ? validateToolSearchResponse : validateToolListResponse;
    case "toolkits":
      return validateToolkitListResponse;
    case "discovery":
      return validateDiscoveryDocument;
    case "resource":
      return validateProtectedResourceMetadata;
    case "connections":
      return validateConnectionListResponse;
    case "status":
      return validateCallStatus;
    case "check":
      return validateAuthorizationChallengeCheckResponse;
    default:
      return undefined;
  }
}

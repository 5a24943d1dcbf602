/** Checks answers against the spec's schemas (validators precompiled in @otc/types: no Ajv at run time). */
import {
  formatSchemaErrors,
  type Validator,
  validateAuthorizationChallengeCheckResponse,
  validateCallProgress,
  validateCallStatus,
  validateCallToolResponse,
  validateCallToolResultEnvelope,
  validateConnectionFlow,
  validateConnectionListResponse,
  validateDiscoveryDocument,
  validateServerErrorResponse,
  validateToolkitListResponse,
  validateToolListResponse,
  validateToolSearchResponse,
  validateValidationErrorResponse,
} from "@otc/types";

/** A check of one schema that also says why the last value failed. */
export interface Check {
  (value: unknown): boolean;
  /** Why the last checked value failed, briefly. */
  why(): string;
}

function check(validate: Validator<unknown>): Check {
  const run = ((value: unknown) => validate(value)) as Check;
  run.why = () => formatSchemaErrors(validate.errors, { root: "(body)" });
  return run;
}

/** One check per answer the client reads. Formats (e.g. uri) are left to the server. */
export const answers = {
  callToolResponse: check(validateCallToolResponse),
  callToolResultEnvelope: check(validateCallToolResultEnvelope),
  toolList: check(validateToolListResponse),
  toolSearch: check(validateToolSearchResponse),
  toolkitList: check(validateToolkitListResponse),
  serverError: check(validateServerErrorResponse),
  validationError: check(validateValidationErrorResponse),
  challengeStatus: check(validateAuthorizationChallengeCheckResponse),
  discoveryDocument: check(validateDiscoveryDocument),
  callStatus: check(validateCallStatus),
  callProgress: check(validateCallProgress),
  connectionList: check(validateConnectionListResponse),
  connectionFlow: check(validateConnectionFlow),
};

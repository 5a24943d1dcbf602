/** Checks answers against the spec's schemas (compiled once), so a wrong answer is an OxpProtocolError. */
import {
  AuthorizationChallengeCheckResponseSchema,
  allSchemas,
  CallToolResponseSchema,
  CallToolResultEnvelopeSchema,
  ServerErrorResponseSchema,
  ToolListResponseSchema,
  ValidationErrorResponseSchema,
} from "@otc/types";
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";

let ajv: Ajv2020 | undefined;

function validator(id: string): ValidateFunction {
  if (!ajv) {
    ajv = new Ajv2020({ allErrors: false, schemas: [...allSchemas] });
    addFormats.default(ajv, ["uri", "date-time"]);
  }
  const validate = ajv.getSchema(id);
  if (!validate) throw new Error(`@otc/types has no schema ${id}`);
  return validate;
}

/** A check of one schema that also says why a value fails. */
export interface Check {
  (value: unknown): boolean;
  /** Why the last checked value failed, briefly. */
  why(): string;
}

function check(id: string): Check {
  let validate: ValidateFunction | undefined;
  const run = ((value: unknown) => {
    validate ??= validator(id);
    return validate(value) as boolean;
  }) as Check;
  run.why = () =>
    (validate?.errors ?? [])
      .map((error) => `${error.instancePath || "(body)"} ${error.message ?? "is invalid"}`)
      .join("; ");
  return run;
}

/** One check per answer the client reads. */
export const answers = {
  callToolResponse: check(CallToolResponseSchema.$id),
  callToolResultEnvelope: check(CallToolResultEnvelopeSchema.$id),
  toolList: check(ToolListResponseSchema.$id),
  serverError: check(ServerErrorResponseSchema.$id),
  validationError: check(ValidationErrorResponseSchema.$id),
  challengeStatus: check(AuthorizationChallengeCheckResponseSchema.$id),
};

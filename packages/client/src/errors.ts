/** The client's errors: rebuilt from responses in one factory, plus the local ones (connection, timeout). */
import type { MissingRequirements, ServerErrorResponse, ToolAuthorizationChallenge, ToolError } from "@otc/types";

/** Every error the client throws. Tool failures are not errors: they are `success: false` responses. */
export class OxpError extends Error {
  override name = "OxpError";
}

/** A 4xx/5xx answered with a ServerErrorResponse (400 mostly: unknown tool, missing requirements, bad request). */
export class OxpServerError extends OxpError {
  override name = "OxpServerError";
  /** Details for developers, when the server sent some. */
  readonly developerMessage: string | undefined;
  readonly missingRequirements: MissingRequirements | undefined;

  constructor(
    readonly status: number,
    readonly body: ServerErrorResponse,
  ) {
    super(body.message);
    this.developerMessage = body.developer_message;
    this.missingRequirements = body.missing_requirements;
  }

  /** The authorization challenges the user must complete before the call can succeed (possibly none). */
  get authorizationChallenges(): ToolAuthorizationChallenge[] {
    return this.missingRequirements?.authorization ?? [];
  }
}

/** 401: the server wants credentials, or refused the ones sent. */
export class OxpAuthenticationError extends OxpServerError {
  override name = "OxpAuthenticationError";
}

/** 422: the input does not match the tool's input_schema. */
export class OxpValidationError extends OxpError {
  override name = "OxpValidationError";
  /** What is wrong, by property path (`b`, `address.zip`). */
  readonly parameterErrors: Readonly<Record<string, string>>;

  constructor(message: string, parameterErrors: Record<string, string> = {}) {
    super(message);
    this.parameterErrors = parameterErrors;
  }
}

/** The server could not be reached (refused, reset, DNS). */
export class OxpConnectionError extends OxpError {
  override name = "OxpConnectionError";
}

/** An attempt took longer than the client's `timeoutMs`. */
export class OxpTimeoutError extends OxpError {
  override name = "OxpTimeoutError";
}

/** An answer that does not follow the OXP specification (wrong shape, not JSON, unexpected status). */
export class OxpProtocolError extends OxpError {
  override name = "OxpProtocolError";

  constructor(
    message: string,
    readonly status: number,
    readonly details: string | undefined = undefined,
  ) {
    super(details ? `${message}: ${details}` : message);
  }
}

/** A typed binding's call whose tool failed (`success: false`); `error` is the response's ToolError. */
export class OxpToolCallError extends OxpError {
  override name = "OxpToolCallError";

  constructor(
    readonly callId: string,
    readonly error: ToolError,
  ) {
    super(error.message);
  }
}

/**
 * Rebuilds the error an answer stands for: 401 OxpAuthenticationError, 422 OxpValidationError, any
 * other 4xx/5xx with a ServerErrorResponse body OxpServerError, anything else OxpProtocolError.
 * `isServerError` and `isValidationError` check the body against the spec's schemas.
 */
export function errorFromResponse(
  status: number,
  body: unknown,
  checks: { isServerError(body: unknown): boolean; isValidationError(body: unknown): boolean },
): OxpError {
  if (status === 422) {
    if (!checks.isValidationError(body)) return new OxpProtocolError("A 422 without a ValidationErrorResponse", status);
    const { message, parameter_errors } = body as { message: string; parameter_errors?: Record<string, string> };
    return new OxpValidationError(message, parameter_errors);
  }
  if (status >= 400 && checks.isServerError(body)) {
    return status === 401
      ? new OxpAuthenticationError(status, body as ServerErrorResponse)
      : new OxpServerError(status, body as ServerErrorResponse);
  }
  return new OxpProtocolError(`Unexpected answer with status ${status}`, status, JSON.stringify(body)?.slice(0, 200));
}

/**
 * The client's errors, in two families kept apart. OxpResponseError: what the server answered (an error
 * status and a body the spec allows for it), rebuilt from the wire by errorFromResponse and carrying that
 * status and body as sent. OxpLocalError: what went wrong on the client's side (nothing answered, no answer
 * in time, an answer that breaks the spec); it never came over a wire and has no body to send on.
 * Both share the root OxpError, so one `instanceof OxpError` still tells "the client refused or failed"
 * apart from a bug in the caller's code or an abort (which rethrows the signal's reason as it is).
 */
import type {
  CallToolFailure,
  MissingRequirements,
  ServerErrorResponse,
  ToolAuthorizationChallenge,
  ToolError,
  ValidationErrorResponse,
} from "@otc/types";
import type { AccessTokenReason } from "./access-token.js";
import { answers } from "./answers.js";
import { type BearerChallenge, parseBearerChallenge } from "./bearer-challenge.js";

/** The root of every error the client throws; only its subclasses are thrown. Tool failures are data, not errors. */
export abstract class OxpError extends Error {
  override name = "OxpError";
}

// The server family: the server answered, and said no.

/** An error status answered with the body the spec defines for it; `status` and `body` are as sent. */
export abstract class OxpResponseError extends OxpError {
  override name = "OxpResponseError";

  constructor(
    /** The HTTP status the server answered. */
    readonly status: number,
    /** The answer's body, exactly as the server sent it (fit to log, forward or print as JSON). */
    readonly body: ServerErrorResponse | ValidationErrorResponse,
  ) {
    super(body.message);
  }
}

/** A ServerErrorResponse: 400 (unknown tool, missing requirements), 404, 405, 413, 415, 503, any error but 401/403/422. */
export class OxpServerError extends OxpResponseError {
  override name = "OxpServerError";
  declare readonly body: ServerErrorResponse;
  /** Details for developers, when the server sent some; never for the user or the model. */
  readonly developerMessage: string | undefined;
  /** What the call lacks (authorization challenges, a user id), on a 400 that says so. */
  readonly missingRequirements: MissingRequirements | undefined;

  constructor(status: number, body: ServerErrorResponse) {
    super(status, body);
    this.developerMessage = body.developer_message;
    this.missingRequirements = body.missing_requirements;
  }

  /** The authorization challenges the user must complete before the call can succeed (possibly none). */
  get authorizationChallenges(): ToolAuthorizationChallenge[] {
    return this.missingRequirements?.authorization ?? [];
  }
}

/** 401: the server wants credentials, or refused the ones sent. A ServerErrorResponse too, so an OxpServerError. */
export class OxpAuthenticationError extends OxpServerError {
  override name = "OxpAuthenticationError";
  /**
   * The 401's Bearer challenge, parsed: on a server with the oauth extension, `resourceMetadata` says where to sign
   * in and `scopes` what to ask for. Undefined without a (well-formed) Bearer challenge.
   */
  readonly challenge: BearerChallenge | undefined;

  constructor(
    status: number,
    body: ServerErrorResponse,
    /** The 401's WWW-Authenticate header (OXP servers send `Bearer`), when the answer's headers were at hand. */
    readonly wwwAuthenticate: string | undefined = undefined,
  ) {
    super(status, body);
    this.challenge = parseBearerChallenge(wwwAuthenticate);
  }
}

/**
 * 403: the credentials were good, and do not allow this request: an OAuth access token without a scope the operation
 * needs (`challenge.error` is `insufficient_scope`, `challenge.scopes` every scope it needs), or a `context.user_id`
 * that is not the token's subject (no challenge). A ServerErrorResponse too, so an OxpServerError.
 */
export class OxpForbiddenError extends OxpServerError {
  override name = "OxpForbiddenError";
  /** The 403's Bearer challenge, parsed; undefined without a (well-formed) Bearer challenge. */
  readonly challenge: BearerChallenge | undefined;

  constructor(
    status: number,
    body: ServerErrorResponse,
    /** The 403's WWW-Authenticate header, when it sent one and the answer's headers were at hand. */
    readonly wwwAuthenticate: string | undefined = undefined,
  ) {
    super(status, body);
    this.challenge = parseBearerChallenge(wwwAuthenticate);
  }
}

/** 422: the input does not match the tool's input_schema; `body` is the ValidationErrorResponse. */
export class OxpValidationError extends OxpResponseError {
  override name = "OxpValidationError";
  declare readonly body: ValidationErrorResponse;
  /** What is wrong, by property path (`b`, `address.zip`); empty when the server named none. */
  readonly parameterErrors: Readonly<Record<string, string>>;

  constructor(status: number, body: ValidationErrorResponse) {
    super(status, body);
    this.parameterErrors = body.parameter_errors ?? {};
  }
}

// The local family: nothing (valid) came back; the client says so itself.

/** A failure on the client's side: no answer, none in time, or one the spec does not allow. Never on a wire. */
export abstract class OxpLocalError extends OxpError {
  override name = "OxpLocalError";
}

/** The server could not be reached (refused, reset, DNS); `cause` is fetch's error. Retried. */
export class OxpConnectionError extends OxpLocalError {
  override name = "OxpConnectionError";
}

/** An attempt took longer than the client's `timeoutMs`. Retried. */
export class OxpTimeoutError extends OxpLocalError {
  override name = "OxpTimeoutError";
}

/** An answer that does not follow the OXP specification (wrong shape, not JSON, unexpected status). Not retried. */
export class OxpProtocolError extends OxpLocalError {
  override name = "OxpProtocolError";

  constructor(
    message: string,
    /** The status of the offending answer; 0 when there was no answer to blame. */
    readonly status: number,
    /** Why the answer breaks the spec (the schema's complaints, the start of the body). */
    readonly details: string | undefined = undefined,
  ) {
    super(details ? `${message}: ${details}` : message);
  }
}

/**
 * The server sent the client to another origin: a redirect (3xx with a Location elsewhere) or a challenge
 * whose check_url is elsewhere. The client refuses: its credentials and request bodies go to the
 * server's origin only. Nothing was sent to the other origin. Not retried.
 */
export class OxpCrossOriginError extends OxpProtocolError {
  override name = "OxpCrossOriginError";

  constructor(
    message: string,
    /** The status of the redirect; 0 for a check_url. */
    status: number,
    /** The origin of the server the client was made for. */
    readonly serverOrigin: string,
    /** The origin the server pointed at; undefined when a browser hid it (an opaque redirect). */
    readonly otherOrigin: string | undefined,
  ) {
    super(message, status);
  }
}

/**
 * The server does not offer an extension the method needs: its discovery document (docs/protocol.md 9.1) does not
 * list it, e.g. `callStatus` on a server without `tasks`. Nothing else was sent. Not retried.
 */
export class OxpExtensionUnavailableError extends OxpLocalError {
  override name = "OxpExtensionUnavailableError";

  constructor(
    /** The extension's id, e.g. `tasks`. */
    readonly extension: string,
    /** What needed it, e.g. `GET /tools/calls/{call_id}`. */
    what: string,
  ) {
    super(`${what} needs the ${extension} extension, which the server does not offer (GET /.well-known/oxp)`);
  }
}

/**
 * The client's `accessToken` provider threw (its error is the `cause`), or gave something that is not a token (not a
 * non-empty string of visible ASCII characters). Nothing was sent with it. Not retried: only the provider knows
 * whether asking again would help, and an app whose user must sign in again finds the reason in `cause`.
 */
export class OxpAccessTokenError extends OxpLocalError {
  override name = "OxpAccessTokenError";

  constructor(
    message: string,
    /** Why the client asked: `initial`, `unauthorized` (after a 401) or `insufficient_scope` (after a 403). */
    readonly reason: AccessTokenReason,
    /** The challenge of the 401 or 403 that made the client ask; undefined for `initial`. */
    readonly challenge: BearerChallenge | undefined,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** An answer longer than the client's `maxResponseBytes`: its reading stopped there (or before, by Content-Length). Not retried. */
export class OxpResponseTooLargeError extends OxpProtocolError {
  override name = "OxpResponseTooLargeError";

  constructor(
    /** The status of the answer. */
    status: number,
    /** The limit, in bytes (decoded, after any Content-Encoding). */
    readonly limitBytes: number,
  ) {
    super(`The answer is larger than the client accepts (maxResponseBytes: ${limitBytes} bytes)`, status);
  }
}

// Neither family: failures of a tool or of a model, which the client turns into errors on request.

/**
 * How a tool call ended without a value, for code that takes only values (a typed binding; an agent framework's tool
 * from @otc/ai): `kind` says which way, `text` says it as the model is to read it.
 */
export type OxpFailedOutcome =
  /** The tool failed (`success: false` in a 200): the response, with its ToolError; `text` is toModelText's. */
  | { kind: "tool-error"; text: string; response: CallToolFailure }
  /** The input does not match the tool's schema (a 422): what is wrong, by property. */
  | { kind: "invalid-input"; text: string; error: OxpValidationError }
  /** The user must authorize first (a 400 with challenges): where, and that the call may be made again after. */
  | { kind: "authorization"; text: string; challenges: ToolAuthorizationChallenge[]; error: OxpServerError };

/**
 * A tool call that ended without a value where the caller takes only values: a typed binding's call whose tool
 * failed, or an agent framework's tool (@otc/ai) whose call failed, had an input the server refused, or needs the
 * user's authorization first. One class for both, so that one `instanceof` tells it wherever it was thrown.
 */
export class OxpToolCallError extends OxpError {
  override name = "OxpToolCallError";
  /** How the call ended: `outcome.kind` tells which, `outcome.challenges` where the user must authorize. */
  readonly outcome: OxpFailedOutcome;
  /** The call's call_id, when the tool failed (`outcome.kind` is `tool-error`, as for every typed binding's). */
  readonly callId: string | undefined;
  /** The ToolError the server answered, when the tool failed (as for every typed binding's). */
  readonly error: ToolError | undefined;

  /**
   * `message` defaults to the outcome's text, which an agent framework gives the model as the tool's error; a typed
   * binding's is the ToolError's message.
   */
  constructor(outcome: OxpFailedOutcome, message: string = outcome.text) {
    super(message);
    this.outcome = outcome;
    const failed = outcome.kind === "tool-error" ? outcome.response : undefined;
    this.callId = failed?.call_id;
    this.error = failed?.error;
  }

  /**
   * The outcome's text alone: the AI SDK gives the model `String(error)`, and the text is written for the model (it
   * starts with "Error:" where it is one), so the class name in front would only be noise.
   */
  override toString(): string {
    return this.outcome.text;
  }
}

/** A model's tool call that fromModelToolCall cannot turn into a CallToolRequest (bad arguments, unknown name). */
export class OxpModelCallError extends OxpError {
  override name = "OxpModelCallError";
}

/** The start of a body, for an error message: enough to recognise an HTML page or a proxy's text. */
function excerpt(body: unknown): string {
  const text = typeof body === "string" ? body : JSON.stringify(body);
  return text === undefined ? "(no body)" : text.slice(0, 200);
}

/**
 * The error an answer that is not a success stands for, its body checked against the spec's schemas
 * (the validators precompiled in @otc/types): 401 OxpAuthenticationError, 403 OxpForbiddenError, 422
 * OxpValidationError, any other status from 400 up with a ServerErrorResponse OxpServerError; a body the spec
 * does not allow for the status, or a status below 400, OxpProtocolError. Pass the answer's `headers` to keep a
 * 401's or 403's WWW-Authenticate (and its parsed `challenge`).
 *
 * @example
 * const answer = await fetch(`${baseUrl}/tools/call`, { method: "POST", headers, body });
 * if (!answer.ok) throw errorFromResponse(answer.status, await answer.json().catch(() => undefined), answer.headers);
 */
export function errorFromResponse(
  status: number,
  body: unknown,
  headers?: Headers,
): OxpResponseError | OxpProtocolError {
  if (status < 400) {
    return new OxpProtocolError(`Status ${status} is not an error status`, status, excerpt(body));
  }
  if (status === 422) {
    if (answers.validationError(body)) {
      return new OxpValidationError(status, body as ValidationErrorResponse);
    }
    const why = answers.validationError.why();
    return new OxpProtocolError(
      "A 422 whose body is not a ValidationErrorResponse",
      status,
      `${why}; ${excerpt(body)}`,
    );
  }
  if (!answers.serverError(body)) {
    const why = answers.serverError.why();
    return new OxpProtocolError(
      `A ${status} whose body is not a ServerErrorResponse`,
      status,
      `${why}; ${excerpt(body)}`,
    );
  }
  const wwwAuthenticate = headers?.get("www-authenticate") ?? undefined;
  if (status === 401) {
    return new OxpAuthenticationError(status, body as ServerErrorResponse, wwwAuthenticate);
  }
  if (status === 403) {
    return new OxpForbiddenError(status, body as ServerErrorResponse, wwwAuthenticate);
  }
  return new OxpServerError(status, body as ServerErrorResponse);
}

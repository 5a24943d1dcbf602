/** The errors that travel on the wire, and the one table that maps each kind to its HTTP status. */
import type { MissingRequirements, ServerErrorResponse, ValidationErrorResponse } from "@otc/types";

/** Every kind of error a request can end in before a tool runs, with its HTTP status. */
export const WIRE_ERROR_STATUS = {
  bad_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  payload_too_large: 413,
  unsupported_media_type: 415,
  invalid_input: 422,
  too_many_requests: 429,
  internal: 500,
  unavailable: 503,
} as const;

/** A kind of wire error. */
export type WireErrorKind = keyof typeof WIRE_ERROR_STATUS;

/** What a wire error carries besides its kind and message. */
export interface WireErrorDetails {
  /** For logs and developers; never shown to the user or the model. */
  developerMessage?: string;
  missingRequirements?: MissingRequirements;
  /** Only for `invalid_input`. */
  parameterErrors?: Record<string, string>;
  /** Response headers, e.g. `Allow` for a 405. */
  headers?: Record<string, string>;
  /** The error that caused this one, kept for the log only. */
  cause?: unknown;
}

/** The runtime's stack capture for an object of ours (V8's and JavaScriptCore's `Error.captureStackTrace`), if it has one. */
const captureStackTrace = (Error as { captureStackTrace?: (target: object, below?: unknown) => void })
  .captureStackTrace;

// An Error by its prototype (so `instanceof Error` holds, and it logs and prints as one) whose constructor does not
// call Error's: see the class's comment.
export interface WireError extends Error {}

/**
 * An error answered with a JSON body before any tool runs (400, 401, 403, 404, 405, 413, 415, 422, 429, 503).
 * Anything else thrown on the way is turned into an `internal` one by the HTTP adapter.
 *
 * A client's mistake (4xx) is made without a stack: nobody reads it, and capturing one was about a fifth of a 422's
 * cost (bench/results/notes.md: native 422 45.2 -> 25.7 us per request). So the class does not extend Error through
 * its constructor, which captures a stack for every instance: its prototype is an Error's, and it captures a stack
 * itself for a server fault (5xx) alone. Nothing global is changed to get there (the earlier way set
 * `Error.stackTraceLimit` around the constructor, for every Error made meanwhile).
 */
// biome-ignore lint/suspicious/noUnsafeDeclarationMerging: the interface only states what the prototype set below gives.
export class WireError {
  readonly name: string = "WireError";
  readonly message: string;
  readonly status: (typeof WIRE_ERROR_STATUS)[WireErrorKind];
  readonly details: WireErrorDetails;
  readonly cause?: unknown;

  constructor(
    readonly kind: WireErrorKind,
    message: string,
    details: WireErrorDetails = {},
  ) {
    this.message = message;
    this.status = WIRE_ERROR_STATUS[kind];
    this.details = details;
    if (details.cause !== undefined) {
      this.cause = details.cause;
    }
    if (this.status >= 500) {
      captureStackTrace?.(this, WireError);
    }
  }

  /** The body sent on the wire: a ValidationErrorResponse for 422, a ServerErrorResponse otherwise. */
  toBody(): ServerErrorResponse | ValidationErrorResponse {
    if (this.kind === "invalid_input") {
      const body: ValidationErrorResponse = { message: this.message };
      if (this.details.parameterErrors) {
        body.parameter_errors = this.details.parameterErrors;
      }
      return body;
    }
    const body: ServerErrorResponse = { message: this.message };
    if (this.details.developerMessage) {
      body.developer_message = this.details.developerMessage;
    }
    if (this.details.missingRequirements) {
      body.missing_requirements = this.details.missingRequirements;
    }
    return body;
  }
}

Object.setPrototypeOf(WireError.prototype, Error.prototype);
// A client's mistake reads as an Error whose stack has no frames (a server fault's own captured stack shadows this).
Object.defineProperty(WireError.prototype, "stack", {
  get(this: WireError) {
    return `${this.name}: ${this.message}`;
  },
  configurable: true,
});

/**
 * A request-controlled string as error messages and log lines quote it: at most `max` characters, the
 * rest replaced by a marker saying how much was cut.
 */
export function shorten(text: string, max = 64): string {
  return text.length <= max ? text : `${text.slice(0, max)}...(${text.length - max} more characters)`;
}

/** A configuration mistake found at start-up (a bad tool definition, conflicting options); never sent on the wire. */
export class ServerConfigError extends Error {
  override name = "ServerConfigError";
}

/**
 * Turns anything thrown into its wire error: a JSON body with the right status, never HTML or a stack. The one
 * place a thrown value that is not a {@link WireError} gets its kind: a malformed percent-encoding, or an error in
 * the shape of the `http-errors` package (what node-style pages raise, body-parser's among them).
 */
export function toWireError(error: unknown): WireError {
  if (error instanceof WireError) {
    return error;
  }
  if (error instanceof URIError) {
    return new WireError("bad_request", "The request URL is malformed", {
      developerMessage: "A path segment is not valid percent-encoding.",
      cause: error,
    });
  }
  const { status, type, headers } = (typeof error === "object" && error !== null ? error : {}) as {
    status?: unknown;
    type?: unknown;
    headers?: { Allow?: string };
  };
  if (type === "entity.too.large" || status === 413) {
    return new WireError("payload_too_large", "The request body is too large", { cause: error });
  }
  if (type === "entity.parse.failed") {
    return new WireError("bad_request", "The request body is not valid JSON", { cause: error });
  }
  if (type === "encoding.unsupported" || type === "charset.unsupported" || status === 415) {
    return new WireError("unsupported_media_type", "The request body's encoding is not supported", { cause: error });
  }
  if (status === 405) {
    return new WireError("method_not_allowed", "This method is not allowed here", {
      ...(headers?.Allow ? { headers: { Allow: headers.Allow } } : {}),
      cause: error,
    });
  }
  if (status === 404) {
    return new WireError("not_found", "Not found", { cause: error });
  }
  if (typeof status === "number" && status >= 400 && status < 500) {
    return new WireError("bad_request", "The request is not valid", { cause: error });
  }
  return new WireError("internal", "Internal server error", { cause: error });
}

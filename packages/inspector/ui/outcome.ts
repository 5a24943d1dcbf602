/** What a call ended in, as the page shows it: the client's answers and errors sorted into a few kinds. */
import {
  OxpAccessTokenError,
  OxpAuthenticationError,
  OxpConnectionError,
  OxpError,
  OxpServerError,
  OxpTimeoutError,
  OxpValidationError,
} from "@otc/client";
import type { CallToolFailure, CallToolResponse, CallToolSuccess, ToolAuthorizationChallenge } from "@otc/types";
import type { ErrorSchema } from "@rjsf/utils";

export type Outcome =
  | { kind: "success"; response: CallToolSuccess }
  | { kind: "failure"; response: CallToolFailure }
  | { kind: "invalid"; message: string; parameterErrors: Record<string, string> }
  | {
      kind: "refused";
      status: number;
      message: string;
      developerMessage?: string;
      challenges: ToolAuthorizationChallenge[];
      userIdMissing: boolean;
    }
  | { kind: "unauthenticated"; message: string; developerMessage?: string }
  | { kind: "local"; message: string };

export const fromResponse = (response: CallToolResponse): Outcome =>
  response.success ? { kind: "success", response } : { kind: "failure", response };

/** The outcome of what the client threw; anything it did not raise is a bug, shown as one. */
export function fromError(error: unknown, serverUrl: string): Outcome {
  if (error instanceof OxpValidationError) {
    return { kind: "invalid", message: error.message, parameterErrors: { ...(error.parameterErrors ?? {}) } };
  }
  if (error instanceof OxpAuthenticationError) {
    return {
      kind: "unauthenticated",
      message: error.message,
      ...(error.developerMessage ? { developerMessage: error.developerMessage } : {}),
    };
  }
  if (error instanceof OxpServerError) {
    return {
      kind: "refused",
      status: error.status,
      message: error.message,
      ...(error.developerMessage ? { developerMessage: error.developerMessage } : {}),
      challenges: [...error.authorizationChallenges],
      userIdMissing: error.missingRequirements?.user_id === true,
    };
  }
  if (error instanceof OxpAccessTokenError && error.cause instanceof Error) {
    // The page's Sign in could not give a token (a renewal failed): its message says what to do, the client's wrapper
    // around it adds nothing for a person.
    return { kind: "local", message: error.cause.message };
  }
  if (error instanceof OxpConnectionError) {
    const crossOrigin = (() => {
      try {
        return new URL(serverUrl).origin !== window.location.origin;
      } catch {
        return false;
      }
    })();
    return {
      kind: "local",
      message: crossOrigin
        ? `${error.message}. The server is on another origin: it must allow this page's origin (${window.location.origin}) with CORS.`
        : error.message,
    };
  }
  if (error instanceof OxpTimeoutError || error instanceof OxpError) {
    return { kind: "local", message: error.message };
  }
  return { kind: "local", message: error instanceof Error ? error.message : String(error) };
}

/**
 * `parameter_errors` as rjsf's ErrorSchema, so each message shows under its field. A key is a
 * property name, or a path (`address.city`, `/items/0`, `items[0]`); the empty key is the whole input.
 */
export function toErrorSchema(parameterErrors: Record<string, string>): ErrorSchema {
  const root: Record<string, unknown> = {};
  for (const [key, message] of Object.entries(parameterErrors)) {
    const path = key.split(/[./[\]]+/).filter(Boolean);
    let node = root;
    for (const segment of path) {
      node[segment] ??= {};
      node = node[segment] as Record<string, unknown>;
    }
    node.__errors = [...((node.__errors as string[] | undefined) ?? []), message];
  }
  return root as ErrorSchema;
}

export function describe(outcome: Outcome): string {
  switch (outcome.kind) {
    case "success":
      return "success";
    case "failure":
      return "tool error";
    case "invalid":
      return "422 invalid input";
    case "refused":
      return outcome.challenges.length > 0 ? "authorization required" : `${outcome.status} refused`;
    case "unauthenticated":
      return "401 unauthenticated";
    default:
      return "no answer";
  }
}

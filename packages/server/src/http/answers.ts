/** The pipeline's answers: JSON with the protocol's headers, checked against the spec under `validateResponses`, and a page's `Response` with the server's headers. */
import { OXP_VERSION, type Validator } from "@otc/types";
import vary from "vary";
import type { CoreLogger } from "../core/oxp-core.js";
import type { Answer } from "./exchange.js";
import { responseValidator } from "./response-validators.js";
import type { RouteName } from "./routes.js";

/** What an answer is, for `validateResponses`: the route that gave it, and for a call whether in the envelope. */
export interface AnswerKind {
  readonly route: RouteName;
  readonly envelope: boolean;
  /** A search's answer (a ToolSearchResponse) rather than a list's. */
  readonly search?: boolean;
}

/** Every kind of answer, made once. */
export const ANSWER_KIND = {
  health: { route: "health", envelope: false },
  discovery: { route: "discovery", envelope: false },
  resource: { route: "resource", envelope: false },
  connections: { route: "connections", envelope: false },
  status: { route: "status", envelope: false },
  tools: { route: "tools", envelope: false },
  search: { route: "tools", envelope: false, search: true },
  toolkits: { route: "toolkits", envelope: false },
  check: { route: "check", envelope: false },
  call: { route: "call", envelope: false },
  callEnvelope: { route: "call", envelope: true },
} as const satisfies Record<string, AnswerKind>;

/** The media type of every JSON answer. */
const JSON_CONTENT_TYPE = "application/json; charset=utf-8";

/**
 * The headers of a request's answer when neither CORS nor tracing adds any: shared, so never written to (answers
 * copy them).
 */
export const NO_HEADERS: Record<string, string> = Object.freeze({});

/** A JSON answer with the protocol's headers, in a new object the adapter may add to. */
export function jsonAnswer(status: number, body: string | Uint8Array, headers?: Record<string, string>): Answer {
  return {
    status,
    headers:
      headers && headers !== NO_HEADERS
        ? { ...headers, "OXP-Version": OXP_VERSION, "Content-Type": JSON_CONTENT_TYPE }
        : { "OXP-Version": OXP_VERSION, "Content-Type": JSON_CONTENT_TYPE },
    body,
  };
}

/** A route's JSON answer of `kind`: see {@link checkedAnswers}. */
export type AnswerOf = (status: number, text: string, kind: AnswerKind, headers?: Record<string, string>) => Answer;

/** The routes' JSON answers; with `validateResponses`, one off the spec becomes a 500 (and is logged). */
export function checkedAnswers(validateResponses: boolean, logger: CoreLogger | undefined): AnswerOf {
  const offSpec = (status: number, validate: Validator<unknown>): Answer => {
    logger?.error({ status, errors: validate.errors }, "response does not match the OXP specification");
    const message = "The server produced a response that does not match the OXP specification";
    return jsonAnswer(500, JSON.stringify({ message }));
  };
  return (status, text, kind, headers) => {
    if (validateResponses) {
      const validate = responseValidator(kind.route, status, kind.envelope, kind.search === true);
      if (validate && !validate(JSON.parse(text))) {
        return offSpec(status, validate);
      }
    }
    return jsonAnswer(status, text, headers);
  };
}

/** A page's answer with the server's headers added (`OXP-Version`, CORS), a `Vary` of its own kept. */
export function withHeaders(response: Response, added: Record<string, string>): Response {
  const headers = new Headers(response.headers);
  for (const [name, value] of Object.entries(added)) {
    const own = name === "Vary" ? headers.get("vary") : null;
    headers.set(name, own ? vary.append(own, value) : value);
  }
  return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
}

/** What a scenario is, what it runs with, and the checks scenarios share. */
import { allSchemas, formatSchemaErrors, type ToolDefinition } from "@otc/types";
import { createAjv } from "@otc/types/ajv";
import type { ValidateFunction } from "ajv/dist/2020.js";
import type { Fixture } from "./fixture.js";
import { type Answer, type Http, header } from "./http.js";

/** How binding a scenario's rule is. */
export type Level = "MUST" | "SHOULD" | "MAY" | "project";

/** What a scenario runs with. */
export interface Context {
  http: Http;
  /** The server's tools, from GET /tools (empty when that failed). */
  tools: ToolDefinition[];
  fixture: Fixture;
  /**
   * The extension ids the server's discovery document lists (GET /.well-known/oxp), in its order; empty when it
   * lists none or serves none (an OXP 1.0 server). Scenarios of an extension not listed are not applicable.
   */
  extensions: readonly string[];
  /** Credentials under test; absent when the server runs without authentication. */
  auth: { apiKey?: string; jwtSecret?: string; jwtAudience?: string };
  /** Access tokens for the oauth group (docs/protocol.md 9.6); absent when the kit was given none. */
  oauth?: OAuthTokens;
  /**
   * A user (a `user_id` the kit names) who already holds a connection, for the connections group (docs/protocol.md
   * 9.7): its list is read for tokens and its connections are deleted as another user. Absent: a user of the kit's
   * own, who holds none.
   */
  connectionsUser?: string;
}

/**
 * Where the oauth group gets OAuth access tokens for the server under test: from the user's authorization server,
 * each with the server's canonical URL as its audience.
 */
export interface OAuthTokens {
  /**
   * An access token granting exactly `scopes` (e.g. `["oxp:tools:read"]`), of a user or client whose `sub` holds no
   * delegation scope; undefined when there is none to give (the scenarios that need it are skipped). The kit asks
   * once per set of scopes in a run.
   */
  token(scopes: readonly string[]): Promise<string | undefined>;
}

/** One check of one rule. */
export interface Scenario {
  /** Stable, dotted: `call.version.shorthand`. */
  id: string;
  /** The docs/protocol.md section it checks, e.g. `3.4`. */
  section: string;
  /** The docs/protocol.md rule ids the scenario checks, e.g. `tool-id.major-shorthand`. */
  rules: readonly string[];
  level: Level;
  title: string;
  run(ctx: Context): Promise<void>;
}

/** Thrown by a failing check. */
export class Failure extends Error {
  override name = "Failure";
}

/** Thrown when a scenario cannot run here (no fixture, no credentials). */
export class Skip extends Error {
  override name = "Skip";
}

/**
 * Ends a scenario that does not apply to this server (an extension its discovery document does not list): a
 * skip whose reason starts `not applicable:`, so an OXP 1.0 server passes without the extensions.
 */
export function notApplicable(reason: string): never {
  throw new Skip(`not applicable: ${reason}`);
}

/** Fails the scenario unless `condition` holds. */
export function check(condition: unknown, reason: string): asserts condition {
  if (!condition) {
    throw new Failure(reason);
  }
}

/** Skips the scenario unless `value` is present; returns it. */
export function need<T>(value: T | undefined, reason: string): T {
  if (value === undefined) {
    throw new Skip(reason);
  }
  return value;
}

const ajv = createAjv({ schemas: allSchemas });
const validators = new Map<string, ValidateFunction>();

/** Fails unless `value` matches the spec's schema titled `title` (formats included). */
export function checkSchema(title: string, value: unknown, where: string): void {
  let validate = validators.get(title);
  if (!validate) {
    const schema = allSchemas.find((entry) => entry.title === title);
    validate = schema ? ajv.getSchema(schema.$id) : undefined;
    if (!validate) {
      throw new Error(`the spec has no schema titled ${title}`);
    }
    validators.set(title, validate);
  }
  if (!validate(value)) {
    const why = formatSchemaErrors(validate.errors, { root: "(body)" });
    throw new Failure(`${where}: the body is not a ${title} (${why}): ${truncate(JSON.stringify(value))}`);
  }
}

/** At most `max` characters of `text`. */
export const truncate = (text: string | undefined, max = 160) =>
  text === undefined ? "(nothing)" : text.length > max ? `${text.slice(0, max)}...` : text;

/** Fails unless the answer has the status. */
export function checkStatus(answer: Answer, status: number | readonly number[]): void {
  const wanted = Array.isArray(status) ? status : [status];
  check(
    wanted.includes(answer.status),
    `${answer.label}: expected ${wanted.join(" or ")}, got ${answer.status} ${truncate(answer.text)}`,
  );
}

/** Fails unless the answer is a JSON error of the status, with the spec's error body. */
export function checkError(answer: Answer, status: number | readonly number[]): void {
  checkStatus(answer, status);
  check(
    /^application\/json/i.test(header(answer, "content-type") ?? ""),
    `${answer.label}: the ${answer.status} is not JSON`,
  );
  checkSchema(answer.status === 422 ? "ValidationErrorResponse" : "ServerErrorResponse", answer.json, answer.label);
}

/** Signs of a stack trace or an internal path in a body. */
export const LEAK =
  /\n\s+at [\w.<>]+ \(|\bat (async )?\w+ \(.*:\d+:\d+\)|node_modules\/|(\/home\/|\/usr\/src\/|\/srv\/|\/app\/|C:\\)[\w./\\-]+\.(ts|js)\b|\.(ts|js):\d+:\d+/;

/** A JSON POST /tools/call with the given body. */
export const call = (ctx: Context, body: unknown, headers: Record<string, string> = {}) =>
  ctx.http.send({
    method: "POST",
    path: "/tools/call",
    headers: { "content-type": "application/json", ...headers },
    body,
  });

/** POSTs a call and checks it is a 200 CallToolResponse; returns the response. */
export async function callOk(ctx: Context, body: Record<string, unknown>) {
  const answer = await call(ctx, body);
  checkStatus(answer, 200);
  checkSchema("CallToolResponse", answer.json, `POST /tools/call ${String(body.tool_id)}`);
  return answer.json as {
    call_id: string;
    success: boolean;
    value?: unknown;
    error?: Record<string, unknown>;
    duration: number;
  };
}

/** What the protocol routes share: the {@link RouteContext} the pipeline makes once, and the checks every route makes the same way. */

import type { ConnectionVault } from "../../connections/vault.js";
import { toWireError, WireError } from "../../core/errors.js";
import { type ExtensionId, type ExtensionSet, requestedExtensions } from "../../core/extensions.js";
import type { JsonLimits } from "../../core/json-limits.js";
import type { OxpCore } from "../../core/oxp-core.js";
import { checkOxpVersionHeader } from "../../core/protocol-version.js";
import type { AnswerOf } from "../answers.js";
import type { Admission } from "../authentication.js";
import type { ClientBudget } from "../client-budget.js";
import type { ClientKeys } from "../client-key.js";
import type { Answer, Exchange } from "../exchange.js";
import type { OAuthResource } from "../oauth.js";
import type { Telemetry } from "../options.js";
import type { ContractCheck } from "../pipeline.js";
import type { ProtocolRoute, RouteName } from "../routes.js";

/** What a route needs of its pipeline, made once per pipeline from the options. */
export interface RouteContext {
  readonly core: OxpCore;
  /** A JSON answer of the route, checked against the spec under `validateResponses`. */
  readonly answer: AnswerOf;
  /** The shape bounds of a call body. */
  readonly limits: JsonLimits;
  /** The largest call body, in bytes. */
  readonly bodyLimit: number;
  /** The fair-share budget; undefined with `fairness: false`. */
  readonly budget: ClientBudget | undefined;
  /** The key each request's client is counted by. */
  readonly clients: ClientKeys;
  /** The extensions a request may ask for. */
  readonly offered: ExtensionSet;
  /** The host's contract check, replacing the pipeline's own version and body checks. */
  readonly contract: ContractCheck | undefined;
  readonly telemetry: Telemetry | undefined;
  /** Whether `traceparent` gives a call its trace id. */
  readonly tracing: boolean;
  /** The server's public base URL, without a trailing slash. */
  readonly publicUrl: string | undefined;
  /** The oauth extension's resource server, where it is configured. */
  readonly oauth: OAuthResource | undefined;
  /** The connections extension's vault, where it is configured. */
  readonly vault: ConnectionVault | undefined;
  /** Whether calls may send tokens for the vault's providers (`connections.acceptClientTokens`). */
  readonly acceptClientTokens: boolean;
  /**
   * The cache extension's settings (docs/protocol.md 9.9): how long answers may be kept, in seconds, and whether the
   * lists are the same for every caller (a server without authentication) or depend on who asks.
   */
  readonly cache: { readonly maxAgeSeconds: number; readonly listScope: "public" | "private" };
}

/** A protocol route once its request is authenticated: the request, the route its path names, who sent it, the headers its answer gets. */
export type RouteHandler = (
  exchange: Exchange,
  route: ProtocolRoute,
  admission: Admission,
  headers: Record<string, string>,
) => Promise<Answer>;

/** The version check of a GET route: the host's contract check, or the pipeline's. */
export async function checkVersion(context: RouteContext, exchange: Exchange, route: RouteName): Promise<void> {
  if (context.contract) {
    await context.contract(exchange, route, undefined);
  } else {
    checkOxpVersionHeader(exchange.header("oxp-version"));
  }
}

/** Whether the request asks for an extension the server offers (`OXP-Extensions`). */
export function asksFor(context: RouteContext, exchange: Exchange, id: ExtensionId): boolean {
  return requestedExtensions(exchange.header("oxp-extensions"), context.offered).has(id);
}

/** The 405 of a method the route does not take, with its `Allow`. */
export function methodNotAllowed(methods: readonly string[]): WireError {
  return new WireError("method_not_allowed", "This method is not allowed here", {
    headers: { Allow: methods.join(", ") },
  });
}

/** The challenge id or call id a route's path names, decoded; a malformed percent-encoding is a 400. */
export function decodedSegment(route: ProtocolRoute): string {
  try {
    return decodeURIComponent(route.segment ?? "");
  } catch (error) {
    throw toWireError(error);
  }
}

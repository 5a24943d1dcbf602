/**
 * The connections extension's routes (docs/protocol.md 9.7): `GET /connections`, `POST /connections` (a flow
 * started, 201) and `DELETE /connections/{id}` (204), for the caller's user: the access token's subject under
 * oauth, else the `user_id` a trusted caller names.
 */
import { type ConnectionRequest, OXP_VERSION, validateConnectionRequest } from "@otc/types";
import type { ConnectionVault } from "../../connections/vault.js";
import type { TokenOwner } from "../../core/authorization.js";
import { WireError } from "../../core/errors.js";
import { CHALLENGE_CHECK_PATH } from "../../core/oxp-core.js";
import { checkOxpVersionHeader } from "../../core/protocol-version.js";
import { ANSWER_KIND } from "../answers.js";
import type { Admission } from "../authentication.js";
import type { Answer, Exchange } from "../exchange.js";
import { checkBodyFraming, isJsonType, parseJson } from "../request-body.js";
import { checkVersion, decodedSegment, type RouteContext, type RouteHandler } from "./context.js";

/** The largest `POST /connections` body: a provider id, a few scopes and a user id. */
const REQUEST_LIMIT = 16 * 1024;
/** What a connections answer says shaped it. */
const APPLIED = { "OXP-Extensions": "connections" };

/** The routes, over the vault. */
export function connectionsRoute(context: RouteContext, vault: ConnectionVault): RouteHandler {
  const baseUrlOf = (exchange: Exchange) => context.publicUrl ?? exchange.baseUrl();

  return async (exchange, route, admission, headers): Promise<Answer> => {
    if (route.name === "connection") {
      await checkVersion(context, exchange, "connection");
      const owner = ownerOf(admission, new URLSearchParams(exchange.query()).get("user_id") ?? undefined, context);
      await vault.delete(owner, decodedSegment(route));
      return { status: 204, headers: { ...headers, ...APPLIED, "OXP-Version": OXP_VERSION } };
    }
    if (exchange.method === "POST") {
      const body = await readRequest(context, exchange);
      const owner = ownerOf(admission, body.user_id, context);
      const base = baseUrlOf(exchange);
      const flow = await vault.create(owner, body.provider, body.scopes, base);
      const answer = {
        id: flow.id,
        status: "pending",
        url: flow.url,
        check_url: `${base}${CHALLENGE_CHECK_PATH}/${encodeURIComponent(flow.challengeId)}`,
      };
      return context.answer(201, JSON.stringify(answer), ANSWER_KIND.connections, { ...headers, ...APPLIED });
    }
    await checkVersion(context, exchange, "connections");
    const owner = ownerOf(admission, new URLSearchParams(exchange.query()).get("user_id") ?? undefined, context);
    const items = await vault.list(owner);
    return context.answer(200, JSON.stringify({ items }), ANSWER_KIND.connections, {
      ...headers,
      ...APPLIED,
      "Cache-Control": "private, no-store",
    });
  };
}

/**
 * Whose connections a request is about (`[connections.user]`): the token's subject under oauth (another `user_id`
 * is a 403 unless the token holds the delegation scope), else the `user_id` the trusted caller names (a 400 without).
 */
function ownerOf(admission: Admission, userId: string | undefined, context: RouteContext): TokenOwner {
  const { principal, grant } = admission;
  if (grant) {
    if (userId !== undefined && userId !== grant.subject && !grant.delegated) {
      throw (context.oauth as NonNullable<RouteContext["oauth"]>).userMismatch();
    }
    return { principal, userId: userId ?? grant.subject };
  }
  if (userId === undefined || userId === "" || userId.length > 256) {
    throw new WireError("bad_request", "A user id is required", {
      developerMessage: "Name the user whose connections these are: user_id (a query parameter, or in the POST body).",
      missingRequirements: { user_id: true },
    });
  }
  return { principal, userId };
}

/**
 * A `POST /connections` body: JSON, small, then `OXP-Version` and its shape (a ConnectionRequest), by the host's
 * contract check where it has one, as for calls.
 */
async function readRequest(context: RouteContext, exchange: Exchange): Promise<ConnectionRequest> {
  const contentType = exchange.header("content-type");
  if (!isJsonType(contentType)) {
    throw new WireError("unsupported_media_type", "The request body must be JSON", {
      developerMessage: "Send the body with Content-Type: application/json.",
    });
  }
  const declared = checkBodyFraming(exchange, REQUEST_LIMIT, contentType);
  const body = parseJson(await exchange.readText(REQUEST_LIMIT, declared, () => {}));
  if (context.contract) {
    await context.contract(exchange, "connections", body);
    return body as ConnectionRequest;
  }
  checkOxpVersionHeader(exchange.header("oxp-version"));
  if (!validateConnectionRequest(body)) {
    const first = validateConnectionRequest.errors?.[0];
    throw new WireError("bad_request", "The request body is not a ConnectionRequest", {
      developerMessage: first ? `${first.instancePath || "/"} ${first.message ?? "is not valid"}` : undefined,
    });
  }
  return body as ConnectionRequest;
}

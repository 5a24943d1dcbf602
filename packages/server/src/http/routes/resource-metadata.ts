/** The oauth extension's protected resource metadata (docs/protocol.md 9.6, RFC 9728): served at any time, before authentication. */
import { ANSWER_KIND } from "../answers.js";
import type { Answer, Exchange } from "../exchange.js";
import type { OAuthResource } from "../oauth.js";
import type { ProtocolRoute } from "../routes.js";
import { methodNotAllowed, type RouteContext } from "./context.js";

/** `GET /.well-known/oauth-protected-resource`: the method (405), then the document, made once (the catalog is fixed). */
export function resourceMetadataRoute(context: RouteContext, oauth: OAuthResource) {
  const body = oauth.metadataBody(context.core.registry.requiredScopes);
  return async (exchange: Exchange, route: ProtocolRoute, headers: Record<string, string>): Promise<Answer> => {
    if (!route.methods.includes(exchange.method)) {
      throw methodNotAllowed(route.methods);
    }
    // RFC 9728 metadata is public and the same for everyone: caches may keep it a while.
    return context.answer(200, body, ANSWER_KIND.resource, { ...headers, "Cache-Control": "public, max-age=300" });
  };
}

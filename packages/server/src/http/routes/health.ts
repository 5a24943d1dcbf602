/** `/health` (docs/protocol.md 3.3 step 4) and the discovery document (docs/protocol.md 9.1): served at any time, before authentication. */
import { OXP_VERSION } from "@otc/types";
import { SEARCH_INFO } from "../../core/catalog-search.js";
import { sha256Base64url } from "../../core/fingerprint.js";
import { ANSWER_KIND } from "../answers.js";
import type { Answer, Exchange } from "../exchange.js";
import type { OxpLifecycle } from "../options.js";
import type { ProtocolRoute } from "../routes.js";
import { asksFor, checkVersion, methodNotAllowed, type RouteContext } from "./context.js";
import { cachePolicy, conditionalAnswer } from "./tools.js";

/** `/health` and discovery: the method (405), `OXP-Version`, then readiness (503 while starting) or the document. */
export function healthRoute(context: RouteContext, lifecycle: OxpLifecycle) {
  const discovery = JSON.stringify({
    oxp_versions: [OXP_VERSION],
    extensions: [...context.offered],
    ...extensionInfo(context),
  });
  const etag = `"${sha256Base64url(discovery)}"`;
  return async (exchange: Exchange, route: ProtocolRoute, headers: Record<string, string>): Promise<Answer> => {
    if (!route.methods.includes(exchange.method)) {
      throw methodNotAllowed(route.methods);
    }
    await checkVersion(context, exchange, route.name);
    if (route.name === "discovery") {
      if (asksFor(context, exchange, "cache")) {
        // The same for every caller: any cache may keep it (`[cache.control]`).
        const cached = { ...headers, "Cache-Control": cachePolicy(context, false, "public").header };
        return conditionalAnswer(context, exchange, {
          text: discovery,
          kind: ANSWER_KIND.discovery,
          headers: cached,
          etag,
        });
      }
      return context.answer(200, discovery, ANSWER_KIND.discovery, headers);
    }
    const [status, body] = lifecycle.ready ? [200, { status: "ok" }] : [503, { message: "The server is starting" }];
    return context.answer(status, JSON.stringify(body), ANSWER_KIND.health, headers);
  };
}

/** The settings of the extensions that have some a client needs first (docs/protocol.md 9.1): search's, oauth's, connections'. */
function extensionInfo(context: RouteContext): { extension_info?: Record<string, unknown> } {
  const info: Record<string, unknown> = {};
  if (context.offered.has("search")) {
    // The bounds a search must keep (9.5, `[search.discovery]`).
    info.search = SEARCH_INFO;
  }
  if (context.oauth && context.offered.has("oauth")) {
    // Where a client learns how to get an access token (9.6, `[oauth.discovery]`).
    info.oauth = { resource_metadata: context.oauth?.metadataUrl };
  }
  if (context.vault && context.offered.has("connections")) {
    // What a user can connect (9.7, `[connections.discovery]`).
    info.connections = {
      providers: [...context.vault.providers.values()].map((provider) => ({ id: provider.id, name: provider.name })),
    };
  }
  return Object.keys(info).length > 0 ? { extension_info: info } : {};
}

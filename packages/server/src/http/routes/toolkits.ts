/** `GET /toolkits` (docs/protocol.md 9.5, `[search.toolkits]`): the catalog's toolkits, by name, for a request asking for search. */
import { appliedHeader, requestedExtensions } from "../../core/extensions.js";
import { ANSWER_KIND } from "../answers.js";
import type { Answer } from "../exchange.js";
import { checkVersion, type RouteContext, type RouteHandler } from "./context.js";
import { cacheableAnswer, cachePolicy } from "./tools.js";

const SHAPING: ReadonlySet<string> = new Set(["search", "cache"]);

/** The toolkits route: those of the tools the caller can see, with the cache extension's fields where asked. */
export function toolkitsRoute(context: RouteContext): RouteHandler {
  const { core, offered } = context;
  return async (exchange, route, { grant }, base): Promise<Answer> => {
    await checkVersion(context, exchange, route.name);
    const asked = requestedExtensions(exchange.header("oxp-extensions"), offered);
    // Of what was asked, only search (which serves this path) and cache shape a list of toolkits.
    const shaping = [...asked].filter((id) => SHAPING.has(id));
    const headers: Record<string, string> = { ...base, "OXP-Extensions": appliedHeader(shaping) as string };
    const cache = asked.has("cache") ? cachePolicy(context, grant !== undefined) : undefined;
    if (cache) {
      headers["Cache-Control"] = cache.header;
    } else if (grant) {
      // The toolkits an access token sees depend on its scopes (`[search.catalog-by-scope]`).
      headers["Cache-Control"] = "private";
    }
    const body = core.catalog.search().toolkits(grant ? core.catalog.visibleTo(grant.scopes) : undefined);
    return cacheableAnswer(context, exchange, { body, kind: ANSWER_KIND.toolkits, headers, cache });
  };
}

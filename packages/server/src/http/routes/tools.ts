/**
 * `GET /tools` (docs/protocol.md 3.3 step 7): `OXP-Version`, then the tool list, serialized once per catalog and
 * gzipped once too, or 304 when `If-None-Match` names it; with the annotations extension, its annotated form; with
 * pagination, one page of it (docs/protocol.md 9).
 */
import { OXP_VERSION } from "@otc/types";
import Negotiator from "negotiator";
import vary from "vary";
import { appliedHeader, pageOf, requestedExtensions } from "../../core/extensions.js";
import type { ListForm } from "../../core/tool-definitions.js";
import { ANSWER_KIND, jsonAnswer } from "../answers.js";
import type { Answer } from "../exchange.js";
import { gzippedList } from "../gzip.js";
import { checkVersion, type RouteContext, type RouteHandler } from "./context.js";

/** The tool list route. */
export function toolsRoute(context: RouteContext): RouteHandler {
  const { core, offered, answer } = context;
  return async (exchange, route, { grant }, base): Promise<Answer> => {
    await checkVersion(context, exchange, route.name);
    // Always: a cache must keep the forms apart, also the one a request without the header got.
    const headers: Record<string, string> = {
      ...base,
      Vary: vary.append(base.Vary ?? "", "Accept-Encoding, OXP-Extensions"),
    };
    // The list an access token gets depends on its scopes (docs/protocol.md 9.6, `[oauth.catalog-by-scope]`).
    if (grant) {
      headers["Cache-Control"] = "private";
    }
    const asked = requestedExtensions(exchange.header("oxp-extensions"), offered);
    const form = { annotations: asked.has("annotations"), scopes: asked.has("oauth") };
    // Most requests ask for nothing: no header to name then.
    const applied = asked.size === 0 ? undefined : appliedHeader([...asked].filter((id) => id !== "tasks"));
    if (applied) {
      headers["OXP-Extensions"] = applied;
    }
    const listFor = (shape: ListForm) => (grant ? core.toolListFor(shape, grant.scopes) : core.toolList(shape));
    if (asked.has("pagination")) {
      // Pages are cut from the list in its form, their cursors bound to the catalog this client sees.
      const catalog = await listFor({});
      const query = new URLSearchParams(exchange.query());
      const items = grant ? core.definitionsFor(form, grant.scopes) : core.registry.list(form);
      const page = pageOf(items, catalog.etag, {
        limit: query.get("limit"),
        cursor: query.get("cursor"),
        toolkit: query.get("toolkit"),
      });
      return answer(200, JSON.stringify(page), ANSWER_KIND.tools, headers);
    }
    const list = await listFor(form);
    const small = await gzippedList(list);
    const condition = exchange.header("if-none-match");
    for (const etag of small ? [list.etag, small.etag] : [list.etag]) {
      if (ifNoneMatch(condition, etag)) {
        return { status: 304, headers: { ...headers, "OXP-Version": OXP_VERSION, ETag: etag } };
      }
    }
    const checked = answer(200, list.body, ANSWER_KIND.tools, { ...headers, ETag: list.etag });
    if (checked.status !== 200) {
      return checked;
    }
    const encoding = exchange.header("accept-encoding");
    if (
      small &&
      encoding &&
      new Negotiator({ headers: { "accept-encoding": encoding } }).encoding(["gzip", "identity"]) === "gzip"
    ) {
      return jsonAnswer(200, small.body, { ...headers, ETag: small.etag, "Content-Encoding": "gzip" });
    }
    return checked;
  };
}

/**
 * True when an `If-None-Match` header names `etag` (weak comparison, as for GET) or is `*`. Request
 * `Cache-Control` does not matter here: it speaks to caches, and fetch() sends `no-cache` with every
 * conditional request.
 */
function ifNoneMatch(header: string | undefined, etag: string): boolean {
  if (header === undefined) {
    return false;
  }
  if (header.trim() === "*") {
    return true;
  }
  return header.split(",").some((tag) => tag.trim().replace(/^W\//, "") === etag);
}

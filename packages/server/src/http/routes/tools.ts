/**
 * `GET /tools` (docs/protocol.md 3.3 step 7): `OXP-Version`, then the tool list, serialized once per catalog and
 * gzipped once too, or 304 when `If-None-Match` names it; with the annotations extension, its annotated form; with
 * pagination, one page of it; with search, the matches of `q` or the tools `ids` names; with cache, the fields and
 * headers a gateway keeps it by (docs/protocol.md 9).
 */
import { OXP_VERSION } from "@otc/types";
import Negotiator from "negotiator";
import vary from "vary";
import { WireError } from "../../core/errors.js";
import { appliedHeader, pageOf, requestedExtensions } from "../../core/extensions.js";
import { sha256Base64url } from "../../core/fingerprint.js";
import type { ToolList } from "../../core/oxp-core.js";
import type { ListForm } from "../../core/tool-definitions.js";
import { ANSWER_KIND, type AnswerKind, jsonAnswer } from "../answers.js";
import type { Answer, Exchange } from "../exchange.js";
import { gzippedList } from "../gzip.js";
import { checkVersion, type RouteContext, type RouteHandler } from "./context.js";

/** The tool list route: the list, a page of it, a search or the tools named by `ids`. */
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
    const cache = asked.has("cache") ? cachePolicy(context, grant !== undefined) : undefined;
    if (cache) {
      headers["Cache-Control"] = cache.header;
    }
    const listFor = (shape: ListForm) =>
      grant ? core.catalog.toolListFor(shape, grant.scopes) : core.catalog.toolList(shape);
    const query = asked.has("search") || asked.has("pagination") ? new URLSearchParams(exchange.query()) : undefined;
    const q = asked.has("search") ? (query?.get("q") ?? null) : null;
    const ids = asked.has("search") ? (query?.get("ids") ?? null) : null;
    if (query && (q !== null || ids !== null)) {
      if (q !== null && ids !== null) {
        throw new WireError("bad_request", "Ask for q or for ids, not both", {
          developerMessage: "q searches the catalog; ids names the tools to answer.",
        });
      }
      const search = core.catalog.search();
      const scope = {
        form,
        visible: grant ? core.catalog.visibleTo(grant.scopes) : undefined,
        catalogTag: (await listFor({})).etag,
      };
      if (q !== null) {
        const found = search.search(
          {
            q,
            toolkit: query.get("toolkit"),
            view: query.get("view"),
            limit: query.get("limit"),
            cursor: query.get("cursor"),
          },
          scope,
        );
        return cacheableAnswer(context, exchange, { text: found, kind: ANSWER_KIND.search, headers, cache });
      }
      return cacheableAnswer(context, exchange, {
        text: search.byIdsText(ids as string, scope),
        kind: ANSWER_KIND.tools,
        headers,
        cache,
      });
    }
    if (query && asked.has("pagination")) {
      // Pages are cut from the list in its form, their cursors bound to the catalog this client sees.
      const catalog = await listFor({});
      const items = grant ? core.catalog.definitionsFor(form, grant.scopes) : core.registry.list(form);
      const page = pageOf(items, catalog.etag, {
        limit: query.get("limit"),
        cursor: query.get("cursor"),
        toolkit: query.get("toolkit"),
      });
      if (cache) {
        return cacheableAnswer(context, exchange, { body: page, kind: ANSWER_KIND.tools, headers, cache });
      }
      return answer(200, JSON.stringify(page), ANSWER_KIND.tools, headers);
    }
    const list = cache ? withCacheFields(await listFor(form), cache) : await listFor(form);
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

/** What the cache extension tells of an answer (docs/protocol.md 9.9): its `Cache-Control` and body fields. */
export interface CachePolicy {
  readonly header: string;
  readonly ttlMs: number;
  readonly scope: "public" | "private";
}

/**
 * The policy of a list (`[cache.control]`): public where every caller gets the same answer, private on a server
 * with authentication and for lists by scope; discovery's is always public.
 */
export function cachePolicy(context: RouteContext, byCaller: boolean, always?: "public"): CachePolicy {
  const { maxAgeSeconds, listScope } = context.cache;
  const scope = always ?? (byCaller ? "private" : listScope);
  return { header: `${scope}, max-age=${maxAgeSeconds}`, ttlMs: maxAgeSeconds * 1000, scope };
}

/** The list in the cache extension's form, made once per list: its body with `ttl_ms` and `cache_scope`, its own ETag. */
function withCacheFields(list: ToolList, cache: CachePolicy): ToolList {
  const key = `${cache.ttlMs} ${cache.scope}`;
  let forms = cacheForms.get(list);
  if (!forms) {
    forms = new Map();
    cacheForms.set(list, forms);
  }
  let form = forms.get(key);
  if (!form) {
    // The body is `{"items":[...]}`: the fields go before its last brace.
    const body = `${list.body.slice(0, -1)},"ttl_ms":${cache.ttlMs},"cache_scope":"${cache.scope}"}`;
    form = Object.freeze({ body, etag: `"${sha256Base64url(body)}"` });
    forms.set(key, form);
  }
  return form;
}

const cacheForms = new WeakMap<ToolList, Map<string, ToolList>>();

/**
 * A 200 of `body`; with the cache extension, with `ttl_ms` and `cache_scope`, a strong ETag of the bytes, and a 304
 * when `If-None-Match` names it (`[cache.etag]`, `[cache.body-fields]`).
 */
export function cacheableAnswer(
  context: RouteContext,
  exchange: Exchange,
  answer: ({ body: object } | { text: string }) & {
    kind: AnswerKind;
    headers: Record<string, string>;
    cache: CachePolicy | undefined;
  },
): Answer {
  const { kind, headers, cache } = answer;
  // A body already in JSON (a search's) gets the cache fields after its own members, as the object's would.
  const json = "text" in answer ? answer.text : JSON.stringify(answer.body);
  if (!cache) {
    return context.answer(200, json, kind, headers);
  }
  const fields = JSON.stringify({ ttl_ms: cache.ttlMs, cache_scope: cache.scope });
  const text = json === "{}" ? fields : `${json.slice(0, -1)},${fields.slice(1)}`;
  return conditionalAnswer(context, exchange, { text, kind, headers });
}

/** A 200 of `text` with a strong ETag of its bytes, or a 304 when `If-None-Match` names it. */
export function conditionalAnswer(
  context: RouteContext,
  exchange: Exchange,
  answer: { text: string; kind: AnswerKind; headers: Record<string, string>; etag?: string },
): Answer {
  const { text, kind, headers } = answer;
  const etag = answer.etag ?? `"${sha256Base64url(text)}"`;
  if (ifNoneMatch(exchange.header("if-none-match"), etag)) {
    return { status: 304, headers: { ...headers, "OXP-Version": OXP_VERSION, ETag: etag } };
  }
  return context.answer(200, text, kind, { ...headers, ETag: etag });
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

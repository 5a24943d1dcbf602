/**
 * The bridge's GET /tools asking for what @otc/client's `listTools` does not: `oauth`, so that each tool lists its
 * `required_scopes` (docs/protocol.md 9.6), and `cache` on the catalog reads of 2026-07-28 tools/lists, whose `ttl_ms`
 * and `cache_scope` (9.9) the bridge gives MCP clients as `ttlMs` and `cacheScope`.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { DEFAULT_MAX_RESPONSE_BYTES } from "@otc/client";

/** What a list body's cache fields said, each where it was valid: `ttl_ms` as `ttlMs`, `cache_scope` as `cacheScope`. */
export interface ListCacheFields {
  ttlMs?: number;
  cacheScope?: "public" | "private";
}

/** A fetch for @otc/client that asks for those extensions, and the way to read a catalog with its cache fields. */
export interface ListExtensions {
  fetch: typeof fetch;
  /**
   * Runs `list` (a `client.listTools`), asking its GET /tools for `cache` where the server offers it, and gives its
   * tools with the cache fields of the list the client took (undefined when the server sent none).
   */
  read<T>(list: () => Promise<T>): Promise<{ value: T; cache: ListCacheFields | undefined }>;
}

/** The catalog read in progress in this async context: the cache fields of the last list answered to it. */
interface CatalogRead {
  fields: Promise<ListCacheFields | undefined> | undefined;
}

/**
 * `base` with `oauth`, and within `read` also `cache`, added to the `OXP-Extensions` of every GET of
 * `{baseUrl}/tools` when `offered()` (the server's discovery document) lists them. A fetch is the one place where the
 * bridge can ask for more than the client's options say; any other request goes as it is. Which read a list belongs
 * to follows the async context (AsyncLocalStorage), so reads made at once never take each other's fields.
 */
export function listExtensions(
  base: typeof fetch,
  baseUrl: string,
  offered: () => Promise<readonly string[]>,
): ListExtensions {
  const toolsPath = `${new URL(baseUrl).pathname.replace(/\/+$/, "")}/tools`;
  const reads = new AsyncLocalStorage<CatalogRead>();
  const wrapped: typeof fetch = async (input, init) => {
    // Read without building a Request: building one from a Request with a body would use that body up.
    const method = (init?.method ?? (input instanceof Request ? input.method : "GET")).toUpperCase();
    const url = URL.parse(input instanceof Request ? input.url : String(input));
    if (method !== "GET" || url?.pathname !== toolsPath) {
      return base(input, init);
    }
    const reading = reads.getStore();
    const wanted = reading ? ["oauth", "cache"] : ["oauth"];
    const offers = await offered();
    const asking = wanted.filter((id) => offers.includes(id));
    if (asking.length === 0) {
      return base(input, init);
    }
    const request = new Request(input, init);
    const headers = new Headers(request.headers);
    const asked = headers.get("oxp-extensions");
    headers.set("OXP-Extensions", [...(asked ? [asked] : []), ...asking].join(", "));
    const response = await base(new Request(request, { headers }));
    // The whole list only (no page, search or ids): its fields are the catalog's. A retried request's last answer wins.
    if (reading && asking.includes("cache") && response.status === 200 && url.search === "") {
      reading.fields = cacheFieldsOf(response.clone());
    }
    return response;
  };
  return {
    fetch: wrapped,
    async read(list) {
      const reading: CatalogRead = { fields: undefined };
      const value = await reads.run(reading, list);
      return { value, cache: await reading.fields };
    },
  };
}

/**
 * The cache fields of a list answer, read from a copy of its body, bounded as the client bounds the body itself
 * (16 MiB): undefined for a body past that, one that is not JSON, or one without either field. It never fails the
 * list, which the client reads and checks on its own.
 */
async function cacheFieldsOf(response: Response): Promise<ListCacheFields | undefined> {
  try {
    const text = await boundedText(response, DEFAULT_MAX_RESPONSE_BYTES);
    const body = text === undefined ? undefined : (JSON.parse(text) as { ttl_ms?: unknown; cache_scope?: unknown });
    const fields: ListCacheFields = {};
    if (Number.isSafeInteger(body?.ttl_ms) && (body?.ttl_ms as number) >= 0) {
      fields.ttlMs = body?.ttl_ms as number;
    }
    if (body?.cache_scope === "public" || body?.cache_scope === "private") {
      fields.cacheScope = body.cache_scope;
    }
    return Object.keys(fields).length > 0 ? fields : undefined;
  } catch {
    return undefined;
  }
}

/** The body as text, or undefined once it passes `maxBytes` (the rest is not read). */
async function boundedText(response: Response, maxBytes: number): Promise<string | undefined> {
  if (!response.body) {
    return "";
  }
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let bytes = 0;
  let text = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) {
      return text + decoder.decode();
    }
    bytes += value.byteLength;
    if (bytes > maxBytes) {
      await reader.cancel().catch(() => undefined);
      return undefined;
    }
    text += decoder.decode(value, { stream: true });
  }
}

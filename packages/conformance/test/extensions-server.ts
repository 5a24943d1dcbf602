// A small OXP server with the annotations and pagination extensions (docs/protocol.md 9), and switches that each break one rule: the kit's extension scenarios must catch every one.
import { createHash } from "node:crypto";
import { once } from "node:events";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** One deliberate bug, named after what the server does wrong. */
export type Bug =
  | "annotations-always"
  | "cursor-always"
  | "query-without-header"
  | "unknown-id-refused"
  | "task-paths-served"
  | "discovery-guarded"
  | "discovery-malformed"
  | "extensions-without-discovery"
  | "negotiation-case-sensitive"
  | "applied-header-order"
  | "applied-header-missing"
  | "vary-missing"
  | "same-etag"
  | "read-only-destructive"
  | "annotations-malformed"
  | "annotations-change-definition"
  | "annotations-wrong"
  | "page-drops-tool"
  | "pages-over-limit"
  | "last-page-cursor"
  | "limit-unchecked"
  | "cursor-unchecked"
  | "cursor-toolkit-unbound"
  | "toolkit-loose";

/** How the server is set up. */
export interface ExtensionsServerOptions {
  /** What GET /.well-known/oxp says: both extensions (default), none, or nothing at all (a 404: OXP 1.0). */
  discovery?: "both" | "none" | "missing";
  bugs?: readonly Bug[];
  /** Guards everything but /health and discovery with this `OXP-API-Key`. */
  apiKey?: string;
}

const tool = (id: string, extra: Record<string, unknown> = {}) => ({
  id,
  name: id.replace(/@.*/, "").replace(".", "_"),
  description: `The tool ${id}.`,
  version: id.replace(/.*@/, ""),
  input_schema: {},
  output_schema: null,
  ...extra,
});

/** The catalog, with its annotations: two toolkits of two tools, one of one. */
export const CATALOG = [
  tool("Calc.Add@1.0.0", { annotations: { title: "Add", read_only: true, idempotent: true, open_world: false } }),
  tool("Calc.Sub@1.0.0"),
  tool("Mail.Read@1.0.0", { annotations: { read_only: true, open_world: true } }),
  tool("Mail.Send@2.0.0", { annotations: { destructive: true, open_world: true } }),
  tool("Echo.Say@1.0.0", { deprecation_message: "Use Mail.Send." }),
];

const EXTENSIONS = ["annotations", "pagination"];
const CATALOG_TAG = "catalog-1";

const etagOf = (text: string) => `"${createHash("sha256").update(text).digest("base64url").slice(0, 16)}"`;

/** A definition without the annotations extension's fields. */
function plain(definition: Record<string, unknown>): Record<string, unknown> {
  const { annotations: _annotations, deprecation_message: _deprecation, ...rest } = definition;
  return rest;
}

/** Starts the server on 127.0.0.1, port 0. */
export async function startExtensionsServer(
  options: ExtensionsServerOptions = {},
): Promise<{ url: string; close(): Promise<void> }> {
  const bugs = new Set(options.bugs ?? []);
  const discovery = options.discovery ?? "both";
  const offered = discovery === "both" || bugs.has("extensions-without-discovery") ? EXTENSIONS : [];

  const annotated = CATALOG.map((definition) => {
    if (definition.id === "Mail.Read@1.0.0" && bugs.has("read-only-destructive")) {
      return { ...definition, annotations: { read_only: true, destructive: true } };
    }
    if (definition.id === "Calc.Sub@1.0.0" && bugs.has("annotations-malformed")) {
      return { ...definition, annotations: { readOnlyHint: true } };
    }
    if (definition.id === "Calc.Add@1.0.0" && bugs.has("annotations-wrong")) {
      return { ...definition, annotations: { title: "Add", read_only: false, open_world: false } };
    }
    if (definition.id === "Echo.Say@1.0.0" && bugs.has("annotations-change-definition")) {
      return { ...definition, description: "Says it (deprecated)." };
    }
    return definition;
  });
  const bare = CATALOG.map(plain);

  const send = (res: ServerResponse, status: number, body?: unknown, headers: Record<string, string> = {}) => {
    const json = body === undefined ? {} : { "content-type": "application/json" };
    res
      .writeHead(status, { "OXP-Version": "1.0", ...json, ...headers })
      .end(body === undefined ? "" : JSON.stringify(body));
  };
  const refuse = (res: ServerResponse, status: number, message: string, headers: Record<string, string> = {}) =>
    send(res, status, { message }, headers);

  /** One page of the list, or the reason it is a 400. */
  const page = (items: Record<string, unknown>[], query: URLSearchParams): Record<string, unknown> | string => {
    const limitText = query.get("limit");
    let limit = limitText === null ? 100 : /^[0-9]{1,4}$/.test(limitText) ? Number(limitText) : Number.NaN;
    if (!(limit >= 1 && limit <= 1000)) {
      if (!bugs.has("limit-unchecked")) {
        return "The page limit must be a whole number from 1 to 1000";
      }
      limit = Number.isNaN(limit) ? 100 : Math.min(Math.max(limit, 1), 1000);
    }
    const toolkit = query.get("toolkit") ?? undefined;
    if (toolkit !== undefined && !/^[A-Za-z0-9_]{1,128}$/.test(toolkit)) {
      return "The toolkit filter is not a toolkit name";
    }
    let offset = 0;
    const cursor = query.get("cursor");
    if (cursor !== null) {
      let state: { e?: unknown; o?: unknown; t?: unknown } | undefined;
      try {
        state = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
      } catch {
        state = undefined;
      }
      const bound = bugs.has("cursor-toolkit-unbound") || state?.t === toolkit;
      if (state?.e === CATALOG_TAG && typeof state.o === "number" && bound) {
        offset = state.o;
      } else if (!bugs.has("cursor-unchecked")) {
        return "This cursor cannot be used: list the tools again from the first page";
      }
    }
    const matches = (id: string) =>
      toolkit === undefined ||
      (bugs.has("toolkit-loose") ? id.toLowerCase().startsWith(toolkit.toLowerCase()) : id.startsWith(`${toolkit}.`));
    const kept = items.filter((item) => matches(String(item.id)));
    const slice = kept.slice(offset, offset + limit + (bugs.has("pages-over-limit") ? 1 : 0));
    let next = offset + slice.length;
    if (next < kept.length && bugs.has("page-drops-tool")) {
      next++;
    }
    if (next >= kept.length && !bugs.has("last-page-cursor")) {
      return { items: slice };
    }
    const state = { e: CATALOG_TAG, o: next, ...(toolkit === undefined ? {} : { t: toolkit }) };
    return { items: slice, next_cursor: Buffer.from(JSON.stringify(state)).toString("base64url") };
  };

  const listTools = (req: IncomingMessage, res: ServerResponse, query: URLSearchParams) => {
    const header = req.headers["oxp-extensions"];
    const ids = (Array.isArray(header) ? header.join(",") : (header ?? ""))
      .split(",")
      .map((id) => (bugs.has("negotiation-case-sensitive") ? id : id.trim().toLowerCase()))
      .filter((id) => id !== "");
    if (bugs.has("unknown-id-refused") && ids.some((id) => !["annotations", "tasks", "pagination"].includes(id))) {
      return refuse(res, 400, "Unknown extension");
    }
    const asked = offered.filter((id) => ids.includes(id));
    const withAnnotations = asked.includes("annotations") || bugs.has("annotations-always");
    const items = withAnnotations ? annotated : bare;
    const headers: Record<string, string> = {};
    if (!bugs.has("vary-missing")) {
      headers.Vary = "Accept-Encoding, OXP-Extensions";
    }
    const applied = bugs.has("applied-header-order") ? ids.filter((id) => asked.includes(id)) : asked;
    if (applied.length > 0 && !bugs.has("applied-header-missing")) {
      headers["OXP-Extensions"] = applied.join(", ");
    }
    if (asked.includes("pagination") || (bugs.has("query-without-header") && query.has("limit"))) {
      const body = page(items, query);
      return typeof body === "string" ? refuse(res, 400, body, headers) : send(res, 200, body, headers);
    }
    const body = bugs.has("cursor-always") ? { items, next_cursor: "more" } : { items };
    const etag = etagOf(JSON.stringify(bugs.has("same-etag") ? { items: bare } : body));
    if (req.headers["if-none-match"] === etag) {
      return send(res, 304, undefined, { ...headers, ETag: etag });
    }
    return send(res, 200, body, { ...headers, ETag: etag });
  };

  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    const authorized = options.apiKey === undefined || req.headers["oxp-api-key"] === options.apiKey;
    if (url.pathname === "/.well-known/oxp") {
      if (discovery === "missing") {
        return refuse(res, 404, "Not found");
      }
      if (!authorized && bugs.has("discovery-guarded")) {
        return refuse(res, 401, "Unauthorized", { "WWW-Authenticate": "Bearer" });
      }
      const extensions = bugs.has("discovery-malformed") ? offered.join(", ") : offered;
      return send(res, 200, { oxp_versions: ["1.0"], extensions });
    }
    if (!authorized && url.pathname !== "/health") {
      return refuse(res, 401, "Unauthorized", { "WWW-Authenticate": "Bearer" });
    }
    if (url.pathname === "/tools" && req.method === "GET") {
      return listTools(req, res, url.searchParams);
    }
    if (url.pathname.startsWith("/tools/calls/") && bugs.has("task-paths-served")) {
      return refuse(res, 405, "Method not allowed", { Allow: "POST" });
    }
    return refuse(res, 404, "Not found");
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

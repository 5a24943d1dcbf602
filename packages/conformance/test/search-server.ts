// A small OXP server with the search and cache extensions (docs/protocol.md 9.5, 9.9), and switches that each break one rule: the kit's search and cache scenarios must catch every one.
import { createHash } from "node:crypto";
import { once } from "node:events";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** One deliberate bug, named after what the server does wrong. */
export type SearchBug =
  | "discovery-bounds"
  | "unmatched-results"
  | "descriptions-unsearched"
  | "scores-ascending"
  | "search-applied-header-missing"
  | "default-limit-20"
  | "full-last-page-cursor"
  | "cursor-drops-one"
  | "summary-keeps-schemas"
  | "annotations-only-when-asked"
  | "toolkit-filter-loose"
  | "cursor-unbound-view"
  | "cursor-unchecked"
  | "exact-not-first"
  | "exact-case-sensitive"
  | "deprecated-not-demoted"
  | "ties-by-id-descending"
  | "bytes-vary"
  | "limit-unbounded"
  | "long-query-accepted"
  | "view-unchecked"
  | "ids-in-catalog-order"
  | "ids-duplicated"
  | "ids-latest-lowest"
  | "ids-unknown-skipped"
  | "ids-with-q"
  | "toolkits-unsorted"
  | "toolkits-count-versions"
  | "toolkits-without-header"
  | "search-without-header"
  | "etag-weak"
  | "etag-ignored-on-search"
  | "304-without-cache-control"
  | "etag-of-catalog"
  | "discovery-private"
  | "max-age-differs"
  | "lists-public-with-auth"
  | "ttl-in-seconds"
  | "cache-fields-without-cache"
  | "no-store-missing-on-errors"
  | "tool-header-ignored"
  | "tool-header-after-lookup"
  | "tool-header-only-with-cache"
  | "tool-header-case-insensitive";

/** The extensions the server can apply, in its discovery document's order. */
export type SearchServerExtension = "annotations" | "pagination" | "search" | "cache";

/** How the server is set up. */
export interface SearchServerOptions {
  /** What the discovery document lists (and the server applies); all four by default. */
  extensions?: readonly SearchServerExtension[];
  bugs?: readonly SearchBug[];
  /** Guards everything but /health and discovery with this `OXP-API-Key`: its lists are then private. */
  apiKey?: string;
}

type Definition = Record<string, unknown> & { id: string; name: string; description: string; version: string };

const numbers = {
  type: "object",
  properties: {
    a: { type: "number", description: "The first number." },
    b: { type: "number", description: "The second number." },
  },
  required: ["a", "b"],
  additionalProperties: false,
};

const tool = (id: string, description: string, extra: Record<string, unknown> = {}): Definition => ({
  id,
  name: id.replace(/@.*/, "").replace(".", "_"),
  description,
  version: id.replace(/.*@/, ""),
  input_schema: { type: "object", properties: {} },
  output_schema: { type: "object" },
  ...extra,
});

/**
 * The catalog: a tool with a deprecated version that says "send email" more often than its replacement, another whose
 * description says "send" more often than Mail.Send's name, a tool with requirements, and twelve tools that tie.
 */
export const CATALOG: Definition[] = [
  tool("Mail.Send@1.0.0", "Send email. Sends an email to send email quickly.", {
    deprecation_message: "Use Mail.Send@2.0.0, which takes attachments.",
  }),
  tool("Mail.Send@2.0.0", "Sends an email message, with attachments.", {
    input_schema: {
      type: "object",
      properties: {
        to: { type: "string", description: "The recipient's address." },
        format: { type: "string", description: "How the body is written.", enum: ["html", "plain"] },
      },
      required: ["to"],
    },
    annotations: { read_only: false, destructive: false, idempotent: false, open_world: true },
  }),
  tool("Mail.List@1.0.0", "Lists the emails in the inbox, newest first.", {
    requirements: { user_id: true },
    annotations: { read_only: true, open_world: true },
  }),
  tool("Calc.Add@1.0.0", "Adds two numbers.", { input_schema: numbers, output_schema: { type: "number" } }),
  tool("Calc.Sub@1.0.0", "Subtracts one number from another.", {
    input_schema: numbers,
    output_schema: { type: "number" },
  }),
  tool("Chat.Post@1.0.0", "Posts a message to a channel: send it, send it again, send it later.", {
    input_schema: {
      type: "object",
      properties: { channel: { type: "string", description: "Where it goes, for example #general." } },
    },
  }),
  ...Array.from({ length: 12 }, (_, n) => tool(`Bulk.Tool${n}@1.0.0`, "Turns widgets.")),
];

const TOOLKITS: Record<string, string> = { Mail: "Sending and reading mail.", Calc: "Arithmetic." };
const BOUNDS = { max_limit: 50, max_query_length: 256, max_terms: 32, max_ids: 100 };
const WEIGHTS = { name: 5, toolkit: 3, description: 2, parameters: 1.5, parameterText: 1 } as const;
const MAX_AGE = 60;

const sha = (text: string) => createHash("sha256").update(text).digest("base64url");
const byCodeUnit = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** The server's own tokens: words cut at non-alphanumerics, camel case, and between letters and digits, lower-cased. */
function tokens(text: string): string[] {
  return text
    .split(/[^A-Za-z0-9]+/)
    .flatMap((word) =>
      word.split(/(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])|(?<=[A-Za-z])(?=[0-9])|(?<=[0-9])(?=[A-Za-z])/),
    )
    .filter((token) => token !== "")
    .map((token) => token.toLowerCase());
}

const partsOf = (definition: Definition) => {
  const qualified = definition.id.split("@")[0] as string;
  const [toolkit = "", tool = ""] = qualified.split(".");
  return { qualified, toolkit, tool };
};

/** Starts the server on 127.0.0.1, port 0. */
export async function startSearchServer(
  options: SearchServerOptions = {},
): Promise<{ url: string; close(): Promise<void> }> {
  const bugs = new Set(options.bugs ?? []);
  const offered = options.extensions ?? ["annotations", "pagination", "search", "cache"];
  let answered = 0;

  const plain = (definition: Definition) => {
    const { annotations: _annotations, deprecation_message: _deprecation, ...rest } = definition;
    return rest;
  };
  const fields = CATALOG.map((definition) => {
    const { toolkit, tool } = partsOf(definition);
    const properties = ((definition.input_schema as { properties?: Record<string, Record<string, unknown>> })
      .properties ?? {}) as Record<string, { description?: string; enum?: string[] }>;
    return {
      name: tokens(tool),
      toolkit: tokens(toolkit),
      description: bugs.has("descriptions-unsearched") ? [] : tokens(definition.description),
      parameters: Object.keys(properties).flatMap(tokens),
      parameterText: Object.values(properties).flatMap((property) =>
        [property.description ?? "", ...(property.enum ?? [])].flatMap(tokens),
      ),
    };
  });

  /** The matches of a query, best first, as [index, score]. */
  const rank = (q: string, toolkit: string | undefined): [number, number][] => {
    const terms = tokens(q);
    const scores = new Map<number, number>();
    fields.forEach((field, index) => {
      let score = 0;
      for (const term of terms) {
        for (const [name, weight] of Object.entries(WEIGHTS)) {
          for (const token of field[name as keyof typeof WEIGHTS]) {
            score += token === term ? weight : token.startsWith(term) ? weight * 0.3 : 0;
          }
        }
      }
      if (score > 0) {
        scores.set(index, score);
      } else if (bugs.has("unmatched-results") && CATALOG[index]?.id === "Calc.Sub@1.0.0") {
        scores.set(index, 0.01);
      }
    });
    if (!bugs.has("deprecated-not-demoted")) {
      for (const [index, score] of scores) {
        const definition = CATALOG[index] as Definition;
        if (definition.deprecation_message === undefined) {
          continue;
        }
        const others = [...scores]
          .filter(([other]) => {
            const candidate = CATALOG[other] as Definition;
            return (
              other !== index &&
              candidate.deprecation_message === undefined &&
              partsOf(candidate).qualified === partsOf(definition).qualified
            );
          })
          .map(([, value]) => value);
        if (others.length > 0 && score >= Math.min(...others)) {
          scores.set(index, Math.min(...others) / 2);
        }
      }
    }
    if (!bugs.has("exact-not-first")) {
      const wanted = bugs.has("exact-case-sensitive") ? q.trim() : q.trim().toLowerCase();
      const top = Math.max(1, ...scores.values());
      CATALOG.forEach((definition, index) => {
        const { qualified, tool } = partsOf(definition);
        const names = [definition.id, qualified, definition.name, tool];
        if (names.some((name) => (bugs.has("exact-case-sensitive") ? name : name.toLowerCase()) === wanted)) {
          scores.set(index, top + 1 + (scores.get(index) ?? 0));
        }
      });
    }
    const order = bugs.has("ties-by-id-descending") ? -1 : 1;
    return [...scores]
      .map(([index, score]): [number, number] => [index, Math.round(score * 10_000) / 10_000])
      .filter(([index]) => toolkit === undefined || matchesToolkit(CATALOG[index] as Definition, toolkit))
      .sort(
        ([a, x], [b, y]) => y - x || order * byCodeUnit((CATALOG[a] as Definition).id, (CATALOG[b] as Definition).id),
      );
  };

  const matchesToolkit = (definition: Definition, toolkit: string) =>
    bugs.has("toolkit-filter-loose")
      ? definition.id.toLowerCase().startsWith(toolkit.toLowerCase())
      : definition.id.startsWith(`${toolkit}.`);

  /** A search's answer, or the reason it is a 400. */
  const search = (query: URLSearchParams, annotated: boolean): Record<string, unknown> | string => {
    const q = (query.get("q") ?? "").trim();
    if (q.length < 1 || (q.length > 256 && !bugs.has("long-query-accepted"))) {
      return "The query must be 1 to 256 characters";
    }
    if (tokens(q).length > 32) {
      return "The query may have at most 32 terms";
    }
    const limitText = query.get("limit");
    const most = bugs.has("limit-unbounded") ? 1000 : 50;
    const limit =
      limitText === null
        ? bugs.has("default-limit-20")
          ? 20
          : 10
        : /^[0-9]{1,4}$/.test(limitText)
          ? Number(limitText)
          : 0;
    if (!(limit >= 1 && limit <= most)) {
      return "The search limit must be a whole number from 1 to 50";
    }
    let view = query.get("view") ?? "full";
    if (view !== "full" && view !== "summary") {
      if (!bugs.has("view-unchecked")) {
        return "The view must be 'summary' or 'full'";
      }
      view = "full";
    }
    const toolkit = query.get("toolkit") ?? undefined;
    if (toolkit !== undefined && !/^[A-Za-z0-9_]{1,128}$/.test(toolkit)) {
      return "The toolkit filter is not a toolkit name";
    }
    const digest = sha(JSON.stringify([q, toolkit ?? null, bugs.has("cursor-unbound-view") ? null : view]));
    let offset = 0;
    const cursor = query.get("cursor");
    if (cursor !== null) {
      let state: { h?: unknown; o?: unknown } | undefined;
      try {
        state = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
      } catch {
        state = undefined;
      }
      if (state?.h === digest && typeof state.o === "number") {
        offset = state.o;
      } else if (!bugs.has("cursor-unchecked")) {
        return "This cursor cannot be used: search again from the first page";
      }
    }
    const matches = rank(q, toolkit);
    const items = matches.slice(offset, offset + limit).map(([index, score], place) => {
      const definition = CATALOG[index] as Definition;
      const shown = annotated || !bugs.has("annotations-only-when-asked") ? definition : plain(definition);
      const { id, name, input_schema, output_schema, requirements, ...rest } = shown;
      const summary = view === "summary" && !bugs.has("summary-keeps-schemas");
      return {
        id,
        name,
        toolkit: partsOf(definition).toolkit,
        ...rest,
        ...(summary ? {} : { input_schema, output_schema, ...(requirements === undefined ? {} : { requirements }) }),
        score: bugs.has("scores-ascending") ? offset + place + 1 : score,
      };
    });
    let next = offset + items.length;
    if (bugs.has("cursor-drops-one")) {
      next++;
    }
    const full = bugs.has("full-last-page-cursor") && items.length === limit;
    if (next >= matches.length && !full) {
      return { items };
    }
    return { items, next_cursor: Buffer.from(JSON.stringify({ h: digest, o: next })).toString("base64url") };
  };

  /** The definitions `ids` names, or the reason it is a 400. */
  const byIds = (ids: string, annotated: boolean): Record<string, unknown> | string => {
    const names = ids.split(",");
    if (names.length > 100) {
      return "At most 100 ids can be asked for at once";
    }
    const found: Definition[] = [];
    const unknown: string[] = [];
    for (const name of names) {
      const [qualified, version] = name.split("@");
      const versions = CATALOG.filter((definition) => partsOf(definition).qualified === qualified);
      const ordered = [...versions].sort((a, b) => byCodeUnit(a.version, b.version));
      const resolved =
        version === undefined
          ? bugs.has("ids-latest-lowest")
            ? ordered[0]
            : ordered.at(-1)
          : versions.find((definition) => definition.version === (version.includes(".") ? version : `${version}.0.0`));
      if (resolved === undefined) {
        unknown.push(name);
      } else if (bugs.has("ids-duplicated") || !found.includes(resolved)) {
        found.push(resolved);
      }
    }
    if (unknown.length > 0 && !bugs.has("ids-unknown-skipped")) {
      return `Some ids name no tool: ${unknown.map((name) => `'${name}'`).join(", ")}`;
    }
    const listed = bugs.has("ids-in-catalog-order")
      ? CATALOG.filter((definition) => found.includes(definition))
      : found;
    return { items: listed.map((definition) => (annotated ? definition : plain(definition))) };
  };

  const toolkits = () => {
    const counts = new Map<string, Set<string>>();
    for (const definition of CATALOG) {
      const { toolkit, qualified } = partsOf(definition);
      counts.set(
        toolkit,
        (counts.get(toolkit) ?? new Set()).add(bugs.has("toolkits-count-versions") ? definition.id : qualified),
      );
    }
    const names = [...counts.keys()].sort(byCodeUnit);
    return {
      items: (bugs.has("toolkits-unsorted") ? names.reverse() : names).map((name) => ({
        name,
        ...(TOOLKITS[name] ? { description: TOOLKITS[name] } : {}),
        tool_count: counts.get(name)?.size ?? 0,
      })),
    };
  };

  const send = (res: ServerResponse, status: number, body?: unknown, headers: Record<string, string> = {}) => {
    const json = body === undefined ? {} : { "content-type": "application/json" };
    res
      .writeHead(status, { "OXP-Version": "1.0", ...json, ...headers })
      .end(body === undefined ? "" : typeof body === "string" ? body : JSON.stringify(body));
  };
  const refuse = (res: ServerResponse, status: number, message: string, headers: Record<string, string> = {}) =>
    send(res, status, { message }, headers);

  const askedFor = (req: IncomingMessage): SearchServerExtension[] => {
    const header = req.headers["oxp-extensions"];
    const ids = (Array.isArray(header) ? header.join(",") : (header ?? ""))
      .split(",")
      .map((id) => id.trim().toLowerCase());
    return offered.filter((id) => ids.includes(id));
  };

  /** A cacheable 200: with cache asked, its fields, Cache-Control and ETag, or a 304 when If-None-Match names it. */
  const cacheable = (
    req: IncomingMessage,
    res: ServerResponse,
    body: Record<string, unknown>,
    how: {
      headers: Record<string, string>;
      cache: boolean;
      kind: "list" | "search" | "toolkits" | "discovery";
      /** For the etag-of-catalog bug: the bytes of the list, whose ETag a search then carries. */
      bare?: string;
    },
  ) => {
    const { headers } = how;
    const discovery = how.kind === "discovery";
    const scope = discovery
      ? bugs.has("discovery-private")
        ? "private"
        : "public"
      : options.apiKey !== undefined && !bugs.has("lists-public-with-auth")
        ? "private"
        : "public";
    const maxAge = how.kind === "toolkits" && bugs.has("max-age-differs") ? 30 : MAX_AGE;
    const withFields =
      !discovery && (how.cache || bugs.has("cache-fields-without-cache"))
        ? { ...body, ttl_ms: bugs.has("ttl-in-seconds") ? maxAge : maxAge * 1000, cache_scope: scope }
        : body;
    // The items' keys the other way round every other time: the same JSON in other bytes.
    const flip = bugs.has("bytes-vary") && how.kind === "search" && !how.cache && answered++ % 2 === 1;
    const reversed = (item: object) => Object.fromEntries(Object.entries(item).reverse());
    const text = JSON.stringify(
      flip ? { ...withFields, items: (withFields.items as object[]).map(reversed) } : withFields,
    );
    if (!how.cache) {
      return send(res, 200, text, how.kind === "list" ? { ...headers, ETag: `"${sha(text)}"` } : headers);
    }
    const strong = `"${sha(how.kind === "search" && bugs.has("etag-of-catalog") ? (how.bare ?? text) : text)}"`;
    const etag = bugs.has("etag-weak") ? `W/${strong}` : strong;
    const cached = { ...headers, "Cache-Control": `${scope}, max-age=${maxAge}` };
    const honoured = !(how.kind === "search" && bugs.has("etag-ignored-on-search"));
    if (honoured && req.headers["if-none-match"] === etag) {
      const { "Cache-Control": control, ...rest } = cached;
      return send(res, 304, undefined, {
        ...(bugs.has("304-without-cache-control") ? rest : { ...rest, "Cache-Control": control }),
        ETag: etag,
      });
    }
    return send(res, 200, text, { ...cached, ETag: etag });
  };

  const listTools = (req: IncomingMessage, res: ServerResponse, query: URLSearchParams) => {
    const asked = askedFor(req);
    const headers: Record<string, string> = { Vary: "Accept-Encoding, OXP-Extensions" };
    if (asked.length > 0) {
      headers["OXP-Extensions"] = asked.join(", ");
    }
    const annotated = asked.includes("annotations");
    const cache = asked.includes("cache");
    const listBody = { items: CATALOG.map((definition) => (annotated ? definition : plain(definition))) };
    const searching = asked.includes("search") || bugs.has("search-without-header");
    if (searching && (query.has("q") || query.has("ids"))) {
      if (query.has("q") && query.has("ids") && !bugs.has("ids-with-q")) {
        return refuse(res, 400, "Ask for q or for ids, not both", headers);
      }
      if (query.has("q")) {
        const found = search(query, annotated);
        if (typeof found === "string") {
          return refuse(res, 400, found, headers);
        }
        if (bugs.has("search-applied-header-missing")) {
          delete headers["OXP-Extensions"];
        }
        const bare = JSON.stringify({ ...listBody, ttl_ms: MAX_AGE * 1000, cache_scope: "public" });
        return cacheable(req, res, found, { headers, cache, kind: "search", bare });
      }
      const found = byIds(query.get("ids") ?? "", annotated);
      return typeof found === "string"
        ? refuse(res, 400, found, headers)
        : cacheable(req, res, found, { headers, cache, kind: "list" });
    }
    if (asked.includes("pagination")) {
      const limit = Number(query.get("limit") ?? 100);
      const offset = Number(query.get("cursor") ?? 0);
      const items = listBody.items.slice(offset, offset + limit);
      const more = offset + limit < listBody.items.length ? { next_cursor: String(offset + limit) } : {};
      return cacheable(req, res, { items, ...more }, { headers, cache, kind: "list" });
    }
    return cacheable(req, res, listBody, { headers, cache, kind: "list" });
  };

  const callTool = (req: IncomingMessage, res: ServerResponse, text: string) => {
    const cache = askedFor(req).includes("cache");
    const noStore: Record<string, string> = cache ? { "Cache-Control": "no-store" } : {};
    const fail = (status: number, body: Record<string, unknown>) =>
      send(res, status, body, bugs.has("no-store-missing-on-errors") ? {} : noStore);
    let body: { tool_id?: unknown; input?: unknown };
    try {
      body = JSON.parse(text);
    } catch {
      return fail(400, { message: "The body is not JSON" });
    }
    if (typeof body !== "object" || body === null || typeof body.tool_id !== "string") {
      return fail(400, { message: "The body needs a tool_id" });
    }
    const toolId = body.tool_id;
    const routed = req.headers["oxp-tool"];
    const mismatch = () => {
      if (typeof routed !== "string" || bugs.has("tool-header-ignored")) {
        return false;
      }
      if (bugs.has("tool-header-only-with-cache") && !cache) {
        return false;
      }
      return bugs.has("tool-header-case-insensitive")
        ? routed.toLowerCase() !== toolId.toLowerCase()
        : routed !== toolId;
    };
    const refuseMismatch = () =>
      fail(400, {
        message: "The OXP-Tool header names another tool than the body's tool_id",
        developer_message: `OXP-Tool is '${String(routed)}'; tool_id is '${toolId}'.`,
      });
    if (!bugs.has("tool-header-after-lookup") && mismatch()) {
      return refuseMismatch();
    }
    const [qualified, version] = toolId.split("@");
    const versions = CATALOG.filter((definition) => partsOf(definition).qualified === qualified);
    const definition =
      version === undefined ? versions.at(-1) : versions.find((candidate) => candidate.version === version);
    if (!definition) {
      return fail(400, { message: "Unknown tool", developer_message: `'${toolId}' is not a tool on this server.` });
    }
    if (bugs.has("tool-header-after-lookup") && mismatch()) {
      return refuseMismatch();
    }
    const input = (body.input ?? {}) as Record<string, unknown>;
    const schema = definition.input_schema as { required?: string[]; properties?: Record<string, { type?: string }> };
    const errors: Record<string, string> = {};
    for (const name of schema.required ?? []) {
      if (!(name in input)) {
        errors[name] = "is required";
      } else if (schema.properties?.[name]?.type === "number" && typeof input[name] !== "number") {
        errors[name] = "must be a number";
      }
    }
    if (Object.keys(errors).length > 0) {
      return fail(422, { message: "The input does not match the tool's input_schema", parameter_errors: errors });
    }
    const value = definition.id === "Calc.Add@1.0.0" ? Number(input.a) + Number(input.b) : { done: definition.id };
    return send(res, 200, { call_id: "c-1", duration: 1, success: true, value }, noStore);
  };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const url = new URL(req.url ?? "/", "http://127.0.0.1");
      const authorized = options.apiKey === undefined || req.headers["oxp-api-key"] === options.apiKey;
      if (url.pathname === "/health") {
        return send(res, 200, { status: "ok" });
      }
      if (url.pathname === "/.well-known/oxp") {
        const info = bugs.has("discovery-bounds") ? { ...BOUNDS, max_limit: 100 } : BOUNDS;
        const document = {
          oxp_versions: ["1.0"],
          extensions: offered,
          ...(offered.includes("search") ? { extension_info: { search: info } } : {}),
        };
        return cacheable(req, res, document, {
          headers: {},
          cache: askedFor(req).includes("cache"),
          kind: "discovery",
        });
      }
      if (!authorized) {
        return refuse(res, 401, "Unauthorized", { "WWW-Authenticate": 'OXP-API-Key realm="oxp"' });
      }
      if (url.pathname === "/tools" && req.method === "GET") {
        return listTools(req, res, url.searchParams);
      }
      if (url.pathname === "/toolkits" && req.method === "GET") {
        const asked = askedFor(req);
        if (!asked.includes("search") && !bugs.has("toolkits-without-header")) {
          return refuse(res, 404, "Not found");
        }
        const headers: Record<string, string> = asked.length > 0 ? { "OXP-Extensions": asked.join(", ") } : {};
        return cacheable(req, res, toolkits(), { headers, cache: asked.includes("cache"), kind: "toolkits" });
      }
      if (url.pathname === "/tools/call" && req.method === "POST") {
        return callTool(req, res, Buffer.concat(chunks).toString("utf8"));
      }
      return refuse(res, 404, "Not found");
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

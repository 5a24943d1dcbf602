// The OXP list's cache fields (docs/protocol.md 9.9) on the bridge's tools/list: `ttl_ms` and `cache_scope` as MCP 2026-07-28's `ttlMs` and `cacheScope`, where the OXP server sends them, and nowhere else; and the tools' `required_scopes` (9.6) read with them.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { createMcpHandler } from "@modelcontextprotocol/server";
import { createServer, defineTool, listen, type RunningServer } from "@otc/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createMcpBridge, type McpBridgeOptions, type McpCaller } from "../src/bridge.js";
import { serveHttp } from "../src/transports.js";

const API_KEY = "the-bridge-api-key-for-the-cache-test";

const echo = defineTool({
  toolkit: "Echo",
  name: "Say",
  version: "1.0.0",
  description: "Says it back.",
  inputSchema: { type: "object", properties: { text: { type: "string", description: "What to say." } } },
  outputSchema: { type: "string" },
  run: ({ text }) => text ?? "",
});

const send = defineTool({
  toolkit: "Mail",
  name: "Send",
  version: "1.0.0",
  description: "Sends a mail.",
  inputSchema: {},
  outputSchema: null,
  requiredScopes: ["mail:send"],
  run: () => null,
});

type Mode = "legacy" | { pin: "2026-07-28" };
const MODERN: Mode = { pin: "2026-07-28" };

/** What one tools/list went through: the bridge's GET /tools requests' OXP-Extensions, and the MCP answer's message. */
interface Listing {
  asked: (string | null)[];
  result: Record<string, unknown>;
}

/** The JSON-RPC message of an MCP answer's body, whether it came as JSON or as one server-sent event. */
const messageOf = (body: string) =>
  JSON.parse(body.startsWith("{") ? body : (/^data: (.*)$/m.exec(body)?.[1] ?? "")) as {
    result: Record<string, unknown>;
  };

/** A fetch that records the OXP-Extensions of each GET /tools into `asked`, and its query into `queries`. */
const recordingOxp =
  (asked: (string | null)[], queries: string[] = []): typeof fetch =>
  (input, init) => {
    const request = new Request(input, init);
    const url = new URL(request.url);
    if (url.pathname === "/tools") {
      asked.push(request.headers.get("oxp-extensions"));
      queries.push(url.search);
    }
    return fetch(request);
  };

/** A fetch for the MCP client that keeps the raw body of its tools/list answer. */
function recordingMcp(bodies: string[], send: typeof fetch = fetch): typeof fetch {
  return async (input, init) => {
    const response = await send(input, init);
    if (typeof init?.body === "string" && init.body.includes('"tools/list"')) {
      bodies.push(await response.clone().text());
    }
    return response;
  };
}

/** One tools/list of a bridge over `oxp`, served by serveHttp, from a v2 SDK client in the revision `mode` asks for. */
async function listThroughHttp(oxp: RunningServer, mode: Mode, options: Partial<McpBridgeOptions> = {}) {
  const asked: (string | null)[] = [];
  const bodies: string[] = [];
  const http = await serveHttp(createMcpBridge({ url: oxp.url, fetch: recordingOxp(asked), ...options }));
  const client = new Client({ name: "cache-test", version: "1.0.0" }, { versionNegotiation: { mode } });
  try {
    await client.connect(new StreamableHTTPClientTransport(new URL(http.url), { fetch: recordingMcp(bodies) }));
    await client.listTools();
  } finally {
    await client.close();
    await http.close();
  }
  return { asked, result: messageOf(bodies[0] ?? "").result } satisfies Listing;
}

let cached: RunningServer;
let keyed: RunningServer;
let uncached: RunningServer;
let scoped: RunningServer;
beforeAll(async () => {
  cached = await listen(createServer({ tools: [echo], logger: false, cache: { maxAgeSeconds: 120 } }), { port: 0 });
  // A server with authentication answers its lists `private` (`[cache.control]`).
  keyed = await listen(
    createServer({ tools: [echo], logger: false, auth: { apiKeys: [API_KEY] }, cache: { maxAgeSeconds: 30 } }),
    { port: 0 },
  );
  uncached = await listen(
    createServer({ tools: [echo], logger: false, extensions: ["annotations", "pagination", "search", "tasks"] }),
    { port: 0 },
  );
  // Offers oauth (each tool's required_scopes) beside cache; the bridge's API key is what it checks, so the
  // authorization server is never asked.
  scoped = await listen(
    createServer({
      tools: [echo, send],
      logger: false,
      auth: {
        apiKeys: [API_KEY],
        oauth: { authorizationServers: ["http://127.0.0.1:9/issuer"], resource: "https://tools.test.example/oxp" },
      },
      cache: { maxAgeSeconds: 15 },
    }),
    { port: 0 },
  );
});
afterAll(async () => {
  await cached.close();
  await keyed.close();
  await uncached.close();
  await scoped.close();
});

describe("tools/list in 2026-07-28", () => {
  it("gives the OXP list's ttl_ms and cache_scope as ttlMs and cacheScope", async () => {
    const { asked, result } = await listThroughHttp(cached, MODERN);
    expect(asked).toEqual(["annotations, cache"]);
    expect(result).toMatchObject({ ttlMs: 120_000, cacheScope: "public" });
  });

  it("gives a private scope where the OXP server says private (a server with authentication)", async () => {
    const { result } = await listThroughHttp(keyed, MODERN, { apiKey: API_KEY });
    expect(result).toMatchObject({ ttlMs: 30_000, cacheScope: "private" });
  });

  it("from an OXP server without the cache extension, asks for none and has the SDK's defaults (0, private)", async () => {
    const { asked, result } = await listThroughHttp(uncached, MODERN);
    expect(asked).toEqual(["annotations"]);
    expect(result).toMatchObject({ ttlMs: 0, cacheScope: "private" });
  });

  it("is private for a signed-in caller, whatever the OXP server says of the bridge's own list", async () => {
    const bridge = createMcpBridge({ url: cached.url });
    const caller: McpCaller = { userId: "ann", scopes: new Set(["oxp:tools:read"]) };
    // The bridge's servers for a caller, behind the SDK's own HTTP handler, reached in-process.
    const handler = createMcpHandler(() => bridge.createServer(caller), { legacy: "stateless" });
    const bodies: string[] = [];
    const inProcess: typeof fetch = (input, init) => handler.fetch(new Request(input, init));
    const client = new Client({ name: "cache-test", version: "1.0.0" }, { versionNegotiation: { mode: MODERN } });
    try {
      await client.connect(
        new StreamableHTTPClientTransport(new URL("http://127.0.0.1/mcp"), { fetch: recordingMcp(bodies, inProcess) }),
      );
      await client.listTools();
    } finally {
      await client.close();
      await handler.close();
    }
    expect(messageOf(bodies[0] ?? "").result).toMatchObject({ ttlMs: 120_000, cacheScope: "private" });
  });
});

describe("an OXP server that offers oauth and cache", () => {
  it("is asked for both with annotations on a 2026-07-28 tools/list, and for oauth alone on a 2025 one", async () => {
    const modern = await listThroughHttp(scoped, MODERN, { apiKey: API_KEY });
    expect(modern.asked).toEqual(["annotations, cache, oauth"]);
    expect(modern.result).toMatchObject({ ttlMs: 15_000, cacheScope: "private" });
    const legacy = await listThroughHttp(scoped, "legacy", { apiKey: API_KEY });
    expect(legacy.asked).toEqual(["annotations, oauth"]);
    expect(Object.keys(legacy.result)).toEqual(["tools"]);
  });

  it("gives each tool's required_scopes to the scopes a call needs, with a fetch given and without", async () => {
    const asked: (string | null)[] = [];
    const given = createMcpBridge({ url: scoped.url, apiKey: API_KEY, fetch: recordingOxp(asked) });
    const own = createMcpBridge({ url: scoped.url, apiKey: API_KEY });
    for (const bridge of [given, own]) {
      expect(await bridge.callScopes("Mail_Send")).toEqual(["oxp:tools:call", "mail:send"]);
      expect(await bridge.callScopes("Echo_Say")).toEqual(["oxp:tools:call"]);
      expect(await bridge.catalogScopes()).toEqual(["mail:send"]);
    }
    expect(asked).toEqual(["annotations, oauth"]);
  });
});

describe("tools/list in 2025-11-25", () => {
  it("has no cache fields, which that revision does not define: the bridge does not ask the OXP server for them", async () => {
    const { asked, result } = await listThroughHttp(cached, "legacy");
    expect(asked).toEqual(["annotations"]);
    expect(result).not.toHaveProperty("ttlMs");
    expect(result).not.toHaveProperty("cacheScope");
    expect(Object.keys(result)).toEqual(["tools"]);
  });
});

describe("the bridge's other GET /tools", () => {
  it("do not ask for cache: a search-tools search (in the summary view), and the catalog read that names its matches", async () => {
    const asked: (string | null)[] = [];
    const queries: string[] = [];
    const bridge = createMcpBridge({ url: cached.url, toolSearch: true, fetch: recordingOxp(asked, queries) });
    const http = await serveHttp(bridge);
    const client = new Client({ name: "cache-test", version: "1.0.0" }, { versionNegotiation: { mode: MODERN } });
    try {
      await client.connect(new StreamableHTTPClientTransport(new URL(http.url)));
      await client.callTool({ name: "search-tools", arguments: { query: "say" } });
    } finally {
      await client.close();
      await http.close();
    }
    expect(asked).toEqual(["search", "annotations"]);
    expect(queries).toEqual(["?q=say&view=summary", ""]);
  });
});

// The whole tool list with what a list's extensions add, against real @otc/server instances on loopback: each tool's
// required_scopes (`requiredScopes`, the oauth extension) and the list's ttl_ms and cache_scope (`readToolList`, the
// cache extension), each asked for only where the server's discovery document lists it.
import { createServer as createHttpServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createHandler, defineTool, listen, type RunningServer, type Tool } from "@otc/server/node";
import { verifies } from "@otc/test-helpers/verifies";
import type { ToolDefinition } from "@otc/types";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "./client.js";
import { OxpProtocolError } from "./errors.js";

const API_KEY = "the-tool-list-test-api-key";

const tools: Tool[] = [
  defineTool({
    toolkit: "Mail",
    name: "Count",
    version: "1.0.0",
    description: "Counts the mails.",
    inputSchema: {},
    outputSchema: { type: "number" },
    annotations: { read_only: true },
    run: () => 3,
  }),
  defineTool({
    toolkit: "Mail",
    name: "Send",
    version: "1.0.0",
    description: "Sends a mail.",
    inputSchema: { type: "object", properties: { to: { type: "string", description: "To whom." } } },
    outputSchema: null,
    requiredScopes: ["mail:send"],
    run: () => null,
  }),
];

let guarded: RunningServer;
let open: RunningServer;
let plain: RunningServer;
beforeAll(async () => {
  [guarded, open, plain] = await Promise.all([
    // oauth beside an API key: the key is what this client sends, so the authorization server is never asked.
    listen(
      createHandler({
        tools,
        logger: false,
        auth: {
          apiKeys: [API_KEY],
          oauth: { authorizationServers: ["http://127.0.0.1:9/issuer"], resource: "https://tools.test.example/oxp" },
        },
        cache: { maxAgeSeconds: 45 },
      }),
      { port: 0 },
    ),
    listen(createHandler({ tools, logger: false, cache: { maxAgeSeconds: 120 } }), { port: 0 }),
    // Every extension off: discovery lists none, and no request may ask for one.
    listen(createHandler({ tools, logger: false, extensions: false }), { port: 0 }),
  ]);
});
afterAll(() => Promise.all([guarded, open, plain].map((running) => running?.close())));

/** A client of `server` whose fetch records each GET /tools's `OXP-Extensions` (null: none asked) and its query. */
function observed(server: RunningServer, apiKey?: string) {
  const asked: (string | null)[] = [];
  const queries: string[] = [];
  const client = createClient({
    baseUrl: server.url,
    ...(apiKey === undefined ? {} : { apiKey }),
    fetch: async (input, init) => {
      const request = new Request(input, init);
      const url = new URL(request.url);
      if (url.pathname === "/tools") {
        asked.push(request.headers.get("oxp-extensions"));
        queries.push(url.search);
      }
      return fetch(request);
    },
  });
  return { client, asked, queries };
}

/** Each definition's id and required_scopes, the field left out where a definition has none. */
const scopesOf = (list: readonly ToolDefinition[]) =>
  list.map(({ id, required_scopes }) => (required_scopes === undefined ? { id } : { id, required_scopes }));

describe("requiredScopes", () => {
  verifies("oauth.required-scopes", "lists each tool's required_scopes from a server that offers oauth", async () => {
    const { client, asked } = observed(guarded, API_KEY);
    expect(scopesOf(await client.listTools({ requiredScopes: true }))).toEqual([
      { id: "Mail.Count@1.0.0" },
      { id: "Mail.Send@1.0.0", required_scopes: ["mail:send"] },
    ]);
    // With annotations too, in the discovery document's order; without the option, the tools come without scopes.
    const annotated = await client.listTools({ requiredScopes: true, annotations: true });
    expect(annotated.find(({ id }) => id === "Mail.Count@1.0.0")?.annotations).toEqual({ read_only: true });
    expect(scopesOf(annotated)).toEqual(scopesOf(await client.listTools({ requiredScopes: true })));
    expect(scopesOf(await client.listTools())).toEqual([{ id: "Mail.Count@1.0.0" }, { id: "Mail.Send@1.0.0" }]);
    expect(asked).toEqual(["oauth", "annotations, oauth", "oauth", null]);
  });

  it("are asked of every page iterateTools reads", async () => {
    const { client, asked, queries } = observed(guarded, API_KEY);
    const listed: ToolDefinition[] = [];
    for await (const tool of client.iterateTools({ requiredScopes: true, limit: 1 })) {
      listed.push(tool);
    }
    expect(scopesOf(listed)).toEqual([
      { id: "Mail.Count@1.0.0" },
      { id: "Mail.Send@1.0.0", required_scopes: ["mail:send"] },
    ]);
    expect(asked).toEqual(["pagination, oauth", "pagination, oauth"]);
    expect(queries).toEqual(["?limit=1", expect.stringMatching(/^\?limit=1&cursor=/)]);
  });
});

describe("readToolList", () => {
  verifies("cache.body-fields", "answers the list with its ttl_ms and cache_scope, asking for cache", async () => {
    const { client, asked } = observed(open);
    const list = await client.readToolList();
    expect(list).toEqual({ items: await client.listTools(), ttl_ms: 120_000, cache_scope: "public" });
    expect(asked).toEqual(["cache", null]);
  });

  it("says private for a server with authentication, and takes listTools' options (scopes, annotations)", async () => {
    const { client, asked } = observed(guarded, API_KEY);
    const { items, ...fields } = await client.readToolList({ requiredScopes: true, annotations: true });
    expect(fields).toEqual({ ttl_ms: 45_000, cache_scope: "private" });
    expect(scopesOf(items)).toEqual([
      { id: "Mail.Count@1.0.0" },
      { id: "Mail.Send@1.0.0", required_scopes: ["mail:send"] },
    ]);
    expect(items[0]?.annotations).toEqual({ read_only: true });
    expect(asked).toEqual(["annotations, cache, oauth"]);
  });

  it("asks a server that offers neither extension for nothing, and answers the list alone", async () => {
    const { client, asked } = observed(plain);
    const list = await client.readToolList({ requiredScopes: true });
    expect(list).toEqual({ items: await client.listTools() });
    expect(scopesOf(list.items)).toEqual([{ id: "Mail.Count@1.0.0" }, { id: "Mail.Send@1.0.0" }]);
    expect(asked).toEqual([null, null]);
  });
});

/** What a stand-in server that offers `extensions` answers for GET /tools: a status, headers and body. */
type ListAnswer = { status: number; headers?: Record<string, string>; body: unknown };

/**
 * A node:http server on 127.0.0.1 that offers `extensions` in discovery and answers each GET /tools with the next of
 * `answers` (the last one again once they run out); `seen` gets each GET /tools's headers.
 */
async function standIn(extensions: string[], answers: ListAnswer[]) {
  const seen: IncomingHttpHeaders[] = [];
  const server: Server = createHttpServer((req, res) => {
    if (req.url === "/.well-known/oxp") {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ oxp_versions: ["1.0"], extensions }));
      return;
    }
    seen.push(req.headers);
    const answer = answers[Math.min(seen.length, answers.length) - 1] as ListAnswer;
    res.writeHead(answer.status, { "content-type": "application/json", ...answer.headers });
    res.end(JSON.stringify(answer.body));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

const definition = {
  id: "Echo.Say@1.0.0",
  name: "Say",
  description: "Says it back.",
  version: "1.0.0",
  input_schema: {},
  output_schema: { type: "string" },
};

describe("readToolList's checks of the cache fields", () => {
  it.each([
    ["a negative ttl_ms", { ttl_ms: -1, cache_scope: "public" }],
    ["a ttl_ms that is no whole number", { ttl_ms: 1.5 }],
    ["a scope the spec does not name", { ttl_ms: 1_000, cache_scope: "shared" }],
  ])("takes %s for an answer that is not a ToolListResponse", async (_name, fields) => {
    const server = await standIn(["cache"], [{ status: 200, body: { items: [definition], ...fields } }]);
    try {
      const error = await createClient({ baseUrl: server.url })
        .readToolList()
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(OxpProtocolError);
      expect((error as Error).message).toMatch(/not a ToolListResponse/);
    } finally {
      await server.close();
    }
  });

  it("retries a 503 as listTools does, and answers the fields of the list that came", async () => {
    const server = await standIn(
      ["cache"],
      [
        { status: 503, headers: { "retry-after": "0" }, body: { message: "Starting" } },
        { status: 200, body: { items: [definition], ttl_ms: 5_000, cache_scope: "private" } },
      ],
    );
    try {
      const list = await createClient({ baseUrl: server.url }).readToolList();
      expect(list).toEqual({ items: [definition], ttl_ms: 5_000, cache_scope: "private" });
      expect(server.seen.map((headers) => headers["oxp-extensions"])).toEqual(["cache", "cache"]);
    } finally {
      await server.close();
    }
  });

  it("leaves out fields a server that does not offer cache sent unasked", async () => {
    const server = await standIn([], [{ status: 200, body: { items: [definition], ttl_ms: 5_000 } }]);
    try {
      expect(await createClient({ baseUrl: server.url }).readToolList()).toEqual({ items: [definition] });
      expect(server.seen.map((headers) => headers["oxp-extensions"])).toEqual([undefined]);
    } finally {
      await server.close();
    }
  });
});

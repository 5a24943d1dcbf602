// The client's side of docs/protocol.md 9 against real @otc/server instances on loopback: discovery, asking for
// extensions only where they are offered, annotations, and paging through a catalog of 250 tools.
import { createServer as createHttpServer } from "node:http";
import type { AddressInfo } from "node:net";
import { createHandler, defineTool, listen, type RunningServer, type Tool } from "@otc/server/node";
import { verifies } from "@otc/test-helpers/verifies";
import type { DiscoveryDocument, ToolDefinition } from "@otc/types";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { toAnthropicTools, toOpenAITools } from "./adapters.js";
import { type ClientOptions, createClient } from "./client.js";
import { OxpProtocolError, OxpResponseTooLargeError, OxpServerError } from "./errors.js";

const tools: Tool[] = [
  defineTool({
    toolkit: "Calculator",
    name: "Add",
    version: "1.0.0",
    description: "Adds two numbers.",
    inputSchema: {
      type: "object",
      properties: { a: { type: "number", description: "A." }, b: { type: "number", description: "B." } },
      required: ["a", "b"],
    },
    outputSchema: { type: "number" },
    annotations: { title: "Add two numbers", read_only: true, idempotent: true, open_world: false },
    run: ({ a, b }) => a + b,
  }),
  ...["1.0.0", "2.0.0"].map((version) =>
    defineTool({
      toolkit: "Greeting",
      name: "Hello",
      version,
      description: `Greets, version ${version}.`,
      inputSchema: {},
      outputSchema: { type: "string" },
      ...(version === "1.0.0" ? { deprecationMessage: "Use Greeting.Hello@2.0.0." } : {}),
      run: () => `hello from ${version}`,
    }),
  ),
  defineTool({
    toolkit: "Mail",
    name: "Purge",
    version: "1.0.0",
    description: "Deletes every mail.",
    inputSchema: {},
    outputSchema: null,
    annotations: { destructive: true },
    run: () => null,
  }),
];

/** 250 tools in two toolkits, Alpha (150) then Beta (100): three pages of the default 100. */
const many: Tool[] = Array.from({ length: 250 }, (_, index) =>
  defineTool({
    toolkit: index < 150 ? "Alpha" : "Beta",
    name: `T${index}`,
    version: "1.0.0",
    description: "One of many.",
    inputSchema: {},
    outputSchema: {},
    annotations: { read_only: index % 2 === 0 },
    run: () => index,
  }),
);

/** A real node:http OXP server on 127.0.0.1, port 0. */
const start = (catalog: Tool[], extensions?: false) =>
  listen(createHandler({ tools: catalog, logger: false, ...(extensions === false ? { extensions } : {}) }), {
    port: 0,
  });

let server: RunningServer;
/** The same catalog with every extension off: an OXP 1.0 server that still answers discovery. */
let plain: RunningServer;
let big: RunningServer;
let bigPlain: RunningServer;
beforeAll(async () => {
  [server, plain, big, bigPlain] = await Promise.all([
    start(tools),
    start(tools, false),
    start(many),
    start(many, false),
  ]);
});
afterAll(() => Promise.all([server, plain, big, bigPlain].map((running) => running?.close())));

/** One request the client sent, as the server received it. */
interface Sent {
  path: string;
  query: Record<string, string>;
  extensions: string | null;
}

/**
 * A client of `baseUrl` whose fetch records each request; `answer` may answer a request itself (a server that
 * differs from ours on one path), else the real server does.
 */
function observed(
  baseUrl: string,
  options: { answer?: (request: Request) => Response | undefined } & Partial<ClientOptions> = {},
) {
  const sent: Sent[] = [];
  const { answer, ...clientOptions } = options;
  const client = createClient({
    baseUrl,
    retry: { maxAttempts: 1 },
    ...clientOptions,
    fetch: async (input, init) => {
      const request = new Request(input, init);
      const url = new URL(request.url);
      sent.push({
        path: url.pathname,
        query: Object.fromEntries(url.searchParams),
        extensions: request.headers.get("oxp-extensions"),
      });
      return answer?.(request) ?? fetch(request);
    },
  });
  return { client, sent };
}

/** What an OXP 1.0 server answers on a path it does not serve. */
const notFound = (request: Request) =>
  new URL(request.url).pathname === "/.well-known/oxp"
    ? Response.json({ message: "No route GET /.well-known/oxp" }, { status: 404 })
    : undefined;

const ids = (list: readonly ToolDefinition[]) => list.map((tool) => tool.id);

async function collect<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of iterable) {
    out.push(item);
  }
  return out;
}

describe("discover", () => {
  verifies("extensions.discovery", "reads the server's discovery document, and keeps it", async () => {
    const { client, sent } = observed(server.url);
    const document = await client.discover();
    expect(document.oxp_versions).toEqual(["1.0"]);
    expect(document.extensions).toEqual(expect.arrayContaining(["annotations", "pagination"]));
    // A copy each time: changing it changes nothing the client keeps.
    const offered = [...document.extensions];
    document.extensions.length = 0;
    expect(await client.discover()).toEqual({ oxp_versions: ["1.0"], extensions: offered });
    expect(sent.map((request) => request.path)).toEqual(["/.well-known/oxp"]);
    expect(await createClient({ baseUrl: plain.url }).discover()).toEqual({ oxp_versions: ["1.0"], extensions: [] });
  });

  it("takes a 404 for an OXP 1.0 server without extensions, asked once per client", async () => {
    const { client, sent } = observed(server.url, { answer: notFound });
    expect(await client.discover()).toEqual({ oxp_versions: ["1.0"], extensions: [] });
    expect(await client.discover()).toEqual({ oxp_versions: ["1.0"], extensions: [] });
    await client.listTools({ annotations: true });
    expect(sent.map((request) => request.path)).toEqual(["/.well-known/oxp", "/tools"]);
    expect(sent[1]?.extensions).toBeNull();
  });

  it("throws another answer, not kept: the next call asks again", async () => {
    let broken = true;
    const { client, sent } = observed(server.url, {
      answer: (request) =>
        broken && new URL(request.url).pathname === "/.well-known/oxp" ? Response.json({ oxp: true }) : undefined,
    });
    const error = await client.discover().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OxpProtocolError);
    expect((error as Error).message).toMatch(/not a DiscoveryDocument/);
    broken = false;
    expect((await client.discover()).extensions).toContain("annotations");
    expect(sent.map((request) => request.path)).toEqual(["/.well-known/oxp", "/.well-known/oxp"]);
  });

  it("given a document already read, asks for none and uses only the extensions it lists", async () => {
    const discovery: DiscoveryDocument = { oxp_versions: ["1.0"], extensions: ["pagination"] };
    const { client, sent } = observed(server.url, { discovery });
    // The caller's object is copied: changing it later changes nothing the client uses.
    discovery.extensions.push("annotations");
    expect(await client.discover()).toEqual({ oxp_versions: ["1.0"], extensions: ["pagination"] });
    const listed = await client.listTools({ annotations: true });
    expect(listed.some((tool) => tool.annotations !== undefined)).toBe(false);
    expect(sent).toEqual([{ path: "/tools", query: {}, extensions: null }]);
    expect(() => createClient({ baseUrl: server.url, discovery: { extensions: [] } as never })).toThrow(TypeError);
  });

  it("reads at most 64 KiB of a discovery document", async () => {
    const hostile = createHttpServer((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(`{"oxp_versions": ["1.0"], "extensions": [${'"x",'.repeat(100_000)}"y"]}`);
    });
    await new Promise<void>((resolve) => hostile.listen(0, "127.0.0.1", resolve));
    try {
      const client = createClient({ baseUrl: `http://127.0.0.1:${(hostile.address() as AddressInfo).port}` });
      const error = await client.discover().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(OxpResponseTooLargeError);
      expect((error as OxpResponseTooLargeError).limitBytes).toBe(64 * 1024);
    } finally {
      hostile.closeAllConnections();
      await new Promise((resolve) => hostile.close(resolve));
    }
  });
});

describe("listTools", () => {
  it("without options sends what an OXP 1.0 client sends, and nothing more", async () => {
    const { client, sent } = observed(server.url);
    const listed = await client.listTools();
    expect(sent).toEqual([{ path: "/tools", query: {}, extensions: null }]);
    for (const tool of listed) {
      expect(tool).not.toHaveProperty("annotations");
      expect(tool).not.toHaveProperty("deprecation_message");
    }
    expect(listed).toEqual(await createClient({ baseUrl: plain.url }).listTools());
  });

  verifies(
    ["extensions.negotiation", "annotations.listed-when-asked"],
    "asks for annotations where the server offers them, and gets each tool's hints and deprecation",
    async () => {
      const { client, sent } = observed(server.url);
      const listed = await client.listTools({ annotations: true });
      expect(sent).toEqual([
        { path: "/.well-known/oxp", query: {}, extensions: null },
        { path: "/tools", query: {}, extensions: "annotations" },
      ]);
      const byId = new Map(listed.map((tool) => [tool.id, tool]));
      expect(byId.get("Calculator.Add@1.0.0")?.annotations).toEqual({
        title: "Add two numbers",
        read_only: true,
        idempotent: true,
        open_world: false,
      });
      expect(byId.get("Mail.Purge@1.0.0")?.annotations).toEqual({ destructive: true });
      expect(byId.get("Greeting.Hello@1.0.0")?.deprecation_message).toBe("Use Greeting.Hello@2.0.0.");
      expect(byId.get("Greeting.Hello@2.0.0")).not.toHaveProperty("deprecation_message");
      // Discovery is kept: the next list asks for annotations at once.
      await client.listTools({ annotations: true });
      expect(sent.map((request) => request.path)).toEqual(["/.well-known/oxp", "/tools", "/tools"]);
    },
  );

  verifies(
    "extensions.negotiation",
    "does not ask a server whose discovery document lists no extension (extensions: false)",
    async () => {
      const { client, sent } = observed(plain.url);
      const listed = await client.listTools({ annotations: true });
      expect(sent).toEqual([
        { path: "/.well-known/oxp", query: {}, extensions: null },
        { path: "/tools", query: {}, extensions: null },
      ]);
      expect(listed).toEqual(await createClient({ baseUrl: server.url }).listTools());
    },
  );

  it("lists as OXP 1.0 when discovery answers neither a DiscoveryDocument nor a 404", async () => {
    for (const odd of [
      () => Response.json({ message: "Authentication required" }, { status: 401 }),
      () => Response.json({ extensions: "all" }),
      () => new Response("<html>hello</html>", { headers: { "content-type": "text/html" } }),
    ]) {
      const { client, sent } = observed(server.url, {
        answer: (request) => (new URL(request.url).pathname === "/.well-known/oxp" ? odd() : undefined),
      });
      const listed = await client.listTools({ annotations: true });
      expect(sent.map((request) => [request.path, request.extensions])).toEqual([
        ["/.well-known/oxp", null],
        ["/tools", null],
      ]);
      expect(listed.some((tool) => "annotations" in tool)).toBe(false);
    }
  });
});

describe("iterateTools", () => {
  verifies("pagination.pages", "follows next_cursor through every page, in the order of the whole list", async () => {
    const whole = await createClient({ baseUrl: big.url }).listTools();
    expect(whole).toHaveLength(250);
    const { client, sent } = observed(big.url);
    expect(ids(await collect(client.iterateTools()))).toEqual(ids(whole));
    // Discovery, then three pages of the server's default 100.
    expect(sent.map((request) => [request.path, request.extensions, Object.keys(request.query)])).toEqual([
      ["/.well-known/oxp", null, []],
      ["/tools", "pagination", []],
      ["/tools", "pagination", ["cursor"]],
      ["/tools", "pagination", ["cursor"]],
    ]);
    sent.length = 0;
    expect(ids(await collect(client.iterateTools({ limit: 60 })))).toEqual(ids(whole));
    expect(sent.map((request) => request.query.limit)).toEqual(["60", "60", "60", "60", "60"]);
  });

  verifies("pagination.toolkit-filter", "keeps one toolkit's tools, paged by the server or filtered here", async () => {
    const beta = ids(await createClient({ baseUrl: big.url }).listTools()).filter((id) => id.startsWith("Beta."));
    expect(beta).toHaveLength(100);
    const paged = observed(big.url);
    expect(ids(await collect(paged.client.iterateTools({ toolkit: "Beta", limit: 40 })))).toEqual(beta);
    expect(paged.sent.slice(1).map((request) => request.query.toolkit)).toEqual(["Beta", "Beta", "Beta"]);
    // A server without pagination gives its whole list once; the filter is applied here, exactly as ids match.
    const whole = observed(bigPlain.url);
    expect(ids(await collect(whole.client.iterateTools({ toolkit: "Beta", limit: 40 })))).toEqual(beta);
    expect(whole.sent).toEqual([
      { path: "/.well-known/oxp", query: {}, extensions: null },
      { path: "/tools", query: {}, extensions: null },
    ]);
    expect(await collect(whole.client.iterateTools({ toolkit: "beta" }))).toEqual([]);
    expect(await collect(paged.client.iterateTools({ toolkit: "beta" }))).toEqual([]);
  });

  it("without pagination on the server, yields the whole list from one GET", async () => {
    const { client, sent } = observed(bigPlain.url);
    expect(await collect(client.iterateTools({ limit: 10 }))).toEqual(
      await createClient({ baseUrl: big.url }).listTools(),
    );
    expect(sent.map((request) => request.path)).toEqual(["/.well-known/oxp", "/tools"]);
    const old = observed(big.url, { answer: notFound });
    expect(await collect(old.client.iterateTools())).toHaveLength(250);
    expect(old.sent.map((request) => [request.path, request.extensions])).toEqual([
      ["/.well-known/oxp", null],
      ["/tools", null],
    ]);
  });

  verifies(
    ["extensions.negotiation", "pagination.pages"],
    "asks for annotations and pagination together, in the server's order",
    async () => {
      const { client, sent } = observed(big.url);
      const first = await client.iterateTools({ annotations: true, limit: 2 }).next();
      expect(first.value?.annotations).toEqual({ read_only: true });
      expect(sent.at(-1)).toEqual({ path: "/tools", query: { limit: "2" }, extensions: "annotations, pagination" });
    },
  );

  it("refuses a limit that is no whole number before asking anything; the server judges the rest", async () => {
    const { client, sent } = observed(big.url);
    for (const limit of [0, 1.5, -1, Number.NaN]) {
      await expect(client.iterateTools({ limit }).next()).rejects.toThrow(RangeError);
    }
    expect(sent).toEqual([]);
    const error = await client
      .iterateTools({ limit: 1001 })
      .next()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OxpServerError);
    expect((error as OxpServerError).status).toBe(400);
  });

  it("stops at a page that does not move on, instead of asking for it forever", async () => {
    const tool = (await createClient({ baseUrl: server.url }).listTools())[0];
    for (const page of [
      { items: [tool], next_cursor: "same" },
      { items: [], next_cursor: "next" },
    ]) {
      let pages = 0;
      const { client } = observed(server.url, {
        answer: (request) => {
          if (new URL(request.url).pathname !== "/tools") {
            return undefined;
          }
          pages++;
          return Response.json(pages === 1 ? { items: [tool], next_cursor: "same" } : page);
        },
      });
      const error = await collect(client.iterateTools()).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(OxpProtocolError);
      expect((error as Error).message).toMatch(/does not move on/);
      expect(pages).toBe(2);
    }
  });
});

describe("the LLM adapters", () => {
  it("leave annotations and deprecation messages out: neither format has a place for them", async () => {
    const annotated = await createClient({ baseUrl: server.url }).listTools({ annotations: true });
    const bare = await createClient({ baseUrl: server.url }).listTools();
    expect(annotated).not.toEqual(bare);
    expect(toOpenAITools(annotated, { strict: true })).toEqual(toOpenAITools(bare, { strict: true }));
    expect(toOpenAITools(annotated)).toEqual(toOpenAITools(bare));
    expect(toAnthropicTools(annotated)).toEqual(toAnthropicTools(bare));
  });
});

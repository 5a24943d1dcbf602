// The client's side of docs/protocol.md 9.5 against real @otc/server instances on loopback: searchTools and its pages,
// the summary view's type, getTools in the order asked (in runs of max_ids), listToolkits, and servers without search.
import { createHandler, defineTool, listen, type RunningServer, type Tool } from "@otc/server/node";
import { verifies } from "@otc/test-helpers/verifies";
import type { ToolDefinition, ToolSearchResponse } from "@otc/types";
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from "vitest";
import { toOpenAITools } from "./adapters.js";
import { type ClientOptions, createClient } from "./client.js";
import { OxpExtensionUnavailableError, OxpProtocolError, OxpServerError } from "./errors.js";
import type { ToolSearchMatch, ToolSearchResults, ToolSearchSummary } from "./search.js";

/** A tool of the test catalog: what it says of itself matters here, not what it does. */
const tool = (toolkit: string, name: string, description: string, more: Record<string, unknown> = {}): Tool =>
  defineTool({
    toolkit,
    name,
    version: "1.0.0",
    description,
    inputSchema: { type: "object", properties: {} },
    outputSchema: { type: "object" },
    run: () => ({}),
    ...more,
  } as never);

/** 250 tools that all match `widgets`, equally: ties are ordered by id, so every page is known in advance. */
const BULK = 250;

const catalog: Tool[] = [
  tool("Gmail", "SendEmail", "Send email. Sends an email.", {
    deprecationMessage: "Use Gmail.SendEmail@2.0.0.",
  }),
  tool("Gmail", "SendEmail", "Sends an email message, with attachments.", {
    version: "2.0.0",
    inputSchema: {
      type: "object",
      properties: { to: { type: "string", description: "The recipient's address." } },
      required: ["to"],
    },
    requirements: { user_id: true },
    annotations: { read_only: false, open_world: true },
  }),
  tool("Gmail", "ListEmails", "Lists the emails in the inbox, newest first."),
  tool("Slack", "PostMessage", "Posts a message to a channel."),
  ...Array.from({ length: BULK }, (_, n) => tool("Bulk", `Tool${String(n).padStart(3, "0")}`, "Turns widgets.")),
];

/** A real node:http OXP server on 127.0.0.1, port 0, with the extensions given (all by default). */
const start = (extensions?: false | ("annotations" | "pagination" | "search" | "tasks")[]) =>
  listen(
    createHandler({
      tools: catalog,
      toolkits: { Gmail: { description: "Google's mail." } },
      logger: false,
      ...(extensions !== undefined ? { extensions } : {}),
    }),
    { port: 0 },
  );

let server: RunningServer;
/** Pagination and annotations, but no search. */
let noSearch: RunningServer;
/** Every extension off: an OXP 1.0 server that answers discovery with none. */
let plain: RunningServer;
beforeAll(async () => {
  [server, noSearch, plain] = await Promise.all([start(), start(["annotations", "pagination"]), start(false)]);
});
afterAll(() => Promise.all([server, noSearch, plain].map((running) => running?.close())));

/** One request the client sent, as it left the client. */
interface Sent {
  path: string;
  query: Record<string, string>;
  extensions: string | null;
}

/** A client of `baseUrl` whose fetch records each request. */
function observed(baseUrl: string, options: Partial<ClientOptions> = {}) {
  const sent: Sent[] = [];
  const client = createClient({
    baseUrl,
    retry: { maxAttempts: 1 },
    ...options,
    fetch: async (input, init) => {
      const request = new Request(input, init);
      const url = new URL(request.url);
      sent.push({
        path: url.pathname,
        query: Object.fromEntries(url.searchParams),
        extensions: request.headers.get("oxp-extensions"),
      });
      return fetch(request);
    },
  });
  return { client, sent };
}

const ids = (items: readonly { id: string }[]) => items.map((item) => item.id);
const bulkId = (n: number) => `Bulk.Tool${String(n).padStart(3, "0")}@1.0.0`;

async function collect<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of iterable) {
    out.push(item);
  }
  return out;
}

describe("searchTools", () => {
  verifies(["search.query", "search.view"], "answers the matches best first, each a whole definition", async () => {
    const { client, sent } = observed(server.url);
    const found = await client.searchTools("send an email");
    expect(sent).toEqual([
      { path: "/.well-known/oxp", query: {}, extensions: null },
      { path: "/tools", query: { q: "send an email" }, extensions: "search" },
    ]);
    // The deprecated version says it more often, and still ranks below its replacement.
    expect(ids(found.items).slice(0, 2)).toEqual(["Gmail.SendEmail@2.0.0", "Gmail.SendEmail@1.0.0"]);
    const [best] = found.items;
    expect(best).toMatchObject({ toolkit: "Gmail", annotations: { open_world: true } });
    expect(best?.score).toBeGreaterThan(0);
    const scores = found.items.map((item) => item.score);
    expect([...scores].sort((a, b) => b - a)).toEqual(scores);
    expect(found.next_cursor).toBeUndefined();
    // Each match is the definition GET /tools lists, plus its toolkit and score: the adapters take it as is.
    // (Annotations come with a match whether or not they were asked for, so against the annotated definition.)
    const [listed] = await client.getTools(["Gmail.SendEmail@2.0.0"], { annotations: true });
    const { toolkit: _toolkit, score: _score, ...definition } = best as ToolSearchMatch;
    expect(definition).toEqual(listed);
    expect(toOpenAITools(found.items.slice(0, 1))[0]?.function.parameters).toMatchObject({ required: ["to"] });
    expect(await client.searchTools("zebra")).toEqual({ items: [] });
  });

  verifies("search.view", "view: summary leaves out schemas and requirements, and its type says so", async () => {
    const client = createClient({ baseUrl: server.url });
    const summary = await client.searchTools("Gmail.SendEmail@2.0.0", { view: "summary" });
    expectTypeOf(summary).toEqualTypeOf<ToolSearchResults<"summary">>();
    expectTypeOf(summary.items).toEqualTypeOf<ToolSearchSummary[]>();
    expectTypeOf<ToolSearchSummary>().not.toHaveProperty("input_schema");
    expectTypeOf<ToolSearchSummary>().not.toHaveProperty("requirements");
    // Both views are ToolSearchResponses; only the full one's items are ToolDefinitions.
    expectTypeOf(summary).toExtend<ToolSearchResponse>();
    expectTypeOf<ToolSearchSummary>().not.toExtend<ToolDefinition>();
    expectTypeOf<ToolSearchMatch>().toExtend<ToolDefinition>();
    const [item] = summary.items;
    expect(Object.keys(item ?? {}).sort()).toEqual(
      ["annotations", "description", "id", "name", "score", "toolkit", "version"].sort(),
    );
    const full = await client.searchTools("Gmail.SendEmail@2.0.0", { view: "full" });
    expectTypeOf(full.items).toEqualTypeOf<ToolSearchMatch[]>();
    expectTypeOf(await client.searchTools("x")).toEqualTypeOf<ToolSearchResults<"full">>();
    expect(full.items[0]).toHaveProperty("input_schema");
    expect(full.items[0]).toHaveProperty("requirements", { user_id: true });
    // A view chosen at run time types its items as either.
    const view = process.env.OTC_NO_SUCH_VARIABLE ? "full" : ("summary" as "full" | "summary");
    expectTypeOf((await client.searchTools("x", { view })).items).toEqualTypeOf<
      (ToolSearchSummary | ToolSearchMatch)[]
    >();
  });

  verifies("search.query", "gives `limit` matches a page and the next by cursor", async () => {
    const { client, sent } = observed(server.url);
    const first = await client.searchTools("widgets", { limit: 40, toolkit: "Bulk", view: "summary" });
    expect(ids(first.items)).toEqual(Array.from({ length: 40 }, (_, n) => bulkId(n)));
    expect(first.next_cursor).toEqual(expect.any(String));
    const second = await client.searchTools("widgets", {
      limit: 40,
      toolkit: "Bulk",
      view: "summary",
      cursor: first.next_cursor as string,
    });
    expect(ids(second.items)).toEqual(Array.from({ length: 40 }, (_, n) => bulkId(n + 40)));
    expect(sent.at(-1)?.query).toEqual({
      q: "widgets",
      toolkit: "Bulk",
      view: "summary",
      limit: "40",
      cursor: first.next_cursor,
    });
    // A cursor sent with another query is the server's 400, saying to search again.
    const error = await client
      .searchTools("turns", { limit: 40, toolkit: "Bulk", view: "summary", cursor: first.next_cursor as string })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OxpServerError);
    expect((error as OxpServerError).message).toBe("This cursor cannot be used: search again from the first page");
  });

  it("refuses an empty query, a limit that is no whole number or another view before asking anything", async () => {
    const { client, sent } = observed(server.url);
    for (const q of ["", "   ", undefined as unknown as string]) {
      await expect(client.searchTools(q)).rejects.toThrow(RangeError);
    }
    await expect(client.searchTools("x", { limit: 0 })).rejects.toThrow(RangeError);
    await expect(client.searchTools("x", { limit: 2.5 })).rejects.toThrow(RangeError);
    await expect(client.searchTools("x", { view: "tiny" as "full" })).rejects.toThrow(RangeError);
    await expect(client.iterateSearch("").next()).rejects.toThrow(RangeError);
    await expect(client.iterateSearch("x", { maxPages: 0 }).next()).rejects.toThrow(RangeError);
    expect(sent).toEqual([]);
    // The server judges the upper bounds.
    const error = await client.searchTools("x", { limit: 51 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OxpServerError);
    expect((error as OxpServerError).message).toBe("The search limit must be a whole number from 1 to 50");
  });
});

describe("iterateSearch", () => {
  verifies("search.query", "yields every match, best first, following next_cursor to the last page", async () => {
    const { client, sent } = observed(server.url);
    const all = await collect(client.iterateSearch("widgets", { limit: 50, view: "summary" }));
    expect(ids(all)).toEqual(Array.from({ length: BULK }, (_, n) => bulkId(n)));
    expectTypeOf(all).toEqualTypeOf<ToolSearchSummary[]>();
    // Discovery, then five pages of 50.
    expect(sent.map((request) => [request.path, Object.keys(request.query).sort()])).toEqual([
      ["/.well-known/oxp", []],
      ...Array.from({ length: 5 }, (_, page) => [
        "/tools",
        page === 0 ? ["limit", "q", "view"] : ["cursor", "limit", "q", "view"],
      ]),
    ]);
    const bounded = await collect(client.iterateSearch("widgets", { limit: 50, maxPages: 2 })).catch((e: unknown) => e);
    expect(bounded).toBeInstanceOf(OxpProtocolError);
    expect((bounded as Error).message).toBe(
      "GET /tools?q= has more pages than iterateSearch reads (maxPages: 2): stopped after page 2",
    );
    expect(await collect(client.iterateSearch("zebra"))).toEqual([]);
  });
});

describe("getTools", () => {
  verifies("search.ids", "answers the definitions named, in the order named, each once", async () => {
    const { client, sent } = observed(server.url);
    const tools = await client.getTools([
      "Slack.PostMessage",
      "Gmail.SendEmail@1",
      "Gmail.SendEmail",
      "Gmail.SendEmail@2.0.0",
    ]);
    expect(ids(tools)).toEqual(["Slack.PostMessage@1.0.0", "Gmail.SendEmail@1.0.0", "Gmail.SendEmail@2.0.0"]);
    expect(sent.at(-1)).toEqual({
      path: "/tools",
      query: { ids: "Slack.PostMessage,Gmail.SendEmail@1,Gmail.SendEmail,Gmail.SendEmail@2.0.0" },
      extensions: "search",
    });
    // Without annotations asked for, as GET /tools lists them; with it, annotated.
    expect(tools[2]).not.toHaveProperty("annotations");
    const [annotated] = await client.getTools(["Gmail.SendEmail"], { annotations: true });
    expect(sent.at(-1)?.extensions).toBe("annotations, search");
    expect(annotated?.annotations).toEqual({ read_only: false, open_world: true });
    expect(await client.getTools([])).toEqual([]);
    expectTypeOf(client.getTools).returns.resolves.toEqualTypeOf<ToolDefinition[]>();
  });

  verifies("search.ids", "asks for more than 100 ids in runs of 100, and puts them back in order", async () => {
    const { client, sent } = observed(server.url);
    // Backwards, with the first id named again at the end: in order, each once.
    const wanted = [...Array.from({ length: BULK }, (_, n) => `Bulk.Tool${String(BULK - 1 - n).padStart(3, "0")}`)];
    const tools = await client.getTools([...wanted, wanted[0] as string]);
    expect(ids(tools)).toEqual(wanted.map((id) => `${id}@1.0.0`));
    const runs = sent.filter((request) => request.path === "/tools").map((request) => request.query.ids?.split(","));
    expect(runs.map((run) => run?.length)).toEqual([100, 100, 51]);
    expect(runs.flat()).toEqual([...wanted, wanted[0]]);
  });

  it("takes the run's size from the discovery document's max_ids", async () => {
    const document = await createClient({ baseUrl: server.url }).discover();
    const { client, sent } = observed(server.url, {
      discovery: {
        ...document,
        extension_info: { search: { max_ids: 7, max_limit: 50, max_query_length: 256, max_terms: 32 } },
      },
    });
    const wanted = Array.from({ length: 20 }, (_, n) => bulkId(n));
    expect(ids(await client.getTools(wanted))).toEqual(wanted);
    expect(sent.map((request) => request.query.ids?.split(",").length)).toEqual([7, 7, 6]);
  });

  verifies("search.ids", "throws the server's 400 naming the ids that name no tool, in whichever run", async () => {
    const { client, sent } = observed(server.url);
    const first = await client.getTools(["Slack.PostMessage", "Gmail.Nope", "Slack.PostMessage@9"]).catch((e) => e);
    expect(first).toBeInstanceOf(OxpServerError);
    expect((first as OxpServerError).status).toBe(400);
    expect((first as OxpServerError).developerMessage).toBe(
      "'Gmail.Nope', 'Slack.PostMessage@9' are not the id of a tool on this server.",
    );
    sent.length = 0;
    const wanted = [...Array.from({ length: 150 }, (_, n) => bulkId(n)), "Bulk.Missing"];
    const later = await client.getTools(wanted).catch((e: unknown) => e);
    expect((later as OxpServerError).developerMessage).toBe("'Bulk.Missing' is not the id of a tool on this server.");
    expect(sent.map((request) => request.query.ids?.split(",").length)).toEqual([100, 51]);
  });

  it("refuses an id that is empty or holds a comma before asking anything", async () => {
    const { client, sent } = observed(server.url);
    await expect(client.getTools(["Slack.PostMessage,Gmail.SendEmail"])).rejects.toThrow(/no comma/);
    await expect(client.getTools([""])).rejects.toThrow(RangeError);
    await expect(client.getTools("Slack.PostMessage" as unknown as string[])).rejects.toThrow(RangeError);
    expect(sent).toEqual([]);
  });
});

describe("listToolkits", () => {
  verifies("search.toolkits", "lists each toolkit by name, with its description and number of tools", async () => {
    const { client, sent } = observed(server.url);
    expect(await client.listToolkits()).toEqual([
      { name: "Bulk", tool_count: BULK },
      { name: "Gmail", description: "Google's mail.", tool_count: 2 },
      { name: "Slack", tool_count: 1 },
    ]);
    expect(sent.at(-1)).toEqual({ path: "/toolkits", query: {}, extensions: "search" });
  });
});

describe("a server without search", () => {
  verifies(
    "search.ignored-without-header",
    "is asked for nothing but discovery: each method throws OxpExtensionUnavailableError",
    async () => {
      for (const running of [noSearch, plain]) {
        const { client, sent } = observed(running.url);
        const outcomes = await Promise.all([
          client.searchTools("email").catch((e: unknown) => e),
          collect(client.iterateSearch("email")).catch((e: unknown) => e),
          client.getTools(["Gmail.SendEmail"]).catch((e: unknown) => e),
          client.listToolkits().catch((e: unknown) => e),
        ]);
        for (const outcome of outcomes) {
          expect(outcome).toBeInstanceOf(OxpExtensionUnavailableError);
          expect((outcome as OxpExtensionUnavailableError).extension).toBe("search");
        }
        expect((outcomes[0] as Error).message).toBe(
          "searchTools (GET /tools?q=) needs the search extension, which the server does not offer (GET /.well-known/oxp)",
        );
        expect(new Set(sent.map((request) => request.path))).toEqual(new Set(["/.well-known/oxp"]));
      }
    },
  );

  it("that a stale discovery document says has it: its whole list is refused, never taken for matches", async () => {
    // The server ignores q and ids, as an OXP 1.0 server does, and answers its whole list.
    const client = createClient({ baseUrl: plain.url, discovery: { oxp_versions: ["1.0"], extensions: ["search"] } });
    const search = await client.searchTools("email").catch((e: unknown) => e);
    expect(search).toBeInstanceOf(OxpProtocolError);
    expect((search as Error).message).toMatch(/^GET \/tools\?q= answered a body that is not a ToolSearchResponse/);
    const named = await client.getTools(["Gmail.SendEmail"]).catch((e: unknown) => e);
    expect(named).toBeInstanceOf(OxpProtocolError);
    expect((named as Error).message).toBe(
      `GET /tools?ids= answered ${catalog.length} tools for 1 ids: more than were asked for`,
    );
    // Its 404 for /toolkits is thrown as the server answered it.
    expect(await client.listToolkits().catch((e: unknown) => e)).toMatchObject({ status: 404 });
  });
});

describe("a server that answers summaries for the full view", () => {
  it("is an OxpProtocolError: a full match is a whole definition, as its type says", async () => {
    // The real server, asked for the summary view behind the client's back.
    const client = createClient({
      baseUrl: server.url,
      fetch: (input, init) => {
        const request = new Request(input, init);
        const url = new URL(request.url);
        if (url.searchParams.has("q")) {
          url.searchParams.set("view", "summary");
        }
        return fetch(new Request(url, request));
      },
    });
    const error = await client.searchTools("Gmail.SendEmail@2.0.0").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OxpProtocolError);
    expect((error as Error).message).toBe(
      "GET /tools?q= answered, in the full view, a match without its input_schema or output_schema (Gmail.SendEmail@2.0.0)",
    );
    const [summary] = (await client.searchTools("Gmail.SendEmail@2.0.0", { view: "summary" })).items;
    expect(summary?.id).toBe("Gmail.SendEmail@2.0.0");
  });
});

describe("listTools", () => {
  it("stays the list: typed ToolDefinition[], asked without search, whatever the server offers", async () => {
    const { client, sent } = observed(server.url);
    const listed = await client.listTools();
    expectTypeOf(client.listTools).returns.resolves.toEqualTypeOf<ToolDefinition[]>();
    expect(listed).toHaveLength(catalog.length);
    expect(listed[0]).not.toHaveProperty("score");
    expect(sent).toEqual([{ path: "/tools", query: {}, extensions: null }]);
  });
});

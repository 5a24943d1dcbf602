// docs/protocol.md 9.5 and 9.9 over HTTP: ranked search, ids, toolkits, and the cache extension's headers and fields, on every adapter.
import { verifies } from "@otc/test-helpers/verifies";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { searchTokens } from "../src/core/index.js";
import { defineTool, listen, type ServerOptions, type Tool } from "../src/index.js";
import { callTool, expectError, expectSchema, makeServer, type Reply, send } from "./harness.js";

/** A tool of the test catalog: what it says of itself matters here, not what it does. */
const tool = (spec: Record<string, unknown> & { toolkit: string; name: string }): Tool =>
  defineTool({
    version: "1.0.0",
    description: `${spec.name} of ${spec.toolkit}.`,
    inputSchema: { type: "object", properties: {} },
    outputSchema: { type: "object" },
    run: () => ({ ran: `${spec.toolkit}.${spec.name}` }),
    ...spec,
  } as never);

const CATALOG: Tool[] = [
  // The deprecated version says "send email" more often than its replacement: only its deprecation puts it lower.
  tool({
    toolkit: "Gmail",
    name: "SendEmail",
    description: "Send email. Sends an email to send email quickly.",
    deprecationMessage: "Use Gmail.SendEmail@2.0.0, which takes attachments.",
  }),
  tool({
    toolkit: "Gmail",
    name: "SendEmail",
    version: "2.0.0",
    description: "Sends an email message, with attachments.",
    inputSchema: {
      type: "object",
      properties: {
        to: { type: "string", description: "The recipient's address." },
        format: { type: "string", description: "How the body is written.", enum: ["html", "plain"] },
      },
    },
    requirements: { user_id: true },
    annotations: { read_only: false, destructive: false, idempotent: false, open_world: true },
  }),
  tool({ toolkit: "Gmail", name: "ListEmails", description: "Lists the emails in the inbox, newest first." }),
  tool({
    toolkit: "Slack",
    name: "PostMessage",
    description: "Posts a message to a channel.",
    inputSchema: {
      type: "object",
      properties: { channel: { type: "string", description: "Where it goes, for example #général." } },
    },
  }),
  tool({
    toolkit: "Calendar",
    name: "CreateEvent",
    description: "Schedules a meeting.",
    inputSchema: {
      type: "object",
      properties: { attendees: { type: "array", description: "Who is invited.", items: { type: "string" } } },
    },
  }),
  tool({ toolkit: "Mail", name: "Email", description: "Checks that an address is deliverable." }),
  ...Array.from({ length: 60 }, (_, n) => tool({ toolkit: "Bulk", name: `Tool${n}`, description: "Turns widgets." })),
];

const TOOLKITS: ServerOptions["toolkits"] = {
  Gmail: { description: "Google's mail." },
  Slack: { description: "Team chat." },
};

let baseUrl: string;
let close: () => Promise<void>;
beforeAll(async () => {
  const running = await listen(
    makeServer({ tools: CATALOG, toolkits: TOOLKITS, validateResponses: true, logger: false }),
    { port: 0 },
  );
  baseUrl = running.url;
  close = running.close;
});
afterAll(() => close?.());

const asking = (extensions: string, headers: Record<string, string> = {}) => ({
  headers: { "OXP-Extensions": extensions, ...headers },
});
const search = (query: string, extensions = "search", headers: Record<string, string> = {}) =>
  send(`${baseUrl}/tools?${query}`, asking(extensions, headers));
const q = (text: string, more = "") => search(`q=${encodeURIComponent(text)}${more}`);
const ids = (reply: Reply): string[] => reply.body.items.map((item: { id: string }) => item.id);

describe("a search", () => {
  verifies("search.query", "answers the matches best first, each with its toolkit and a score", async () => {
    const reply = await q("send an email");
    expect(reply.status).toBe(200);
    expectSchema("ToolSearchResponse", reply.body);
    expect(reply.headers.get("oxp-extensions")).toBe("search");
    expect(ids(reply).slice(0, 2)).toEqual(["Gmail.SendEmail@2.0.0", "Gmail.SendEmail@1.0.0"]);
    const scores = reply.body.items.map((item: { score: number }) => item.score);
    expect(scores.every((score: number) => score > 0)).toBe(true);
    expect([...scores].sort((a, b) => b - a)).toEqual(scores);
    expect(reply.body.items[0].toolkit).toBe("Gmail");
    expect(reply.body).not.toHaveProperty("next_cursor");
    expect((await q("zebra")).body).toEqual({ items: [] });
  });

  verifies("search.query", "answers `limit` matches at a time, 10 by default, and walks them by cursor", async () => {
    const first = await q("widgets");
    expect(first.body.items).toHaveLength(10);
    const seen: string[] = [];
    let page = await q("widgets", "&limit=25");
    const sizes: number[] = [];
    for (;;) {
      sizes.push(page.body.items.length);
      seen.push(...ids(page));
      if (page.body.next_cursor === undefined) {
        break;
      }
      page = await q("widgets", `&limit=25&cursor=${page.body.next_cursor}`);
    }
    expect(sizes).toEqual([25, 25, 10]);
    expect(new Set(seen).size).toBe(60);
  });

  verifies("search.view", "summary leaves out schemas and requirements; full is the listed definition", async () => {
    const listed = await send(`${baseUrl}/tools`, asking("annotations"));
    const definition = listed.body.items.find((item: { id: string }) => item.id === "Gmail.SendEmail@2.0.0");
    const full = (await q("Gmail.SendEmail@2.0.0")).body.items[0];
    const { toolkit, score, ...rest } = full;
    expect(toolkit).toBe("Gmail");
    expect(score).toBeGreaterThan(0);
    expect(rest).toEqual(definition);
    const summary = (await q("Gmail.SendEmail@2.0.0", "&view=summary")).body;
    expectSchema("ToolSearchResponse", summary);
    expect(Object.keys(summary.items[0]).sort()).toEqual(
      ["annotations", "description", "id", "name", "score", "toolkit", "version"].sort(),
    );
    // Annotations and deprecation travel without the annotations extension asked for.
    const deprecated = (await q("Gmail.SendEmail@1.0.0", "&view=summary")).body.items[0];
    expect(deprecated.deprecation_message).toBe("Use Gmail.SendEmail@2.0.0, which takes attachments.");
    expect(full.annotations).toMatchObject({ open_world: true });
  });

  verifies("search.compose", "keeps one toolkit's matches with `toolkit`", async () => {
    expect(ids(await q("message", "&toolkit=Slack"))).toEqual(["Slack.PostMessage@1.0.0"]);
    expect(ids(await q("message", "&toolkit=Nowhere"))).toEqual([]);
    expectError(await q("message", "&toolkit=not-a-toolkit"), 400);
  });

  verifies("search.compose", "refuses a cursor sent with another q, toolkit or view, or not made here", async () => {
    const cursor = (await q("widgets", "&limit=5")).body.next_cursor;
    expect((await q("widgets", `&limit=5&cursor=${cursor}`)).status).toBe(200);
    for (const other of [
      q("turns", `&limit=5&cursor=${cursor}`),
      q("widgets", `&limit=5&toolkit=Bulk&cursor=${cursor}`),
      q("widgets", `&limit=5&view=summary&cursor=${cursor}`),
      q("widgets", "&cursor=bm90LWEtY3Vyc29y"),
    ]) {
      const reply = await other;
      expectError(reply, 400);
      expect(reply.body.message).toBe("This cursor cannot be used: search again from the first page");
    }
  });
});

describe("ids", () => {
  verifies(
    "search.ids",
    "answers the tools named, in that order, each resolved as a tool_id and listed once",
    async () => {
      const reply = await search("ids=Slack.PostMessage,Gmail.SendEmail@1,Gmail.SendEmail,Gmail.SendEmail@2.0.0");
      expect(reply.status).toBe(200);
      expectSchema("ToolListResponse", reply.body);
      expect(ids(reply)).toEqual(["Slack.PostMessage@1.0.0", "Gmail.SendEmail@1.0.0", "Gmail.SendEmail@2.0.0"]);
      // In the form the request asked for: no annotations unless asked.
      expect(reply.body.items[2]).not.toHaveProperty("annotations");
      expect((await search("ids=Gmail.SendEmail@2.0.0", "search, annotations")).body.items[0]).toHaveProperty(
        "annotations",
      );
    },
  );

  verifies("search.ids", "refuses ids that name no tool, naming them; more than 100; ids with q", async () => {
    const unknown = await search("ids=Slack.PostMessage,Gmail.Nope,Slack.PostMessage@9,not%20an%20id");
    expectError(unknown, 400);
    expect(unknown.body.developer_message).toBe(
      "'Gmail.Nope', 'Slack.PostMessage@9', 'not an id' are not the id of a tool on this server.",
    );
    const long = await search(`ids=${"Slack.PostMessage,".repeat(100)}${"X".repeat(200)}`);
    expectError(long, 400);
    expect(long.body.message).toBe("At most 100 ids can be asked for at once");
    const cut = await search(`ids=Gmail.${"N".repeat(100)}`);
    expect(cut.body.developer_message).toContain("...(42 more characters)");
    expectError(await search("ids=Slack.PostMessage&q=post"), 400);
    expectError(await search("ids="), 400);
  });
});

describe("/toolkits", () => {
  verifies("search.toolkits", "lists each toolkit by name, with its description and its number of tools", async () => {
    const reply = await send(`${baseUrl}/toolkits`, asking("search"));
    expect(reply.status).toBe(200);
    expectSchema("ToolkitListResponse", reply.body);
    expect(reply.body).toEqual({
      items: [
        { name: "Bulk", tool_count: 60 },
        { name: "Calendar", tool_count: 1 },
        // SendEmail's two versions count once.
        { name: "Gmail", description: "Google's mail.", tool_count: 2 },
        { name: "Mail", tool_count: 1 },
        { name: "Slack", description: "Team chat.", tool_count: 1 },
      ],
    });
  });

  verifies(
    "extensions.applied-header",
    "names only the extensions that shaped the toolkits: search and cache",
    async () => {
      const reply = await send(`${baseUrl}/toolkits`, asking("tasks, annotations, cache, pagination, search"));
      expect(reply.status).toBe(200);
      expect(reply.headers.get("oxp-extensions")).toBe("search, cache");
      expect((await send(`${baseUrl}/toolkits`, asking("search, tasks"))).headers.get("oxp-extensions")).toBe("search");
    },
  );

  verifies("search.toolkits", "is an unknown path without search asked for", async () => {
    expectError(await send(`${baseUrl}/toolkits`), 404);
    expectError(await send(`${baseUrl}/toolkits`, asking("pagination")), 404);
  });

  verifies("search.toolkits", "refuses at start-up a description of a toolkit without tools, or a bad one", () => {
    expect(() => makeServer({ tools: CATALOG, toolkits: { Nope: { description: "No tools." } } })).toThrow(
      /toolkits\.Nope describes a toolkit that has no tools/,
    );
    expect(() => makeServer({ tools: CATALOG, toolkits: { Gmail: { description: "" } } })).toThrow(
      /toolkits\.Gmail\.description/,
    );
  });
});

describe("the ranking", () => {
  verifies("search.ranking", "cuts identifiers into words and folds case and accents", () => {
    expect(searchTokens("SendEmail_v2")).toEqual(["send", "email", "v", "2"]);
    expect(searchTokens("HTTPServer créé")).toEqual(["http", "server", "cree"]);
  });

  verifies(
    "search.ranking",
    "weighs the name above the description, and finds parameters and enum values",
    async () => {
      // PostMessage has the word in its name; SendEmail@2 only in its description.
      expect(ids(await q("message")).slice(0, 2)).toEqual(["Slack.PostMessage@1.0.0", "Gmail.SendEmail@2.0.0"]);
      expect(ids(await q("attendees"))).toEqual(["Calendar.CreateEvent@1.0.0"]);
      expect(ids(await q("html"))).toEqual(["Gmail.SendEmail@2.0.0"]);
      expect(ids(await q("recipient"))).toEqual(["Gmail.SendEmail@2.0.0"]);
      expect(ids(await q("GENERAL"))).toEqual(["Slack.PostMessage@1.0.0"]);
    },
  );

  verifies("search.ranking", "matches a term's longer words, lower than equal ones", async () => {
    const reply = await q("email");
    // `emails` (ListEmails) by prefix only; `email` in SendEmail@2's name and description.
    const list = ids(reply);
    expect(list).toContain("Gmail.ListEmails@1.0.0");
    expect(list.indexOf("Gmail.SendEmail@2.0.0")).toBeLessThan(list.indexOf("Gmail.ListEmails@1.0.0"));
    expect(ids(await q("attend"))).toEqual(["Calendar.CreateEvent@1.0.0"]);
  });

  verifies("search.ranking", "searches a query without its stopwords, unless it has only those", async () => {
    // `to`, `the` and `an` are in most descriptions here: they neither find tools nor move them.
    const worded = await q("send an email to the channel", "&limit=50");
    const plain = await q("send email channel", "&limit=50");
    expect(worded.status).toBe(200);
    expect(worded.body).toEqual(plain.body);
    // A query of stopwords alone is searched by them.
    expect(ids(await q("the"))).toContain("Gmail.ListEmails@1.0.0");
  });

  verifies("search.exact-first", "puts the tools a query names exactly first", async () => {
    // `email` is everywhere in Gmail's tools, but Mail.Email is named so.
    expect(ids(await q(" Email "))[0]).toBe("Mail.Email@1.0.0");
    expect(ids(await q("gmail.listemails"))[0]).toBe("Gmail.ListEmails@1.0.0");
    expect(ids(await q("Gmail.SendEmail@1.0.0"))[0]).toBe("Gmail.SendEmail@1.0.0");
    expect(ids(await q("Gmail.SendEmail")).slice(0, 2)).toEqual(["Gmail.SendEmail@2.0.0", "Gmail.SendEmail@1.0.0"]);
  });

  verifies("search.deprecated", "puts a deprecated version below its tool's other versions", async () => {
    const list = ids(await q("send email"));
    expect(list.indexOf("Gmail.SendEmail@2.0.0")).toBeLessThan(list.indexOf("Gmail.SendEmail@1.0.0"));
    // It still ranks by itself where no other version matches.
    expect(ids(await q("quickly"))).toEqual(["Gmail.SendEmail@1.0.0"]);
  });

  verifies("search.deterministic", "orders equal scores by id, and answers the same bytes each time", async () => {
    const reply = await q("widgets", "&limit=12");
    const scores = new Set(reply.body.items.map((item: { score: number }) => item.score));
    expect(scores.size).toBe(1);
    expect(ids(reply)).toEqual(ids(reply).slice().sort());
    // By code unit: `Tool10@` before `Tool1@`.
    expect(ids(reply).slice(0, 3)).toEqual(["Bulk.Tool0@1.0.0", "Bulk.Tool10@1.0.0", "Bulk.Tool11@1.0.0"]);
    expect((await q("widgets", "&limit=12")).text).toBe(reply.text);
  });
});

describe("the bounds", () => {
  verifies("search.bounds", "refuses an empty or long q, too many terms, a bad limit or view", async () => {
    const cases: [string, string][] = [
      ["q=", "The query must be 1 to 256 characters"],
      ["q=%20%20", "The query must be 1 to 256 characters"],
      [`q=${"a".repeat(257)}`, "The query must be 1 to 256 characters"],
      [`q=${"w ".repeat(33)}`, "The query may have at most 32 terms"],
      ["q=x&limit=0", "The search limit must be a whole number from 1 to 50"],
      ["q=x&limit=51", "The search limit must be a whole number from 1 to 50"],
      ["q=x&limit=ten", "The search limit must be a whole number from 1 to 50"],
      ["q=x&view=tiny", "The view must be 'summary' or 'full'"],
    ];
    for (const [query, message] of cases) {
      const reply = await search(query);
      expectError(reply, 400);
      expect(reply.body.message, query).toBe(message);
    }
    expect((await search(`q=${"a".repeat(256)}`)).status).toBe(200);
    expect((await search(`q=${"w ".repeat(32)}&limit=50`)).status).toBe(200);
  });

  verifies("search.bounds", "takes a pattern as words, never as a pattern", async () => {
    const reply = await q("(a+)+$ .* [email]");
    expect(reply.status).toBe(200);
    expect(ids(reply)).toContain("Mail.Email@1.0.0");
  });
});

describe("discovery and negotiation", () => {
  verifies(["search.discovery", "cache.etag"], "discovery lists search with its bounds, and cache", async () => {
    const reply = await send(`${baseUrl}/.well-known/oxp`);
    expectSchema("DiscoveryDocument", reply.body);
    expect(reply.body.extensions).toEqual(expect.arrayContaining(["search", "cache"]));
    expect(reply.body.extension_info.search).toEqual({
      max_limit: 50,
      max_query_length: 256,
      max_terms: 32,
      max_ids: 100,
    });
  });

  verifies("search.ignored-without-header", "q, ids and view are ignored without search asked for", async () => {
    const whole = await send(`${baseUrl}/tools`);
    for (const query of ["q=send", "ids=Slack.PostMessage", "view=summary", "q="]) {
      const reply = await send(`${baseUrl}/tools?${query}`, asking("annotations, pagination"));
      expect(reply.status, query).toBe(200);
      expect(reply.body.items, query).toHaveLength(CATALOG.length > 100 ? 100 : CATALOG.length);
      const plain = await send(`${baseUrl}/tools?${query}`);
      expect(plain.text, query).toBe(whole.text);
    }
  });
});

describe("the cache extension", () => {
  const conditional = async (url: string, extensions: string) => {
    const first = await send(url, asking(extensions));
    expect(first.status, url).toBe(200);
    const etag = first.headers.get("etag") as string;
    expect(etag, url).toMatch(/^"[A-Za-z0-9_-]+"$/);
    const again = await send(url, asking(extensions, { "If-None-Match": etag }));
    expect(again.status, url).toBe(304);
    expect(again.text).toBe("");
    expect(again.headers.get("etag")).toBe(etag);
    expect(again.headers.get("cache-control")).toBe(first.headers.get("cache-control"));
    return first;
  };

  verifies("cache.etag", "every list form, /toolkits and discovery carry a strong ETag and answer 304", async () => {
    const forms: [string, string][] = [
      [`${baseUrl}/tools`, "cache"],
      [`${baseUrl}/tools?limit=5`, "cache, pagination"],
      [`${baseUrl}/tools?q=email`, "cache, search"],
      [`${baseUrl}/tools?ids=Gmail.SendEmail`, "cache, search"],
      [`${baseUrl}/toolkits`, "cache, search"],
      [`${baseUrl}/.well-known/oxp`, "cache"],
    ];
    const tags = new Set<string>();
    for (const [url, extensions] of forms) {
      tags.add((await conditional(url, extensions)).headers.get("etag") as string);
    }
    expect(tags.size).toBe(forms.length);
    // The tag is of the bytes: another query, another tag.
    const other = await send(`${baseUrl}/tools?q=widgets`, asking("cache, search"));
    expect(tags.has(other.headers.get("etag") as string)).toBe(false);
  });

  verifies("cache.control", "a server without authentication lets any cache keep its lists for N seconds", async () => {
    for (const url of [`${baseUrl}/tools`, `${baseUrl}/.well-known/oxp`]) {
      expect((await send(url, asking("cache"))).headers.get("cache-control"), url).toBe("public, max-age=60");
    }
    expect((await send(`${baseUrl}/toolkits`, asking("search, cache"))).headers.get("cache-control")).toBe(
      "public, max-age=60",
    );
    expect((await send(`${baseUrl}/tools`)).headers.get("cache-control")).toBeNull();
    const short = await listen(makeServer({ tools: CATALOG, cache: { maxAgeSeconds: 5 }, logger: false }), { port: 0 });
    try {
      const reply = await send(`${short.url}/tools`, asking("cache"));
      expect(reply.headers.get("cache-control")).toBe("public, max-age=5");
      expect(reply.body.ttl_ms).toBe(5000);
      // Discovery is the same for every caller, also on a server with authentication.
      const guarded = await listen(makeServer({ tools: CATALOG, auth: { apiKeys: ["k".repeat(32)] }, logger: false }), {
        port: 0,
      });
      try {
        expect((await send(`${guarded.url}/.well-known/oxp`, asking("cache"))).headers.get("cache-control")).toBe(
          "public, max-age=60",
        );
        const listed = await send(`${guarded.url}/tools`, asking("cache", { "OXP-API-Key": "k".repeat(32) }));
        expect(listed.headers.get("cache-control")).toBe("private, max-age=60");
      } finally {
        await guarded.close();
      }
    } finally {
      await short.close();
    }
    expect(() => makeServer({ tools: CATALOG, cache: { maxAgeSeconds: -1 } })).toThrow(/cache\.maxAgeSeconds/);
  });

  verifies("cache.body-fields", "list, search and toolkit bodies add ttl_ms and cache_scope", async () => {
    const bodies = [
      await send(`${baseUrl}/tools`, asking("cache")),
      await send(`${baseUrl}/tools?limit=3`, asking("cache, pagination")),
      await search("q=email", "cache, search"),
      await search("ids=Slack.PostMessage", "cache, search"),
      await send(`${baseUrl}/toolkits`, asking("search, cache")),
    ];
    for (const reply of bodies) {
      expect(reply.body).toMatchObject({ ttl_ms: 60_000, cache_scope: "public" });
    }
    expectSchema("ToolListResponse", bodies[0]?.body);
    expectSchema("ToolSearchResponse", bodies[2]?.body);
    expectSchema("ToolkitListResponse", bodies[4]?.body);
    expect((await send(`${baseUrl}/tools`)).body).not.toHaveProperty("ttl_ms");
    expect((await q("email")).body).not.toHaveProperty("cache_scope");
  });

  verifies("cache.no-store", "every answer of a call says no-store", async () => {
    const headers = { "OXP-Extensions": "cache" };
    const ok = await callTool(baseUrl, { tool_id: "Mail.Email", input: {} }, headers);
    expect(ok.status).toBe(200);
    expect(ok.headers.get("cache-control")).toBe("no-store");
    const unknown = await callTool(baseUrl, { tool_id: "Mail.Nope", input: {} }, headers);
    expect(unknown.status).toBeGreaterThanOrEqual(400);
    expect(unknown.headers.get("cache-control")).toBe("no-store");
    const malformed = await callTool(baseUrl, "{", headers);
    expectError(malformed, 400);
    expect(malformed.headers.get("cache-control")).toBe("no-store");
    expect((await callTool(baseUrl, { tool_id: "Mail.Email", input: {} })).headers.get("cache-control")).toBeNull();
  });

  verifies("cache.tool-header", "a call's OXP-Tool must be its body's tool_id, with or without cache", async () => {
    const same = await callTool(baseUrl, { tool_id: "Mail.Email", input: {} }, { "OXP-Tool": "Mail.Email" });
    expect(same.status).toBe(200);
    expect(same.body.value).toEqual({ ran: "Mail.Email" });
    for (const extensions of ["", "cache"]) {
      const other = await callTool(
        baseUrl,
        { tool_id: "Mail.Email", input: {} },
        { "OXP-Tool": "Mail.Email@1.0.0", ...(extensions ? { "OXP-Extensions": extensions } : {}) },
      );
      expectError(other, 400);
      expect(other.body.message).toBe("The OXP-Tool header names another tool than the body's tool_id");
      expect(other.body.developer_message).toBe("OXP-Tool is 'Mail.Email@1.0.0'; tool_id is 'Mail.Email'.");
    }
    // Before the tool is looked up: a body naming no tool is refused for the mismatch.
    const unknown = await callTool(baseUrl, { tool_id: "Mail.Nope", input: {} }, { "OXP-Tool": "Mail.Email" });
    expect(unknown.body.message).toBe("The OXP-Tool header names another tool than the body's tool_id");
    // After the body's shape: a body without tool_id is refused for its shape.
    const shapeless = await callTool(baseUrl, { input: {} }, { "OXP-Tool": "Mail.Email" });
    expectError(shapeless, 400);
    expect(shapeless.body.message).not.toBe("The OXP-Tool header names another tool than the body's tool_id");
  });

  it("a search on a server without search offered is ignored", async () => {
    const off = await listen(makeServer({ tools: CATALOG, extensions: ["pagination"], logger: false }), { port: 0 });
    try {
      const reply = await send(`${off.url}/tools?q=email`, asking("search"));
      expect(reply.body.items).toHaveLength(CATALOG.length);
      expect(reply.body.items[0]).not.toHaveProperty("score");
    } finally {
      await off.close();
    }
  });
});

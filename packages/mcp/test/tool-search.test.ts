// The bridge's toolSearch option against a real OXP server and the v2 SDK's client in both revisions: search-tools finds tools as the OXP server ranks them, load-tools gives their schemas, names never collide, and a server without search is refused at start.
import { once } from "node:events";
import { createServer as createHttpServer } from "node:http";
import type { AddressInfo } from "node:net";
import { PassThrough } from "node:stream";
import {
  Client,
  type JSONRPCMessage,
  type Tool as McpTool,
  ReadBuffer,
  StreamableHTTPClientTransport,
  serializeMessage,
  type Transport,
} from "@modelcontextprotocol/client";
import { Client as InProcessClient } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { createClient } from "@otc/client";
import { createServer, defineTool, listen, type RunningServer } from "@otc/server";
import { ManualClock } from "@otc/test-helpers/manual-clock";
import type { ToolDefinition } from "@otc/types";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  catalogToMcpTools,
  createMcpBridge,
  ERROR_META_KEY,
  type McpBridgeOptions,
  type McpCaller,
} from "../src/bridge.js";
import { LOAD_TOOLS_NAME, MCP_TOOL_NAME, mcpToolName, SEARCH_TOOLS_NAME } from "../src/names.js";
import { serveHttp, serveStdio } from "../src/transports.js";

const text = (description: string) => ({ type: "string", description }) as const;

const sendEmail = defineTool({
  toolkit: "Mail",
  name: "SendEmail",
  version: "1.0.0",
  description: "Sends an email to one recipient.",
  inputSchema: {
    type: "object",
    properties: { to: text("The recipient's address."), subject: text("The subject line."), body: text("The text.") },
    required: ["to"],
  },
  outputSchema: { type: "object", properties: { id: { type: "string" } }, required: ["id"] },
  run: () => ({ id: "m-1" }),
});
const oldSendEmail = defineTool({
  toolkit: "Mail",
  name: "SendEmail",
  version: "0.9.0",
  description: "Sends an email to one recipient.",
  inputSchema: { type: "object", properties: { to: text("The recipient's address.") } },
  outputSchema: { type: "string" },
  deprecationMessage: "Use Mail.SendEmail@1.0.0.",
  run: () => "sent",
});
const listEmails = defineTool({
  toolkit: "Mail",
  name: "ListEmails",
  version: "1.0.0",
  description: "Lists the messages of a mailbox folder.",
  inputSchema: {
    type: "object",
    properties: { folder: { type: "string", enum: ["inbox", "sent"], description: "Which folder." } },
  },
  outputSchema: { type: "array" },
  run: () => [],
});
const createEvent = defineTool({
  toolkit: "Calendar",
  name: "CreateEvent",
  version: "1.0.0",
  description: "Puts a meeting in the calendar, and emails the invitation to its guests.",
  inputSchema: { type: "object", properties: { title: text("What it is."), start: text("When, ISO 8601.") } },
  outputSchema: { type: "string" },
  run: () => "booked",
});
const forecast = defineTool({
  toolkit: "Weather",
  name: "GetForecast",
  version: "1.0.0",
  description: "The weather for the next days.",
  inputSchema: { type: "object", properties: { city: text("The city, e.g. Paris.") }, required: ["city"] },
  outputSchema: { type: "string" },
  run: ({ city }) => `Sunny in ${city}`,
});
/** Its MCP name is `search_tools`, beside the meta-tool `search-tools`. */
const searchToolsTool = defineTool({
  toolkit: "search",
  name: "tools",
  version: "1.0.0",
  description: "A tool of a toolkit that happens to be named search.",
  inputSchema: { type: "object", properties: {} },
  outputSchema: { type: "string" },
  run: () => "found by name",
});
const TOOLS = [sendEmail, oldSendEmail, listEmails, createEvent, forecast, searchToolsTool];

let oxp: RunningServer;
let withoutSearch: RunningServer;
beforeAll(async () => {
  oxp = await listen(createServer({ tools: TOOLS, logger: false }), { port: 0 });
  withoutSearch = await listen(
    createServer({ tools: TOOLS, logger: false, extensions: ["annotations", "pagination", "tasks", "cache"] }),
    { port: 0 },
  );
});
afterAll(async () => {
  await oxp.close();
  await withoutSearch.close();
});

type Mode = "legacy" | { pin: "2026-07-28" };
const REVISIONS: [string, Mode][] = [
  ["2025-11-25", "legacy"],
  ["2026-07-28", { pin: "2026-07-28" }],
];

/** The bridge over streamable HTTP, and a v2 SDK client of it in the revision `mode` asks for. */
async function connected(mode: Mode, options: Partial<McpBridgeOptions> = {}) {
  const http = await serveHttp(createMcpBridge({ url: oxp.url, toolSearch: true, ...options }));
  const client = new Client({ name: "tool-search-test", version: "1.0.0" }, { versionNegotiation: { mode } });
  await client.connect(new StreamableHTTPClientTransport(new URL(http.url)));
  return {
    client,
    close: async () => {
      await client.close();
      await http.close();
    },
  };
}

/** The structured value of a successful meta-tool call. */
async function called<T>(client: Client, name: string, args: Record<string, unknown>): Promise<T> {
  const result = await client.callTool({ name, arguments: args });
  expect(result.isError, JSON.stringify(result.content)).toBeFalsy();
  return result.structuredContent as T;
}

interface Found {
  name: string;
  title?: string;
  description: string;
  toolkit: string;
  score: number;
}

describe.each(REVISIONS)("toolSearch (%s)", (_revision, mode) => {
  let client: Client;
  let close: () => Promise<void>;
  beforeAll(async () => {
    ({ client, close } = await connected(mode));
  });
  afterAll(() => close());

  it("lists every bridged tool, the two meta-tools first, every name once", async () => {
    const { tools } = await client.listTools();
    const names = tools.map((tool) => tool.name);
    expect(names).toEqual([
      "search-tools",
      "load-tools",
      "Calendar_CreateEvent",
      "Mail_ListEmails",
      "Mail_SendEmail",
      "Weather_GetForecast",
      "search_tools",
    ]);
    expect(new Set(names).size).toBe(names.length);
    // The bridged tools are those of a bridge without the option, as they are.
    const plain = await createMcpBridge({ url: oxp.url }).listTools();
    expect(tools.slice(2)).toEqual(plain);
  });

  it("search-tools finds the tools of a task, best first, in the OXP server's order, under their MCP names", async () => {
    const { tools } = await called<{ tools: Found[] }>(client, "search-tools", { query: "send an email" });
    const [best] = tools;
    expect(best).toEqual({
      name: "Mail_SendEmail",
      description: "Sends an email to one recipient.",
      toolkit: "Mail",
      score: expect.any(Number),
    });
    expect(best?.score).toBeGreaterThan(0);
    // The OXP server's own ranking, mapped to MCP names: only the bridged (latest) versions, each once.
    const ranked = await createClient({ baseUrl: oxp.url }).searchTools("send an email", { view: "summary" });
    const bridged = new Set(["Mail.SendEmail@1.0.0", "Mail.ListEmails@1.0.0", "Calendar.CreateEvent@1.0.0"]);
    const expected = ranked.items
      .filter((item) => bridged.has(item.id))
      .map((item) => {
        const [toolkit = "", tool = ""] = item.id.split("@")[0]?.split(".") ?? [];
        return { name: mcpToolName(toolkit, tool), score: item.score };
      });
    expect(ranked.items.map((item) => item.id)).toContain("Mail.SendEmail@0.9.0");
    expect(tools.map(({ name, score }) => ({ name, score }))).toEqual(expected);
    const scores = tools.map((tool) => tool.score);
    expect(scores).toEqual([...scores].sort((a, b) => b - a));
  });

  it("search-tools keeps to a toolkit and a limit", async () => {
    const inCalendar = await called<{ tools: Found[] }>(client, "search-tools", {
      query: "email",
      toolkit: "Calendar",
    });
    expect(inCalendar.tools.map((tool) => tool.name)).toEqual(["Calendar_CreateEvent"]);
    const one = await called<{ tools: Found[] }>(client, "search-tools", { query: "email", limit: 1 });
    expect(one.tools).toHaveLength(1);
    const none = await called<{ tools: Found[] }>(client, "search-tools", { query: "zebra" });
    expect(none.tools).toEqual([]);
  });

  it("load-tools gives the tools' definitions as tools/list lists them, then the tool is called by that name", async () => {
    const { tools: listed } = await client.listTools();
    const loaded = await called<{ tools: McpTool[]; unknown?: string[] }>(client, "load-tools", {
      names: ["Weather_GetForecast", "No_Such_Tool", "Mail_SendEmail"],
    });
    const { _meta: _forecastMeta, ...forecastTool } = listed.find((tool) => tool.name === "Weather_GetForecast") ?? {};
    const { _meta: _sendMeta, ...sendTool } = listed.find((tool) => tool.name === "Mail_SendEmail") ?? {};
    expect(loaded).toEqual({ tools: [forecastTool, sendTool], unknown: ["No_Such_Tool"] });
    expect(loaded.tools[0]?.inputSchema).toMatchObject({ required: ["city"] });
    const answer = await client.callTool({ name: "Weather_GetForecast", arguments: { city: "Oslo" } });
    expect(answer.structuredContent).toEqual({ value: "Sunny in Oslo" });
  });

  it("keeps the meta-tools and a bridged tool named search_tools apart", async () => {
    const bridged = await client.callTool({ name: "search_tools", arguments: {} });
    expect(bridged.structuredContent).toEqual({ value: "found by name" });
    const found = await called<{ tools: Found[] }>(client, "search-tools", { query: "search_tools" });
    expect(found.tools[0]?.name).toBe("search_tools");
  });

  it.each([
    ["no query", {}, /query must be a string/],
    ["a blank query", { query: "   " }, /query must be a string/],
    ["a query past 256 characters", { query: "x".repeat(257) }, /at most 256/],
    ["a limit of 0", { query: "email", limit: 0 }, /limit must be a whole number from 1 to 50/],
    ["a limit past 50", { query: "email", limit: 51 }, /limit must be/],
    ["a toolkit that is not a string", { query: "email", toolkit: 3 }, /toolkit must be/],
  ])("search-tools answers %s with a tool error the model can correct", async (_what, args, message) => {
    const result = await client.callTool({ name: "search-tools", arguments: args });
    expect(result.isError).toBe(true);
    expect(result.content).toEqual([{ type: "text", text: expect.stringMatching(message) }]);
  });

  it("search-tools passes on the OXP server's refusal of a query (more than 32 terms)", async () => {
    const result = await client.callTool({
      name: "search-tools",
      arguments: { query: Array.from({ length: 33 }, (_, i) => `w${i}`).join(" ") },
    });
    expect(result.isError).toBe(true);
    expect(result._meta?.[ERROR_META_KEY]).toMatchObject({ status: 400, can_retry: false });
  });

  it.each([
    ["no names", {}],
    ["an empty list", { names: [] }],
    ["a name that is not a string", { names: [1] }],
    ["more than 100 names", { names: Array.from({ length: 101 }, (_, i) => `T_${i}`) }],
  ])("load-tools answers %s with a tool error", async (_what, args) => {
    const result = await client.callTool({ name: "load-tools", arguments: args });
    expect(result.isError).toBe(true);
    expect(result.content).toEqual([{ type: "text", text: expect.stringMatching(/names must be a list/) }]);
  });

  it("load-tools with no known name says to search", async () => {
    const result = await client.callTool({ name: "load-tools", arguments: { names: ["Nope"] } });
    expect(result.isError).toBe(true);
    expect(result.content).toEqual([{ type: "text", text: expect.stringMatching(/Nope\. search-tools gives/) }]);
  });
});

describe("the meta-tools' names", () => {
  it("are never a bridged tool's: those are letters, digits and _ only, however they are cut or made unique", () => {
    const definition = (id: string): ToolDefinition => ({
      id,
      name: id.split("@")[0]?.replace(".", "_") ?? id,
      description: "A tool.",
      version: id.split("@")[1] ?? "1.0.0",
      input_schema: {},
      output_schema: null,
    });
    const long = `T${"x".repeat(120)}`;
    const ids = [
      "search.tools@1.0.0",
      "search.tools@0.1.0",
      "load.tools@2.0.0",
      "search_tools.x@1.0.0",
      `${long}.${long}@1.0.0`,
      `${long}.${long}@0.9.0`,
      "A.B_2@1.0.0",
      "A_B.2@1.0.0",
      "A.B@1.0.0",
    ];
    const names = [...catalogToMcpTools(ids.map(definition), "all").keys()];
    expect(names).toHaveLength(ids.length);
    for (const name of names) {
      expect(name).toMatch(MCP_TOOL_NAME);
      expect(name).toMatch(/^[A-Za-z0-9_]+$/);
    }
    expect(names).not.toContain(SEARCH_TOOLS_NAME);
    expect(names).not.toContain(LOAD_TOOLS_NAME);
    expect(SEARCH_TOOLS_NAME).toMatch(MCP_TOOL_NAME);
    expect(LOAD_TOOLS_NAME).toMatch(MCP_TOOL_NAME);
  });
});

describe("a match the bridge's catalog does not have yet", () => {
  it("re-reads the catalog at most once a second, as an unknown name does, then names it", async () => {
    const older = await listen(createServer({ tools: TOOLS.filter((tool) => tool !== forecast), logger: false }), {
      port: 0,
    });
    // The catalog (GET /tools, whole) comes from `older` until the test switches it: the tool is added since.
    let catalogFrom = older.url;
    const switching: typeof fetch = (input, init) => {
      const request = new Request(input, init);
      const url = new URL(request.url);
      return url.pathname === "/tools" && url.search === ""
        ? fetch(new Request(`${catalogFrom}/tools`, request))
        : fetch(request);
    };
    const clock = new ManualClock();
    const bridge = createMcpBridge({ url: oxp.url, toolSearch: true, fetch: switching, clock });
    const { client, close } = await inProcess(bridge.createServer());
    try {
      expect((await client.listTools()).tools.map((tool) => tool.name)).not.toContain("Weather_GetForecast");
      catalogFrom = oxp.url;
      const soon = await client.callTool({ name: "search-tools", arguments: { query: "weather" } });
      expect(soon.structuredContent).toEqual({ tools: [] });
      await clock.advance(1_001);
      const later = await client.callTool({ name: "search-tools", arguments: { query: "weather" } });
      expect(later.structuredContent).toMatchObject({ tools: [{ name: "Weather_GetForecast", toolkit: "Weather" }] });
    } finally {
      await close();
      await older.close();
    }
  });
});

describe("toolSearch with every version", () => {
  it("names an older version found by its own MCP name, below the latest", async () => {
    const { client, close } = await connected({ pin: "2026-07-28" }, { toolVersions: "all" });
    try {
      const { tools } = await called<{ tools: Found[] }>(client, "search-tools", { query: "send an email" });
      const names = tools.map((tool) => tool.name);
      expect(names.slice(0, 2)).toEqual(["Mail_SendEmail", "Mail_SendEmail_v0_9_0"]);
      expect(tools[1]?.description).toMatch(/^Deprecated: Use Mail\.SendEmail@1\.0\.0\./);
    } finally {
      await close();
    }
  });
});

describe("without toolSearch", () => {
  it("has no meta-tools: a call of search-tools is an unknown tool", async () => {
    const http = await serveHttp(createMcpBridge({ url: oxp.url }));
    const client = new Client({ name: "t", version: "1.0.0" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } });
    await client.connect(new StreamableHTTPClientTransport(new URL(http.url)));
    try {
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name)).not.toContain("search-tools");
      await expect(client.callTool({ name: "search-tools", arguments: { query: "email" } })).rejects.toThrow(
        /Unknown tool/,
      );
    } finally {
      await client.close();
      await http.close();
    }
  });

  it("ready() asks the OXP server nothing", async () => {
    let requests = 0;
    const counting: typeof fetch = (input, init) => {
      requests += 1;
      return fetch(input, init);
    };
    await createMcpBridge({ url: withoutSearch.url, fetch: counting }).ready();
    expect(requests).toBe(0);
  });
});

/** A client transport over a pair of streams, as a host's stdio pipes are: newline-delimited JSON-RPC. */
function pipeTransport(toServer: PassThrough, fromServer: PassThrough): Transport {
  const buffer = new ReadBuffer();
  const transport: Transport = {
    async start() {
      fromServer.on("data", (chunk: Buffer) => {
        buffer.append(chunk);
        for (let message = buffer.readMessage(); message !== null; message = buffer.readMessage()) {
          transport.onmessage?.(message);
        }
      });
    },
    async send(message: JSONRPCMessage) {
      toServer.write(serializeMessage(message));
    },
    async close() {
      toServer.end();
      transport.onclose?.();
    },
  };
  return transport;
}

describe("toolSearch over stdio (2026-07-28)", () => {
  it("lists the meta-tools, answers a search and carries the OXP list's cache fields", async () => {
    const toServer = new PassThrough();
    const fromServer = new PassThrough();
    const served = await serveStdio(createMcpBridge({ url: oxp.url, toolSearch: true }), {
      stdin: toServer,
      stdout: fromServer,
    });
    const client = new Client(
      { name: "stdio-host", version: "1.0.0" },
      { versionNegotiation: { mode: { pin: "2026-07-28" } } },
    );
    await client.connect(pipeTransport(toServer, fromServer));
    try {
      const listed = await client.listTools();
      expect(listed.tools.slice(0, 2).map((tool) => tool.name)).toEqual(["search-tools", "load-tools"]);
      // The default OXP server offers cache: 60 s, public (no authentication).
      expect(listed).toMatchObject({ ttlMs: 60_000, cacheScope: "public" });
      const { tools } = await called<{ tools: Found[] }>(client, "search-tools", { query: "weather" });
      expect(tools[0]?.name).toBe("Weather_GetForecast");
    } finally {
      await client.close();
      await served.close();
    }
  });
});

describe("toolSearch at start", () => {
  it("serveHttp and serveStdio refuse an OXP server that does not offer search, naming what it offers", async () => {
    const bridge = createMcpBridge({ url: withoutSearch.url, toolSearch: true });
    const refusal =
      /toolSearch needs an OXP server that offers the search extension.*offers annotations, tasks, pagination, cache/;
    await expect(bridge.ready()).rejects.toThrow(refusal);
    await expect(serveHttp(bridge)).rejects.toThrow(refusal);
    const stdin = new PassThrough();
    await expect(serveStdio(bridge, { stdin, stdout: new PassThrough() })).rejects.toThrow(refusal);
    stdin.destroy();
  });

  it("an OXP server that cannot be reached does not stop the start; search-tools then says it cannot be reached", async () => {
    const gone = createHttpServer();
    gone.listen(0, "127.0.0.1");
    await once(gone, "listening");
    const url = `http://127.0.0.1:${(gone.address() as AddressInfo).port}`;
    await new Promise((resolve) => gone.close(resolve));
    const bridge = createMcpBridge({ url, toolSearch: true, retry: { maxAttempts: 1 } });
    await expect(bridge.ready()).resolves.toBeUndefined();
    const { client, close } = await inProcess(bridge.createServer());
    try {
      const result = await client.callTool({ name: "search-tools", arguments: { query: "email" } });
      expect(result).toMatchObject({ isError: true, _meta: { [ERROR_META_KEY]: { can_retry: true } } });
      expect(JSON.stringify(result.content)).toMatch(/could not be reached/);
    } finally {
      await close();
    }
  });

  it("served without ready(), search-tools says the server does not offer search", async () => {
    const bridge = createMcpBridge({ url: withoutSearch.url, toolSearch: true });
    const { client, close } = await inProcess(bridge.createServer());
    try {
      const result = await client.callTool({ name: "search-tools", arguments: { query: "email" } });
      expect(result.isError).toBe(true);
      expect(result.content).toEqual([{ type: "text", text: expect.stringMatching(/does not offer search/) }]);
    } finally {
      await close();
    }
  });
});

describe("toolSearch and OAuth scopes", () => {
  it("a meta-tool needs oxp:tools:read, as tools/list does, not oxp:tools:call", async () => {
    const bridge = createMcpBridge({ url: oxp.url, toolSearch: true });
    expect(await bridge.callScopes("search-tools")).toEqual(["oxp:tools:read"]);
    expect(await bridge.callScopes("load-tools")).toEqual(["oxp:tools:read"]);
    expect(await bridge.callScopes("Mail_SendEmail")).toEqual(["oxp:tools:call"]);
    const reader: McpCaller = { userId: "ann", scopes: new Set(["oxp:tools:read"]) };
    const caller: McpCaller = { userId: "bob", scopes: new Set(["oxp:tools:call"]) };
    const asReader = await inProcess(bridge.createServer(reader));
    const asCaller = await inProcess(bridge.createServer(caller));
    try {
      const found = await asReader.client.callTool({ name: "search-tools", arguments: { query: "weather" } });
      expect(found.isError).toBeFalsy();
      const refused = await asCaller.client.callTool({ name: "search-tools", arguments: { query: "weather" } });
      expect(refused).toMatchObject({ isError: true, _meta: { [ERROR_META_KEY]: { status: 403 } } });
    } finally {
      await asReader.close();
      await asCaller.close();
    }
  });
});

/** An SDK (v1, 2025) client connected in-process to one server of the bridge. */
async function inProcess(server: ReturnType<ReturnType<typeof createMcpBridge>["createServer"]>) {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new InProcessClient({ name: "in-process", version: "1.0.0" });
  await client.connect(clientSide);
  return { client, close: () => client.close() };
}

// The demo behind the bridge, driven by the official MCP clients of both SDK generations: over stdio (`otc mcp serve`
// as a child process) and streamable HTTP; v1 speaks 2025, v2 speaks 2026-07-28 to the bridge.
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { AUTHORIZATION_META_KEY, createMcpBridge, ERROR_META_KEY, serveHttp, TOOL_ID_META_KEY } from "@otc/mcp";
import { ManualClock } from "@otc/test-helpers/manual-clock";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  API_KEY,
  approve,
  connectHttp,
  connectHttpV2,
  connectStdio,
  connectStdioV2,
  type Demo,
  type Exchange,
  MODERN_REVISION,
  mcpClient,
  mcpClientV2,
  polled,
  startDemo,
  textOf,
} from "./harness.js";

/** The `_meta` key of a deprecated tool's deprecation_message, as packages/mcp/README.md names it. */
const DEPRECATION_META_KEY = "oxp/deprecation_message";

let demo: Demo;
beforeAll(async () => {
  demo = await startDemo();
});
afterAll(() => demo.close());

/** What the shared checks ask of a client; both SDK generations' `Client` have it. */
interface McpPeer {
  listTools(): Promise<{
    tools: {
      name: string;
      title?: string | undefined;
      description?: string | undefined;
      inputSchema: unknown;
      outputSchema?: unknown;
      annotations?: unknown;
      _meta?: Record<string, unknown> | undefined;
    }[];
  }>;
  callTool(params: { name: string; arguments?: Record<string, unknown> }): Promise<{
    isError?: boolean | undefined;
    structuredContent?: unknown;
    _meta?: Record<string, unknown> | undefined;
  }>;
  close(): Promise<void>;
}

/** The same checks over either transport, with either client: `connect` gives a connected plain client. */
function sharedChecks(connect: () => Promise<McpPeer>) {
  let client: McpPeer;
  beforeAll(async () => {
    client = await connect();
  });
  afterAll(() => client.close());

  it("lists the demo's tools under MCP names, latest versions, with object input and output schemas", async () => {
    const { tools } = await client.listTools();
    const names = tools.map((tool) => tool.name);
    expect(names).toEqual(
      expect.arrayContaining(["Calculator_Add", "Doorbell_Ring", "Gmail_GetEmails", "Greeting_Hello"]),
    );
    for (const name of names) {
      expect(name).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
    }
    expect(new Set(names).size).toBe(names.length);
    expect(names.some((name) => name.includes("_v"))).toBe(false);

    const add = tools.find((tool) => tool.name === "Calculator_Add");
    expect(add?.description).toBe("Adds two numbers together.");
    expect(add?._meta?.[TOOL_ID_META_KEY]).toBe("Calculator.Add@1.0.0");
    expect(add?.inputSchema).toMatchObject({ type: "object", required: ["a", "b"] });
    // A number is no object: the schema is wrapped, as the value will be.
    expect(add?.outputSchema).toMatchObject({
      type: "object",
      properties: { value: { type: "number" } },
      required: ["value"],
    });

    const hello = tools.find((tool) => tool.name === "Greeting_Hello");
    expect(hello?._meta?.[TOOL_ID_META_KEY]).toBe("Greeting.Hello@2.0.0");
    expect(hello?.outputSchema).toMatchObject({ type: "object", required: ["message", "language"] });

    // The demo's annotations (asked for, since its discovery document offers them), under MCP's names.
    expect(add?.title).toBe("Add two numbers");
    expect(add?.annotations).toEqual({
      title: "Add two numbers",
      readOnlyHint: true,
      idempotentHint: true,
      openWorldHint: false,
    });
    const sms = tools.find((tool) => tool.name === "SMS_Send");
    expect(sms?.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true, openWorldHint: true });
    // The latest Greeting.Hello is not deprecated; 1.0.0 is, but only `toolVersions: "all"` lists it.
    expect(hello?.description).not.toMatch(/Deprecated/);
    expect(hello?._meta).not.toHaveProperty(DEPRECATION_META_KEY);

    // OXP's "no input" is {}; MCP wants an object schema.
    expect(tools.find((tool) => tool.name === "System_GetTimestamp")?.inputSchema).toEqual({ type: "object" });
    // Returns nothing: no output schema.
    expect(tools.find((tool) => tool.name === "Doorbell_Ring")?.outputSchema).toBeUndefined();
  });

  it("calls Calculator.Add: the value as structuredContent (wrapped) and as text", async () => {
    const result = await client.callTool({ name: "Calculator_Add", arguments: { a: 2, b: 40 } });
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toEqual({ value: 42 });
    expect(textOf(result)).toBe("42");
  });

  it("passes an object value as it is", async () => {
    const result = await client.callTool({ name: "Greeting_Hello", arguments: { name: "Ann", language: "fr" } });
    expect(result.structuredContent).toEqual({ message: "Bonjour, Ann!", language: "fr" });
    expect(JSON.parse(textOf(result))).toEqual({ message: "Bonjour, Ann!", language: "fr" });
  });

  it("turns Doorbell's tool error into isError with the hint for the model and the retry hints in _meta", async () => {
    const result = await client.callTool({ name: "Doorbell_Ring", arguments: { doorbell_id: "nope" } });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toContain("Doorbell ID not found");
    expect(textOf(result)).toContain("ids: doorbell42,doorbell84");
    // The developer message is for developers, not for the model.
    expect(textOf(result)).not.toContain("does not exist");
    expect(result._meta?.[ERROR_META_KEY]).toMatchObject({ can_retry: true, retry_after_ms: 500 });
    expect((result._meta?.[ERROR_META_KEY] as { call_id?: string } | undefined)?.call_id).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("says a tool without a value is done", async () => {
    const result = await client.callTool({ name: "Doorbell_Ring", arguments: { doorbell_id: "doorbell42" } });
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toBeUndefined();
    expect(textOf(result)).toMatch(/no value/);
  });

  it("turns a 422 into isError listing each parameter error", async () => {
    const result = await client.callTool({ name: "Calculator_Add", arguments: { a: "two" } });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/^Invalid input/);
    const meta = result._meta?.[ERROR_META_KEY] as { status: number; parameter_errors: Record<string, string> };
    expect(meta.status).toBe(422);
    expect(Object.keys(meta.parameter_errors).length).toBeGreaterThanOrEqual(1);
    for (const [path, message] of Object.entries(meta.parameter_errors)) {
      expect(textOf(result)).toContain(`- ${path}: ${message}`);
    }
  });

  it("answers an unknown tool with an MCP error", async () => {
    await expect(client.callTool({ name: "No_Such_Tool", arguments: {} })).rejects.toThrow(/Unknown tool/);
  });
}

describe("over stdio (otc mcp serve, a child process)", () => {
  let stderr = () => "";
  sharedChecks(async () => {
    const client = mcpClient();
    ({ stderr } = await connectStdio(client, demo.url));
    return client;
  });

  it("keeps the API key out of what it prints", () => {
    expect(stderr()).toContain("over stdio");
    expect(stderr()).not.toContain(API_KEY);
  });
});

describe("over streamable HTTP (stateless, in-process)", () => {
  let http: Awaited<ReturnType<typeof serveHttp>> | undefined;
  sharedChecks(async () => {
    http = await serveHttp(createMcpBridge({ url: demo.url, apiKey: API_KEY }));
    const client = mcpClient();
    await connectHttp(client, http.url);
    return client;
  });
  afterAll(() => http?.close());

  it("serves POST /mcp only, and refuses a foreign Host (DNS rebinding)", async () => {
    const url = http?.url as string;
    expect((await fetch(url)).status).toBe(405);
    expect((await fetch(new URL("/other", url), { method: "POST" })).status).toBe(404);
    const { request } = await import("node:http");
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(
        url,
        {
          method: "POST",
          headers: {
            host: "evil.example",
            "content-type": "application/json",
            accept: "application/json, text/event-stream",
          },
        },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on("error", reject);
      req.end(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }));
    });
    expect(status).toBe(403);
  });
});

describe("a v2 client over stdio (otc mcp serve): 2026-07-28", () => {
  const client = mcpClientV2();
  sharedChecks(async () => {
    await connectStdioV2(client, demo.url);
    return client;
  });

  it("negotiated 2026-07-28 through the SDK's probe", () => {
    expect(client.getProtocolEra()).toBe("modern");
    expect(client.getNegotiatedProtocolVersion()).toBe(MODERN_REVISION);
  });
});

describe("a v2 client over streamable HTTP: 2026-07-28, stateless", () => {
  const client = mcpClientV2();
  const exchanges: Exchange[] = [];
  let http: Awaited<ReturnType<typeof serveHttp>> | undefined;
  sharedChecks(async () => {
    http = await serveHttp(createMcpBridge({ url: demo.url, apiKey: API_KEY }));
    await connectHttpV2(client, http.url, { exchanges });
    return client;
  });
  afterAll(() => http?.close());

  it("sends every request in 2026-07-28, with no initialize and no session", () => {
    expect(client.getProtocolEra()).toBe("modern");
    expect(client.getNegotiatedProtocolVersion()).toBe(MODERN_REVISION);
    const methods = exchanges.map((exchange) => exchange.method);
    expect(methods[0]).toBe("server/discover");
    expect(methods).toContain("tools/call");
    expect(methods).not.toContain("initialize");
    for (const { request, response } of exchanges) {
      expect(request.get("mcp-protocol-version")).toBe(MODERN_REVISION);
      expect(response.get("mcp-session-id")).toBeNull();
    }
  });
});

describe("the 2025-era revisions over streamable HTTP, without a session", () => {
  let http: Awaited<ReturnType<typeof serveHttp>>;
  beforeAll(async () => {
    http = await serveHttp(createMcpBridge({ url: demo.url, apiKey: API_KEY }));
  });
  afterAll(() => http.close());

  /** One JSON-RPC request as a 2025 client sends it (after `initialize`, with its revision in the header). */
  const post = async (body: unknown, revision?: string) => {
    const response = await fetch(http.url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        ...(revision ? { "mcp-protocol-version": revision } : {}),
      },
      body: JSON.stringify(body),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get("mcp-session-id")).toBeNull();
    const text = await response.text();
    // A JSON body, or one SSE `data:` line carrying it.
    return JSON.parse(/^data: (.*)$/m.exec(text)?.[1] ?? text) as { result?: Record<string, unknown> };
  };

  it.each([["2025-11-25"], ["2025-06-18"], ["2025-03-26"], ["2024-11-05"]])(
    "%s: initialize answers in it, and a request that names it is served",
    async (revision) => {
      const init = await post({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: revision, capabilities: {}, clientInfo: { name: "raw", version: "1.0.0" } },
      });
      expect(init.result).toMatchObject({
        protocolVersion: revision,
        capabilities: { tools: {} },
        serverInfo: { name: "otc-mcp-bridge" },
      });
      const listed = await post({ jsonrpc: "2.0", id: 2, method: "tools/list" }, revision);
      expect(listed.result?.tools).toContainEqual(expect.objectContaining({ name: "Calculator_Add" }));
    },
  );
});

describe("credentials", () => {
  it("a bridge without the API key gets refused, and says so without detail", async () => {
    const http = await serveHttp(createMcpBridge({ url: demo.url }));
    const client = mcpClient();
    try {
      await connectHttp(client, http.url);
      await expect(client.listTools()).rejects.toThrow(/refused the bridge's credentials/);
    } finally {
      await client.close();
      await http.close();
    }
  });
});

describe("older versions, by option", () => {
  it("adds them with a version suffix; the plain name stays the latest", async () => {
    const bridge = createMcpBridge({ url: demo.url, apiKey: API_KEY, toolVersions: "all" });
    const tools = await bridge.listTools();
    const hello = tools.filter((tool) => tool.name.startsWith("Greeting_Hello"));
    expect(hello.map((tool) => [tool.name, tool._meta?.[TOOL_ID_META_KEY]])).toEqual([
      ["Greeting_Hello", "Greeting.Hello@2.0.0"],
      ["Greeting_Hello_v1_0_0", "Greeting.Hello@1.0.0"],
    ]);
    // The deprecated version says so first in its description, and what to use instead in _meta.
    const [, older] = hello;
    expect(older?.description).toMatch(/^Deprecated: Use Greeting\.Hello@2\.0\.0/);
    expect(older?._meta?.[DEPRECATION_META_KEY]).toMatch(/^Use Greeting\.Hello@2\.0\.0/);
    const http = await serveHttp(bridge);
    const client = mcpClient();
    try {
      await connectHttp(client, http.url);
      const listed = (await client.listTools()).tools.find((tool) => tool.name === "Greeting_Hello_v1_0_0");
      expect(listed?.description).toBe(older?.description);
      expect(listed?.annotations).toMatchObject({ title: "Say hello", readOnlyHint: true });
      const result = await client.callTool({ name: "Greeting_Hello_v1_0_0", arguments: { name: "Bo" } });
      expect(result.structuredContent).toEqual({ value: "Hello, Bo!" });
    } finally {
      await client.close();
      await http.close();
    }
  });
});

describe("the Gmail authorization challenge", () => {
  it("an elicitation-capable client (stdio) gets the URL, approves, and the call is retried to its result", async () => {
    const elicited: { url: string; mode: string }[] = [];
    let approved: Promise<void> | undefined;
    const client = mcpClient(async (request) => {
      const params = request.params as { mode: string; url: string };
      elicited.push(params);
      // The user opens the link and approves once the bridge polls it (after this answer), still pending then.
      approved = polled(demo, params.url).then(() => approve(params.url));
      return { action: "accept" };
    });
    await connectStdio(client, demo.url, ["--user-id", "ann"]);
    try {
      const result = await client.callTool({ name: "Gmail_GetEmails", arguments: { query: "receipt" } });
      await approved;
      expect(elicited).toHaveLength(1);
      expect(elicited[0]?.mode).toBe("url");
      expect(elicited[0]?.url).toMatch(new RegExp(`^${demo.url}/demo/authorize/`));
      expect(result.isError).toBeFalsy();
      expect(result.structuredContent).toEqual({
        emails: [{ id: "email_2", subject: "Your Receipt", snippet: "Thank you for your purchase..." }],
      });
      // Authorized now: no second elicitation.
      await client.callTool({ name: "Gmail_GetEmails", arguments: {} });
      expect(elicited).toHaveLength(1);
    } finally {
      await client.close();
    }
  });

  it("a declined elicitation is an isError result with the link", async () => {
    const client = mcpClient(async () => ({ action: "decline" }));
    await connectStdio(client, demo.url, ["--user-id", "dee"]);
    try {
      const result = await client.callTool({ name: "Gmail_GetEmails", arguments: {} });
      expect(result.isError).toBe(true);
      expect(textOf(result)).toMatch(/not accepted/);
      expect(result._meta?.[AUTHORIZATION_META_KEY]).toHaveLength(1);
    } finally {
      await client.close();
    }
  });

  it("a client that declares URL elicitation but fails it gets isError with the link", async () => {
    const client = mcpClient(async () => {
      throw new Error("no browser here");
    });
    await connectStdio(client, demo.url, ["--user-id", "eve"]);
    try {
      const result = await client.callTool({ name: "Gmail_GetEmails", arguments: {} });
      expect(result.isError).toBe(true);
      const [challenge] = (result._meta?.[AUTHORIZATION_META_KEY] ?? []) as { url: string }[];
      expect(textOf(result)).toContain(challenge?.url);
    } finally {
      await client.close();
    }
  });

  for (const transport of ["stdio", "http"] as const) {
    it(`a plain client (${transport}) gets isError with the link; once approved, the next call succeeds`, async () => {
      const client = mcpClient();
      let http: Awaited<ReturnType<typeof serveHttp>> | undefined;
      if (transport === "stdio") {
        await connectStdio(client, demo.url, [], { OXP_USER_ID: `plain-${transport}` });
      } else {
        http = await serveHttp(createMcpBridge({ url: demo.url, apiKey: API_KEY, userId: `plain-${transport}` }));
        await connectHttp(client, http.url);
      }
      try {
        const first = await client.callTool({ name: "Gmail_GetEmails", arguments: {} });
        expect(first.isError).toBe(true);
        const [challenge] = (first._meta?.[AUTHORIZATION_META_KEY] ?? []) as { id: string; url: string }[];
        expect(challenge?.url).toMatch(new RegExp(`^${demo.url}/demo/authorize/`));
        expect(textOf(first)).toContain(challenge?.url);
        await approve(challenge?.url as string);
        const second = await client.callTool({ name: "Gmail_GetEmails", arguments: {} });
        expect(second.isError).toBeFalsy();
        expect((second.structuredContent as { emails: unknown[] }).emails).toHaveLength(4);
      } finally {
        await client.close();
        await http?.close();
      }
    });
  }

  it("a 2026-07-28 client gets the link even when it declares URL elicitation: that revision has no server requests", async () => {
    const elicited: unknown[] = [];
    const client = mcpClientV2(async (request) => {
      elicited.push(request);
      return { action: "accept" };
    });
    await connectStdioV2(client, demo.url, ["--user-id", "modern-mo"]);
    try {
      expect(client.getNegotiatedProtocolVersion()).toBe(MODERN_REVISION);
      const first = await client.callTool({ name: "Gmail_GetEmails", arguments: {} });
      expect(first.isError).toBe(true);
      const [challenge] = (first._meta?.[AUTHORIZATION_META_KEY] ?? []) as { url: string }[];
      expect(challenge?.url).toMatch(new RegExp(`^${demo.url}/demo/authorize/`));
      expect(textOf(first)).toContain(challenge?.url);
      expect(elicited).toEqual([]);
      await approve(challenge?.url as string);
      const second = await client.callTool({ name: "Gmail_GetEmails", arguments: {} });
      expect(second.isError).toBeFalsy();
      expect((second.structuredContent as { emails: unknown[] }).emails).toHaveLength(4);
    } finally {
      await client.close();
    }
  });

  it("one deadline bounds the whole authorization: time spent in the elicitation is not given back to the polling", async () => {
    // On the bridge's clock, moved by hand: the user takes 30% of the wait to accept, and approves at 120% of it. A
    // wait that started over after the elicitation would still see the approval (it would end at 130%); the call's
    // one deadline (100%) has passed by then.
    const clock = new ManualClock();
    const waitMs = 60_000;
    let accepted: (url: string) => void = () => undefined;
    const consent = new Promise<string>((resolve) => {
      accepted = resolve;
    });
    const client = mcpClient(async (request) => {
      await clock.advance(waitMs * 0.3);
      accepted((request.params as { url: string }).url);
      return { action: "accept" };
    });
    const bridge = createMcpBridge({
      url: demo.url,
      apiKey: API_KEY,
      userId: "deadline-user",
      authorizationWaitMs: waitMs,
      authorizationPollMs: 10,
      clock,
    });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await bridge.createServer().connect(serverSide);
    await client.connect(clientSide);
    try {
      const call = client.callTool({ name: "Gmail_GetEmails", arguments: {} });
      const url = await consent;
      // The bridge polls the challenge, still pending: it waits within the deadline.
      await polled(demo, url);
      await clock.advance(waitMs * 0.7);
      await clock.advance(waitMs * 0.2);
      await approve(url);
      const result = await call;
      expect(result.isError).toBe(true);
      expect(textOf(result)).toMatch(/not completed in time/);
      expect(result._meta?.[AUTHORIZATION_META_KEY]).toHaveLength(1);
    } finally {
      await client.close();
    }
  });

  it("without a user id, says the bridge needs one", async () => {
    const bridge = createMcpBridge({ url: demo.url, apiKey: API_KEY });
    const http = await serveHttp(bridge);
    const client = mcpClient();
    try {
      await connectHttp(client, http.url);
      const result = await client.callTool({ name: "Gmail_GetEmails", arguments: {} });
      expect(result.isError).toBe(true);
      expect(textOf(result)).toMatch(/user id/);
      expect(result._meta?.[ERROR_META_KEY]).toMatchObject({ status: 400, missing_user_id: true });
    } finally {
      await client.close();
      await http.close();
    }
  });
});

// serveHttp with oauth, against real parts: an OXP server (API key), a real authorization server (oidc-provider) whose resource is the bridge, and the official MCP SDK client signing in with its OAuth support.
import { randomUUID } from "node:crypto";
import {
  Client,
  type OAuthClientMetadata,
  type OAuthClientProvider,
  type OAuthDiscoveryState,
  type StoredOAuthClientInformation,
  type StoredOAuthTokens,
  StreamableHTTPClientTransport,
  UnauthorizedError,
} from "@modelcontextprotocol/client";
import { Client as InProcessClient } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { createServer, defineTool, listen, type RunningServer } from "@otc/server";
import { freePort } from "@otc/test-helpers/free-port";
import {
  type AuthorizationResponse,
  type AuthorizationServer,
  startAuthorizationServer,
} from "@otc/test-helpers/oidc-provider";
import { verifies } from "@otc/test-helpers/verifies";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createMcpBridge, ERROR_META_KEY, type McpCaller } from "../src/bridge.js";
import { type HttpBridge, type HttpBridgeOptions, serveHttp } from "../src/transports.js";

const API_KEY = "the-bridge-api-key-for-the-oxp-server";
const ALICE = { id: "alice", password: "wonderland" };
/** A native client's loopback redirect: the harness matches it on any port (RFC 8252). */
const REDIRECT_URI = "http://127.0.0.1/callback";
const CLIENT_ID = "mcp-host";

const whoAmI = defineTool({
  toolkit: "Account",
  name: "WhoAmI",
  version: "1.0.0",
  description: "Says which user the call is for.",
  inputSchema: { type: "object", properties: {} },
  outputSchema: { type: "object" },
  requirements: { user_id: true },
  run: (_input, ctx) => ({ user: ctx.userId ?? null }),
});

const sendMail = defineTool({
  toolkit: "Mail",
  name: "Send",
  version: "1.0.0",
  description: "Sends an email.",
  inputSchema: { type: "object", properties: { to: { type: "string", description: "Who gets it." } } },
  outputSchema: { type: "object" },
  requiredScopes: ["mail:send"],
  run: ({ to }, ctx) => ({ sent: to ?? "nobody", by: ctx.userId ?? null }),
});

let as: AuthorizationServer;
let oxp: RunningServer;
let http: HttpBridge;
/** The bridge's own URL, the resource its tokens are for. */
let resource: string;
let metadataUrl: string;
/** Every request the bridge made to the OXP server: its headers and body. */
const outgoing: { url: string; headers: Headers; body: string }[] = [];

beforeAll(async () => {
  // The authorization server must know the bridge's URL before the bridge listens: its port is chosen first.
  const port = await freePort();
  resource = `http://127.0.0.1:${port}/mcp`;
  metadataUrl = `http://127.0.0.1:${port}/.well-known/oauth-protected-resource/mcp`;
  as = await startAuthorizationServer({
    resources: [
      { url: resource, scopes: ["oxp:tools:read", "oxp:tools:call", "mail:send"] },
      { url: "https://elsewhere.test.example/mcp", scopes: ["oxp:tools:read", "oxp:tools:call"] },
    ],
    clients: [{ clientId: CLIENT_ID, redirectUris: [REDIRECT_URI], applicationType: "native" }],
    users: [ALICE],
  });
  // The tool server offers the oauth extension (so it lists required_scopes) and takes the bridge's API key.
  oxp = await listen(
    createServer({
      tools: [whoAmI, sendMail],
      logger: false,
      auth: {
        apiKeys: [API_KEY],
        oauth: { authorizationServers: [as.issuer], resource: "https://tools.test.example/oxp" },
      },
    }),
    { port: 0 },
  );
  const bridge = createMcpBridge({
    url: oxp.url,
    apiKey: API_KEY,
    fetch: async (input, init) => {
      const request = new Request(input, init);
      outgoing.push({ url: request.url, headers: new Headers(request.headers), body: await request.clone().text() });
      return fetch(request);
    },
  });
  http = await serveHttp(bridge, { port, oauth: { authorizationServers: [as.issuer] } });
});
afterAll(async () => {
  await http?.close();
  await oxp?.close();
  await as?.stop();
});

/** A raw JSON-RPC POST to the bridge. */
async function post(body: unknown, token?: string) {
  const response = await fetch(resource, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
    },
    body: JSON.stringify(body),
  });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

const listRequest = { jsonrpc: "2.0", id: 1, method: "tools/list" };
const callRequest = (name: string, args: Record<string, unknown> = {}) => ({
  jsonrpc: "2.0",
  id: 2,
  method: "tools/call",
  params: { name, arguments: args },
});

describe("the protected resource metadata", () => {
  it("is served without a token, at the path-inserted form and the root, with every scope the bridge checks", async () => {
    expect(http.resourceMetadataUrl).toBe(metadataUrl);
    for (const url of [metadataUrl, new URL("/.well-known/oauth-protected-resource", resource).href]) {
      const response = await fetch(url);
      expect(response.status, url).toBe(200);
      expect(response.headers.get("access-control-allow-origin")).toBe("*");
      expect(await response.json()).toEqual({
        resource,
        authorization_servers: [as.issuer],
        // mail:send is the OXP tool's required_scopes, read from its catalog with OXP-Extensions: oauth.
        scopes_supported: ["oxp:tools:read", "oxp:tools:call", "mail:send"],
        bearer_methods_supported: ["header"],
      });
    }
    expect((await fetch(metadataUrl, { method: "POST" })).status).toBe(405);
    // Another path below the well-known one is no document of this bridge: it needs a token like any other.
    expect((await fetch(new URL("/.well-known/oauth-protected-resource/other", resource))).status).toBe(401);
  });
});

describe("a request without a valid access token", () => {
  it("is a 401 whose challenge says where to sign in and what to ask for, without an error when no token was sent", async () => {
    const answer = await post(listRequest);
    expect(answer.status).toBe(401);
    expect(answer.headers.get("www-authenticate")).toBe(
      `Bearer resource_metadata="${metadataUrl}", scope="oxp:tools:read oxp:tools:call"`,
    );
    expect(JSON.parse(answer.text)).toMatchObject({ message: "Authentication required" });
  });

  it.each([
    ["a token for another audience", () => as.mintAccessToken({ aud: "https://elsewhere.test.example/mcp" })],
    ["an expired token", () => as.mintAccessToken({ aud: resource, exp: Math.floor(Date.now() / 1000) - 3600 })],
    [
      "a token of an issuer the bridge does not trust",
      () => as.mintAccessToken({ aud: resource, iss: "https://evil.example" }),
    ],
    ["the bridge's own OXP API key", () => Promise.resolve(API_KEY)],
  ])("is a 401 invalid_token for %s", async (_what, token) => {
    const answer = await post(listRequest, await token());
    expect(answer.status).toBe(401);
    expect(answer.headers.get("www-authenticate")).toBe(
      `Bearer error="invalid_token", resource_metadata="${metadataUrl}", scope="oxp:tools:read oxp:tools:call"`,
    );
  });

  it("never reaches the OXP server", async () => {
    const before = outgoing.length;
    await post(callRequest("Account_WhoAmI"), await as.mintAccessToken({ aud: "https://elsewhere.test.example/mcp" }));
    expect(outgoing.length).toBe(before);
  });
});

describe("scopes", () => {
  const token = (scope: string) => as.mintAccessToken({ aud: resource, sub: "alice", scope });

  verifies(
    "oauth.catalog-by-scope",
    "lists to a token with oxp:tools:read the tools whose scopes it holds",
    async () => {
      const answer = await post(listRequest, await token("oxp:tools:read"));
      expect(answer.status).toBe(200);
      expect(answer.text).toContain("Account_WhoAmI");
      // Mail_Send requires mail:send, which this token lacks: the list leaves it out, as the OXP server's would.
      expect(answer.text).not.toContain("Mail_Send");
      const withMail = await post(listRequest, await token("oxp:tools:read mail:send"));
      expect(withMail.status).toBe(200);
      expect(withMail.text).toContain("Account_WhoAmI");
      expect(withMail.text).toContain("Mail_Send");
    },
  );

  it.each([
    ["tools/list without oxp:tools:read", "oxp:tools:call", listRequest, "oxp:tools:read"],
    ["tools/call without oxp:tools:call", "oxp:tools:read", callRequest("Account_WhoAmI"), "oxp:tools:call"],
    // Every scope the call needs, the one held too, so that a client asks for all of them at once.
    [
      "tools/call without the tool's required_scopes",
      "oxp:tools:read oxp:tools:call",
      callRequest("Mail_Send"),
      "oxp:tools:call mail:send",
    ],
    [
      "a batch, naming what all its requests need",
      "",
      [listRequest, callRequest("Mail_Send")],
      "oxp:tools:read oxp:tools:call mail:send",
    ],
  ])("refuses %s with a 403 insufficient_scope naming every scope needed", async (_what, scope, body, needed) => {
    const before = outgoing.filter(({ url }) => url.endsWith("/tools/call")).length;
    const answer = await post(body, await token(scope));
    expect(answer.status).toBe(403);
    expect(answer.headers.get("www-authenticate")).toBe(
      `Bearer error="insufficient_scope", scope="${needed}", resource_metadata="${metadataUrl}"`,
    );
    expect(outgoing.filter(({ url }) => url.endsWith("/tools/call")).length).toBe(before);
  });

  it("asks nothing more of initialize than a valid token", async () => {
    const answer = await post(
      {
        jsonrpc: "2.0",
        id: 0,
        method: "initialize",
        params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
      },
      await token(""),
    );
    expect(answer.status).toBe(200);
    expect(answer.text).toContain("otc-mcp-bridge");
  });
});

/**
 * The host application's side of MCP authorization for the SDK: a pre-registered public client, tokens and the
 * discovery state in memory, and a "browser" that signs alice in through the authorization server's pages.
 */
class SignedInHost implements OAuthClientProvider {
  /** Each authorization URL the SDK sent the user to. */
  readonly authorizations: URL[] = [];
  /** Where the authorization server sent the browser back to, not yet handed to the SDK. */
  callback: AuthorizationResponse | undefined;
  #tokens: StoredOAuthTokens | undefined;
  // Registered with that authorization server beforehand (the harness has no dynamic registration), stamped with
  // its issuer as the SDK keeps credentials apart by authorization server.
  #client: StoredOAuthClientInformation = { client_id: CLIENT_ID, issuer: as.issuer };
  #verifier = "";
  #state = "";
  #discovery: OAuthDiscoveryState | undefined;

  get redirectUrl() {
    return REDIRECT_URI;
  }
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: "A test MCP host",
      redirect_uris: [REDIRECT_URI],
      grant_types: ["authorization_code"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  }
  state() {
    this.#state = randomUUID();
    return this.#state;
  }
  clientInformation() {
    return this.#client;
  }
  saveClientInformation(information: StoredOAuthClientInformation) {
    this.#client = information;
  }
  tokens() {
    return this.#tokens;
  }
  saveTokens(tokens: StoredOAuthTokens) {
    this.#tokens = tokens;
  }
  async redirectToAuthorization(url: URL) {
    this.authorizations.push(url);
    this.callback = await as.completeAuthorization(url.href, { user: ALICE });
  }
  saveCodeVerifier(verifier: string) {
    this.#verifier = verifier;
  }
  codeVerifier() {
    return this.#verifier;
  }
  saveDiscoveryState(state: OAuthDiscoveryState) {
    this.#discovery = state;
  }
  discoveryState() {
    return this.#discovery;
  }

  /** The callback's query, as the host's redirect handler gets it; checks that it answers this host's request. */
  takeCallback(): URLSearchParams {
    const callback = this.callback;
    this.callback = undefined;
    if (!callback?.code || callback.state !== this.#state) {
      throw new Error(`no authorization code for this request: ${callback?.redirectUrl}`);
    }
    return new URL(callback.redirectUrl).searchParams;
  }

  accessToken(): string {
    return this.#tokens?.access_token ?? "";
  }
}

describe("the official MCP client, signing in through the authorization server", () => {
  it.each([
    ["2025-11-25", "legacy"],
    ["2026-07-28", { pin: "2026-07-28" }],
  ] as const)(
    "(%s) gets the 401, discovers the metadata, signs alice in, lists the tools and calls one as alice; steps up for a tool's scope",
    async (_era, mode) => {
      const host = new SignedInHost();
      const before = outgoing.length;
      const clientOf = () => new Client({ name: "host", version: "1.0.0" }, { versionNegotiation: { mode } });
      const transportOf = () => new StreamableHTTPClientTransport(new URL(resource), { authProvider: host });

      // 1. No token yet: the SDK reads the 401's challenge, the metadata, the authorization server's metadata, and
      // sends the user to sign in for the challenge's scopes and this resource.
      const first = transportOf();
      await expect(clientOf().connect(first)).rejects.toBeInstanceOf(UnauthorizedError);
      const [signIn] = host.authorizations;
      expect(signIn?.origin).toBe(as.issuer);
      expect(signIn?.searchParams.get("resource")).toBe(resource);
      expect(signIn?.searchParams.get("scope")).toBe("oxp:tools:read oxp:tools:call");
      expect(signIn?.searchParams.get("code_challenge_method")).toBe("S256");
      await first.finishAuth(host.takeCallback());
      expect(host.accessToken()).not.toBe("");

      // 2. Signed in: the tools, and a call the OXP tool runs for the token's user.
      const transport = transportOf();
      const client = clientOf();
      await client.connect(transport);
      try {
        // The list has the tools this token's scopes allow: Mail_Send needs mail:send, not asked for yet.
        const { tools } = await client.listTools();
        expect(tools.map((tool) => tool.name)).toEqual(["Account_WhoAmI"]);
        const me = await client.callTool({ name: "Account_WhoAmI", arguments: {} });
        expect(me.isError).toBeFalsy();
        expect(me.structuredContent).toEqual({ user: "alice" });

        // 3. A tool whose OXP definition requires mail:send: the 403 makes the SDK sign in again for every scope.
        await expect(client.callTool({ name: "Mail_Send", arguments: { to: "bob" } })).rejects.toBeInstanceOf(
          UnauthorizedError,
        );
        const stepUp = host.authorizations[1];
        expect(stepUp?.searchParams.get("scope")?.split(" ").sort()).toEqual([
          "mail:send",
          "oxp:tools:call",
          "oxp:tools:read",
        ]);
        await transport.finishAuth(host.takeCallback());
        const sent = await client.callTool({ name: "Mail_Send", arguments: { to: "bob" } });
        expect(sent.isError).toBeFalsy();
        expect(sent.structuredContent).toEqual({ sent: "bob", by: "alice" });
        // Signed in with mail:send now, the list has Mail_Send too, in the catalog's order. (The 2026-07-28 client keeps
        // a list for the ttlMs it came with, as the same user's: a host that signed in again asks for it again.)
        const after = await client.listTools(undefined, { cacheMode: "refresh" });
        expect(after.tools.map((tool) => tool.name)).toEqual(["Account_WhoAmI", "Mail_Send"]);
      } finally {
        await client.close();
      }

      // The bridge called the OXP server with its API key and alice as the user, never with her access token.
      const calls = outgoing.slice(before).filter(({ url }) => url.endsWith("/tools/call"));
      expect(calls.length).toBeGreaterThanOrEqual(2);
      for (const call of calls) {
        expect(call.headers.get("oxp-api-key")).toBe(API_KEY);
        expect(call.headers.get("authorization")).toBeNull();
        expect(JSON.parse(call.body)).toMatchObject({ context: { user_id: "alice" } });
      }
      for (const request of outgoing.slice(before)) {
        expect([...request.headers.values()].join(" ") + request.body).not.toContain(host.accessToken());
      }
    },
  );
});

describe("a bridge server made for a caller", () => {
  /** The bridge's server for `caller`, over an in-memory pair: what serveHttp makes for each admitted request. */
  async function connected(caller: McpCaller) {
    const calls: string[] = [];
    const bridge = createMcpBridge({
      url: oxp.url,
      apiKey: API_KEY,
      userId: "the-configured-user",
      fetch: async (input, init) => {
        const request = new Request(input, init);
        if (request.url.endsWith("/tools/call")) {
          calls.push(await request.clone().text());
        }
        return fetch(request);
      },
    });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await bridge.createServer(caller).connect(serverSide);
    const client = new InProcessClient({ name: "caller-test", version: "1.0.0" });
    await client.connect(clientSide);
    return { client, calls };
  }

  it("calls for the caller's user, in place of the bridge's configured one", async () => {
    const { client, calls } = await connected({ userId: "alice", scopes: new Set(["oxp:tools:call"]) });
    try {
      const result = await client.callTool({ name: "Account_WhoAmI", arguments: {} });
      expect(result.structuredContent).toEqual({ user: "alice" });
      expect(calls.map((body) => JSON.parse(body).context)).toEqual([{ user_id: "alice" }]);
    } finally {
      await client.close();
    }
  });

  it("refuses a call whose OXP tool needs a scope the caller lacks, without calling it (the entry the call is made with decides)", async () => {
    const { client, calls } = await connected({ userId: "alice", scopes: new Set(["oxp:tools:call"]) });
    try {
      const result = await client.callTool({ name: "Mail_Send", arguments: { to: "bob" } });
      expect(result.isError).toBe(true);
      expect(result._meta?.[ERROR_META_KEY]).toEqual({
        status: 403,
        can_retry: false,
        scopes: ["oxp:tools:call", "mail:send"],
      });
      expect(calls).toEqual([]);
    } finally {
      await client.close();
    }
  });
});

/** Sends an email as another user: it needs two scopes, and a token holding one of them does not see it. */
const sendMailAs = defineTool({
  toolkit: "Mail",
  name: "SendAs",
  version: "1.0.0",
  description: "Sends an email on behalf of another user.",
  inputSchema: { type: "object", properties: { to: { type: "string", description: "Who gets it." } } },
  outputSchema: { type: "object" },
  requiredScopes: ["mail:send", "mail:delegate"],
  run: ({ to }) => ({ sent: to ?? "nobody" }),
});

const createEvent = defineTool({
  toolkit: "Calendar",
  name: "CreateEvent",
  version: "1.0.0",
  description: "Puts a meeting in the calendar and emails the invitation to its guests.",
  inputSchema: { type: "object", properties: { title: { type: "string", description: "What it is." } } },
  outputSchema: { type: "string" },
  requiredScopes: ["calendar:write"],
  run: () => "booked",
});

/**
 * More tools than one search page holds (50) that a search for a mailing list ranks first, all needing a scope the
 * narrower tokens lack: a search for them must read past the first page to find what such a token may see.
 */
const bulkTools = Array.from({ length: 60 }, (_, index) =>
  defineTool({
    toolkit: "Bulk",
    name: `Email${String(index).padStart(2, "0")}`,
    version: "1.0.0",
    description: "Emails a mailing list: one email to every address of the mailing list.",
    inputSchema: { type: "object", properties: {} },
    outputSchema: { type: "string" },
    requiredScopes: ["bulk:email"],
    run: () => "sent to the list",
  }),
);

/** The 2026-07-28 revision, or the 2025-era one; the SDK client negotiates what `mode` asks for. */
type Mode = "legacy" | { pin: "2026-07-28" };

/** The JSON-RPC result of an MCP answer's body, whether it came as JSON or as one server-sent event. */
const resultOf = (body: string) =>
  (
    JSON.parse(body.startsWith("{") ? body : (/^data: (.*)$/m.exec(body)?.[1] ?? "")) as {
      result: Record<string, unknown>;
    }
  ).result;

describe("the catalog an access token sees, with toolSearch", () => {
  let searchable: RunningServer;
  let served: HttpBridge;
  let bridge: ReturnType<typeof createMcpBridge>;
  /** Every bridged tool's name, as the bridge lists them without a caller (tools/list without OAuth). */
  let everyName: string[];
  const ALL = "oxp:tools:read oxp:tools:call mail:send mail:delegate calendar:write bulk:email";

  beforeAll(async () => {
    searchable = await listen(
      createServer({
        tools: [whoAmI, sendMail, sendMailAs, createEvent, ...bulkTools],
        logger: false,
        auth: {
          apiKeys: [API_KEY],
          oauth: { authorizationServers: [as.issuer], resource: "https://tools.test.example/oxp" },
        },
      }),
      { port: 0 },
    );
    bridge = createMcpBridge({ url: searchable.url, apiKey: API_KEY, toolSearch: true });
    served = await serveHttp(bridge, { port: 0, oauth: { authorizationServers: [as.issuer] } });
    everyName = (await bridge.listTools()).map((tool) => tool.name);
  });
  afterAll(async () => {
    await served?.close();
    await searchable?.close();
  });

  /** A token for this bridge, for alice, with these scopes. */
  const tokenFor = (scope: string) => as.mintAccessToken({ aud: served.url, sub: "alice", scope });

  /** A v2 SDK client of the bridge sending `token`, in `mode`; `bodies` gets the raw body of each tools/list answer. */
  async function clientWith(token: string, mode: Mode = { pin: "2026-07-28" }) {
    const bodies: string[] = [];
    const client = new Client({ name: "scoped-host", version: "1.0.0" }, { versionNegotiation: { mode } });
    const recording: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      if (typeof init?.body === "string" && init.body.includes('"tools/list"')) {
        bodies.push(await response.clone().text());
      }
      return response;
    };
    await client.connect(
      new StreamableHTTPClientTransport(new URL(served.url), {
        requestInit: { headers: { authorization: `Bearer ${token}` } },
        fetch: recording,
      }),
    );
    return { client, bodies };
  }

  /** The structured value of a meta-tool's successful call. */
  async function metaValue<T>(client: Client, name: string, args: Record<string, unknown>): Promise<T> {
    const result = await client.callTool({ name, arguments: args });
    expect(result.isError, JSON.stringify(result.content)).toBeFalsy();
    return result.structuredContent as T;
  }
  const foundNames = async (client: Client, args: Record<string, unknown>) =>
    (await metaValue<{ tools: { name: string }[] }>(client, "search-tools", args)).tools.map(({ name }) => name);

  verifies.each([
    ["2025-11-25", "legacy"],
    ["2026-07-28", { pin: "2026-07-28" }],
  ] as const)(
    "oauth.catalog-by-scope",
    "(%s) tools/list lists only the tools whose required_scopes the token holds, in the whole list's order; every tool for a token with every scope",
    async (era, mode) => {
      expect(everyName.slice(0, 2)).toEqual(["search-tools", "load-tools"]);
      expect(everyName).toHaveLength(2 + 4 + bulkTools.length);
      const cases: [string, string[]][] = [
        ["oxp:tools:read", ["Account_WhoAmI"]],
        ["oxp:tools:read mail:send", ["Account_WhoAmI", "Mail_Send"]],
        // One of Mail_SendAs's two scopes is not enough.
        ["oxp:tools:read mail:send mail:delegate", ["Account_WhoAmI", "Mail_Send", "Mail_SendAs"]],
        [
          "oxp:tools:read calendar:write bulk:email",
          ["Account_WhoAmI", "Calendar_CreateEvent", ...bulkTools.map((tool) => `Bulk_${tool.name}`)],
        ],
      ];
      for (const [scope, sees] of cases) {
        const { client, bodies } = await clientWith(await tokenFor(scope), mode);
        try {
          const { tools } = await client.listTools();
          const allowed = new Set(["search-tools", "load-tools", ...sees]);
          expect(
            tools.map((tool) => tool.name),
            scope,
          ).toEqual(everyName.filter((name) => allowed.has(name)));
          if (era === "2026-07-28") {
            // The list depends on who asks: no cache shared between users may keep it.
            expect(resultOf(bodies[0] ?? "")).toMatchObject({ cacheScope: "private" });
          }
        } finally {
          await client.close();
        }
      }
      const { client } = await clientWith(await tokenFor(ALL), mode);
      try {
        expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(everyName);
      } finally {
        await client.close();
      }
    },
  );

  verifies(
    "search.catalog-by-scope",
    "search-tools finds only the tools the token holds the scopes of, reading past a page of ones it may not see; every tool with every scope",
    async () => {
      const narrow = await clientWith(await tokenFor("oxp:tools:read oxp:tools:call mail:send"));
      const wide = await clientWith(await tokenFor(ALL));
      try {
        // The 60 Bulk tools rank first for this query, then the others that mention email: of all of them, this token
        // sees Mail_Send alone, found on the second page of 50.
        expect(await foundNames(narrow.client, { query: "mailing list email", limit: 1 })).toEqual(["Mail_Send"]);
        const emails = await foundNames(narrow.client, { query: "email", limit: 50 });
        expect(emails).toContain("Mail_Send");
        expect(emails.filter((name) => name !== "Mail_Send" && name !== "Account_WhoAmI")).toEqual([]);
        expect(await foundNames(narrow.client, { query: "calendar meeting" })).toEqual([]);
        // Mail_SendAs needs mail:delegate besides mail:send.
        expect(await foundNames(narrow.client, { query: "behalf" })).toEqual([]);

        // What the narrow token's search read past: the first page of 50 has Bulk tools alone.
        const firstPage = await foundNames(wide.client, { query: "mailing list email", limit: 50 });
        expect(firstPage.filter((name) => !name.startsWith("Bulk_"))).toEqual([]);
        expect(firstPage).toHaveLength(50);
        const first = await foundNames(wide.client, { query: "mailing list email", limit: 1 });
        expect(first).toHaveLength(1);
        expect(first[0]).toMatch(/^Bulk_Email\d\d$/);
        expect(await foundNames(wide.client, { query: "calendar meeting" })).toEqual(["Calendar_CreateEvent"]);
        expect(await foundNames(wide.client, { query: "behalf" })).toEqual(["Mail_SendAs"]);
      } finally {
        await narrow.client.close();
        await wide.client.close();
      }
    },
  );

  verifies(
    "search.catalog-by-scope",
    "load-tools answers a tool the token lacks the scopes of as an unknown name; tools/call of it still asks for its scopes, and runs with them",
    async () => {
      const narrow = await clientWith(await tokenFor("oxp:tools:read oxp:tools:call mail:send"));
      const wide = await clientWith(await tokenFor(ALL));
      try {
        const loaded = await metaValue<{ tools: { name: string }[]; unknown?: string[] }>(narrow.client, "load-tools", {
          names: ["Mail_Send", "Mail_SendAs", "No_Such"],
        });
        expect(loaded.tools.map(({ name }) => name)).toEqual(["Mail_Send"]);
        expect(loaded.unknown).toEqual(["Mail_SendAs", "No_Such"]);
        const none = await narrow.client.callTool({
          name: "load-tools",
          arguments: { names: ["Calendar_CreateEvent"] },
        });
        expect(none).toMatchObject({ isError: true });
        expect(JSON.stringify(none.content)).toContain("no tool has these names: Calendar_CreateEvent");

        const all = await metaValue<{ tools: { name: string }[]; unknown?: string[] }>(wide.client, "load-tools", {
          names: ["Mail_Send", "Mail_SendAs", "Calendar_CreateEvent"],
        });
        expect(all.tools.map(({ name }) => name)).toEqual(["Mail_Send", "Mail_SendAs", "Calendar_CreateEvent"]);
        expect(all.unknown).toBeUndefined();
      } finally {
        await narrow.client.close();
        await wide.client.close();
      }
      // The call rules are those of every tools/call: a 403 naming every scope the tool needs (step-up), then the call.
      const raw = async (scope: string) => {
        const response = await fetch(served.url, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            accept: "application/json, text/event-stream",
            authorization: `Bearer ${await tokenFor(scope)}`,
          },
          body: JSON.stringify(callRequest("Mail_SendAs", { to: "bob" })),
        });
        return {
          status: response.status,
          challenge: response.headers.get("www-authenticate"),
          text: await response.text(),
        };
      };
      const refused = await raw("oxp:tools:read oxp:tools:call mail:send");
      expect(refused.status).toBe(403);
      expect(refused.challenge).toBe(
        `Bearer error="insufficient_scope", scope="oxp:tools:call mail:send mail:delegate", resource_metadata="${served.resourceMetadataUrl}"`,
      );
      const ran = await raw(ALL);
      expect(ran.status).toBe(200);
      expect(resultOf(ran.text)).toMatchObject({ structuredContent: { sent: "bob" } });
    },
  );
});

describe("serveHttp's oauth settings", () => {
  const bridge = () => createMcpBridge({ url: oxp.url, apiKey: API_KEY });

  // Functions: the authorization server and the resource are known once beforeAll ran.
  it.each([
    [
      "with a token too",
      () => ({ token: "a-token-long-enough-for-http", oauth: { authorizationServers: [as.issuer] } }),
      /not both/,
    ],
    [
      "off loopback without its resource",
      () => ({ host: "0.0.0.0", oauth: { authorizationServers: [as.issuer] } }),
      /needs its resource/,
    ],
    [
      "with a delegation scope",
      () => ({ oauth: { authorizationServers: [as.issuer], resource, delegationScope: "oxp:delegate" } }),
      /delegationScope/,
    ],
    [
      "with an issuer over http off loopback",
      () => ({ oauth: { authorizationServers: ["http://as.example"], resource } }),
      /https/,
    ],
    ["without an issuer", () => ({ oauth: { authorizationServers: [], resource } }), /at least one issuer/],
  ])("refuses them %s, before listening", async (_what, options, message) => {
    await expect(serveHttp(bridge(), { port: 0, ...(options() as HttpBridgeOptions) })).rejects.toThrow(message);
  });

  it("lets a host other than loopback be served with oauth and its resource, no token", async () => {
    const served = await serveHttp(bridge(), {
      host: "0.0.0.0",
      port: 0,
      oauth: { authorizationServers: [as.issuer], resource: "https://mcp.test.example/mcp" },
    });
    try {
      expect(served.resourceMetadataUrl).toBe("https://mcp.test.example/.well-known/oauth-protected-resource/mcp");
      const local = served.url.replace("0.0.0.0", "127.0.0.1");
      expect((await fetch(local, { method: "POST" })).status).toBe(401);
      expect((await fetch(new URL("/.well-known/oauth-protected-resource/mcp", local))).status).toBe(200);
    } finally {
      await served.close();
    }
  });
});

// The client's side of the connections extension (docs/protocol.md 9.7) against a real @otc/server on loopback whose vault connects accounts at a real provider (oidc-provider playing "Example Accounts"); the browser's part of the flow is driven over HTTP.
import { createHandler, defineTool, listen, type RunningServer } from "@otc/server/node";
import { freePort } from "@otc/test-helpers/free-port";
import { ManualClock } from "@otc/test-helpers/manual-clock";
import { type AuthorizationServer, startAuthorizationServer } from "@otc/test-helpers/oidc-provider";
import type { ConnectionFlow } from "@otc/types";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ClientOptions, createClient } from "./client.js";
import {
  OxpAuthenticationError,
  OxpConnectionError,
  OxpCrossOriginError,
  OxpExtensionUnavailableError,
  OxpProtocolError,
  OxpServerError,
} from "./errors.js";

const API_KEY = "key-of-the-agent-platform";
/** The host application's session cookie: its value names the browser's signed-in user. */
const SESSION = "session";

const whoAmI = defineTool({
  toolkit: "Example",
  name: "WhoAmI",
  version: "1.0.0",
  description: "Says the connected account's token arrived.",
  inputSchema: { type: "object", properties: {} },
  outputSchema: { type: "boolean" },
  requirements: { user_id: true, authorization: [{ id: "example", oauth2: { scopes: ["openid"] } }] },
  run: (_input, ctx) => typeof ctx.tokens.example === "string",
});

let provider: AuthorizationServer;
/** A tool server with API keys and the connections extension, on a port known before the provider registered it. */
let server: RunningServer;
/** The same tools without `connections`: its discovery document does not list it. */
let plain: RunningServer;

beforeAll(async () => {
  const port = await freePort();
  provider = await startAuthorizationServer({
    clients: [
      {
        clientId: "oxp-vault",
        clientSecret: "vault-secret",
        redirectUris: [`http://127.0.0.1:${port}/connections/callback`],
        grantTypes: ["authorization_code", "refresh_token"],
      },
    ],
    users: ["alice", "bob", "carol"].map((id) => ({ id, password: `${id}-password`, email: `${id}@example.com` })),
  });
  server = await listen(
    createHandler({
      tools: [whoAmI],
      logger: false,
      publicUrl: `http://127.0.0.1:${port}`,
      auth: { apiKeys: [API_KEY] },
      connections: {
        providers: [
          {
            id: "example",
            name: "Example Accounts",
            issuer: provider.issuer,
            clientId: "oxp-vault",
            clientSecret: "vault-secret",
            scopes: ["openid", "email", "offline_access"],
          },
        ],
        keys: [{ id: "k1", key: Buffer.alloc(32, 7).toString("base64url") }],
        verifyBrowser: (request, owner) => request.headers.get("cookie") === `${SESSION}=${owner.userId}`,
      },
    }),
    { port },
  );
  plain = await listen(createHandler({ tools: [whoAmI], logger: false, auth: { apiKeys: [API_KEY] } }), { port: 0 });
});
afterAll(async () => {
  await Promise.all([server?.close(), plain?.close()]);
  await provider?.stop();
});

/** One request the client sent. */
interface Sent {
  method: string;
  path: string;
  query: Record<string, string>;
  extensions: string | null;
  body: unknown;
}

/**
 * A client of `baseUrl` (the connections server by default) with the API key, whose fetch records each request;
 * `answer` may answer a request itself (a server that differs from ours), else the real server does.
 */
function observed(
  options: Partial<ClientOptions> & { answer?: (request: Request) => Promise<Response | undefined> } = {},
) {
  const sent: Sent[] = [];
  const { answer, ...clientOptions } = options;
  const client = createClient({
    baseUrl: server.url,
    apiKey: API_KEY,
    ...clientOptions,
    fetch: async (input, init) => {
      const request = new Request(input, init);
      const url = new URL(request.url);
      const text = await request.clone().text();
      sent.push({
        method: request.method,
        path: url.pathname,
        query: Object.fromEntries(url.searchParams),
        extensions: request.headers.get("oxp-extensions"),
        body: text === "" ? undefined : JSON.parse(text),
      });
      return (await answer?.(request)) ?? fetch(request);
    },
  });
  return { client, sent };
}

/** Signs `user` in at the provider from the flow's url, and brings the browser back signed in to the host as `browserUser`. */
async function finishInBrowser(flow: ConnectionFlow, user: string, browserUser = user) {
  const { redirectUrl } = await provider.completeAuthorization(flow.url, {
    user: { id: user, password: `${user}-password` },
  });
  const page = await fetch(redirectUrl, { headers: { cookie: `${SESSION}=${browserUser}` } });
  await page.text();
  return page.status;
}

describe("connecting an account", () => {
  it("starts the flow, waits on the client's clock until the browser finished it, lists it, and disconnects it", async () => {
    const clock = new ManualClock();
    const { client, sent } = observed({ clock });
    const flow = await client.connect({ provider: "example", userId: "alice" });
    expect(flow).toEqual({
      id: expect.any(String),
      status: "pending",
      url: expect.stringMatching(`^${provider.issuer}/`),
      check_url: expect.stringMatching(`^${server.url}/`),
    });
    expect(new URL(flow.url).searchParams.get("redirect_uri")).toBe(`${server.url}/connections/callback`);

    const waiting = client.waitForConnection(flow, { pollIntervalMs: 2_000 });
    // The first read said pending: the client waits 2 s on its clock before the next.
    await clock.untilPending(1);
    expect(await finishInBrowser(flow, "alice")).toBe(200);
    await clock.advance(2_000);
    expect(await waiting).toBe("completed");

    expect(await client.listConnections({ userId: "alice" })).toEqual([
      expect.objectContaining({ id: flow.id, provider: "example", status: "active", account: "alice" }),
    ]);
    // The vault's token serves the user's calls.
    expect(
      await client.callTool({ tool_id: "Example.WhoAmI", input: {}, context: { user_id: "alice" } }),
    ).toMatchObject({ success: true, value: true });

    await client.disconnect(flow.id, { userId: "alice" });
    expect(await client.listConnections({ userId: "alice" })).toEqual([]);

    const checks = sent.filter((request) => request.path.startsWith("/authorization/"));
    expect(checks).toHaveLength(2);
    expect(sent.map(({ method, path, extensions }) => [method, path.replace(flow.id, "{id}"), extensions])).toEqual([
      ["GET", "/.well-known/oxp", null],
      ["POST", "/connections", "connections"],
      ...checks.map((check) => ["GET", check.path, null]),
      ["GET", "/connections", "connections"],
      ["POST", "/tools/call", null],
      ["DELETE", "/connections/{id}", "connections"],
      ["GET", "/connections", "connections"],
    ]);
    expect(sent[1]?.body).toEqual({ provider: "example", user_id: "alice" });
    expect(sent.filter((request) => request.path.includes("/connections")).map((request) => request.query)).toEqual([
      {},
      { user_id: "alice" },
      { user_id: "alice" },
      { user_id: "alice" },
    ]);
  });

  it("sends the scopes asked for, and reports a flow another user's browser came back to as failed", async () => {
    const clock = new ManualClock();
    const { client, sent } = observed({ clock });
    const flow = await client.connect({ provider: "example", scopes: ["openid", "email"], userId: "bob" });
    expect(sent.at(-1)?.body).toEqual({ provider: "example", scopes: ["openid", "email"], user_id: "bob" });
    expect(new URL(flow.url).searchParams.get("scope")?.split(" ")).toEqual(
      expect.arrayContaining(["openid", "email"]),
    );
    const waiting = client.waitForConnection(flow);
    await clock.untilPending(1);
    // bob sent the link to carol: her browser is hers, and binds nothing to bob.
    expect(await finishInBrowser(flow, "carol")).toBe(403);
    await clock.advance(1_000);
    expect(await waiting).toBe("failed");
    expect(await client.listConnections({ userId: "bob" })).toEqual([]);
  });
});

describe("errors", () => {
  it("are the server's, typed: no user and an unknown provider (400), an unknown id (404), a wrong key (401)", async () => {
    const { client } = observed();
    const noUser = await client.listConnections().catch((error: unknown) => error);
    expect(noUser).toBeInstanceOf(OxpServerError);
    expect(noUser).toMatchObject({ status: 400, missingRequirements: { user_id: true } });
    await expect(client.connect({ provider: "example" })).rejects.toMatchObject({ status: 400 });
    const unknown = await client.connect({ provider: "nowhere", userId: "alice" }).catch((error: unknown) => error);
    expect(unknown).toBeInstanceOf(OxpServerError);
    expect(unknown).toMatchObject({ status: 400 });
    const gone = await client.disconnect("c_never_was", { userId: "alice" }).catch((error: unknown) => error);
    expect(gone).toBeInstanceOf(OxpServerError);
    expect(gone).toMatchObject({ status: 404 });
    const wrongKey = createClient({ baseUrl: server.url, apiKey: "not-the-key" });
    await expect(wrongKey.listConnections({ userId: "alice" })).rejects.toBeInstanceOf(OxpAuthenticationError);
  });

  it("a server that does not offer connections: OxpExtensionUnavailableError, nothing sent but discovery", async () => {
    const { client, sent } = observed({ baseUrl: plain.url });
    for (const attempt of [
      () => client.listConnections({ userId: "alice" }),
      () => client.connect({ provider: "example", userId: "alice" }),
      () => client.disconnect("c_1", { userId: "alice" }),
    ]) {
      const error = await attempt().catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(OxpExtensionUnavailableError);
      expect(error).toMatchObject({ extension: "connections" });
    }
    expect(sent.map((request) => request.path)).toEqual(["/.well-known/oxp"]);
  });

  it("a POST that may have reached the server is not sent again (each starts a flow); a list is", async () => {
    let dropped = 0;
    const { client, sent } = observed({
      clock: new ManualClock(),
      retry: { maxAttempts: 2, baseDelayMs: 0 },
      // The server answers, and the answer is lost on the way back.
      answer: async (request) => {
        if (new URL(request.url).pathname === "/connections" && dropped++ < 2) {
          await (await fetch(request)).text();
          throw new TypeError("fetch failed", { cause: new Error("socket hang up") });
        }
        return undefined;
      },
    });
    await expect(client.connect({ provider: "example", userId: "dave" })).rejects.toBeInstanceOf(OxpConnectionError);
    expect(sent.filter((request) => request.method === "POST")).toHaveLength(1);
    expect(await client.listConnections({ userId: "dave" })).toEqual([]);
    expect(sent.filter((request) => request.method === "GET" && request.path === "/connections")).toHaveLength(2);
  });

  it("a disconnect whose answer was lost is sent again, and the 404 it then gets means it is gone", async () => {
    const clock = new ManualClock();
    const setUp = observed({ clock });
    const flow = await setUp.client.connect({ provider: "example", userId: "alice" });
    const waiting = setUp.client.waitForConnection(flow);
    await clock.untilPending(1);
    expect(await finishInBrowser(flow, "alice")).toBe(200);
    await clock.advance(1_000);
    expect(await waiting).toBe("completed");
    let dropped = 0;
    const { client, sent } = observed({
      clock,
      retry: { maxAttempts: 2, baseDelayMs: 0 },
      answer: async (request) => {
        if (request.method === "DELETE" && dropped++ === 0) {
          await (await fetch(request)).text();
          throw new TypeError("fetch failed", { cause: new Error("socket hang up") });
        }
        return undefined;
      },
    });
    await client.disconnect(flow.id, { userId: "alice" });
    expect(sent.filter((request) => request.method === "DELETE")).toHaveLength(2);
    expect(await client.listConnections({ userId: "alice" })).toEqual([]);
    // Without a lost answer, a 404 is the server's: no such connection.
    await expect(client.disconnect(flow.id, { userId: "alice" })).rejects.toMatchObject({ status: 404 });
  });

  it("an answer that is not the spec's: OxpProtocolError", async () => {
    const { client } = observed({
      answer: async (request) =>
        new URL(request.url).pathname === "/connections"
          ? request.method === "POST"
            ? Response.json({ id: "c_1", status: "completed", url: "https://example.com" }, { status: 201 })
            : Response.json({ items: [{ id: "c_1", provider: "example", access_token: "leaked" }] })
          : undefined,
    });
    await expect(client.connect({ provider: "example", userId: "alice" })).rejects.toBeInstanceOf(OxpProtocolError);
    await expect(client.listConnections({ userId: "alice" })).rejects.toBeInstanceOf(OxpProtocolError);
  });

  it("refuses what it cannot send safely, asking nothing: a dot-segment id, a check_url elsewhere, a bad interval", async () => {
    const { client, sent } = observed();
    await expect(client.disconnect("..", { userId: "alice" })).rejects.toBeInstanceOf(RangeError);
    const elsewhere: ConnectionFlow = {
      id: "c_1",
      status: "pending",
      url: `${provider.issuer}/auth`,
      check_url: `${provider.issuer}/authorization/challenges/x`,
    };
    await expect(client.waitForConnection(elsewhere)).rejects.toBeInstanceOf(OxpCrossOriginError);
    await expect(client.waitForConnection(elsewhere, { pollIntervalMs: Number.NaN })).rejects.toBeInstanceOf(
      RangeError,
    );
    expect(sent).toEqual([]);
  });
});

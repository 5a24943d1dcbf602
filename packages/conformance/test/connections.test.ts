// The connections group against a small server (it passes where the server is right, is not applicable where it offers no connections, and fails each deliberate bug), and against @otc/server whose provider is oidc-provider, with a connection made beforehand as a browser would.

import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { createServer, type Server } from "node:http";
import { main, type Report, type RunOptions, runConformance, scenarios } from "@otc/conformance";
import { createFetchHandler } from "@otc/server/fetch";
import { type AdapterOptions, createHandler, listen } from "@otc/server/node";
import { freePort } from "@otc/test-helpers/free-port";
import { type AuthorizationServer, startAuthorizationServer } from "@otc/test-helpers/oidc-provider";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tokenLooking } from "../src/scenarios/connections.js";
import { type ConnectionsBug, type ConnectionsServerOptions, startConnectionsServer } from "./connections-server.js";

const API_KEY = "connections-server-api-key";

const GROUP = scenarios.filter((scenario) => scenario.id.startsWith("connections.")).map((scenario) => scenario.id);

/** The group against the small server, where alice is connected; the kit told so unless `user` is null. */
async function check(
  server: Partial<ConnectionsServerOptions>,
  kit: Partial<RunOptions> = {},
  user: string | null = "alice",
): Promise<Report> {
  const running = await startConnectionsServer({ apiKey: API_KEY, connected: ["alice"], ...server });
  try {
    return await runConformance({
      url: running.url,
      apiKey: API_KEY,
      only: ["connections."],
      fixture: {},
      ...(user === null ? {} : { connectionsUser: user }),
      ...kit,
    });
  } finally {
    await running.close();
  }
}

const withStatus = (report: Report, status: string) =>
  report.results.filter((result) => result.status === status).map((result) => result.id);

describe("the connections group", () => {
  it("runs after the oauth group and before the hostile one, whose checks read every answer", () => {
    const ids = scenarios.map((scenario) => scenario.id);
    expect(GROUP.length).toBeGreaterThanOrEqual(9);
    expect(ids.indexOf("oauth.user-is-subject")).toBeLessThan(ids.indexOf("connections.discovery"));
    expect(ids.indexOf("connections.users-apart")).toBeLessThan(ids.indexOf("errors.no-leaks"));
    for (const scenario of scenarios.filter((entry) => entry.id.startsWith("connections."))) {
      expect(scenario.rules.length, scenario.id).toBeGreaterThan(0);
    }
  });

  it("passes every scenario on a right server, with a connected user and with the kit's own", async () => {
    const report = await check({}, { only: ["connections.", "errors.no-leaks"] });
    expect(report.results.filter((result) => result.status !== "pass")).toEqual([]);
    expect(withStatus(report, "pass")).toEqual([...GROUP, "errors.no-leaks"]);
    const unconnected = await check({ connected: [] }, {}, null);
    expect(withStatus(unconnected, "pass")).toEqual(GROUP);
  });

  it("reports every scenario as not applicable where discovery lists no connections", async () => {
    const report = await check({ connections: false });
    expect(withStatus(report, "skip")).toEqual(GROUP);
    for (const result of report.results) {
      expect(result.reason, result.id).toBe(
        "not applicable: the server's discovery document does not list 'connections'",
      );
    }
  });

  // Each bug, the one scenario that must fail on it, and what it says.
  const caught: [ConnectionsBug, string, RegExp][] = [
    ["provider-twice", "connections.discovery", /lists the provider example twice/],
    [
      "routes-without-header",
      "connections.off-without-header",
      /GET \/connections answered 200: without the header the route is unknown/,
    ],
    ["token-listed", "connections.list", /carries what looks like a token: \/items\/0\/access_token/],
    [
      "user-optional",
      "connections.user",
      /GET \/connections \(OXP-Extensions: connections\) without a user_id: expected 400, got 200/,
    ],
    ["unknown-provider-accepted", "connections.create.unknown-provider", /expected 400, got 201/],
    ["check-url-completed", "connections.create", /the flow's check_url says completed before anybody opened its url/],
    ["plain-pkce", "connections.flow", /code_challenge_method plain, not S256/],
    ["state-reused", "connections.flow", /two flows have the same state/],
    [
      "no-state-check",
      "connections.callback.forged-state",
      /GET \/connections\/callback with the flow's state with its end changed answered 200/,
    ],
    ["framing-allowed", "connections.callback.forged-state", /X-Frame-Options is \(none\), not DENY/],
    ["unknown-delete-204", "connections.delete.unknown", /expected 404, got 204/],
    [
      "lists-every-user",
      "connections.users-apart",
      /GET \/connections\?user_id=oxp-conformance-other-user \(OXP-Extensions: connections\) lists c_.*, of the user 'alice'/,
    ],
    ["deletes-others", "connections.users-apart", /, of the user 'alice': expected 404, got 204/],
  ];
  it.concurrent.each(caught)("catches the bug %s in %s, and only there", async (bug, id, reason) => {
    const report = await check({ bugs: [bug] });
    expect(withStatus(report, "fail")).toEqual([id]);
    const result = report.results.find((entry) => entry.id === id);
    expect(result?.reason).toMatch(reason);
    expect(withStatus(report, "pass")).toEqual(GROUP.filter((entry) => entry !== id));
  });
});

describe("the connections group against @otc/server, with oidc-provider as the provider", () => {
  const SESSION = "session";
  let provider: AuthorizationServer;
  let ports: { node: number; fetch: number; oauth: number };

  /** The tool server's options on a port known first: the provider's registered redirect URI names it. */
  const options = (port: number, oauth = false): AdapterOptions => ({
    tools: [],
    logger: false,
    validateResponses: true,
    publicUrl: `http://127.0.0.1:${port}`,
    auth: oauth ? { oauth: { authorizationServers: [provider.issuer], resource: RESOURCE } } : { apiKeys: [API_KEY] },
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
      keys: [{ id: "k1", key: randomBytes(32).toString("base64url") }],
      // The host application's session: the browser's cookie names its user.
      verifyBrowser: (request, owner) => request.headers.get("cookie") === `${SESSION}=${owner.userId}`,
    },
  });
  /** The tool server's canonical URL under oauth: the agent's tokens are minted for it. */
  const RESOURCE = "https://tools.conformance.test/oxp";

  beforeAll(async () => {
    ports = { node: await freePort(), fetch: await freePort(), oauth: await freePort() };
    provider = await startAuthorizationServer({
      resources: [{ url: RESOURCE, scopes: ["oxp:tools:read", "oxp:tools:call"] }],
      clients: [
        {
          clientId: "oxp-vault",
          clientSecret: "vault-secret",
          redirectUris: Object.values(ports).map((port) => `http://127.0.0.1:${port}/connections/callback`),
          grantTypes: ["authorization_code", "refresh_token"],
        },
        { clientId: "agent", clientSecret: "agent-secret", grantTypes: ["client_credentials"] },
      ],
      users: [{ id: "alice", password: "alice-password", email: "alice@example.com" }],
    });
  });
  afterAll(async () => {
    await provider?.stop();
  });

  /** The server on the node:http adapter, or its fetch handler behind a small node:http bridge, on `port`. */
  async function startToolServer(
    adapter: "node" | "fetch",
    port: number,
    oauth = false,
  ): Promise<{ url: string; close(): Promise<void> }> {
    if (adapter === "node") {
      return listen(createHandler(options(port, oauth)), { port });
    }
    const handler = createFetchHandler(options(port, oauth));
    const server: Server = createServer(async (req, res) => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) {
        chunks.push(chunk as Buffer);
      }
      const body = chunks.length > 0 ? Buffer.concat(chunks) : undefined;
      const request = new Request(`http://${req.headers.host}${req.url}`, {
        method: req.method,
        headers: Object.entries(req.headers).flatMap(([name, value]) =>
          value === undefined ? [] : [[name, Array.isArray(value) ? value.join(", ") : value] as [string, string]],
        ),
        ...(body && req.method !== "GET" && req.method !== "HEAD" ? { body } : {}),
      });
      const response = await handler(request, { remoteAddress: req.socket.remoteAddress });
      res.writeHead(response.status, Object.fromEntries(response.headers));
      res.end(Buffer.from(await response.arrayBuffer()));
    });
    server.listen(port, "127.0.0.1");
    await once(server, "listening");
    return {
      url: `http://127.0.0.1:${port}`,
      close: () =>
        new Promise((resolve) => {
          server.closeAllConnections();
          server.close(() => resolve());
        }),
    };
  }

  /** Connects alice's account as her browser would: the flow started, signed in at the provider, back with her cookie. */
  async function connectAlice(url: string): Promise<string> {
    const started = await fetch(`${url}/connections`, {
      method: "POST",
      headers: { "OXP-API-Key": API_KEY, "OXP-Extensions": "connections", "content-type": "application/json" },
      body: JSON.stringify({ provider: "example", user_id: "alice" }),
    });
    expect(started.status).toBe(201);
    const flow = (await started.json()) as { id: string; url: string };
    const authorized = await provider.completeAuthorization(flow.url, {
      user: { id: "alice", password: "alice-password" },
    });
    const page = await fetch(authorized.redirectUrl, { headers: { cookie: `${SESSION}=alice` } });
    expect(page.status, await page.text()).toBe(200);
    return flow.id;
  }

  it.each(["node", "fetch"] as const)("passes every scenario on the %s adapter", async (adapter) => {
    const running = await startToolServer(adapter, ports[adapter]);
    try {
      const own = await runConformance({
        url: running.url,
        apiKey: API_KEY,
        only: ["connections.", "errors.no-leaks"],
      });
      expect(own.results.filter((result) => result.status !== "pass")).toEqual([]);
      expect(withStatus(own, "pass")).toEqual([...GROUP, "errors.no-leaks"]);

      // With a connected user, the list the kit reads holds a connection, which another user cannot delete.
      const id = await connectAlice(running.url);
      const report = await runConformance({
        url: running.url,
        apiKey: API_KEY,
        only: ["connections.", "errors.no-leaks"],
        connectionsUser: "alice",
      });
      expect(report.results.filter((result) => result.status !== "pass")).toEqual([]);
      const listed = await fetch(`${running.url}/connections?user_id=alice`, {
        headers: { "OXP-API-Key": API_KEY, "OXP-Extensions": "connections" },
      });
      expect(((await listed.json()) as { items: { id: string }[] }).items.map((item) => item.id)).toEqual([id]);
      // Each check of users apart sent its DELETE, and alice's connection was never revoked at the provider.
      expect(provider.count("revocation")).toBe(0);
    } finally {
      await running.close();
      provider.clearRequests();
    }
  });

  it("by an access token alone, takes the user to be its subject and skips the second user", async () => {
    const running = await startToolServer("node", ports.oauth, true);
    try {
      const report = await runConformance({
        url: running.url,
        only: ["connections."],
        oauth: {
          token: (scopes) =>
            provider.clientCredentialsToken({
              clientId: "agent",
              clientSecret: "agent-secret",
              resource: RESOURCE,
              scope: scopes.join(" "),
            }),
        },
      });
      expect(withStatus(report, "fail")).toEqual([]);
      expect(withStatus(report, "skip")).toEqual(["connections.users-apart"]);
      expect(report.results.find((result) => result.id === "connections.users-apart")?.reason).toBe(
        "the kit's requests carry an access token alone: its subject is the one user the kit can be",
      );
    } finally {
      await running.close();
      provider.clearRequests();
    }
  });

  it("runs from the command line with --connections-user", async () => {
    const running = await startToolServer("node", ports.node);
    try {
      await connectAlice(running.url);
      const lines: string[] = [];
      const code = await main(
        ["--url", running.url, "--api-key", API_KEY, "--only", "connections.", "--connections-user", "alice"],
        (text) => lines.push(text),
      );
      const output = lines.join("");
      expect(code, output).toBe(0);
      expect(output).toContain(`${GROUP.length} passed, 0 failed`);
    } finally {
      await running.close();
      provider.clearRequests();
    }
  });
});

describe("tokenLooking", () => {
  it.each([
    ["a token member", { items: [{ id: "c", access_token: "x" }] }, ["/items/0/access_token"]],
    ["any member naming a token or secret", { refreshToken: 1, client_secret: 2 }, ["/refreshToken", "/client_secret"]],
    ["a JWT as a value", { account: "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.sig" }, ["/account (a JWT)"]],
    ["nothing in a plain connection", { items: [{ id: "c_1", provider: "example", scopes: ["openid"] }] }, []],
  ])("finds %s", (_case, body, found) => {
    expect(tokenLooking(body)).toEqual(found);
  });
});

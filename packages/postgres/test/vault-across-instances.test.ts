// Two tool-server instances share a vault on a real PostgreSQL server: a token both need refreshed at the same moment is refreshed once at the provider (docs/protocol.md 9.7, a real oidc-provider as the provider).
import { randomBytes } from "node:crypto";
import { createHandler, defineTool, listen } from "@otc/server";
import { freePort } from "@otc/test-helpers/free-port";
import { ManualClock } from "@otc/test-helpers/manual-clock";
import { type AuthorizationServer, startAuthorizationServer } from "@otc/test-helpers/oidc-provider";
import { type PostgresServer, startPostgresServer } from "@otc/test-helpers/postgres-server";
import { verifies } from "@otc/test-helpers/verifies";
import { afterAll, beforeAll, expect } from "vitest";
import { createPostgresConnectionStore, type PostgresConnectionStore } from "../src/postgres-store.js";

const API_KEY = "key-of-both-instances";
const KEY = randomBytes(32).toString("base64url");

let database: PostgresServer;
let provider: AuthorizationServer;
const instances: { url: string; clock: ManualClock; store: PostgresConnectionStore; close(): Promise<void> }[] = [];

/** Reads the connected account's profile at the provider with the token the vault gives. */
const whoAmI = defineTool({
  toolkit: "Example",
  name: "WhoAmI",
  version: "1.0.0",
  description: "Reads the connected account's profile.",
  inputSchema: { type: "object", properties: {} },
  outputSchema: { type: "object" },
  requirements: { user_id: true, authorization: [{ id: "example", oauth2: { scopes: ["openid"] } }] },
  run: async (_input, ctx) => {
    const response = await fetch(provider.url("/me"), { headers: { Authorization: `Bearer ${ctx.tokens.example}` } });
    return { status: response.status, sub: ((await response.json()) as { sub?: string }).sub ?? null };
  },
});

const call = (url: string) =>
  fetch(`${url}/tools/call`, {
    method: "POST",
    headers: { "Content-Type": "application/json", "OXP-API-Key": API_KEY },
    body: JSON.stringify({ tool_id: "Example.WhoAmI", input: {}, context: { user_id: "alice" } }),
  }).then(async (response) => ({ status: response.status, body: (await response.json()) as { value?: unknown } }));

beforeAll(async () => {
  database = await startPostgresServer();
  const ports = [await freePort(), await freePort()];
  provider = await startAuthorizationServer({
    clients: [
      {
        clientId: "oxp-vault",
        clientSecret: "vault-secret",
        redirectUris: ports.map((port) => `http://127.0.0.1:${port}/connections/callback`),
        grantTypes: ["authorization_code", "refresh_token"],
      },
    ],
    users: [{ id: "alice", password: "alice-password" }],
  });
  for (const port of ports) {
    // Each instance its own pool: two servers on one database.
    const store = await createPostgresConnectionStore({ connectionString: database.url });
    const clock = new ManualClock(Date.now());
    const app = createHandler({
      tools: [whoAmI],
      clock,
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
            scopes: ["openid", "offline_access"],
          },
        ],
        keys: [{ id: "k1", key: KEY }],
        verifyBrowser: (request, owner) => request.headers.get("cookie") === `session=${owner.userId}`,
        store,
      },
    });
    const running = await listen(app, { port });
    instances.push({
      url: running.url,
      clock,
      store,
      close: async () => {
        await running.close();
        await store.close();
      },
    });
  }
});

afterAll(async () => {
  for (const instance of instances) {
    await instance.close();
  }
  await provider?.stop();
  await database?.close();
});

verifies(
  ["connections.at-call-time", "connections.sealed"],
  "two instances sharing PostgreSQL refresh an expiring token once, at the same moment",
  async () => {
    const [first, second] = instances as [(typeof instances)[0], (typeof instances)[0]];
    // alice connects through the first instance.
    const flow = await fetch(`${first.url}/connections`, {
      method: "POST",
      headers: { "Content-Type": "application/json", "OXP-API-Key": API_KEY, "OXP-Extensions": "connections" },
      body: JSON.stringify({ provider: "example", user_id: "alice" }),
    }).then((response) => response.json() as Promise<{ url: string }>);
    const done = await provider.completeAuthorization(flow.url, { user: { id: "alice", password: "alice-password" } });
    expect((await fetch(done.redirectUrl, { headers: { cookie: "session=alice" } })).status).toBe(200);
    // The second instance reads the same vault, sealed under the same key.
    expect((await call(second.url)).body.value).toEqual({ status: 200, sub: "alice" });

    // Both instances' clocks move to within a minute of the token's expiry: each call would refresh it.
    await Promise.all([first.clock.advance(250_000), second.clock.advance(250_000)]);
    const before = provider.count("token", "refresh_token");
    const replies = await Promise.all([call(first.url), call(second.url), call(first.url), call(second.url)]);
    for (const reply of replies) {
      expect(reply.body.value).toEqual({ status: 200, sub: "alice" });
    }
    // One refresh at the provider: the rotating refresh token was spent once.
    expect(provider.count("token", "refresh_token") - before).toBe(1);
    const [record] = await second.store.list("api-key:0", "alice");
    expect(record?.status).toBe("active");
    expect(record?.version).toBe(2);
  },
);

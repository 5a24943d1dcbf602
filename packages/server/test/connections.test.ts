// The connections extension (docs/protocol.md 9.7) against a real provider: oidc-provider on loopback plays "Example Accounts", whose tokens the vault holds; the flow is driven over HTTP as a browser would.
import { randomBytes } from "node:crypto";
import { Writable } from "node:stream";
import { freePort } from "@otc/test-helpers/free-port";
import { ManualClock } from "@otc/test-helpers/manual-clock";
import { type AuthorizationServer, startAuthorizationServer } from "@otc/test-helpers/oidc-provider";
import { verifies } from "@otc/test-helpers/verifies";
import { afterAll, beforeAll, describe, expect } from "vitest";
import { TokenSeal } from "../src/connections/seal.js";
import {
  type ConnectionsOptions,
  createLogger,
  createTelemetry,
  defineTool,
  listen,
  MemoryConnectionStore,
  MemoryIdempotencyStore,
  type ServerOptions,
} from "../src/index.js";
import { callTool, expectError, makeServer, send } from "./harness.js";

const API_KEY = "key-of-the-agent-platform";
/** A second principal on the same server, naming the same user ids. */
const OTHER_KEY = "key-of-another-platform";
const SESSION = "session";
const key = () => randomBytes(32).toString("base64url");

/** Every token the tools were given, to look for in everything else the server wrote. */
const handedToTools: string[] = [];

let provider: AuthorizationServer;

/** Asks the provider who the token is for: what a real tool does with the token the vault gave it. */
const whoAmI = defineTool({
  toolkit: "Example",
  name: "WhoAmI",
  version: "1.0.0",
  description: "Reads the connected account's profile at the provider.",
  inputSchema: { type: "object", properties: {} },
  outputSchema: { type: "object" },
  requirements: { user_id: true, authorization: [{ id: "example", oauth2: { scopes: ["openid"] } }] },
  run: async (_input, ctx) => {
    const token = ctx.tokens.example as string;
    handedToTools.push(token);
    const response = await fetch(provider.url("/me"), { headers: { Authorization: `Bearer ${token}` } });
    const profile = (await response.json()) as { sub?: string };
    return { status: response.status, sub: profile.sub ?? null };
  },
});

/** Says whether the token it got is the one a client sent. */
const echo = defineTool({
  toolkit: "Example",
  name: "Echo",
  version: "1.0.0",
  description: "Tells whether the token is the client's.",
  inputSchema: { type: "object", properties: {} },
  outputSchema: { type: "object" },
  requirements: { user_id: true, authorization: [{ id: "example", oauth2: { scopes: [] } }] },
  run: (_input, ctx) => ({ clients: ctx.tokens.example === "token-the-client-sent" }),
});

interface Server {
  url: string;
  clock: ManualClock;
  store: MemoryConnectionStore;
  lines: string[];
  close(): Promise<void>;
}

/** A tool server on a port known first: the provider's registered redirect URI names it exactly. */
async function startToolServer(
  port: number,
  connections: Partial<ConnectionsOptions> = {},
  options: Partial<ServerOptions> = {},
): Promise<Server> {
  const lines: string[] = [];
  const clock = new ManualClock(Date.now());
  const store = (connections.store as MemoryConnectionStore | undefined) ?? new MemoryConnectionStore();
  const app = makeServer({
    tools: [whoAmI, echo],
    validateResponses: true,
    clock,
    publicUrl: `http://127.0.0.1:${port}`,
    auth: { apiKeys: [API_KEY, OTHER_KEY] },
    logger: createLogger({
      level: "debug",
      destination: new Writable({
        write(chunk, _encoding, done) {
          lines.push(...String(chunk).split("\n").filter(Boolean));
          done();
        },
      }),
    }),
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
      keys: [{ id: "k1", key: KEY_ONE }],
      // The host application's session: the browser's cookie names its user.
      verifyBrowser: (request, owner) => request.headers.get("cookie") === `${SESSION}=${owner.userId}`,
      ...connections,
      store,
    },
    ...options,
  });
  const running = await listen(app, { port });
  return { url: running.url, clock, store, lines, close: running.close };
}

const KEY_ONE = key();
const ports: number[] = [];
let server: Server;

const asked = { "OXP-API-Key": API_KEY, "OXP-Extensions": "connections", "Content-Type": "application/json" };
const start = (base: string, userId: string) =>
  send(`${base}/connections`, {
    method: "POST",
    headers: asked,
    body: JSON.stringify({ provider: "example", user_id: userId }),
  });
const list = (base: string, userId: string) =>
  send(`${base}/connections?user_id=${encodeURIComponent(userId)}`, { headers: asked });
const call = (base: string, userId: string, tool = "Example.WhoAmI", extra: Record<string, unknown> = {}) =>
  callTool(base, { tool_id: tool, input: {}, context: { user_id: userId, ...extra } }, { "OXP-API-Key": API_KEY });

/** Signs `user` in at the provider from the flow's url, and brings the browser back with `cookie`. */
async function finish(url: string, user: string, cookieUser = user) {
  const authorized = await provider.completeAuthorization(url, { user: { id: user, password: `${user}-password` } });
  const page = await send(authorized.redirectUrl, { headers: { cookie: `${SESSION}=${cookieUser}` } });
  return { page, redirectUrl: authorized.redirectUrl };
}

/** Connects `user`'s account for `user`: the whole flow. */
async function connect(base: string, user: string) {
  const flow = await start(base, user);
  expect(flow.status, flow.text).toBe(201);
  const { page } = await finish(flow.body.url, user);
  expect(page.status, page.text).toBe(200);
  return flow.body;
}

beforeAll(async () => {
  for (let i = 0; i < 5; i++) {
    ports.push(await freePort());
  }
  provider = await startAuthorizationServer({
    clients: [
      {
        clientId: "oxp-vault",
        clientSecret: "vault-secret",
        redirectUris: ports.map((port) => `http://127.0.0.1:${port}/connections/callback`),
        grantTypes: ["authorization_code", "refresh_token"],
      },
    ],
    users: ["alice", "bob", "carol", "frank"].map((id) => ({
      id,
      password: `${id}-password`,
      email: `${id}@example.com`,
    })),
  });
  server = await startToolServer(ports[0] as number);
});
afterAll(async () => {
  await server?.close();
  await provider?.stop();
});

describe("discovery and the routes", () => {
  verifies(
    "connections.discovery",
    "lists the extension and its providers; the routes exist only when asked for",
    async () => {
      const discovery = await send(`${server.url}/.well-known/oxp`);
      expect(discovery.body.extensions).toContain("connections");
      expect(discovery.body.extension_info.connections).toEqual({
        providers: [{ id: "example", name: "Example Accounts" }],
      });
      const unasked = await send(`${server.url}/connections?user_id=alice`, { headers: { "OXP-API-Key": API_KEY } });
      expectError(unasked, 404);
    },
  );

  verifies("connections.user", "needs the user a trusted caller names", async () => {
    expectError(await send(`${server.url}/connections`, { headers: asked }), 400);
    const noUser = await send(`${server.url}/connections`, {
      method: "POST",
      headers: asked,
      body: JSON.stringify({ provider: "example" }),
    });
    expectError(noUser, 400);
  });

  verifies("connections.create", "refuses a provider it does not have", async () => {
    const reply = await send(`${server.url}/connections`, {
      method: "POST",
      headers: asked,
      body: JSON.stringify({ provider: "nowhere", user_id: "alice" }),
    });
    expectError(reply, 400);
  });
});

describe("connecting an account", () => {
  verifies(
    ["connections.create", "connections.flow", "connections.list", "connections.at-call-time"],
    "runs the provider's code flow with PKCE, then calls get the user's token from the vault",
    async () => {
      const flow = await start(server.url, "alice");
      expect(flow.status).toBe(201);
      expect(flow.body.status).toBe("pending");
      const url = new URL(flow.body.url);
      expect(url.origin).toBe(provider.issuer);
      expect(url.searchParams.get("code_challenge_method")).toBe("S256");
      expect(url.searchParams.get("redirect_uri")).toBe(`${server.url}/connections/callback`);
      expect((url.searchParams.get("state") ?? "").length).toBeGreaterThan(40);
      expect((await send(flow.body.check_url, { headers: { "OXP-API-Key": API_KEY } })).body).toEqual({
        status: "pending",
      });
      const { page, redirectUrl } = await finish(flow.body.url, "alice");
      expect(page.status, page.text).toBe(200);
      expect(page.headers.get("x-frame-options")).toBe("DENY");
      expect((await send(flow.body.check_url, { headers: { "OXP-API-Key": API_KEY } })).body).toEqual({
        status: "completed",
      });
      // The same callback again: its state is spent.
      expect((await send(redirectUrl, { headers: { cookie: `${SESSION}=alice` } })).status).toBe(400);
      const listed = await list(server.url, "alice");
      expect(listed.status).toBe(200);
      expect(listed.body.items).toEqual([
        expect.objectContaining({
          id: flow.body.id,
          provider: "example",
          status: "active",
          account: "alice",
        }),
      ]);
      const called = await call(server.url, "alice");
      expect(called.body.value).toEqual({ status: 200, sub: "alice" });
    },
  );

  verifies("connections.browser-bound", "binds nothing when another user's browser comes back", async () => {
    const flow = await start(server.url, "bob");
    // bob sent the link to carol; carol signs in at the provider, her browser is hers.
    const { page } = await finish(flow.body.url, "carol", "carol");
    expect(page.status).toBe(403);
    expect((await send(flow.body.check_url, { headers: { "OXP-API-Key": API_KEY } })).body).toEqual({
      status: "failed",
    });
    expect((await list(server.url, "bob")).body.items).toEqual([]);
    const called = await call(server.url, "bob");
    expectError(called, 400);
    expect(called.body.missing_requirements.authorization[0].url).toContain(provider.issuer);
  });

  verifies("connections.flow", "binds nothing for a state it did not make", async () => {
    const flow = await start(server.url, "bob");
    const { redirectUrl } = await provider
      .completeAuthorization(flow.body.url, { user: { id: "bob", password: "bob-password" } })
      .then((done) => ({ redirectUrl: done.redirectUrl }));
    const forged = new URL(redirectUrl);
    forged.searchParams.set("state", `${forged.searchParams.get("state")?.split("~")[0]}~not-the-secret`);
    expect((await send(forged.href, { headers: { cookie: `${SESSION}=bob` } })).status).toBe(400);
    expect((await list(server.url, "bob")).body.items).toEqual([]);
  });
});

describe("tokens", () => {
  verifies(
    "connections.write-only",
    "never appear in answers, logs, idempotency or task records, metrics, or the store's plain fields",
    async () => {
      // Everything the server hands its idempotency and task store, as it hands it.
      const recorded: string[] = [];
      const records = new MemoryIdempotencyStore();
      const recording = new Proxy(records, {
        get(target, name, receiver) {
          const value = Reflect.get(target, name, receiver);
          return typeof value === "function"
            ? (...args: unknown[]) => {
                recorded.push(JSON.stringify(args, (_key, item) => (typeof item === "function" ? undefined : item)));
                return value.apply(target, args);
              }
            : value;
        },
      });
      const telemetry = await createTelemetry({ metrics: true, logger: false });
      const watched = await startToolServer(
        ports[4] as number,
        { store: server.store },
        { idempotencyStore: recording, telemetry },
      );
      try {
        const synchronous = await callTool(
          watched.url,
          { tool_id: "Example.WhoAmI", input: {}, call_id: "canary-1", context: { user_id: "alice" } },
          { "OXP-API-Key": API_KEY },
        );
        expect(synchronous.body.value).toEqual({ status: 200, sub: "alice" });
        const asynchronous = await callTool(
          watched.url,
          { tool_id: "Example.WhoAmI", input: {}, call_id: "canary-2", context: { user_id: "alice" } },
          { "OXP-API-Key": API_KEY, "OXP-Extensions": "tasks", Prefer: "respond-async, wait=5" },
        );
        expect([200, 202]).toContain(asynchronous.status);
        const status = await send(`${watched.url}/tools/calls/canary-2`, {
          headers: { "OXP-API-Key": API_KEY, "OXP-Extensions": "tasks", Prefer: "wait=5" },
        });
        const token = handedToTools.at(-1) as string;
        expect(token.length).toBeGreaterThan(10);
        const metrics = await send(`${watched.url}/metrics`);
        expect(metrics.status).toBe(200);
        const listed = await list(watched.url, "alice");
        for (const [where, text] of Object.entries({
          "the synchronous answer": synchronous.text,
          "the asynchronous answer": asynchronous.text,
          "the task's status": status.text,
          "the list": listed.text,
          "the metrics": metrics.text,
          "the log": watched.lines.join("\n"),
          "the idempotency and task store": recorded.join("\n"),
          "the connection store's records": JSON.stringify(await server.store.list("api-key:0", "alice")),
        })) {
          expect(text.length, where).toBeGreaterThan(0);
          expect(text.includes(token), where).toBe(false);
        }
      } finally {
        await watched.close();
      }
    },
  );

  verifies("connections.sealed", "are sealed under the key's id, and open nowhere else", async () => {
    const [record] = await server.store.list("api-key:0", "alice");
    expect(record?.tokens?.kid).toBe("k1");
    // alice's sealed tokens copied onto a connection of bob's do not open: bob gets a challenge, never alice's token.
    await server.store.insert({ ...(record as NonNullable<typeof record>), id: "c_moved", userId: "bob", version: 1 });
    const called = await call(server.url, "bob");
    expectError(called, 400);
    expect(called.body.missing_requirements.authorization).toHaveLength(1);
    await server.store.delete("c_moved");
    // Nor under the same id given to another owner, once the tokens were opened (and kept opened) for alice.
    const original = record as NonNullable<typeof record>;
    expect((await call(server.url, "alice")).body.value).toEqual({ status: 200, sub: "alice" });
    await server.store.delete(original.id);
    await server.store.insert({ ...original, userId: "bob" });
    const stolen = await call(server.url, "bob");
    expectError(stolen, 400);
    await server.store.delete(original.id);
    await server.store.insert(original);
  });

  verifies(
    "connections.sealed",
    "still open after a new key is put first, and new ones are sealed with it",
    async () => {
      const rotated = await startToolServer(ports[1] as number, {
        keys: [
          { id: "k2", key: key() },
          { id: "k1", key: KEY_ONE },
        ],
        store: server.store,
      });
      try {
        expect((await call(rotated.url, "alice")).body.value).toEqual({ status: 200, sub: "alice" });
        await connect(rotated.url, "carol");
        const [carols] = await server.store.list("api-key:0", "carol");
        expect(carols?.tokens?.kid).toBe("k2");
      } finally {
        await rotated.close();
      }
    },
  );

  verifies("connections.at-call-time", "near expiry are refreshed once, however many calls need them", async () => {
    const before = provider.count("token", "refresh_token");

    // The provider's tokens live 300 s: 250 s on, each call would refresh.
    await server.clock.advance(250_000);
    const replies = await Promise.all([
      call(server.url, "alice"),
      call(server.url, "alice"),
      call(server.url, "alice"),
    ]);
    for (const reply of replies) {
      expect(reply.body.value).toEqual({ status: 200, sub: "alice" });
    }
    expect(provider.count("token", "refresh_token") - before).toBe(1);
    // And the next call uses the refreshed token without another refresh.
    await call(server.url, "alice");
    expect(provider.count("token", "refresh_token") - before).toBe(1);
  });

  verifies(
    "connections.at-call-time",
    "a refresh the provider refuses marks the connection and answers the challenge",
    async () => {
      const mallory = await startToolServer(ports[2] as number);
      try {
        await connect(mallory.url, "bob");
        const [record] = await mallory.store.list("api-key:0", "bob");
        const stored = record as NonNullable<typeof record>;
        // The user revokes the grant at the provider: its refresh token is refused from now on.
        const context = JSON.stringify([stored.id, stored.principal, stored.userId, stored.provider]);
        const held = (await new TokenSeal([{ id: "k1", key: KEY_ONE }]).open(
          stored.tokens as NonNullable<typeof stored.tokens>,
          context,
        )) as { refresh_token: string };
        await provider.revoke({ clientId: "oxp-vault", clientSecret: "vault-secret", token: held.refresh_token });
        await mallory.clock.advance(250_000);
        const called = await call(mallory.url, "bob");
        expectError(called, 400);
        expect(called.body.missing_requirements.authorization[0].url).toContain(provider.issuer);
        expect((await list(mallory.url, "bob")).body.items[0].status).toBe("auth_required");
      } finally {
        await mallory.close();
      }
    },
  );
});

describe("another principal", () => {
  verifies("connections.user", "naming the same user reaches none of the first principal's connections", async () => {
    const other = { ...asked, "OXP-API-Key": OTHER_KEY };
    const [alices] = await server.store.list("api-key:0", "alice");
    expect(alices?.status).toBe("active");
    const listed = await send(`${server.url}/connections?user_id=alice`, { headers: other });
    expect(listed.status).toBe(200);
    expect(listed.body.items).toEqual([]);
    const deleted = await send(`${server.url}/connections/${alices?.id}?user_id=alice`, {
      method: "DELETE",
      headers: other,
    });
    expectError(deleted, 404);
    const called = await callTool(
      server.url,
      { tool_id: "Example.WhoAmI", input: {}, context: { user_id: "alice" } },
      { "OXP-API-Key": OTHER_KEY },
    );
    expectError(called, 400);
    expect(called.body.missing_requirements.authorization).toHaveLength(1);
    expect((await server.store.list("api-key:0", "alice"))[0]?.status).toBe("active");
  });
});

describe("client tokens", () => {
  verifies("connections.client-tokens", "are used unless the server refuses them for its providers", async () => {
    const sent = { authorization: [{ id: "example", token: "token-the-client-sent" }] };
    expect((await call(server.url, "dave", "Example.Echo", sent)).body.value).toEqual({ clients: true });
    const strict = await startToolServer(ports[3] as number, { acceptClientTokens: false });
    try {
      const refused = await call(strict.url, "dave", "Example.Echo", sent);
      expectError(refused, 400);
      expect(refused.body.missing_requirements.authorization).toHaveLength(1);
    } finally {
      await strict.close();
    }
  });
});

describe("disconnecting", () => {
  verifies("connections.delete", "revokes at the provider, then deletes; another user's id is a 404", async () => {
    const { id } = await connect(server.url, "frank");
    const notYours = await send(`${server.url}/connections/${id}?user_id=alice`, { method: "DELETE", headers: asked });
    expectError(notYours, 404);
    const revocations = provider.count("revocation");
    const deleted = await send(`${server.url}/connections/${id}?user_id=frank`, { method: "DELETE", headers: asked });
    expect(deleted.status).toBe(204);
    expect(provider.count("revocation") - revocations).toBe(1);
    expect((await list(server.url, "frank")).body.items).toEqual([]);
    expectError(await send(`${server.url}/connections/${id}?user_id=frank`, { method: "DELETE", headers: asked }), 404);
  });

  verifies("connections.bounded", "refuses a user's connection past the bound", async () => {
    const tight = await startToolServer(ports[3] as number, { maxConnectionsPerUser: 1 });
    try {
      await connect(tight.url, "alice");
      const refused = await start(tight.url, "alice");
      expectError(refused, 400);
      expect(refused.body.message).toBe("This user holds the most connections allowed");
    } finally {
      await tight.close();
    }
  });
});

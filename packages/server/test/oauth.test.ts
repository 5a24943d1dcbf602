// The oauth extension (docs/protocol.md 9.6) against a real authorization server (oidc-provider on loopback): resource metadata, challenges, access tokens, scopes, the user bound to the token.
import { randomUUID } from "node:crypto";
import { Writable } from "node:stream";
import { type AuthorizationServer, startAuthorizationServer } from "@otc/test-helpers/oidc-provider";
import { verifies } from "@otc/test-helpers/verifies";
import { SignJWT, UnsecuredJWT } from "jose";
import { afterAll, beforeAll, describe, expect } from "vitest";
import { createLogger, defineTool, listen, ServerConfigError, type ServerOptions } from "../src/index.js";
import { callTool, expectError, makeServer, send } from "./harness.js";

/** The tool server's canonical URL: tokens are minted for it; no request goes there (the server listens on loopback). */
const RESOURCE = "https://tools.test.example/oxp";
const METADATA_URL = "https://tools.test.example/.well-known/oauth-protected-resource/oxp";
const OTHER_RESOURCE = "https://elsewhere.test.example";
const SECRET = "a-shared-secret-of-at-least-32-bytes!";
const API_KEY = "key-of-the-back-office";
const ALL_SCOPES = "oxp:tools:read oxp:tools:call mail:send oxp:delegate";

/** What the tools saw, by call: the user id, and every string the tool context holds. */
const seen: { userId: string | undefined; context: string }[] = [];

const whoAmI = defineTool({
  toolkit: "Account",
  name: "WhoAmI",
  version: "1.0.0",
  description: "Says which user the call is for.",
  inputSchema: { type: "object", properties: {} },
  outputSchema: { type: "object" },
  requirements: { user_id: true },
  run: (_input, ctx) => {
    seen.push({
      userId: ctx.userId,
      context: JSON.stringify({ tokens: ctx.tokens, secrets: ctx.secrets, extra: ctx.extra, userId: ctx.userId }),
    });
    return { user: ctx.userId ?? null };
  },
});

const sendMail = defineTool({
  toolkit: "Mail",
  name: "Send",
  version: "1.0.0",
  description: "Sends an email.",
  inputSchema: { type: "object", properties: { to: { type: "string", description: "Who gets it." } } },
  outputSchema: { type: "object" },
  requiredScopes: ["mail:send"],
  run: ({ to }) => ({ sent: to ?? "nobody" }),
});

let as: AuthorizationServer;
let baseUrl: string;
let close: () => Promise<void>;
let logLines: string[];
/** alice's access token from the authorization code flow, with every scope; and her ID token. */
let alice: { accessToken: string; idToken?: string | undefined };

/** A client_credentials token of `agent` (its `sub` is the client id) with `scope`, for `resource`. */
const agentToken = (scope: string, resource = RESOURCE) =>
  as.clientCredentialsToken({ clientId: "agent", clientSecret: "agent-secret", resource, scope });

const bearer = (token: string, extra: Record<string, string> = {}) => ({ Authorization: `Bearer ${token}`, ...extra });
const listTools = (token: string, extra: Record<string, string> = {}) =>
  send(`${baseUrl}/tools`, { headers: bearer(token, extra) });
const call = (token: string, body: Record<string, unknown>) => callTool(baseUrl, body, bearer(token));

async function startToolServer(options: Partial<ServerOptions>) {
  const lines: string[] = [];
  const app = makeServer({
    tools: [whoAmI, sendMail],
    validateResponses: true,
    logger: createLogger({
      level: "debug",
      destination: new Writable({
        write(chunk, _encoding, done) {
          lines.push(...String(chunk).split("\n").filter(Boolean));
          done();
        },
      }),
    }),
    ...options,
  });
  const running = await listen(app, { port: 0 });
  return { url: running.url, close: running.close, lines };
}

beforeAll(async () => {
  as = await startAuthorizationServer({
    resources: [
      { url: RESOURCE, scopes: ALL_SCOPES.split(" ") },
      { url: OTHER_RESOURCE, scopes: ["oxp:tools:read", "oxp:tools:call"] },
    ],
    clients: [
      { clientId: "agent", clientSecret: "agent-secret", grantTypes: ["client_credentials"] },
      { clientId: "cli", redirectUris: ["http://127.0.0.1/callback"], applicationType: "native" },
    ],
    users: [{ id: "alice", password: "wonderland" }],
  });
  const server = await startToolServer({
    auth: {
      apiKeys: [API_KEY],
      jwt: { secret: SECRET },
      oauth: { authorizationServers: [as.issuer], resource: RESOURCE, delegationScope: "oxp:delegate" },
    },
  });
  baseUrl = server.url;
  close = server.close;
  logLines = server.lines;
  alice = await as.authorizationCodeFlow({
    clientId: "cli",
    redirectUri: "http://127.0.0.1:9/callback",
    resource: RESOURCE,
    scope: `openid ${ALL_SCOPES}`,
    user: { id: "alice", password: "wonderland" },
  });
});
afterAll(async () => {
  await close?.();
  await as?.stop();
});

describe("the protected resource metadata", () => {
  verifies(
    "oauth.resource-metadata",
    "is served without credentials, at the well-known path and its path-inserted form",
    async () => {
      for (const path of ["/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/oxp"]) {
        const reply = await send(`${baseUrl}${path}`);
        expect(reply.status, path).toBe(200);
        expect(reply.headers.get("oxp-version")).toBe("1.0");
        expect(reply.body).toEqual({
          resource: RESOURCE,
          authorization_servers: [as.issuer],
          scopes_supported: ["oxp:tools:read", "oxp:tools:call", "oxp:delegate", "mail:send"],
          bearer_methods_supported: ["header"],
        });
      }
      // Another path below it names another resource: not this server's.
      expect((await send(`${baseUrl}/.well-known/oauth-protected-resource/other`)).status).toBe(401);
      expect((await send(`${baseUrl}/.well-known/oauth-protected-resource`, { method: "POST" })).status).toBe(405);
    },
  );

  verifies("oauth.resource-metadata", "is not served by a server without the oauth extension", async () => {
    const plain = await startToolServer({});
    try {
      const reply = await send(`${plain.url}/.well-known/oauth-protected-resource`);
      expectError(reply, 404);
      const discovery = await send(`${plain.url}/.well-known/oxp`);
      expect(discovery.body.extensions).not.toContain("oauth");
      expect(discovery.body.extension_info?.oauth).toBeUndefined();
    } finally {
      await plain.close();
    }
  });

  verifies("oauth.discovery", "is named in the discovery document", async () => {
    const reply = await send(`${baseUrl}/.well-known/oxp`);
    expect(reply.status).toBe(200);
    expect(reply.body.extensions).toContain("oauth");
    expect(reply.body.extension_info.oauth).toEqual({ resource_metadata: METADATA_URL });
  });
});

describe("a 401", () => {
  verifies("oauth.challenge-401", "says where to sign in and which scopes the route needs", async () => {
    const list = await send(`${baseUrl}/tools`);
    expectError(list, 401);
    expect(list.headers.get("www-authenticate")).toBe(
      `Bearer resource_metadata="${METADATA_URL}", scope="oxp:tools:read"`,
    );
    const called = await callTool(baseUrl, { tool_id: "Account.WhoAmI", input: {} });
    expectError(called, 401);
    expect(called.headers.get("www-authenticate")).toBe(
      `Bearer resource_metadata="${METADATA_URL}", scope="oxp:tools:call"`,
    );
  });

  verifies("oauth.challenge-401", "names invalid_token when a token was sent and refused", async () => {
    const reply = await listTools("not-a-token");
    expectError(reply, 401);
    expect(reply.headers.get("www-authenticate")).toBe(
      `Bearer error="invalid_token", resource_metadata="${METADATA_URL}", scope="oxp:tools:read"`,
    );
  });
});

describe("access tokens", () => {
  verifies(
    ["oauth.access-token", "oauth.user-is-subject"],
    "from the authorization code flow list the tools and call them as the signed-in user",
    async () => {
      expect((await listTools(alice.accessToken)).status).toBe(200);
      const reply = await call(alice.accessToken, { tool_id: "Account.WhoAmI", input: {} });
      expect(reply.status).toBe(200);
      expect(reply.body.value).toEqual({ user: "alice" });
    },
  );

  /** Tokens that are right but for one thing, each of which must be refused with a 401. */
  const refused: [string, () => Promise<string>][] = [
    ["minted for another resource", () => agentToken("oxp:tools:read", OTHER_RESOURCE)],
    ["expired", () => as.mintAccessToken({ exp: Math.floor(Date.now() / 1000) - 120 })],
    ["not yet valid (nbf ahead)", () => as.mintAccessToken({ nbf: Math.floor(Date.now() / 1000) + 600 })],
    ["issued in the future (iat ahead)", () => as.mintAccessToken({ iat: Math.floor(Date.now() / 1000) + 600 })],
    ["without sub", () => as.mintAccessToken({ sub: undefined })],
    ["without exp", () => as.mintAccessToken({ exp: undefined })],
    ["typed JWT, not at+jwt", () => as.mintAccessToken({}, { typ: "JWT" })],
    ["an ID token", async () => alice.idToken as string],
    ["of an issuer spelled otherwise", () => as.mintAccessToken({ iss: `${as.issuer}/` })],
    ["with a scope claim that is not a string", () => as.mintAccessToken({ scope: ["oxp:tools:read"] })],
    [
      "unsigned (alg none)",
      async () =>
        new UnsecuredJWT({ iss: as.issuer, aud: RESOURCE, sub: "x", exp: Math.floor(Date.now() / 1000) + 60 }).encode(),
    ],
    [
      "HS256, signed with the issuer's public key as a secret",
      async () =>
        new SignJWT({ iss: as.issuer, aud: RESOURCE, sub: "x", scope: "oxp:tools:read" })
          .setProtectedHeader({ alg: "HS256", typ: "at+jwt", kid: as.jwks.keys[0]?.kid })
          .setExpirationTime("1m")
          .sign(new TextEncoder().encode(JSON.stringify(as.jwks.keys[0]))),
    ],
    [
      "HS256, signed with the server's own JWT secret",
      async () =>
        new SignJWT({ iss: as.issuer, aud: RESOURCE, sub: "x", scope: "oxp:tools:read" })
          .setProtectedHeader({ alg: "HS256", typ: "at+jwt" })
          .setExpirationTime("1m")
          .sign(new TextEncoder().encode(SECRET)),
    ],
  ];
  verifies.each(refused)("oauth.access-token", "are refused when %s", async (_case, make) => {
    const reply = await listTools(await make());
    expectError(reply, 401);
    expect(reply.headers.get("www-authenticate")).toContain('error="invalid_token"');
  });

  verifies("oauth.key-refetch", "signed with an unknown key fetch the key set once, not once per token", async () => {
    // A key of the same kind the issuer's set lacks: the first such token refetches the set, the next ones wait.
    const { generateKeyPair } = await import("jose");
    const { privateKey } = await generateKeyPair("ES256");
    const forged = () =>
      new SignJWT({ iss: as.issuer, aud: RESOURCE, sub: "mallory", scope: "oxp:tools:read", jti: randomUUID() })
        .setProtectedHeader({ alg: "ES256", typ: "at+jwt", kid: `unknown-${randomUUID()}` })
        .setIssuedAt()
        .setExpirationTime("5m")
        .sign(privateKey);
    // The set is already kept (the tests above used it).
    expect((await listTools(alice.accessToken)).status).toBe(200);
    const before = as.count("jwks");
    for (let i = 0; i < 5; i++) {
      expectError(await listTools(await forged()), 401);
    }
    expect(as.count("jwks") - before).toBeLessThanOrEqual(1);
  });

  verifies("oauth.key-refetch", "whose issuer cannot be read make a 503, not a 401", async () => {
    const gone = await startAuthorizationServer({ resources: [{ url: RESOURCE, scopes: ["oxp:tools:read"] }] });
    const token = await gone.mintAccessToken();
    const issuer = gone.issuer;
    await gone.stop();
    const server = await startToolServer({ auth: { oauth: { authorizationServers: [issuer], resource: RESOURCE } } });
    try {
      const reply = await send(`${server.url}/tools`, { headers: bearer(token) });
      expectError(reply, 503);
      expect(reply.headers.get("retry-after")).toBe("5");
    } finally {
      await server.close();
    }
  });

  verifies("oauth.principal", "give each user of each issuer calls of their own", async () => {
    const callId = randomUUID();
    const asAlice = await call(alice.accessToken, { tool_id: "Account.WhoAmI", input: {}, call_id: callId });
    const asAgent = await call(await agentToken("oxp:tools:call"), {
      tool_id: "Account.WhoAmI",
      input: {},
      call_id: callId,
    });
    // The same call_id from another principal is another call, run for its own user.
    expect(asAlice.body.value).toEqual({ user: "alice" });
    expect(asAgent.body.value).toEqual({ user: "agent" });
    // alice with another token of hers is the same principal: her answer is replayed.
    const again = await as.authorizationCodeFlow({
      clientId: "cli",
      redirectUri: "http://127.0.0.1:9/callback",
      resource: RESOURCE,
      scope: "oxp:tools:call",
      user: { id: "alice", password: "wonderland" },
    });
    const replay = await call(again.accessToken, { tool_id: "Account.WhoAmI", input: {}, call_id: callId });
    expect(replay.body).toEqual(asAlice.body);
  });
});

describe("scopes", () => {
  verifies("oauth.scopes", "too few for a route: a 403 whose one challenge names what it needs", async () => {
    const readOnly = await agentToken("oxp:tools:read");
    const refusedCall = await call(readOnly, { tool_id: "Account.WhoAmI", input: {} });
    expectError(refusedCall, 403);
    expect(refusedCall.headers.get("www-authenticate")).toBe(
      `Bearer error="insufficient_scope", scope="oxp:tools:call", resource_metadata="${METADATA_URL}"`,
    );
    const callOnly = await agentToken("oxp:tools:call");
    const refusedList = await listTools(callOnly);
    expectError(refusedList, 403);
    expect(refusedList.headers.get("www-authenticate")).toContain('scope="oxp:tools:read"');
  });

  verifies("oauth.scopes", "a tool's required_scopes join the call's, all named at once", async () => {
    const readOnly = await agentToken("oxp:tools:read");
    const reply = await call(readOnly, { tool_id: "Mail.Send", input: { to: "bob" } });
    expectError(reply, 403);
    expect(reply.headers.get("www-authenticate")).toBe(
      `Bearer error="insufficient_scope", scope="oxp:tools:call mail:send", resource_metadata="${METADATA_URL}"`,
    );
    expect(reply.body.developer_message).toContain("oxp:tools:call mail:send");
    const withCall = await agentToken("oxp:tools:call");
    expectError(await call(withCall, { tool_id: "Mail.Send", input: { to: "bob" } }), 403);
    const withMail = await agentToken("oxp:tools:call mail:send");
    const sent = await call(withMail, { tool_id: "Mail.Send", input: { to: "bob" } });
    expect(sent.status).toBe(200);
    expect(sent.body.value).toEqual({ sent: "bob" });
  });

  verifies("oauth.scopes", "do not limit API keys or section 5's JWTs", async () => {
    const byKey = await callTool(baseUrl, { tool_id: "Mail.Send", input: { to: "carol" } }, { "OXP-API-Key": API_KEY });
    expect(byKey.body.value).toEqual({ sent: "carol" });
  });
});

describe("the catalog", () => {
  verifies("oauth.required-scopes", "lists required_scopes only when the request asks for oauth", async () => {
    const plain = await listTools(alice.accessToken);
    const mail = (reply: typeof plain) =>
      reply.body.items.find((tool: { id: string }) => tool.id === "Mail.Send@1.0.0");
    expect(mail(plain)).toBeDefined();
    expect(mail(plain).required_scopes).toBeUndefined();
    const asked = await listTools(alice.accessToken, { "OXP-Extensions": "oauth" });
    expect(asked.headers.get("oxp-extensions")).toBe("oauth");
    expect(mail(asked).required_scopes).toEqual(["mail:send"]);
  });

  verifies(
    "oauth.required-scopes",
    "refuses at start-up a required scope that is not a scope token, naming the tool",
    () => {
      for (const scopes of [["mail send"], ['say"hi'], [""]]) {
        const bad = defineTool({
          toolkit: "Bad",
          name: "Scopes",
          version: "1.0.0",
          description: "Has a broken scope.",
          inputSchema: { type: "object", properties: {} },
          outputSchema: null,
          requiredScopes: scopes,
          run: () => undefined,
        });
        expect(() => makeServer({ tools: [bad] }), JSON.stringify(scopes)).toThrow(ServerConfigError);
        expect(() => makeServer({ tools: [bad] })).toThrow(/Bad\.Scopes@1\.0\.0/);
      }
    },
  );

  verifies(
    "oauth.catalog-by-scope",
    "an access token lists only the tools its scopes can call, privately",
    async () => {
      const ids = (reply: Awaited<ReturnType<typeof listTools>>) =>
        reply.body.items.map((tool: { id: string }) => tool.id);
      const without = await listTools(await agentToken("oxp:tools:read"));
      expect(ids(without)).toEqual(["Account.WhoAmI@1.0.0"]);
      expect(without.headers.get("cache-control")).toBe("private");
      const withMail = await listTools(await agentToken("oxp:tools:read mail:send"));
      expect(ids(withMail)).toEqual(["Account.WhoAmI@1.0.0", "Mail.Send@1.0.0"]);
      expect(withMail.headers.get("etag")).not.toBe(without.headers.get("etag"));
      // Pages are cut from the same list.
      const paged = await listTools(await agentToken("oxp:tools:read"), { "OXP-Extensions": "pagination" });
      expect(ids(paged)).toEqual(["Account.WhoAmI@1.0.0"]);
      const byKey = await send(`${baseUrl}/tools`, { headers: { "OXP-API-Key": API_KEY } });
      expect(byKey.body.items).toHaveLength(2);
      expect(byKey.headers.get("cache-control")).toBeNull();
    },
  );

  verifies(
    ["search.catalog-by-scope", "cache.control"],
    "a search, ids and /toolkits see only what the token can call, privately",
    async () => {
      const readOnly = await agentToken("oxp:tools:read");
      const asked = (extensions: string) => ({ "OXP-Extensions": extensions });
      const found = await send(`${baseUrl}/tools?q=send%20email`, { headers: bearer(readOnly, asked("search")) });
      expect(found.status).toBe(200);
      expect(found.body.items.map((tool: { id: string }) => tool.id)).not.toContain("Mail.Send@1.0.0");
      expect(found.headers.get("cache-control")).toBe("private");
      const withMail = await agentToken("oxp:tools:read mail:send");
      const mail = await send(`${baseUrl}/tools?q=send%20email`, { headers: bearer(withMail, asked("search")) });
      expect(mail.body.items[0].id).toBe("Mail.Send@1.0.0");
      // An id the token cannot call is one that names no tool.
      const named = await send(`${baseUrl}/tools?ids=Mail.Send`, { headers: bearer(readOnly, asked("search")) });
      expectError(named, 400);
      expect(named.body.developer_message).toContain("'Mail.Send'");
      const toolkits = await send(`${baseUrl}/toolkits`, { headers: bearer(readOnly, asked("search, cache")) });
      expect(toolkits.body).toEqual({
        items: [{ name: "Account", tool_count: 1 }],
        ttl_ms: 60_000,
        cache_scope: "private",
      });
      expect(toolkits.headers.get("cache-control")).toBe("private, max-age=60");
      // A server with authentication keeps its lists private for every caller, an API key's too.
      const byKey = await send(`${baseUrl}/tools`, { headers: { "OXP-API-Key": API_KEY, ...asked("cache") } });
      expect(byKey.headers.get("cache-control")).toBe("private, max-age=60");
      expect(byKey.body.cache_scope).toBe("private");
    },
  );
});

describe("the user", () => {
  verifies("oauth.user-is-subject", "is the token's subject: another user_id is a 403", async () => {
    const reply = await call(alice.accessToken, {
      tool_id: "Account.WhoAmI",
      input: {},
      context: { user_id: "bob" },
    });
    // alice's token holds the delegation scope: she may name bob.
    expect(reply.body.value).toEqual({ user: "bob" });
    const agent = await agentToken("oxp:tools:call");
    const refused = await call(agent, { tool_id: "Account.WhoAmI", input: {}, context: { user_id: "bob" } });
    expectError(refused, 403);
    expect(refused.body.message).toBe("The access token is not the user's the call names");
    const same = await call(agent, { tool_id: "Account.WhoAmI", input: {}, context: { user_id: "agent" } });
    expect(same.body.value).toEqual({ user: "agent" });
  });

  verifies("oauth.token-stays", "never sees the access token, nor do the logs", async () => {
    seen.length = 0;
    const token = await agentToken("oxp:tools:call");
    const reply = await call(token, { tool_id: "Account.WhoAmI", input: {} });
    expect(reply.status).toBe(200);
    expect(seen).toHaveLength(1);
    expect(seen[0]?.context).not.toContain(token);
    expect(seen[0]?.context).not.toContain(token.split(".")[2] as string);
    expect(logLines.join("\n")).not.toContain(token.split(".")[2] as string);
    expect(JSON.stringify(reply.body)).not.toContain(token.split(".")[2] as string);
  });
});

describe("beside section 5", () => {
  verifies("oauth.beside-section-5", "API keys and HS256 JWTs still admit", async () => {
    const hs256 = await new SignJWT({ sub: "back-office" })
      .setProtectedHeader({ alg: "HS256" })
      .setExpirationTime("5m")
      .sign(new TextEncoder().encode(SECRET));
    expect((await send(`${baseUrl}/tools`, { headers: bearer(hs256) })).status).toBe(200);
    expect((await send(`${baseUrl}/tools`, { headers: { "OXP-API-Key": API_KEY } })).status).toBe(200);
  });

  verifies("oauth.beside-section-5", "a server may take access tokens alone", async () => {
    const server = await startToolServer({
      auth: { oauth: { authorizationServers: [as.issuer], resource: RESOURCE } },
    });
    try {
      expect((await send(`${server.url}/tools`, { headers: bearer(alice.accessToken) })).status).toBe(200);
      const hs256 = await new SignJWT({ sub: "back-office" })
        .setProtectedHeader({ alg: "HS256" })
        .setExpirationTime("5m")
        .sign(new TextEncoder().encode(SECRET));
      expectError(await send(`${server.url}/tools`, { headers: bearer(hs256) }), 401);
      expectError(await send(`${server.url}/tools`, { headers: { "OXP-API-Key": API_KEY } }), 401);
    } finally {
      await server.close();
    }
  });

  verifies(
    "oauth.resource-metadata",
    "writes a bare origin without its slash, and takes tokens naming it either way",
    async () => {
      const origin = "https://origin-only.test.example";
      const server = await startToolServer({
        auth: { oauth: { authorizationServers: [as.issuer], resource: `${origin}/` } },
      });
      try {
        const metadata = await send(`${server.url}/.well-known/oauth-protected-resource`);
        expect(metadata.body.resource).toBe(origin);
        const challenge = (await send(`${server.url}/tools`)).headers.get("www-authenticate");
        expect(challenge).toContain(`resource_metadata="${origin}/.well-known/oauth-protected-resource"`);
        for (const aud of [origin, `${origin}/`]) {
          const token = await as.mintAccessToken({ aud });
          expect((await send(`${server.url}/tools`, { headers: bearer(token) })).status, aud).toBe(200);
        }
        expectError(
          await send(`${server.url}/tools`, { headers: bearer(await as.mintAccessToken({ aud: `${origin}/x` })) }),
          401,
        );
      } finally {
        await server.close();
      }
    },
  );

  verifies("oauth.resource-metadata", "needs the canonical URL and issuer URLs at start-up", () => {
    expect(() => makeServer({ tools: [], auth: { oauth: { authorizationServers: [as.issuer] } } })).toThrow(
      /canonical URL/,
    );
    expect(() =>
      makeServer({
        tools: [],
        auth: { oauth: { authorizationServers: ["http://issuer.example"], resource: RESOURCE } },
      }),
    ).toThrow(/https/);
    expect(() => makeServer({ tools: [], auth: { oauth: { authorizationServers: [], resource: RESOURCE } } })).toThrow(
      ServerConfigError,
    );
  });
});

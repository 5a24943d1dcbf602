// Opaque access tokens of the oauth extension (docs/protocol.md 9.6), checked through introspection (RFC 7662) at a real authorization server (oidc-provider on loopback): the principal, scopes, audience, revocation after the cache's time, and an endpoint that fails.
import { randomUUID } from "node:crypto";
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Writable } from "node:stream";
import { freePort } from "@otc/test-helpers/free-port";
import { json } from "@otc/test-helpers/hostile-server";
import { ManualClock } from "@otc/test-helpers/manual-clock";
import { type AuthorizationServer, startAuthorizationServer } from "@otc/test-helpers/oidc-provider";
import { verifies } from "@otc/test-helpers/verifies";
import { SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect } from "vitest";
import { TokenIntrospection } from "../src/http/introspection.js";
import { createLogger, defineTool, listen, ServerConfigError, type ServerOptions } from "../src/index.js";
import { callTool, expectError, makeServer, send } from "./harness.js";

/** The tool server's canonical URL: tokens are minted for it; no request goes there (the server listens on loopback). */
const RESOURCE = "https://tools.test.example/oxp";
const METADATA_URL = "https://tools.test.example/.well-known/oauth-protected-resource/oxp";
const OTHER_RESOURCE = "https://elsewhere.test.example";
const ALL_SCOPES = "oxp:tools:read oxp:tools:call mail:send";
const SECRET = "a-shared-secret-of-at-least-32-bytes!";
/** The tool server's own client at the authorization server, which it introspects with. */
const INTROSPECTION = { clientId: "tool-server", clientSecret: "tool-server-secret" };
const ALICE = { id: "alice", password: "wonderland" };

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
  run: ({ to }) => ({ sent: to ?? "nobody" }),
});

let as: AuthorizationServer;
/** The server under test: introspection from the issuer's metadata, on a clock the tests move. */
let server: Awaited<ReturnType<typeof startToolServer>>;

async function startToolServer(options: Partial<ServerOptions>) {
  const lines: string[] = [];
  const clock = new ManualClock(Date.now());
  const app = makeServer({
    tools: [whoAmI, sendMail],
    validateResponses: true,
    clock,
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
  return { url: running.url, close: running.close, lines, clock };
}

/** alice's opaque access token (authorization code flow with PKCE), with `scope`, for `resource`. */
async function aliceToken(scope = ALL_SCOPES, resource = RESOURCE) {
  const tokens = await as.authorizationCodeFlow({
    clientId: "cli",
    redirectUri: "http://127.0.0.1:9/callback",
    resource,
    scope: `openid offline_access ${scope}`,
    user: ALICE,
  });
  return { accessToken: tokens.accessToken, refreshToken: tokens.refreshToken as string };
}

const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });
const listTools = (url: string, token: string) => send(`${url}/tools`, { headers: bearer(token) });
const call = (url: string, token: string, body: Record<string, unknown>) => callTool(url, body, bearer(token));
const refusedAsInvalid = (reply: Awaited<ReturnType<typeof send>>) => {
  expectError(reply, 401);
  expect(reply.headers.get("www-authenticate")).toContain('error="invalid_token"');
  expect(reply.headers.get("www-authenticate")).toContain(`resource_metadata="${METADATA_URL}"`);
};

beforeAll(async () => {
  as = await startAuthorizationServer({
    resources: [
      { url: RESOURCE, scopes: ALL_SCOPES.split(" "), accessTokenFormat: "opaque" },
      { url: OTHER_RESOURCE, scopes: ["oxp:tools:read", "oxp:tools:call"], accessTokenFormat: "opaque" },
    ],
    clients: [
      { ...INTROSPECTION, grantTypes: [] },
      { clientId: "agent", clientSecret: "agent-secret", grantTypes: ["client_credentials"] },
      { clientId: "cli", redirectUris: ["http://127.0.0.1/callback"], applicationType: "native" },
    ],
    users: [ALICE],
  });
  server = await startToolServer({
    auth: {
      jwt: { secret: SECRET },
      oauth: { authorizationServers: [as.issuer], resource: RESOURCE, introspection: INTROSPECTION },
    },
  });
});
afterAll(async () => {
  await server?.close();
  await as?.stop();
});

describe("an opaque access token", () => {
  verifies(
    ["oauth.introspection", "oauth.user-is-subject"],
    "is asked about at the issuer's introspection endpoint and calls as its subject",
    async () => {
      const { accessToken } = await aliceToken();
      // Opaque: nothing in it to read, so the server asks.
      expect(accessToken.split(".")).toHaveLength(1);
      const before = as.count("introspection");
      expect((await listTools(server.url, accessToken)).status).toBe(200);
      const reply = await call(server.url, accessToken, { tool_id: "Account.WhoAmI", input: {} });
      expect(reply.status).toBe(200);
      expect(reply.body.value).toEqual({ user: "alice" });
      expect(as.count("introspection")).toBeGreaterThan(before);
      // Bound to its subject as a JWT is: another user_id without the delegation scope is a 403.
      const other = await call(server.url, accessToken, {
        tool_id: "Account.WhoAmI",
        input: {},
        context: { user_id: "bob" },
      });
      expectError(other, 403);
      expect(other.body.message).toBe("The access token is not the user's the call names");
    },
  );

  verifies(
    ["oauth.introspection", "oauth.principal"],
    "is the principal (iss, sub): alice's tokens share calls",
    async () => {
      const callId = randomUUID();
      const first = await call(server.url, (await aliceToken()).accessToken, {
        tool_id: "Account.WhoAmI",
        input: {},
        call_id: callId,
      });
      expect(first.status).toBe(200);
      // Another token of hers is the same principal: the answer is replayed, not run again.
      const replay = await call(server.url, (await aliceToken("oxp:tools:call")).accessToken, {
        tool_id: "Account.WhoAmI",
        input: {},
        call_id: callId,
      });
      expect(replay.body).toEqual(first.body);
    },
  );

  verifies(["oauth.introspection", "oauth.scopes"], "grants the scopes the answer's scope names", async () => {
    const { accessToken } = await aliceToken("oxp:tools:read");
    expect((await listTools(server.url, accessToken)).status).toBe(200);
    const refused = await call(server.url, accessToken, { tool_id: "Mail.Send", input: { to: "bob" } });
    expectError(refused, 403);
    expect(refused.headers.get("www-authenticate")).toBe(
      `Bearer error="insufficient_scope", scope="oxp:tools:call mail:send", resource_metadata="${METADATA_URL}"`,
    );
    const withCall = await aliceToken("oxp:tools:call");
    expectError(await call(server.url, withCall.accessToken, { tool_id: "Mail.Send", input: { to: "bob" } }), 403);
    const withMail = await aliceToken("oxp:tools:call mail:send");
    const sent = await call(server.url, withMail.accessToken, { tool_id: "Mail.Send", input: { to: "bob" } });
    expect(sent.body.value).toEqual({ sent: "bob" });
  });

  /** Tokens the authorization server knows but does not vouch for here, each of which must be a 401. */
  const refused: [string, () => Promise<string>][] = [
    ["it is garbage", async () => "not-a-token-this-server-or-its-issuer-knows"],
    [
      "it was minted for another resource (aud)",
      async () => (await aliceToken("oxp:tools:read", OTHER_RESOURCE)).accessToken,
    ],
    // oidc-provider's answer for it is active, with alice's sub and scopes, and no token_type: its missing aud refuses it.
    ["it is a refresh token", async () => (await aliceToken()).refreshToken],
    [
      "its answer names no subject (a client credentials token)",
      () => as.clientCredentialsToken({ clientId: "agent", clientSecret: "agent-secret", resource: RESOURCE }),
    ],
    [
      "it was revoked before it was first seen",
      async () => {
        const { accessToken } = await aliceToken();
        await as.revoke({ ...INTROSPECTION, token: accessToken });
        return accessToken;
      },
    ],
  ];
  verifies.each(refused)("oauth.introspection", "is refused with a 401 when %s", async (_case, make) => {
    const token = await make();
    const before = as.count("introspection");
    refusedAsInvalid(await listTools(server.url, token));
    expect(as.count("introspection") - before).toBe(1);
  });

  verifies("oauth.introspection", "is never sent to the authorization server when it is section 5's JWT", async () => {
    const before = as.count("introspection");
    const hs256 = await new SignJWT({ sub: "back-office" })
      .setProtectedHeader({ alg: "HS256" })
      .setExpirationTime("5m")
      .sign(new TextEncoder().encode(SECRET));
    expect((await listTools(server.url, hs256)).status).toBe(200);
    expect(as.count("introspection")).toBe(before);
  });

  verifies("oauth.introspection", "is a 401, unasked, on a server that does not introspect", async () => {
    const plain = await startToolServer({ auth: { oauth: { authorizationServers: [as.issuer], resource: RESOURCE } } });
    try {
      const { accessToken } = await aliceToken();
      const before = as.count("introspection");
      const reply = await listTools(plain.url, accessToken);
      expectError(reply, 401);
      expect(reply.headers.get("www-authenticate")).toContain('error="invalid_token"');
      expect(as.count("introspection")).toBe(before);
    } finally {
      await plain.close();
    }
  });

  verifies("oauth.introspection", "is refused at start-up without what introspection needs", () => {
    const make =
      (introspection: Record<string, unknown>, servers = [as.issuer]) =>
      () =>
        makeServer({
          tools: [],
          auth: {
            oauth: {
              authorizationServers: servers,
              resource: RESOURCE,
              introspection: introspection as never,
            },
          },
        });
    expect(make({ clientId: "tool-server" })).toThrow(/clientSecret/);
    expect(make({ clientSecret: "x" })).toThrow(/clientId/);
    expect(make({ ...INTROSPECTION, issuer: "https://unknown.example" })).toThrow(/not one of/);
    expect(make(INTROSPECTION, [as.issuer, "https://second.example"])).toThrow(/introspection\.issuer/);
    expect(make({ ...INTROSPECTION, endpoint: "http://introspection.example/x" })).toThrow(/https/);
    expect(make({ ...INTROSPECTION, cacheSeconds: -1 })).toThrow(ServerConfigError);
    expect(make({ ...INTROSPECTION, authMethod: "private_key_jwt" })).toThrow(/authMethod/);
  });
});

describe("the introspection cache", () => {
  verifies("oauth.introspection-cache", "asks once for a token sent again within its time", async () => {
    const { accessToken } = await aliceToken();
    const before = as.count("introspection");
    // At once, then one after another: one request to the endpoint in all.
    const replies = await Promise.all([1, 2, 3].map(() => listTools(server.url, accessToken)));
    expect(replies.map((reply) => reply.status)).toEqual([200, 200, 200]);
    expect((await call(server.url, accessToken, { tool_id: "Account.WhoAmI", input: {} })).status).toBe(200);
    await server.clock.advance(59_000);
    expect((await listTools(server.url, accessToken)).status).toBe(200);
    expect(as.count("introspection") - before).toBe(1);
  });

  verifies("oauth.introspection-cache", "refuses a revoked token once the cache's time has passed", async () => {
    const { accessToken } = await aliceToken();
    expect((await listTools(server.url, accessToken)).status).toBe(200);
    expect(await as.revoke({ ...INTROSPECTION, token: accessToken })).toBe(200);
    // Still kept: the server has not asked again.
    await server.clock.advance(30_000);
    expect((await listTools(server.url, accessToken)).status).toBe(200);
    await server.clock.advance(31_000);
    refusedAsInvalid(await listTools(server.url, accessToken));
  });

  verifies("oauth.introspection-cache", "keeps an answer no longer than configured", async () => {
    const short = await startToolServer({
      auth: {
        oauth: {
          authorizationServers: [as.issuer],
          resource: RESOURCE,
          introspection: { ...INTROSPECTION, cacheSeconds: 5, endpoint: as.url("/token/introspection") },
        },
      },
    });
    try {
      const { accessToken } = await aliceToken();
      const before = as.count("introspection");
      expect((await listTools(short.url, accessToken)).status).toBe(200);
      await short.clock.advance(4_000);
      expect((await listTools(short.url, accessToken)).status).toBe(200);
      expect(as.count("introspection") - before).toBe(1);
      await short.clock.advance(2_000);
      expect((await listTools(short.url, accessToken)).status).toBe(200);
      expect(as.count("introspection") - before).toBe(2);
    } finally {
      await short.close();
    }
  });

  verifies("oauth.introspection-cache", "logs no token, and keeps none in an answer", async () => {
    const { accessToken } = await aliceToken();
    await listTools(server.url, accessToken);
    const garbage = `garbage-${randomUUID()}`;
    const refusedReply = await listTools(server.url, garbage);
    expect(refusedReply.text).not.toContain(garbage);
    const logs = server.lines.join("\n");
    expect(logs).not.toContain(accessToken);
    expect(logs).not.toContain(garbage);
  });
});

describe("an introspection endpoint that fails", () => {
  /** A server whose introspection endpoint is `endpoint`; the authorization server stays the test one. */
  const withEndpoint = (endpoint: string) =>
    startToolServer({
      auth: {
        oauth: {
          authorizationServers: [as.issuer],
          resource: RESOURCE,
          introspection: { ...INTROSPECTION, endpoint },
        },
      },
    });

  verifies("oauth.introspection-cache", "makes a 503 with Retry-After, not a 401, when nothing answers", async () => {
    const down = await withEndpoint(`http://127.0.0.1:${await freePort()}/token/introspection`);
    try {
      const { accessToken } = await aliceToken();
      const reply = await listTools(down.url, accessToken);
      expectError(reply, 503);
      expect(reply.headers.get("retry-after")).toBe("5");
      const logs = down.lines.join("\n");
      expect(logs).toContain("introspection endpoint could not be asked");
      expect(logs).not.toContain(accessToken);
    } finally {
      await down.close();
    }
  });

  verifies("oauth.introspection-cache", "makes a 503 when it answers a 5xx", async () => {
    let asked = 0;
    const failing = createServer((_request, response) => {
      asked++;
      response.writeHead(500, { "content-type": "application/json" }).end('{"error":"server_error"}');
    });
    await new Promise<void>((resolve) => failing.listen(0, "127.0.0.1", resolve));
    const down = await withEndpoint(`http://127.0.0.1:${(failing.address() as AddressInfo).port}/introspect`);
    try {
      const { accessToken } = await aliceToken();
      const reply = await listTools(down.url, accessToken);
      expectError(reply, 503);
      expect(reply.headers.get("retry-after")).toBe("5");
      // Within the pause after a failure no request goes out; after it, the endpoint is asked again.
      expectError(await listTools(down.url, accessToken), 503);
      expect(asked).toBe(1);
      await down.clock.advance(5_000);
      expectError(await listTools(down.url, accessToken), 503);
      expect(asked).toBe(2);
    } finally {
      await down.close();
      await new Promise((resolve) => failing.close(resolve));
    }
  });
});

/** What a stand-in introspection endpoint was sent: the client's credentials and the form (token and all). */
interface Asked {
  authorization: string | undefined;
  form: URLSearchParams;
}

/**
 * A stand-in introspection endpoint on loopback, for answers the real authorization server never gives: each request
 * is recorded, then answered by `answer` (a JSON 200 of what it returns, or its own handling of the response).
 */
async function stubEndpoint(answer: (asked: Asked, response: ServerResponse) => Record<string, unknown> | undefined) {
  const asked: Asked[] = [];
  const stub = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const entry = {
        authorization: request.headers.authorization,
        form: new URLSearchParams(Buffer.concat(chunks).toString()),
      };
      asked.push(entry);
      const body = answer(entry, response);
      if (body !== undefined) {
        json(response, 200, body);
      }
    });
  });
  await new Promise<void>((resolve) => stub.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(stub.address() as AddressInfo).port}/introspect`,
    asked,
    close: () => {
      // A request it never answered must not hold the close up.
      stub.closeAllConnections();
      return new Promise((resolve) => stub.close(resolve));
    },
  };
}

describe("an introspection answer", () => {
  /** A tool server whose introspection endpoint is the stub's, with `introspection` options over the defaults. */
  const behind = (endpoint: string, introspection: Record<string, unknown> = {}, oauth: Record<string, unknown> = {}) =>
    startToolServer({
      auth: {
        oauth: {
          authorizationServers: [as.issuer],
          resource: RESOURCE,
          introspection: { ...INTROSPECTION, endpoint, ...introspection },
          ...oauth,
        },
      },
    });
  /** An answer the server admits, at `now` (ms) of its clock. */
  const active = (now: number, overrides: Record<string, unknown> = {}) => ({
    active: true,
    token_type: "Bearer",
    iss: as.issuer,
    aud: RESOURCE,
    sub: "carol",
    scope: "oxp:tools:read oxp:tools:call",
    iat: Math.floor(now / 1000) - 10,
    exp: Math.floor(now / 1000) + 600,
    ...overrides,
  });
  const token = () => `opaque-${randomUUID()}`;

  verifies(
    ["oauth.introspection", "oauth.user-is-subject"],
    "admits an active answer, asked with the server's own client credentials and the token alone",
    async () => {
      let now = 0;
      const stub = await stubEndpoint(() => active(now));
      const tools = await behind(stub.url);
      try {
        now = tools.clock.now();
        const sent = token();
        const reply = await call(tools.url, sent, { tool_id: "Account.WhoAmI", input: {} });
        expect(reply.status, reply.text).toBe(200);
        expect(reply.body.value).toEqual({ user: "carol" });
        expect(stub.asked).toHaveLength(1);
        const [asked] = stub.asked as [Asked];
        // RFC 6749 2.3.1: each half form-encoded, then the pair in base64.
        const pair = Buffer.from((asked.authorization ?? "").replace(/^Basic /, ""), "base64").toString();
        expect(pair.split(":").map(decodeURIComponent)).toEqual([INTROSPECTION.clientId, INTROSPECTION.clientSecret]);
        expect(Object.fromEntries(asked.form)).toEqual({ token: sent, token_type_hint: "access_token" });
      } finally {
        await tools.close();
        await stub.close();
      }
    },
  );

  verifies("oauth.introspection", "is asked with client_secret_post when configured so", async () => {
    let now = 0;
    const stub = await stubEndpoint(() => active(now));
    const tools = await behind(stub.url, { authMethod: "client_secret_post" });
    try {
      now = tools.clock.now();
      expect((await listTools(tools.url, token())).status).toBe(200);
      const [asked] = stub.asked as [Asked];
      expect(asked.authorization).toBeUndefined();
      expect(asked.form.get("client_id")).toBe(INTROSPECTION.clientId);
      expect(asked.form.get("client_secret")).toBe(INTROSPECTION.clientSecret);
    } finally {
      await tools.close();
      await stub.close();
    }
  });

  /** Answers that must each be a 401 `invalid_token`: the overrides of an otherwise admitted answer. */
  const refusedAnswers: [string, (now: number) => Record<string, unknown>][] = [
    ["active is false", () => ({ active: false })],
    ["token_type is not an access token's", () => ({ token_type: "refresh_token" })],
    ["iss is another issuer", () => ({ iss: "https://other-issuer.example" })],
    ["aud names another resource", () => ({ aud: [OTHER_RESOURCE] })],
    ["aud is absent", () => ({ aud: undefined })],
    ["exp has passed (past the skew)", (now) => ({ exp: Math.floor(now / 1000) - 61 })],
    ["nbf is ahead (past the skew)", (now) => ({ nbf: Math.floor(now / 1000) + 120 })],
    ["sub is absent", () => ({ sub: undefined })],
    ["sub is empty", () => ({ sub: "" })],
    ["scope is not a string", () => ({ scope: ["oxp:tools:read"] })],
    ["scope holds what is not a scope token", () => ({ scope: 'oxp:tools:read "quoted"' })],
    ["the token is bound to a key (cnf)", () => ({ cnf: { jkt: "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I" } })],
  ];
  verifies.each(refusedAnswers)("oauth.introspection", "is a 401 when %s", async (_case, overrides) => {
    let now = 0;
    const stub = await stubEndpoint(() => ({ ...active(now), ...overrides(now) }));
    const tools = await behind(stub.url);
    try {
      now = tools.clock.now();
      const sent = token();
      refusedAsInvalid(await listTools(tools.url, sent));
      expect(stub.asked).toHaveLength(1);
      // Kept as refused, and for 5 seconds at most, whichever check refused it.
      refusedAsInvalid(await listTools(tools.url, sent));
      expect(stub.asked).toHaveLength(1);
      await tools.clock.advance(5_000);
      now = tools.clock.now();
      refusedAsInvalid(await listTools(tools.url, sent));
      expect(stub.asked).toHaveLength(2);
    } finally {
      await tools.close();
      await stub.close();
    }
  });

  verifies("oauth.introspection-cache", "is kept no later than the token's exp", async () => {
    let now = 0;
    const stub = await stubEndpoint(() => active(now, { exp: Math.floor(now / 1000) + 10 }));
    const tools = await behind(stub.url);
    try {
      now = tools.clock.now();
      const sent = token();
      expect((await listTools(tools.url, sent)).status).toBe(200);
      await tools.clock.advance(9_000);
      expect((await listTools(tools.url, sent)).status).toBe(200);
      expect(stub.asked).toHaveLength(1);
      // Past `exp`, though within the 60 s the server would otherwise keep it: asked again.
      await tools.clock.advance(2_000);
      expect((await listTools(tools.url, sent)).status).toBe(200);
      expect(stub.asked).toHaveLength(2);
    } finally {
      await tools.close();
      await stub.close();
    }
  });

  verifies("oauth.introspection-cache", "keeps a refused token 5 seconds at most", async () => {
    const stub = await stubEndpoint(() => ({ active: false }));
    const tools = await behind(stub.url, { cacheSeconds: 600 });
    try {
      const sent = token();
      refusedAsInvalid(await listTools(tools.url, sent));
      await tools.clock.advance(4_999);
      refusedAsInvalid(await listTools(tools.url, sent));
      expect(stub.asked).toHaveLength(1);
      await tools.clock.advance(1);
      refusedAsInvalid(await listTools(tools.url, sent));
      expect(stub.asked).toHaveLength(2);
    } finally {
      await tools.close();
      await stub.close();
    }
  });

  verifies("oauth.introspection-cache", "is not kept at all with cacheSeconds 0", async () => {
    let now = 0;
    const stub = await stubEndpoint((asked) =>
      asked.form.get("token") === "refused" ? { active: false } : active(now),
    );
    const tools = await behind(stub.url, { cacheSeconds: 0 });
    try {
      now = tools.clock.now();
      const sent = token();
      expect((await listTools(tools.url, sent)).status).toBe(200);
      expect((await listTools(tools.url, sent)).status).toBe(200);
      refusedAsInvalid(await listTools(tools.url, "refused"));
      refusedAsInvalid(await listTools(tools.url, "refused"));
      expect(stub.asked).toHaveLength(4);
    } finally {
      await tools.close();
      await stub.close();
    }
  });

  verifies("oauth.introspection-cache", "keeps a bounded number of answers, the oldest dropped first", async () => {
    // The bound is 10,000 answers; 3 here, so that the test reaches it with a few requests (10,000 take seconds).
    const stub = await stubEndpoint(() => active(clock.now()));
    const clock = new ManualClock(Date.now());
    const introspection = new TokenIntrospection(
      { ...INTROSPECTION, endpoint: stub.url },
      {
        issuers: [as.issuer],
        audiences: [RESOURCE],
        toleranceSeconds: 60,
        timeoutMs: 3_000,
        clock,
        logger: undefined,
        metadata: () => Promise.reject(new Error("no metadata is read with an endpoint configured")),
        scopesOf: (scope) => new Set(scope?.split(" ")),
        maxEntries: 3,
      },
    );
    try {
      const [first, ...others] = [token(), token(), token(), token()] as [string, ...string[]];
      await introspection.introspect(first);
      for (const sent of others) {
        await introspection.introspect(sent);
      }
      expect(stub.asked).toHaveLength(4);
      // The three latest are kept; the first was dropped for the fourth, and is asked about again.
      for (const sent of others) {
        await introspection.introspect(sent);
      }
      expect(stub.asked).toHaveLength(4);
      expect(await introspection.introspect(first)).toEqual({
        issuer: as.issuer,
        subject: "carol",
        scopes: new Set(["oxp:tools:read", "oxp:tools:call"]),
      });
      expect(stub.asked).toHaveLength(5);
    } finally {
      await stub.close();
    }
  });
});

describe("an introspection endpoint that cannot be asked", () => {
  const behind = (endpoint: string, oauth: Record<string, unknown> = {}) =>
    startToolServer({
      auth: {
        oauth: {
          authorizationServers: [as.issuer],
          resource: RESOURCE,
          introspection: { ...INTROSPECTION, endpoint },
          ...oauth,
        },
      },
    });
  /** A 503 with `Retry-After`, logged once without the token. */
  const unavailable = (reply: Awaited<ReturnType<typeof send>>, lines: string[], sent: string) => {
    expectError(reply, 503);
    expect(reply.headers.get("retry-after")).toBe("5");
    expect(reply.text).not.toContain(sent);
    const logs = lines.join("\n");
    expect(logs).toContain("introspection endpoint could not be asked");
    expect(logs).not.toContain(sent);
  };

  verifies("oauth.introspection", "is a 503 when the endpoint refuses the server's credentials", async () => {
    const stub = await stubEndpoint((_asked, response) => {
      json(response, 401, { error: "invalid_client" });
      return undefined;
    });
    const tools = await behind(stub.url);
    try {
      const sent = `opaque-${randomUUID()}`;
      unavailable(await listTools(tools.url, sent), tools.lines, sent);
    } finally {
      await tools.close();
      await stub.close();
    }
  });

  verifies("oauth.introspection", "is a 503 when the endpoint redirects, and the token is not sent on", async () => {
    const elsewhere = await stubEndpoint(() => ({ active: true }));
    const stub = await stubEndpoint((_asked, response) => {
      response.writeHead(307, { location: elsewhere.url }).end();
      return undefined;
    });
    const tools = await behind(stub.url);
    try {
      const sent = `opaque-${randomUUID()}`;
      unavailable(await listTools(tools.url, sent), tools.lines, sent);
      expect(stub.asked).toHaveLength(1);
      expect(elsewhere.asked).toHaveLength(0);
    } finally {
      await tools.close();
      await stub.close();
      await elsewhere.close();
    }
  });

  verifies("oauth.introspection", "is a 503 when the answer is larger than 128 KiB", async () => {
    const stub = await stubEndpoint(() => ({ active: false, padding: "x".repeat(130 * 1024) }));
    const tools = await behind(stub.url);
    try {
      const sent = `opaque-${randomUUID()}`;
      unavailable(await listTools(tools.url, sent), tools.lines, sent);
    } finally {
      await tools.close();
      await stub.close();
    }
  });

  verifies("oauth.introspection", "is a 503 once fetchTimeoutMs passes without an answer", async () => {
    // Never answered: the server's own time limit (a real one, on the network) must end the wait.
    const stub = await stubEndpoint(() => undefined);
    const tools = await behind(stub.url, { fetchTimeoutMs: 300 });
    try {
      const sent = `opaque-${randomUUID()}`;
      unavailable(await listTools(tools.url, sent), tools.lines, sent);
    } finally {
      await tools.close();
      await stub.close();
    }
  });

  verifies("oauth.introspection", "is a 503 when the authorization server's metadata cannot be read", async () => {
    // An issuer that is down: nothing listens on its port, so the introspection endpoint cannot be found.
    const issuer = `http://127.0.0.1:${await freePort()}`;
    const tools = await startToolServer({
      auth: { oauth: { authorizationServers: [issuer], resource: RESOURCE, introspection: INTROSPECTION } },
    });
    try {
      const sent = `opaque-${randomUUID()}`;
      const reply = await listTools(tools.url, sent);
      expectError(reply, 503);
      expect(reply.headers.get("retry-after")).toBe("5");
      const logs = tools.lines.join("\n");
      expect(logs).toContain("metadata could not be read");
      expect(logs).not.toContain(sent);
    } finally {
      await tools.close();
    }
  });
});

describe("with several authorization servers", () => {
  verifies("oauth.introspection", "sends an opaque token only to the one configured to introspect", async () => {
    // A second issuer that records whatever reaches it: an opaque token must never.
    const other = await stubEndpoint(() => ({ active: true }));
    const otherIssuer = new URL(other.url).origin;
    const tools = await startToolServer({
      auth: {
        oauth: {
          authorizationServers: [otherIssuer, as.issuer],
          resource: RESOURCE,
          introspection: { ...INTROSPECTION, issuer: as.issuer },
        },
      },
    });
    try {
      const { accessToken } = await aliceToken();
      expect((await listTools(tools.url, accessToken)).status).toBe(200);
      refusedAsInvalid(await listTools(tools.url, `opaque-${randomUUID()}`));
      expect(other.asked).toHaveLength(0);
    } finally {
      await tools.close();
      await other.close();
    }
  });
});

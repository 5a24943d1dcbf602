// docs/protocol.md section 5 over HTTP: API keys, HS256 JWTs and the subject every JWT must name.
import { createHmac } from "node:crypto";
import { verifies } from "@otc/test-helpers/verifies";
import { SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect } from "vitest";
import { callTool, expectError, type Running, send, startServer } from "./harness.js";

const SECRET = "a-shared-secret-of-at-least-32-bytes!";
/** The one audience `server` allows. */
const AUDIENCE = "oxp-test";
const API_KEY = "test-api-key-0123456789abcdef0123456789";
let server: Running;
let keyOnly: Running;
let open: Running;

beforeAll(async () => {
  [server, keyOnly, open] = await Promise.all([
    startServer({ auth: { jwt: { secret: SECRET, audiences: [AUDIENCE] } } }),
    startServer({ auth: { apiKeys: [API_KEY] } }),
    startServer(),
  ]);
});
afterAll(() => Promise.all([server.close(), keyOnly.close(), open.close()]));

const now = () => Math.floor(Date.now() / 1000);

/**
 * A signed HS256 JWT for `server`'s audience; other claims are given as is, so tests can leave `exp` out or set it
 * anywhere. An `aud` in `claims` replaces the audience, and `aud: undefined` leaves it out.
 */
function sign(claims: Record<string, unknown>, secret = SECRET): Promise<string> {
  return new SignJWT({ aud: AUDIENCE, ...claims })
    .setProtectedHeader({ alg: "HS256", typ: "JWT" })
    .sign(new TextEncoder().encode(secret));
}

/** A token with any header, signed with HMAC for the algorithms jose would refuse to make. */
function rawToken(
  header: Record<string, unknown>,
  claims: Record<string, unknown>,
  signWith?: "sha256" | "sha512",
): string {
  const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");
  const unsigned = `${encode(header)}.${encode(claims)}`;
  const signature = signWith ? createHmac(signWith, SECRET).update(unsigned).digest("base64url") : "";
  return `${unsigned}.${signature}`;
}

const tools = (base: string, headers: Record<string, string> = {}) => send(`${base}/tools`, { headers });

function expectUnauthorized(reply: Awaited<ReturnType<typeof send>>) {
  expectError(reply, 401);
  expect(reply.headers.get("www-authenticate")).toBe("Bearer");
  expect(reply.body.message).toBe("Authentication required");
}

describe("JWT", () => {
  verifies(["auth.jwt-hs256-only", "auth.jwt-claims"], "admits a valid HS256 token with an allowed aud", async () => {
    const withAud = await sign({ exp: now() + 300, aud: AUDIENCE, sub: "agent-1" });
    expect((await tools(server.baseUrl, { Authorization: `Bearer ${withAud}` })).status).toBe(200);
    const audList = await sign({ exp: now() + 300, aud: ["elsewhere", AUDIENCE], sub: "agent-1" });
    expect((await tools(server.baseUrl, { Authorization: `Bearer ${audList}` })).status).toBe(200);
  });

  verifies(
    ["auth.jwt-claims", "auth.401-response"],
    "refuses a token without aud where audiences are configured, unless requireAudience is false",
    async () => {
      const withoutAud = await sign({ exp: now() + 300, aud: undefined, sub: "agent-1" });
      const reply = await tools(server.baseUrl, { Authorization: `Bearer ${withoutAud}` });
      expectUnauthorized(reply);
      expect(reply.body.developer_message).toMatch(/\baud\b/);
      // OXP 1.0's rule, kept by an option: aud is checked only when present. Without audiences, none is asked for.
      const lenient = await startServer({
        auth: { jwt: { secret: SECRET, audiences: [AUDIENCE], requireAudience: false } },
      });
      const unnamed = await startServer({ auth: { jwt: { secret: SECRET } } });
      try {
        for (const open of [lenient, unnamed]) {
          expect((await tools(open.baseUrl, { Authorization: `Bearer ${withoutAud}` })).status).toBe(200);
        }
        const elsewhere = await sign({ exp: now() + 300, aud: "someone-else", sub: "agent-1" });
        expectUnauthorized(await tools(lenient.baseUrl, { Authorization: `Bearer ${elsewhere}` }));
      } finally {
        await Promise.all([lenient.close(), unnamed.close()]);
      }
    },
  );

  verifies("auth.jwt-claims", "tolerates 60 s of clock skew on exp", async () => {
    const justExpired = await sign({ exp: now() - 30, sub: "agent-1" });
    expect((await tools(server.baseUrl, { Authorization: `Bearer ${justExpired}` })).status).toBe(200);
  });

  verifies.each([
    ["expired", () => sign({ exp: now() - 120, sub: "x" })],
    ["without exp", () => sign({ sub: "x" })],
    ["with exp more than 15 minutes ahead", () => sign({ exp: now() + 20 * 60, sub: "x" })],
    ["with a wrong aud", () => sign({ exp: now() + 300, aud: "someone-else", sub: "x" })],
    ["signed with another secret", () => sign({ exp: now() + 300, sub: "x" }, "another-secret-another-secret-another")],
    ["with alg none", async () => rawToken({ alg: "none", typ: "JWT" }, { exp: now() + 300, sub: "x" })],
    ["with alg HS512", async () => rawToken({ alg: "HS512", typ: "JWT" }, { exp: now() + 300, sub: "x" }, "sha512")],
    ["with a tampered payload", async () => `${(await sign({ exp: now() + 300, sub: "x" })).slice(0, -3)}abc`],
    ["that is not a JWT", async () => "not-a-jwt"],
  ])(["auth.jwt-hs256-only", "auth.jwt-claims"], "refuses a token %s with a 401", async (_case, make) => {
    const reply = await tools(server.baseUrl, { Authorization: `Bearer ${await make()}` });
    expectUnauthorized(reply);
  });

  verifies(
    "auth.401-response",
    "refuses a request without credentials, and says nothing about which check failed in message",
    async () => {
      const reply = await tools(server.baseUrl);
      expectUnauthorized(reply);
      const expired = await sign({ exp: now() - 999, sub: "x" });
      const wrong = await tools(server.baseUrl, { Authorization: `Bearer ${expired}` });
      expect(wrong.body.message).toBe(reply.body.message);
    },
  );

  verifies(
    ["call.order-of-checks", "auth.guards-all-but-health"],
    "guards every route but /health, and checks credentials before the body",
    async () => {
      expect((await send(`${server.baseUrl}/health`)).status).toBe(200);
      expectUnauthorized(await send(`${server.baseUrl}/authorization/challenges/google.x`));
      const call = await send(`${server.baseUrl}/tools/call`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: "{not json",
      });
      expectUnauthorized(call);
    },
  );
});

describe("JWT subject", () => {
  verifies.each([
    ["without sub", { exp: now() + 300 }],
    ["with an empty sub", { exp: now() + 300, sub: "" }],
    ["with a numeric sub", { exp: now() + 300, sub: 5 }],
    ["with an object sub", { exp: now() + 300, sub: { id: "agent-1" } }],
    ["with a list sub", { exp: now() + 300, sub: ["agent-1"] }],
    ["with a sub over 256 characters", { exp: now() + 300, sub: "a".repeat(257) }],
    ["with a control character in sub", { exp: now() + 300, sub: "agent\u0000-1" }],
    ["with a C1 control character in sub", { exp: now() + 300, sub: "agent\u009b-1" }],
    // Bidirectional controls: `admin\u202e1-tnega` shows as `admin` and `agent-1` reversed (Trojan Source).
    ["with a right-to-left override in sub", { exp: now() + 300, sub: "admin\u202e1-tnega" }],
    ["with a left-to-right embedding in sub", { exp: now() + 300, sub: "agent\u202a-1" }],
    ["with a pop directional formatting in sub", { exp: now() + 300, sub: "agent-1\u202c" }],
    ["with a right-to-left isolate in sub", { exp: now() + 300, sub: "agent\u2067-1\u2069" }],
    ["with a first strong isolate in sub", { exp: now() + 300, sub: "\u2068agent-1" }],
    ["with a left-to-right mark in sub", { exp: now() + 300, sub: "agent-1\u200e" }],
    ["with a right-to-left mark in sub", { exp: now() + 300, sub: "agent\u200f-1" }],
    ["with an Arabic letter mark in sub", { exp: now() + 300, sub: "agent\u061c-1" }],
  ])(
    ["auth.jwt-subject", "auth.401-response"],
    "refuses a token %s with a 401 whose developer_message names the claim",
    async (_case, claims) => {
      const reply = await tools(server.baseUrl, { Authorization: `Bearer ${await sign(claims)}` });
      expectUnauthorized(reply);
      expect(reply.body.developer_message).toMatch(/\bsub\b/);
    },
  );

  verifies(
    "auth.jwt-subject",
    "admits a sub in any script, bidirectional text included, without controls",
    async () => {
      for (const sub of ["агент-1", "وكيل-١", "סוכן 1", "エージェント", "agent-1 (עברית)"]) {
        const token = await sign({ exp: now() + 300, sub });
        expect((await tools(server.baseUrl, { Authorization: `Bearer ${token}` })).status, sub).toBe(200);
      }
    },
  );

  verifies("auth.jwt-subject", "admits a sub of 256 characters, and not one of 257", async () => {
    const longest = await sign({ exp: now() + 300, sub: "a".repeat(256) });
    expect((await tools(server.baseUrl, { Authorization: `Bearer ${longest}` })).status).toBe(200);
    const tooLong = await sign({ exp: now() + 300, sub: "a".repeat(257) });
    expectUnauthorized(await tools(server.baseUrl, { Authorization: `Bearer ${tooLong}` }));
  });

  verifies(
    ["auth.principal-identity", "idempotency.per-principal"],
    "gives no shared principal to a token without sub and one with sub 5: neither runs, nor replays the other",
    async () => {
      // Both were once admitted as the principal `jwt:`, so the second got the first's stored response.
      const call = { tool_id: "Counter.Increment", input: { by: 1 }, call_id: "subjectless-shared-call" };
      const before = server.counter.value;
      for (const claims of [{ exp: now() + 300 }, { exp: now() + 300, sub: 5 }]) {
        expectUnauthorized(await callTool(server.baseUrl, call, { Authorization: `Bearer ${await sign(claims)}` }));
      }
      expect(server.counter.value).toBe(before);
      // Two named subjects each get their own run of the same call_id.
      for (const sub of ["5", "agent-5"]) {
        const reply = await callTool(server.baseUrl, call, {
          Authorization: `Bearer ${await sign({ exp: now() + 300, sub })}`,
        });
        expect(reply.body).toMatchObject({ success: true });
      }
      expect(server.counter.value).toBe(before + 2);
    },
  );

  verifies(
    ["auth.jwt-subject", "auth.principal-identity"],
    "names the principal by the configured principalClaim instead of sub",
    async () => {
      const byClient = await startServer({
        auth: { jwt: { secret: SECRET, audiences: [AUDIENCE], principalClaim: "client_id" } },
      });
      try {
        const named = await sign({ exp: now() + 300, client_id: "billing-service" });
        expect((await tools(byClient.baseUrl, { Authorization: `Bearer ${named}` })).status).toBe(200);
        const subOnly = await sign({ exp: now() + 300, sub: "agent-1" });
        const reply = await tools(byClient.baseUrl, { Authorization: `Bearer ${subOnly}` });
        expectUnauthorized(reply);
        expect(reply.body.developer_message).toMatch(/client_id/);
      } finally {
        await byClient.close();
      }
    },
  );
});

describe("API key", () => {
  verifies("auth.api-key-header", "is admitted in OXP-API-Key", async () => {
    expect((await tools(keyOnly.baseUrl, { "OXP-API-Key": API_KEY })).status).toBe(200);
  });

  verifies(
    "auth.api-key-as-bearer",
    "is admitted as a bearer token, as the draft's generated clients send it",
    async () => {
      expect((await tools(keyOnly.baseUrl, { Authorization: `Bearer ${API_KEY}` })).status).toBe(200);
    },
  );

  verifies.each([
    ["a wrong key", { "OXP-API-Key": `${API_KEY}x` }],
    ["a prefix of the key", { "OXP-API-Key": API_KEY.slice(0, 10) }],
    ["an empty key", { "OXP-API-Key": "" }],
    ["a wrong bearer", { Authorization: "Bearer nope" }],
    ["no credentials", {}],
  ])("auth.api-key-header", "refuses %s with a 401", async (_case, headers) => {
    expectUnauthorized(await tools(keyOnly.baseUrl, headers));
  });

  verifies("auth.off-by-default", "admits when any one credential is valid", async () => {
    const both = await startServer({ auth: { apiKeys: [API_KEY], jwt: { secret: SECRET, audiences: [AUDIENCE] } } });
    try {
      const jwt = await sign({ exp: now() + 60, sub: "agent-1" });
      expect((await tools(both.baseUrl, { "OXP-API-Key": "wrong", Authorization: `Bearer ${jwt}` })).status).toBe(200);
      expect((await tools(both.baseUrl, { "OXP-API-Key": API_KEY, Authorization: "Bearer wrong" })).status).toBe(200);
      expectUnauthorized(await tools(both.baseUrl, { "OXP-API-Key": "wrong", Authorization: "Bearer wrong" }));
    } finally {
      await both.close();
    }
  });
});

describe("authentication off", () => {
  verifies(
    ["auth.off-ignores-credentials", "auth.off-by-default"],
    "ignores Authorization and OXP-API-Key headers",
    async () => {
      expect((await tools(open.baseUrl, { Authorization: "Bearer garbage", "OXP-API-Key": "garbage" })).status).toBe(
        200,
      );
    },
  );
});

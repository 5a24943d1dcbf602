// The accessToken hook on loopback: a real @otc/server with HS256 JWTs (an expired token refreshed once, a bad one
// refused after one retry, a call sent again and run once), and a small node:http server that checks scopes as an
// oauth server does (401 and 403 challenges; @otc/server has no scopes yet), for the step-up after a 403.
import { once } from "node:events";
import { createServer as createHttpServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createHandler, defineTool, listen, type RunningServer } from "@otc/server/node";
import { json } from "@otc/test-helpers/hostile-server";
import { SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AccessTokenProvider, AccessTokenRequest } from "./access-token.js";
import { createClient } from "./client.js";
import {
  errorFromResponse,
  OxpAccessTokenError,
  OxpAuthenticationError,
  OxpForbiddenError,
  OxpServerError,
} from "./errors.js";

const SECRET = "access-token-test-secret-0123456789";

/** An HS256 JWT for `agent`, signed with `secret`, whose `exp` is `expiresIn` seconds from now (negative: expired). */
function mint(expiresIn: number, secret = SECRET): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({})
    .setProtectedHeader({ alg: "HS256", typ: "JWT" })
    .setSubject("agent")
    .setIssuedAt(Math.min(now, now + expiresIn - 60))
    .setExpirationTime(now + expiresIn)
    .setJti(crypto.randomUUID())
    .sign(new TextEncoder().encode(secret));
}

/** An hour ago: far past the server's 60 s of tolerated clock skew. */
const EXPIRED = -3600;

/** Runs of Work.Count, by call_id. */
const runs = new Map<string, number>();

const tools = [
  defineTool({
    toolkit: "Work",
    name: "Count",
    version: "1.0.0",
    description: "Counts its runs of each call_id.",
    inputSchema: {},
    outputSchema: { type: "integer" },
    run: (_input, context) => {
      const count = (runs.get(context.callId) ?? 0) + 1;
      runs.set(context.callId, count);
      return count;
    },
  }),
];

/** One request the client sent: its method, path, bearer token and body. */
interface Sent {
  method: string;
  path: string;
  token: string | undefined;
  body: string;
}

/** A fetch that records each request it sends in `sent`. */
function recording(sent: Sent[]): typeof fetch {
  return (async (input: string | URL | Request, init?: RequestInit) => {
    const request = new Request(input, init);
    const authorization = request.headers.get("authorization");
    sent.push({
      method: request.method,
      path: new URL(request.url).pathname,
      token: authorization?.startsWith("Bearer ") ? authorization.slice(7) : undefined,
      body: await request.clone().text(),
    });
    return fetch(request);
  }) as typeof fetch;
}

/** A provider that answers each request from `answer`, keeping what it was asked. */
function providerOf(answer: (request: AccessTokenRequest) => string | Promise<string>) {
  const asked: AccessTokenRequest[] = [];
  const provider: AccessTokenProvider = (request) => {
    asked.push(request);
    return answer(request);
  };
  return { provider, asked, reasons: () => asked.map((request) => request.reason) };
}

let oxp: RunningServer;
beforeAll(async () => {
  oxp = await listen(createHandler({ tools, logger: false, auth: { jwt: { secret: SECRET } } }), { port: 0 });
});
afterAll(() => oxp?.close());

describe("accessToken against @otc/server with HS256 JWTs", () => {
  it("sends the provider's token as the bearer token, asking once per request", async () => {
    const token = await mint(300);
    const { provider, reasons } = providerOf(() => token);
    const sent: Sent[] = [];
    const client = createClient({ baseUrl: oxp.url, accessToken: provider, fetch: recording(sent) });
    await client.listTools();
    await client.listTools();
    expect(reasons()).toEqual(["initial", "initial"]);
    expect(sent.map((request) => request.token)).toEqual([token, token]);
  });

  it("refreshes an expired token once after the 401, and the request succeeds", async () => {
    const [expired, fresh] = await Promise.all([mint(EXPIRED), mint(300)]);
    const { provider, asked, reasons } = providerOf(({ reason }) => (reason === "initial" ? expired : fresh));
    const sent: Sent[] = [];
    const client = createClient({ baseUrl: oxp.url, accessToken: provider, fetch: recording(sent) });
    const tools = await client.listTools();
    expect(tools.map((tool) => tool.id)).toEqual(["Work.Count@1.0.0"]);
    expect(reasons()).toEqual(["initial", "unauthorized"]);
    // The server's 401 says `Bearer` and nothing more: a challenge without scopes.
    expect(asked[1]?.challenge).toEqual({ scopes: [] });
    expect(asked[1]?.signal).toBeInstanceOf(AbortSignal);
    expect(sent.map((request) => request.token)).toEqual([expired, fresh]);
  });

  it("sends a refused POST /tools/call again with the same body and call_id, and the tool runs once", async () => {
    const [expired, fresh] = await Promise.all([mint(EXPIRED), mint(300)]);
    const { provider, reasons } = providerOf(({ reason }) => (reason === "initial" ? expired : fresh));
    const sent: Sent[] = [];
    const client = createClient({ baseUrl: oxp.url, accessToken: provider, fetch: recording(sent) });
    const response = await client.callTool({ tool_id: "Work.Count", input: {} });
    expect(response).toMatchObject({ success: true, value: 1 });
    expect(runs.get(response.call_id)).toBe(1);
    expect(reasons()).toEqual(["initial", "unauthorized"]);
    const calls = sent.filter((request) => request.path === "/tools/call");
    expect(calls).toHaveLength(2);
    expect(calls[1]?.body).toBe(calls[0]?.body);
    expect(JSON.parse(calls[0]?.body ?? "{}").call_id).toBe(response.call_id);
  });

  it("throws the OxpAuthenticationError after exactly one retry when the new token is refused too", async () => {
    // A new token each time, each signed with the wrong secret: the client would send it forever if it looped.
    const { provider, reasons } = providerOf(() => mint(300, "not-the-server-secret-0123456789"));
    const sent: Sent[] = [];
    const client = createClient({ baseUrl: oxp.url, accessToken: provider, fetch: recording(sent) });
    const error = await client.callTool({ tool_id: "Work.Count", input: {} }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OxpAuthenticationError);
    expect((error as OxpAuthenticationError).challenge).toEqual({ scopes: [] });
    expect(reasons()).toEqual(["initial", "unauthorized"]);
    expect(sent).toHaveLength(2);
  });

  it("does not send again when the provider gives back the token just refused", async () => {
    const expired = await mint(EXPIRED);
    const { provider, reasons } = providerOf(() => expired);
    const sent: Sent[] = [];
    const client = createClient({ baseUrl: oxp.url, accessToken: provider, fetch: recording(sent) });
    const error = await client.listTools().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OxpAuthenticationError);
    expect(reasons()).toEqual(["initial", "unauthorized"]);
    expect(sent).toHaveLength(1);
  });

  it("sends a fixed token as it is, and never again after a 401", async () => {
    const expired = await mint(EXPIRED);
    const sent: Sent[] = [];
    const client = createClient({ baseUrl: oxp.url, accessToken: expired, fetch: recording(sent) });
    await expect(client.listTools()).rejects.toBeInstanceOf(OxpAuthenticationError);
    expect(sent.map((request) => request.token)).toEqual([expired]);
  });

  it("throws an OxpAccessTokenError carrying the provider's error, sending nothing and retrying nothing", async () => {
    const cause = new Error("nobody is signed in");
    const { provider, reasons } = providerOf(() => {
      throw cause;
    });
    const sent: Sent[] = [];
    const client = createClient({ baseUrl: oxp.url, accessToken: provider, fetch: recording(sent) });
    const error = await client.callTool({ tool_id: "Work.Count", input: {} }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OxpAccessTokenError);
    expect(error).toMatchObject({ reason: "initial", challenge: undefined, cause });
    expect(reasons()).toEqual(["initial"]);
    expect(sent).toHaveLength(0);
  });

  it("throws an OxpAccessTokenError with the 401's challenge when the refresh fails", async () => {
    const expired = await mint(EXPIRED);
    const { provider } = providerOf(async ({ reason }) => {
      if (reason === "unauthorized") {
        throw new Error("the refresh token was revoked");
      }
      return expired;
    });
    const client = createClient({ baseUrl: oxp.url, accessToken: provider });
    const error = await client.listTools().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OxpAccessTokenError);
    expect(error).toMatchObject({ reason: "unauthorized", challenge: { scopes: [] } });
    expect((error as Error).message).toContain("the refresh token was revoked");
  });

  it.each([
    ["an empty string", ""],
    ["a token with a line break", "abc\r\nX-Injected: 1"],
    ["not a string", 42],
  ])("refuses %s from the provider, sending nothing", async (_name, token) => {
    const sent: Sent[] = [];
    const client = createClient({
      baseUrl: oxp.url,
      accessToken: () => token as string,
      fetch: recording(sent),
    });
    await expect(client.listTools()).rejects.toBeInstanceOf(OxpAccessTokenError);
    expect(sent).toHaveLength(0);
  });

  it("rejects with the caller's abort while the provider is still working, whether or not it listens", async () => {
    let started!: () => void;
    const asking = new Promise<void>((resolve) => {
      started = resolve;
    });
    const client = createClient({
      baseUrl: oxp.url,
      accessToken: () => {
        started();
        return new Promise<string>(() => undefined); // never settles, ignores the signal
      },
    });
    const controller = new AbortController();
    const listing = client.listTools({ signal: controller.signal });
    await asking;
    const reason = new Error("the user gave up");
    controller.abort(reason);
    await expect(listing).rejects.toBe(reason);
  });

  it("is a TypeError with jwt beside it", () => {
    expect(() =>
      createClient({ baseUrl: oxp.url, accessToken: "token", jwt: { secret: SECRET, subject: "agent" } }),
    ).toThrow(TypeError);
  });
});

// The scope server: what an @otc/server with the oauth extension is to answer (docs/protocol.md 9.6), reduced to its
// challenges. Its access tokens are `scopes:<scope>,<scope>`; any other bearer token is refused with a 401.
const MAIL_SCOPE = "mail.send";
let scopeServer: Server;
let scopeUrl: string;
/** Runs of the scope server's tool, by call_id. */
const scopeRuns = new Map<string, number>();

beforeAll(async () => {
  scopeServer = createHttpServer(async (req, res) => {
    let body = "";
    for await (const chunk of req) {
      body += chunk;
    }
    const metadata = `${scopeUrl}/.well-known/oauth-protected-resource`;
    const authorization = req.headers.authorization;
    const token = authorization?.startsWith("Bearer ") ? authorization.slice(7) : undefined;
    if (!token?.startsWith("scopes:")) {
      const invalid = token === undefined ? "" : 'error="invalid_token", ';
      res.setHeader(
        "www-authenticate",
        `Bearer ${invalid}resource_metadata="${metadata}", scope="oxp:tools:read oxp:tools:call"`,
      );
      return json(res, 401, { message: "Authentication required" });
    }
    const held = token.slice("scopes:".length).split(",");
    const needed = req.url === "/tools/call" ? ["oxp:tools:call", MAIL_SCOPE] : ["oxp:tools:read"];
    if (!needed.every((scope) => held.includes(scope))) {
      res.setHeader(
        "www-authenticate",
        `Bearer error="insufficient_scope", scope="${needed.join(" ")}", resource_metadata="${metadata}"`,
      );
      return json(res, 403, {
        message: `The access token lacks a scope this request needs (${needed.join(", ")})`,
        developer_message: `granted: ${held.join(" ")}`,
      });
    }
    if (req.url !== "/tools/call") {
      return json(res, 200, { items: [] });
    }
    const call = JSON.parse(body) as { call_id: string; context?: { user_id?: string } };
    if (call.context?.user_id === "someone-else") {
      // Refused for whom it is, not for a scope: no challenge.
      return json(res, 403, { message: "context.user_id is not the access token's subject" });
    }
    scopeRuns.set(call.call_id, (scopeRuns.get(call.call_id) ?? 0) + 1);
    return json(res, 200, { call_id: call.call_id, duration: 1, success: true, value: "sent" });
  });
  scopeServer.listen(0, "127.0.0.1");
  await once(scopeServer, "listening");
  scopeUrl = `http://127.0.0.1:${(scopeServer.address() as AddressInfo).port}`;
});
afterAll(() => {
  scopeServer?.closeAllConnections();
  return new Promise<void>((resolve) => (scopeServer ? scopeServer.close(() => resolve()) : resolve()));
});

const mail = { tool_id: "Mail.Send", input: {} };

describe("accessToken against a server that checks scopes", () => {
  it("steps up once after a 403 for too few scopes, and the call runs once", async () => {
    const { provider, asked, reasons } = providerOf(({ reason, challenge }) =>
      reason === "initial" ? "scopes:oxp:tools:read,oxp:tools:call" : `scopes:${challenge?.scopes.join(",")}`,
    );
    const sent: Sent[] = [];
    const client = createClient({ baseUrl: scopeUrl, accessToken: provider, fetch: recording(sent) });
    const response = await client.callTool(mail);
    expect(response).toMatchObject({ success: true, value: "sent" });
    expect(scopeRuns.get(response.call_id)).toBe(1);
    expect(reasons()).toEqual(["initial", "insufficient_scope"]);
    expect(asked[1]?.challenge).toEqual({
      error: "insufficient_scope",
      scopes: ["oxp:tools:call", MAIL_SCOPE],
      resourceMetadata: `${scopeUrl}/.well-known/oauth-protected-resource`,
    });
    expect(sent).toHaveLength(2);
    expect(sent[1]?.body).toBe(sent[0]?.body);
  });

  it("throws the OxpForbiddenError, with its challenge, after exactly one step-up that did not help", async () => {
    let n = 0;
    // A new token each time, never with the mail scope.
    const { provider, reasons } = providerOf(() => `scopes:oxp:tools:call,other-${n++}`);
    const sent: Sent[] = [];
    const client = createClient({ baseUrl: scopeUrl, accessToken: provider, fetch: recording(sent) });
    const error = await client.callTool(mail).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OxpForbiddenError);
    expect(error).toBeInstanceOf(OxpServerError);
    expect(error).toMatchObject({
      status: 403,
      developerMessage: "granted: oxp:tools:call other-1",
      challenge: { error: "insufficient_scope", scopes: ["oxp:tools:call", MAIL_SCOPE] },
    });
    expect(reasons()).toEqual(["initial", "insufficient_scope"]);
    expect(sent).toHaveLength(2);
  });

  it("refreshes after a 401 and then steps up after a 403: each once, three requests in all", async () => {
    const { provider, asked, reasons } = providerOf(({ reason, challenge }) => {
      if (reason === "initial") {
        return "expired";
      }
      if (reason === "unauthorized") {
        return "scopes:oxp:tools:read";
      }
      return `scopes:oxp:tools:read,${challenge?.scopes.join(",")}`;
    });
    const sent: Sent[] = [];
    const client = createClient({ baseUrl: scopeUrl, accessToken: provider, fetch: recording(sent) });
    const response = await client.callTool(mail);
    expect(response.success).toBe(true);
    expect(scopeRuns.get(response.call_id)).toBe(1);
    expect(reasons()).toEqual(["initial", "unauthorized", "insufficient_scope"]);
    expect(asked[1]?.challenge).toMatchObject({ error: "invalid_token", scopes: ["oxp:tools:read", "oxp:tools:call"] });
    expect(sent.map((request) => request.token)).toEqual([
      "expired",
      "scopes:oxp:tools:read",
      `scopes:oxp:tools:read,oxp:tools:call,${MAIL_SCOPE}`,
    ]);
  });

  it("never asks twice for one reason, however many new tokens the provider has", async () => {
    let n = 0;
    const { provider, reasons } = providerOf(({ reason }) =>
      reason === "initial" ? "scopes:oxp:tools:call" : `junk-${n++}`,
    );
    const sent: Sent[] = [];
    const client = createClient({ baseUrl: scopeUrl, accessToken: provider, fetch: recording(sent) });
    const error = await client.callTool(mail).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OxpAuthenticationError);
    expect((error as OxpAuthenticationError).challenge).toMatchObject({ error: "invalid_token" });
    // 403, stepped up to junk-0; 401, refreshed to junk-1; 401 again: the request ends there.
    expect(reasons()).toEqual(["initial", "insufficient_scope", "unauthorized"]);
    expect(sent.map((request) => request.token)).toEqual(["scopes:oxp:tools:call", "junk-0", "junk-1"]);
  });

  it("does not step up for a 403 that is not about scopes", async () => {
    const { provider, reasons } = providerOf(() => `scopes:oxp:tools:call,${MAIL_SCOPE}`);
    const sent: Sent[] = [];
    const client = createClient({ baseUrl: scopeUrl, accessToken: provider, fetch: recording(sent) });
    const error = await client.callTool({ ...mail, context: { user_id: "someone-else" } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OxpForbiddenError);
    expect((error as OxpForbiddenError).challenge).toBeUndefined();
    expect(reasons()).toEqual(["initial"]);
    expect(sent).toHaveLength(1);
  });
});

describe("errorFromResponse for 401 and 403", () => {
  const challenge = 'Bearer error="insufficient_scope", scope="oxp:tools:call", resource_metadata="https://oxp.test/m"';

  it("makes a 403 an OxpForbiddenError carrying its header and parsed challenge", () => {
    const error = errorFromResponse(403, { message: "Too few scopes" }, new Headers({ "www-authenticate": challenge }));
    expect(error).toBeInstanceOf(OxpForbiddenError);
    expect(error).toMatchObject({
      status: 403,
      wwwAuthenticate: challenge,
      challenge: { error: "insufficient_scope", scopes: ["oxp:tools:call"], resourceMetadata: "https://oxp.test/m" },
    });
  });

  it("gives a 401 its parsed challenge, and none for a header that is not one", () => {
    const parsed = errorFromResponse(401, { message: "No" }, new Headers({ "www-authenticate": "Bearer realm=oxp" }));
    expect((parsed as OxpAuthenticationError).challenge).toEqual({ realm: "oxp", scopes: [] });
    const garbage = errorFromResponse(401, { message: "No" }, new Headers({ "www-authenticate": '"Bearer' }));
    expect((garbage as OxpAuthenticationError).challenge).toBeUndefined();
  });
});

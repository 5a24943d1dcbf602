// The page's Sign in steps (ui/oauth.ts, ui/signed-in.ts) against a real @otc/server with the oauth extension and real oidc-providers: metadata, the choice among several authorization servers, PKCE, the authorization request, the answer's checks, the code exchange, and the renewals with the refresh token on a test clock.
import { createServer as createHttpServer } from "node:http";
import type { AddressInfo } from "node:net";
import { createClient, OxpAccessTokenError } from "@otc/client";
import { createHandler, defineTool, listen, type RunningServer } from "@otc/server/node";
import { freePort } from "@otc/test-helpers/free-port";
import { ManualClock } from "@otc/test-helpers/manual-clock";
import { type AuthorizationServer, startAuthorizationServer } from "@otc/test-helpers/oidc-provider";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  AUTHORIZATION_SERVER_KEY,
  authorizationUrl,
  chosenAuthorizationServer,
  codeChallengeOf,
  codeOf,
  exchangeCode,
  INSPECTOR_SCOPES,
  OFFLINE_ACCESS,
  PENDING_KEY,
  type PendingSignIn,
  randomToken,
  readAuthorizationResponse,
  readAuthorizationServer,
  readResourceMetadata,
  redirectUriOf,
  rememberAuthorizationServer,
  type SignedIn,
  SignInError,
  savePendingSignIn,
  scopesFor,
  takePendingSignIn,
  withAuthOrigin,
  withoutResponse,
} from "./oauth.js";
import { fromError } from "./outcome.js";
import { type Credentials, clientFor, type Exchange, MASK } from "./session.js";
import { REFRESH_MARGIN_MS, SignInSession, type SignInSessionOptions } from "./signed-in.js";

const USER = { id: "alice", password: "alice-password" };
let provider: AuthorizationServer;
let server: RunningServer;
/** The Inspector page's address, which is its redirect URI: on the server's origin. */
let page: string;
/** A second authorization server, and a server whose resource metadata names both (the first one first). */
let second: AuthorizationServer;
let several: RunningServer;
let severalPage: string;

const echo = defineTool({
  toolkit: "Account",
  name: "WhoAmI",
  version: "1.0.0",
  description: "Answers the user the call was run for.",
  inputSchema: { type: "object", properties: {} },
  outputSchema: { type: "string" },
  requirements: { user_id: true },
  run: (_input, context) => context.userId as string,
});

beforeAll(async () => {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  page = `${url}/inspector`;
  provider = await startAuthorizationServer({
    resources: [{ url, scopes: [...INSPECTOR_SCOPES] }],
    clients: [{ clientId: "oxp-inspector", redirectUris: [page] }],
    users: [USER],
  });
  server = await listen(
    createHandler({
      tools: [echo],
      logger: false,
      publicUrl: url,
      auth: { oauth: { authorizationServers: [provider.issuer] } },
    }),
    { port },
  );
  const severalPort = await freePort();
  const severalUrl = `http://127.0.0.1:${severalPort}`;
  severalPage = `${severalUrl}/inspector`;
  second = await startAuthorizationServer({
    resources: [{ url: severalUrl, scopes: [...INSPECTOR_SCOPES] }],
    clients: [{ clientId: "oxp-inspector", redirectUris: [severalPage] }],
    users: [USER],
  });
  several = await listen(
    createHandler({
      tools: [echo],
      logger: false,
      publicUrl: severalUrl,
      auth: { oauth: { authorizationServers: [provider.issuer, second.issuer] } },
    }),
    { port: severalPort },
  );
});

afterAll(async () => {
  await Promise.all([server?.close(), several?.close()]);
  await Promise.all([provider?.stop(), second?.stop()]);
});

/** A Storage in a Map: what sessionStorage is to the page. */
class MemoryStorage implements Storage {
  readonly #items = new Map<string, string>();
  get length() {
    return this.#items.size;
  }
  clear() {
    this.#items.clear();
  }
  getItem(key: string) {
    return this.#items.get(key) ?? null;
  }
  key(index: number) {
    return [...this.#items.keys()][index] ?? null;
  }
  removeItem(key: string) {
    this.#items.delete(key);
  }
  setItem(key: string, value: string) {
    this.#items.set(key, value);
  }
}

describe("the steps before the authorization server", () => {
  it("reads the server's resource metadata and its authorization server's (OpenID Connect's, after RFC 8414's 404)", async () => {
    const discovery = await (await fetch(`${server.url}/.well-known/oxp`)).json();
    const metadata = await readResourceMetadata(discovery.extension_info.oauth.resource_metadata);
    expect(metadata).toEqual({ resource: server.url, authorizationServers: [provider.issuer] });
    const as = await readAuthorizationServer(provider.issuer);
    expect(as.issuer).toBe(provider.issuer);
    expect(new URL(as.tokenEndpoint).origin).toBe(provider.issuer);
    expect(new URL(as.authorizationEndpoint).origin).toBe(provider.issuer);
  });

  it.each([
    ["", ["/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"]],
    ["/", ["/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"]],
    ["/tenant/a", ["/.well-known/oauth-authorization-server/tenant/a", "/tenant/a/.well-known/openid-configuration"]],
  ])(
    "asks for the metadata of an issuer with the path %j where RFC 8414, then OpenID Connect, put it",
    async (path, want) => {
      // A server without either document: each is asked for once, in this order, and both 404s are named.
      const asked: string[] = [];
      const none = createHttpServer((req, res) => {
        asked.push(req.url ?? "");
        res.statusCode = 404;
        res.end();
      });
      await new Promise<void>((resolve) => none.listen(0, "127.0.0.1", resolve));
      const issuer = `http://127.0.0.1:${(none.address() as AddressInfo).port}${path}`;
      try {
        await expect(readAuthorizationServer(issuer)).rejects.toThrow(
          /CORS\): http:\S+: HTTP 404; http:\S+: HTTP 404$/,
        );
      } finally {
        await new Promise((resolve) => none.close(resolve));
      }
      expect(asked).toEqual(want);
    },
  );

  it("refuses metadata that names another issuer, and says CORS when no document can be read", async () => {
    const impostor = createHttpServer((_req, res) => {
      res.setHeader("content-type", "application/json");
      res.end(
        JSON.stringify({
          issuer: "https://someone.example",
          authorization_endpoint: "https://someone.example/a",
          token_endpoint: "https://someone.example/t",
        }),
      );
    });
    await new Promise<void>((resolve) => impostor.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(impostor.address() as AddressInfo).port}`;
    try {
      await expect(readAuthorizationServer(url)).rejects.toThrow(/names the issuer https:\/\/someone.example, not/);
    } finally {
      await new Promise((resolve) => impostor.close(resolve));
    }
    const closed = `http://127.0.0.1:${await freePort()}`;
    await expect(readAuthorizationServer(closed)).rejects.toThrow(/allow this page's origin with CORS/);
  });

  it("sends nothing to an authorization server on plain http off this machine", async () => {
    const asked: string[] = [];
    const recordAll: typeof fetch = (input) => {
      asked.push(String(input));
      return Promise.reject(new TypeError("must not be sent"));
    };
    await expect(readAuthorizationServer("http://login.example.com", recordAll)).rejects.toThrow(
      /the page uses https:\/\/ \(http:\/\/ on a loopback address only\)/,
    );
    expect(asked).toEqual([]);
  });

  it("computes the S256 challenge with Web Crypto (RFC 7636's example), and 43-character verifiers", async () => {
    expect(await codeChallengeOf("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk")).toBe(
      "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
    );
    const verifier = randomToken();
    expect(verifier).toMatch(/^[\w-]{43}$/);
    expect(randomToken()).not.toBe(verifier);
  });

  it.each([
    ["the response taken out", "http://h/inspector?url=x&code=c&state=s&iss=i#f", "http://h/inspector?url=x"],
    [
      "an error response taken out",
      "http://h/inspector?error=access_denied&error_description=no",
      "http://h/inspector",
    ],
    ["auth kept", "http://h/inspector?auth=http%3A%2F%2Fas&code=c", "http://h/inspector?auth=http%3A%2F%2Fas"],
  ])("the page's address: %s", (_name, href, want) => {
    expect(withoutResponse(href)).toBe(want);
  });

  it("keeps the redirect URI the same with or without auth=, which only widens the page's policy", () => {
    expect(redirectUriOf("http://h/inspector?url=http%3A%2F%2Fs&auth=http%3A%2F%2Fas&code=c&state=s")).toBe(
      "http://h/inspector?url=http%3A%2F%2Fs",
    );
    expect(withAuthOrigin("http://h/inspector?code=c&state=s", "http://as:9")).toBe(
      "http://h/inspector?auth=http%3A%2F%2Fas%3A9",
    );
  });
});

describe("the flow end to end, the browser's part driven over HTTP", () => {
  it("signs in: the code comes back with the state, is exchanged, and the token lists and calls the tools", async () => {
    const resource = await readResourceMetadata(`${server.url}/.well-known/oauth-protected-resource`);
    const as = await readAuthorizationServer(resource.authorizationServers[0] as string);
    const state = randomToken();
    const codeVerifier = randomToken();
    const url = authorizationUrl({
      authorizationEndpoint: as.authorizationEndpoint,
      clientId: "oxp-inspector",
      redirectUri: page,
      resource: resource.resource,
      state,
      codeChallenge: await codeChallengeOf(codeVerifier),
    });
    const query = new URL(url).searchParams;
    expect(Object.fromEntries(query)).toMatchObject({
      response_type: "code",
      scope: "oxp:tools:read oxp:tools:call",
      resource: server.url,
      code_challenge_method: "S256",
    });

    const storage = new MemoryStorage();
    const pending: PendingSignIn = {
      phase: "authorize",
      serverUrl: server.url,
      clientId: "oxp-inspector",
      state,
      codeVerifier,
      redirectUri: page,
      resource: resource.resource,
      issuer: as.issuer,
      tokenEndpoint: as.tokenEndpoint,
    };
    savePendingSignIn(storage, pending);

    const answer = await provider.completeAuthorization(url, { user: USER });
    const response = readAuthorizationResponse(answer.redirectUrl);
    expect(response?.state).toBe(state);
    const taken = takePendingSignIn(storage);
    expect(storage.getItem(PENDING_KEY)).toBeNull();
    const code = codeOf(response ?? {}, taken);
    const signedIn = await exchangeCode({
      tokenEndpoint: as.tokenEndpoint,
      clientId: "oxp-inspector",
      code,
      redirectUri: page,
      codeVerifier,
      resource: resource.resource,
      origin: server.url,
    });
    expect(signedIn.scope?.split(" ").sort()).toEqual(["oxp:tools:call", "oxp:tools:read"]);

    const client = createClient({ baseUrl: server.url, accessToken: signedIn.accessToken });
    expect((await client.listTools()).map((tool) => tool.id)).toEqual(["Account.WhoAmI@1.0.0"]);
    const called = await client.callTool({ tool_id: "Account.WhoAmI", input: {} });
    expect(called.success && called.value).toBe(USER.id);

    // The code is good once: the same exchange again is refused.
    await expect(
      exchangeCode({
        tokenEndpoint: as.tokenEndpoint,
        clientId: "oxp-inspector",
        code,
        redirectUri: page,
        codeVerifier,
        origin: server.url,
      }),
    ).rejects.toThrow(/refused the code \(invalid_grant/);
  });

  it("says CORS, naming the page's origin, when the token endpoint cannot be reached", async () => {
    const closed = `http://127.0.0.1:${await freePort()}/token`;
    const exchange = exchangeCode({
      tokenEndpoint: closed,
      clientId: "oxp-inspector",
      code: "c",
      redirectUri: page,
      codeVerifier: randomToken(),
      origin: "http://127.0.0.1:6280",
    });
    await expect(exchange).rejects.toThrow(SignInError);
    await expect(exchange).rejects.toThrow(
      /allow this page's origin, http:\/\/127.0.0.1:6280, with CORS for client oxp-inspector/,
    );
  });
});

describe("the authorization answer's checks", () => {
  const pending: PendingSignIn = {
    phase: "authorize",
    serverUrl: "http://s",
    clientId: "c",
    state: "the-state",
    issuer: "http://as",
  };
  it.each<[string, Parameters<typeof codeOf>[0], PendingSignIn | undefined, RegExp]>([
    ["no sign-in started", { code: "x", state: "the-state" }, undefined, /started no sign-in/],
    [
      "a sign-in that only reloaded",
      { code: "x", state: "the-state" },
      { ...pending, phase: "reload" },
      /started no sign-in/,
    ],
    ["another state", { code: "x", state: "other" }, pending, /state is not the one/],
    ["no state", { code: "x" }, pending, /state is not the one/],
    [
      "another issuer (RFC 9207)",
      { code: "x", state: "the-state", iss: "http://evil" },
      pending,
      /comes from http:\/\/evil/,
    ],
    [
      "an error",
      { error: "access_denied", errorDescription: "no", state: "the-state" },
      pending,
      /answered access_denied: no/,
    ],
    [
      "an answer without iss from an authorization server whose metadata promises it (RFC 9207)",
      { code: "x", state: "the-state" },
      { ...pending, issParameterSupported: true },
      /no iss, which its metadata promises/,
    ],
  ])("refuses %s", (_name, response, given, want) => {
    expect(() => codeOf(response, given)).toThrow(want);
  });

  it("gives the code of an answer with this sign-in's state and issuer, also after the reload for the token endpoint", () => {
    expect(codeOf({ code: "x", state: "the-state", iss: "http://as" }, pending)).toBe("x");
    expect(codeOf({ code: "x", state: "the-state" }, { ...pending, phase: "exchange" })).toBe("x");
  });

  it("reads no answer from an address without one, and a pending sign-in once", () => {
    expect(readAuthorizationResponse("http://h/inspector?url=x")).toBeUndefined();
    const storage = new MemoryStorage();
    savePendingSignIn(storage, pending);
    expect(takePendingSignIn(storage)).toEqual(pending);
    expect(takePendingSignIn(storage)).toBeUndefined();
    storage.setItem(PENDING_KEY, "{not json");
    expect(takePendingSignIn(storage)).toBeUndefined();
    expect(storage.length).toBe(0);
  });
});

/** The page's steps from the authorization request to the tokens, at `as` for `resource`, the browser's part over HTTP. */
async function signInAt(as: AuthorizationServer, resource: string, redirectUri: string) {
  const metadata = await readAuthorizationServer(as.issuer);
  const state = randomToken();
  const codeVerifier = randomToken();
  const url = authorizationUrl({
    authorizationEndpoint: metadata.authorizationEndpoint,
    clientId: "oxp-inspector",
    redirectUri,
    resource,
    state,
    codeChallenge: await codeChallengeOf(codeVerifier),
    scopes: scopesFor(metadata),
  });
  const answer = await as.completeAuthorization(url, { user: USER });
  const pending: PendingSignIn = {
    phase: "authorize",
    serverUrl: resource,
    clientId: "oxp-inspector",
    state,
    issuer: as.issuer,
  };
  const code = codeOf(readAuthorizationResponse(answer.redirectUrl) ?? {}, pending);
  const tokens = await exchangeCode({
    tokenEndpoint: metadata.tokenEndpoint,
    clientId: "oxp-inspector",
    code,
    redirectUri,
    codeVerifier,
    resource,
    origin: new URL(redirectUri).origin,
  });
  return { metadata, tokens, scope: new URL(url).searchParams.get("scope") };
}

/** One request a client sent: its path, the bearer token it carried, the status it got. */
interface Sent {
  path: string;
  token: string | undefined;
  status: number;
}

/**
 * A fetch that records each request in `sent`; while `hold.gate` is set, the next request's answer is kept back
 * until it opens (the request has reached the server and been answered), so that a test orders two requests' answers.
 */
function recording(sent: Sent[], hold: { gate?: Promise<void>; reached?: () => void } = {}): typeof fetch {
  return async (input, init) => {
    const request = new Request(input, init);
    const authorization = request.headers.get("authorization");
    const gate = hold.gate;
    hold.gate = undefined;
    const response = await fetch(request);
    sent.push({
      path: new URL(request.url).pathname,
      token: authorization?.startsWith("Bearer ") ? authorization.slice(7) : undefined,
      status: response.status,
    });
    if (gate) {
      hold.reached?.();
      await gate;
    }
    return response;
  };
}

/** The token requests a SignInSession sent: the refresh token of each, and the one its answer gave. */
function tokenRequests(log: { sent: string | null; got: string | undefined; status: number }[]): typeof fetch {
  return async (input, init) => {
    const request = new Request(input, init);
    const body = new URLSearchParams(await request.clone().text());
    const response = await fetch(request);
    const answer = (await response.clone().json()) as { refresh_token?: string };
    log.push({ sent: body.get("refresh_token"), got: answer.refresh_token, status: response.status });
    return response;
  };
}

/** A session of the page's for `tokens` at `as`, on `clock`, its sign-outs counted in `signedOut`. */
function sessionOf(
  as: AuthorizationServer,
  serverUrl: string,
  tokens: SignedIn,
  clock: ManualClock,
  extra: Partial<SignInSessionOptions> & { signedOut?: SignInError[] } = {},
) {
  const { signedOut, ...rest } = extra;
  return new SignInSession({
    serverUrl,
    resource: serverUrl,
    issuer: as.issuer,
    tokenEndpoint: as.url("/token"),
    clientId: "oxp-inspector",
    origin: serverUrl,
    tokens,
    now: clock.now,
    onSignedOut: (error) => signedOut?.push(error),
    ...rest,
  });
}

const tokenOf = (signedIn: SignedIn) => signedIn.accessToken;

describe("the authorization server, where the resource metadata names several", () => {
  it("reads them all; the first is chosen by default, then the one the user picked this session while it is named", async () => {
    const metadata = await readResourceMetadata(`${several.url}/.well-known/oauth-protected-resource`);
    expect(metadata.authorizationServers).toEqual([provider.issuer, second.issuer]);
    const storage = new MemoryStorage();
    expect(chosenAuthorizationServer(metadata, storage)).toBe(provider.issuer);
    expect(chosenAuthorizationServer(metadata, undefined)).toBe(provider.issuer);

    rememberAuthorizationServer(storage, metadata.resource, second.issuer);
    expect(chosenAuthorizationServer(metadata, storage)).toBe(second.issuer);
    // Kept by resource: another server's choice is its own; issuers only are stored.
    rememberAuthorizationServer(storage, "http://other.example", "http://as.other.example");
    expect(chosenAuthorizationServer(metadata, storage)).toBe(second.issuer);
    expect(JSON.parse(storage.getItem(AUTHORIZATION_SERVER_KEY) ?? "")).toEqual({
      [metadata.resource]: second.issuer,
      "http://other.example": "http://as.other.example",
    });
    // A choice the metadata no longer names, or a store that holds no JSON, falls back to the first.
    expect(chosenAuthorizationServer({ ...metadata, authorizationServers: [provider.issuer] }, storage)).toBe(
      provider.issuer,
    );
    storage.setItem(AUTHORIZATION_SERVER_KEY, "{not json");
    expect(chosenAuthorizationServer(metadata, storage)).toBe(provider.issuer);
  });

  it("signs in at the one chosen and renews the token there, not at the first", async () => {
    const metadata = await readResourceMetadata(`${several.url}/.well-known/oauth-protected-resource`);
    const storage = new MemoryStorage();
    rememberAuthorizationServer(storage, metadata.resource, second.issuer);
    const issuer = chosenAuthorizationServer(metadata, storage);
    const as = issuer === second.issuer ? second : provider;
    provider.clearRequests();
    second.clearRequests();
    const { tokens } = await signInAt(as, several.url, severalPage);
    const clock = new ManualClock();
    const session = sessionOf(as, several.url, tokens, clock);
    const client = createClient({ baseUrl: several.url, accessToken: session.accessTokens });
    expect((await client.callTool({ tool_id: "Account.WhoAmI", input: {} })).success).toBe(true);
    await clock.advance((tokens.expiresIn ?? 0) * 1000);
    expect((await client.callTool({ tool_id: "Account.WhoAmI", input: {} })).success).toBe(true);
    expect(session.renewals).toBe(1);
    expect(second.count("token", "authorization_code")).toBe(1);
    expect(second.count("token", "refresh_token")).toBe(1);
    expect(provider.count("token")).toBe(0);
    expect(provider.count("authorization")).toBe(0);
  });
});

describe("the tokens of a sign-in, renewed with the refresh token", () => {
  it("asks for offline_access where the server lists it, and keeps the refresh token the exchange gave", async () => {
    const { metadata, tokens, scope } = await signInAt(provider, server.url, page);
    // oidc-provider lists it; for a public client it issues refresh tokens by its grant types (see
    // tests/helpers/src/oidc-provider.ts's issueRefreshToken), and drops the scope without prompt=consent.
    expect(metadata.scopesSupported).toContain(OFFLINE_ACCESS);
    expect(scope).toBe("oxp:tools:read oxp:tools:call offline_access");
    expect(tokens.refreshToken).toMatch(/^[\x21-\x7e]+$/);
    expect(tokens.expiresIn).toBe(300);
    const plain = { issuer: "http://as", authorizationEndpoint: "http://as/a", tokenEndpoint: "http://as/t" };
    expect(scopesFor(plain)).toEqual([...INSPECTOR_SCOPES]);
    expect(scopesFor({ ...plain, scopesSupported: ["openid", ...INSPECTOR_SCOPES] })).toEqual([...INSPECTOR_SCOPES]);
  });

  it("sends the access token while it is fresh, then renews it once before it expires, rotating the refresh token", async () => {
    const { tokens } = await signInAt(provider, server.url, page);
    const clock = new ManualClock();
    const log: { sent: string | null; got: string | undefined; status: number }[] = [];
    const session = sessionOf(provider, server.url, tokens, clock, { fetch: tokenRequests(log) });
    const sent: Sent[] = [];
    const client = createClient({ baseUrl: server.url, accessToken: session.accessTokens, fetch: recording(sent) });

    await client.listTools();
    // Up to the margin before expiry, the token is sent as it is.
    await clock.advance((tokens.expiresIn ?? 0) * 1000 - REFRESH_MARGIN_MS - 1);
    await client.listTools();
    expect(log).toEqual([]);
    await clock.advance(1);
    // Three requests at once, all with the token about to expire: one renewal, and each sent once, with the new token.
    await Promise.all([client.listTools(), client.listTools(), client.listTools()]);
    expect(log).toHaveLength(1);
    expect(log[0]).toMatchObject({ sent: tokens.refreshToken, status: 200 });
    const renewed = sent.slice(2).map((request) => request.token);
    expect(renewed).toHaveLength(3);
    expect(new Set(renewed).size).toBe(1);
    expect(renewed[0]).not.toBe(tokenOf(tokens));
    expect(sent.map((request) => request.status)).toEqual([200, 200, 200, 200, 200]);
    expect(session.renewals).toBe(1);

    // The next renewal sends the refresh token the last one answered (oidc-provider rotates it, and refuses a used one).
    await clock.advance((tokens.expiresIn ?? 0) * 1000);
    expect((await client.callTool({ tool_id: "Account.WhoAmI", input: {} })).success).toBe(true);
    expect(log).toHaveLength(2);
    expect(log[1]?.sent).toBe(log[0]?.got);
    expect(log[1]?.sent).not.toBe(tokens.refreshToken);
    expect(log[1]?.status).toBe(200);
    expect(session.renewals).toBe(2);
    expect(session.ended).toBeUndefined();
  });

  it("renews on a 401 with invalid_token, once for concurrent requests, and sends each again once", async () => {
    const { tokens } = await signInAt(provider, server.url, page);
    // A token the server refuses (expired an hour ago) that the page takes for fresh: the server's word decides.
    const past = Math.floor(Date.now() / 1000) - 3600;
    const refused = await provider.mintAccessToken({ sub: USER.id, iat: past - 300, exp: past });
    const clock = new ManualClock();
    const session = sessionOf(provider, server.url, { ...tokens, accessToken: refused }, clock);
    provider.clearRequests();
    const sent: Sent[] = [];
    const client = createClient({ baseUrl: server.url, accessToken: session.accessTokens, fetch: recording(sent) });

    const lists = await Promise.all([client.listTools(), client.listTools(), client.listTools()]);
    expect(lists.map((tools) => tools.length)).toEqual([1, 1, 1]);
    expect(provider.count("token", "refresh_token")).toBe(1);
    const first = sent.filter((request) => request.token === refused);
    const again = sent.filter((request) => request.token !== refused);
    expect(first.map((request) => request.status)).toEqual([401, 401, 401]);
    expect(again.map((request) => request.status)).toEqual([200, 200, 200]);
    expect(new Set(again.map((request) => request.token)).size).toBe(1);
    expect(session.renewals).toBe(1);
  });

  it("sends a request refused with a token replaced since with the new one, renewing nothing more", async () => {
    const { tokens } = await signInAt(provider, server.url, page);
    const past = Math.floor(Date.now() / 1000) - 3600;
    const refused = await provider.mintAccessToken({ sub: USER.id, iat: past - 300, exp: past });
    const session = sessionOf(provider, server.url, { ...tokens, accessToken: refused }, new ManualClock());
    provider.clearRequests();
    const sent: Sent[] = [];
    let open = () => {};
    let reached = () => {};
    const hold: { gate?: Promise<void>; reached?: () => void } = {
      gate: new Promise<void>((resolve) => {
        open = resolve;
      }),
    };
    const answered = new Promise<void>((resolve) => {
      reached = resolve;
    });
    hold.reached = reached;
    const client = createClient({
      baseUrl: server.url,
      accessToken: session.accessTokens,
      fetch: recording(sent, hold),
    });
    // The late one: sent with the old token, its 401 held back until the other request has renewed and succeeded.
    const late = client.listTools();
    await answered;
    await client.listTools();
    expect(provider.count("token", "refresh_token")).toBe(1);
    open();
    expect(await late).toHaveLength(1);
    expect(provider.count("token", "refresh_token")).toBe(1);
    expect(sent.map((request) => [request.token === refused ? "old" : "new", request.status])).toEqual([
      ["old", 401],
      ["old", 401],
      ["new", 200],
      ["new", 200],
    ]);
  });

  it("signs out of the server when the renewal fails, says why once, and sends nothing more", async () => {
    const { tokens } = await signInAt(provider, server.url, page);
    const clock = new ManualClock();
    const signedOut: SignInError[] = [];
    const session = sessionOf(
      provider,
      server.url,
      { ...tokens, refreshToken: "not-a-refresh-token-this-server-issued" },
      clock,
      { signedOut },
    );
    const sent: Sent[] = [];
    const client = createClient({ baseUrl: server.url, accessToken: session.accessTokens, fetch: recording(sent) });
    await client.listTools();
    provider.clearRequests();
    await clock.advance((tokens.expiresIn ?? 0) * 1000);

    const error = await client.listTools().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OxpAccessTokenError);
    const message = `Signed out of ${server.url}: ${provider.issuer} did not renew the access token (The token endpoint refused the refresh token (invalid_grant: grant request is invalid)). Sign in again.`;
    expect(((error as Error).cause as Error).message).toBe(message);
    expect(fromError(error, server.url)).toEqual({ kind: "local", message });
    expect(signedOut.map((ended) => ended.message)).toEqual([message]);
    expect(session.ended?.message).toBe(message);
    // Ended: the next request fails the same way, reaching neither the token endpoint nor the server.
    await expect(client.listTools()).rejects.toThrow(OxpAccessTokenError);
    expect(provider.count("token", "refresh_token")).toBe(1);
    expect(sent).toHaveLength(1);
    expect(signedOut).toHaveLength(1);
    expect(message).not.toContain(tokens.accessToken);
  });

  it("signs out on a 401 when the server gave no refresh token, naming the authorization server", async () => {
    const past = Math.floor(Date.now() / 1000) - 3600;
    const refused = await provider.mintAccessToken({ sub: USER.id, iat: past - 300, exp: past });
    const signedOut: SignInError[] = [];
    const session = sessionOf(provider, server.url, { accessToken: refused, expiresIn: 300 }, new ManualClock(), {
      signedOut,
    });
    provider.clearRequests();
    const client = createClient({ baseUrl: server.url, accessToken: session.accessTokens });
    const error = await client.listTools().catch((caught: unknown) => caught);
    expect(((error as Error).cause as Error).message).toBe(
      `Signed out of ${server.url}: the access token has expired and ${provider.issuer} gave this page no refresh token. Sign in again.`,
    );
    expect(signedOut).toHaveLength(1);
    expect(provider.count("token")).toBe(0);
  });

  it("is what clientFor sends when no token is pasted: the history shows the 401 and the request sent again, masked", async () => {
    const { tokens } = await signInAt(provider, server.url, page);
    const past = Math.floor(Date.now() / 1000) - 3600;
    const refused = await provider.mintAccessToken({ sub: USER.id, iat: past - 300, exp: past });
    const session = sessionOf(provider, server.url, { ...tokens, accessToken: refused }, new ManualClock());
    const credentials: Credentials = {
      serverUrl: server.url,
      apiKey: "",
      jwtSecret: "",
      jwtAudience: "",
      jwtSubject: "",
      accessToken: "",
      signIn: session.accessTokens,
    };
    const exchanges: Exchange[] = [];
    const called = await clientFor(credentials, (exchange) => exchanges.push(exchange)).callTool({
      tool_id: "Account.WhoAmI",
      input: {},
    });
    expect(called.success && called.value).toBe(USER.id);
    expect(exchanges.map((exchange) => exchange.status)).toEqual([401, 200]);
    for (const exchange of exchanges) {
      expect(exchange.requestHeaders).toContainEqual(["authorization", `Bearer ${MASK}`]);
    }
    expect(JSON.stringify(exchanges)).not.toContain(refused);
    expect(JSON.stringify(exchanges)).not.toContain(tokens.accessToken);
    // A pasted token is sent as it is, in place of the sign-in's.
    const pasted = await provider.mintAccessToken({ sub: "bob" });
    const asBob = await clientFor({ ...credentials, accessToken: pasted }).callTool({
      tool_id: "Account.WhoAmI",
      input: {},
    });
    expect(asBob.success && asBob.value).toBe("bob");
    expect(session.renewals).toBe(1);
  });
});

// The page's Sign in steps (ui/oauth.ts) against a real @otc/server with the oauth extension and a real oidc-provider: metadata, PKCE, the authorization request, the answer's checks and the code exchange.
import { createServer as createHttpServer } from "node:http";
import type { AddressInfo } from "node:net";
import { createClient } from "@otc/client";
import { createHandler, defineTool, listen, type RunningServer } from "@otc/server/node";
import { freePort } from "@otc/test-helpers/free-port";
import { type AuthorizationServer, startAuthorizationServer } from "@otc/test-helpers/oidc-provider";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  authorizationUrl,
  codeChallengeOf,
  codeOf,
  exchangeCode,
  INSPECTOR_SCOPES,
  metadataUrls,
  PENDING_KEY,
  type PendingSignIn,
  randomToken,
  readAuthorizationResponse,
  readAuthorizationServer,
  readResourceMetadata,
  redirectUriOf,
  SignInError,
  savePendingSignIn,
  takePendingSignIn,
  withAuthOrigin,
  withoutResponse,
} from "./oauth.js";

const USER = { id: "alice", password: "alice-password" };
let provider: AuthorizationServer;
let server: RunningServer;
/** The Inspector page's address, which is its redirect URI: on the server's origin. */
let page: string;

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
});

afterAll(async () => {
  await server?.close();
  await provider?.stop();
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
    [
      "https://as.example",
      [
        "https://as.example/.well-known/oauth-authorization-server",
        "https://as.example/.well-known/openid-configuration",
      ],
    ],
    [
      "https://as.example/",
      [
        "https://as.example/.well-known/oauth-authorization-server",
        "https://as.example/.well-known/openid-configuration",
      ],
    ],
    [
      "https://as.example/tenant/a",
      [
        "https://as.example/.well-known/oauth-authorization-server/tenant/a",
        "https://as.example/tenant/a/.well-known/openid-configuration",
      ],
    ],
  ])("finds %s's metadata where RFC 8414 and OpenID Connect put it", (issuer, want) => {
    expect(metadataUrls(issuer)).toEqual(want);
  });

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

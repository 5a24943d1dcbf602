// The authorization server the OAuth suites start: discovery, JWT access tokens for a resource, the authorization code flow with PKCE, refresh rotation, introspection, revocation, the request log and the minting of tokens.
import { createRemoteJWKSet, decodeProtectedHeader, errors, jwtVerify } from "jose";
import { afterAll, beforeAll, describe, expect, it, type MockInstance, vi } from "vitest";
import {
  type AuthorizationServer,
  codeChallengeOf,
  completeAuthorization,
  startAuthorizationServer,
  TokenEndpointError,
} from "../src/oidc-provider.js";

const RESOURCE = "http://127.0.0.1:4567";
const OTHER_RESOURCE = "http://127.0.0.1:4568/oxp";
const REDIRECT_URI = "http://127.0.0.1:9/callback";
const ALICE = { id: "alice", password: "correct horse", email: "alice@example.test", name: "Alice" };

let server: AuthorizationServer;
const consoleSpies: MockInstance[] = [];

beforeAll(async () => {
  // Installed before the first server starts: oidc-provider prints its notices on first use.
  for (const method of ["log", "info", "warn", "error", "debug"] as const) {
    consoleSpies.push(vi.spyOn(console, method));
  }
  server = await startAuthorizationServer({
    resources: [
      { url: RESOURCE, scopes: ["oxp:tools:read", "oxp:tools:call"] },
      { url: OTHER_RESOURCE, scopes: ["other:read"] },
    ],
    clients: [
      { clientId: "agent", clientSecret: "agent secret & more", grantTypes: ["client_credentials"] },
      { clientId: "narrow", clientSecret: "narrow-secret", scope: "oxp:tools:read" },
      { clientId: "spa", redirectUris: [REDIRECT_URI] },
      {
        clientId: "webapp",
        clientSecret: "webapp-secret",
        redirectUris: [REDIRECT_URI],
        grantTypes: ["authorization_code", "refresh_token"],
        tokenEndpointAuthMethod: "client_secret_post",
      },
      { clientId: "cli", redirectUris: ["http://127.0.0.1/callback"], applicationType: "native" },
      { clientId: "resource-server", clientSecret: "rs-secret", grantTypes: [] },
    ],
    users: [ALICE],
  });
});

afterAll(async () => {
  await server?.stop();
  for (const spy of consoleSpies) {
    spy.mockRestore();
  }
});

const jwksOf = (authorizationServer: AuthorizationServer) =>
  createRemoteJWKSet(new URL(authorizationServer.url("/jwks")));

describe("startAuthorizationServer", () => {
  it("serves its metadata at both well-known paths, http issuer on loopback", async () => {
    expect(server.issuer).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    for (const path of ["/.well-known/openid-configuration", "/.well-known/oauth-authorization-server"]) {
      const response = await fetch(server.url(path));
      expect(response.status).toBe(200);
      const metadata = (await response.json()) as { grant_types_supported: string[] };
      expect(metadata).toMatchObject({
        issuer: server.issuer,
        jwks_uri: server.url("/jwks"),
        authorization_endpoint: server.url("/auth"),
        token_endpoint: server.url("/token"),
        introspection_endpoint: server.url("/token/introspection"),
        revocation_endpoint: server.url("/token/revocation"),
        code_challenge_methods_supported: ["S256"],
        authorization_response_iss_parameter_supported: true,
      });
      expect(metadata.grant_types_supported).toEqual(
        expect.arrayContaining(["authorization_code", "refresh_token", "client_credentials"]),
      );
    }
    expect(server.count("discovery")).toBeGreaterThanOrEqual(2);
  });

  it("issues a client_credentials JWT access token for a resource: at+jwt, aud the resource, the scope asked", async () => {
    server.clearRequests();
    const token = await server.clientCredentialsToken({
      clientId: "agent",
      clientSecret: "agent secret & more",
      resource: RESOURCE,
      scope: "oxp:tools:read",
    });
    const jwks = jwksOf(server);
    const { payload, protectedHeader } = await jwtVerify(token, jwks, {
      issuer: server.issuer,
      audience: RESOURCE,
      typ: "at+jwt",
      algorithms: ["ES256"],
    });
    expect(protectedHeader).toEqual({ alg: "ES256", kid: server.privateJwk.kid, typ: "at+jwt" });
    expect(payload).toEqual({
      iss: server.issuer,
      aud: RESOURCE,
      // No user: oidc-provider puts the client in `sub`.
      sub: "agent",
      client_id: "agent",
      scope: "oxp:tools:read",
      iat: expect.any(Number),
      exp: (payload.iat ?? 0) + 300,
      jti: expect.any(String),
    });

    // A second verification with the same key set does not fetch the JWKS again.
    await jwtVerify(token, jwks, { issuer: server.issuer, audience: RESOURCE });
    expect(server.count("jwks")).toBe(1);
    expect(server.count("token", "client_credentials")).toBe(1);
  });

  it("keeps a resource's tokens to its own scopes, and to the client's", async () => {
    const mixed = await server.clientCredentialsToken({
      clientId: "agent",
      clientSecret: "agent secret & more",
      resource: RESOURCE,
      scope: "oxp:tools:call other:read",
    });
    expect((await jwtVerify(mixed, jwksOf(server))).payload.scope).toBe("oxp:tools:call");

    const narrow = await server.clientCredentialsToken({
      clientId: "narrow",
      clientSecret: "narrow-secret",
      resource: RESOURCE,
      scope: "oxp:tools:read oxp:tools:call",
    });
    expect((await jwtVerify(narrow, jwksOf(server))).payload.scope).toBe("oxp:tools:read");
  });

  it("refuses a resource it does not know, and a wrong client secret", async () => {
    const unknown = server.clientCredentialsToken({
      clientId: "agent",
      clientSecret: "agent secret & more",
      resource: "http://127.0.0.1:1/elsewhere",
      scope: "oxp:tools:read",
    });
    await expect(unknown).rejects.toMatchObject({ status: 400, error: "invalid_target" });

    const wrongSecret = server.clientCredentialsToken({
      clientId: "agent",
      clientSecret: "nope",
      resource: RESOURCE,
    });
    await expect(wrongSecret).rejects.toBeInstanceOf(TokenEndpointError);
    await expect(wrongSecret).rejects.toMatchObject({ status: 401, error: "invalid_client" });
  });

  it("runs the authorization code flow with PKCE: a JWT access token for the user, and a refresh token", async () => {
    server.clearRequests();
    const tokens = await server.authorizationCodeFlow({
      clientId: "spa",
      redirectUri: REDIRECT_URI,
      resource: RESOURCE,
      scope: "oxp:tools:read oxp:tools:call offline_access",
      user: ALICE,
    });
    expect(tokens.refreshToken).toEqual(expect.any(String));
    expect(tokens.idToken).toBeUndefined();
    expect(tokens.expiresIn).toBe(300);
    expect(tokens.tokenType).toBe("Bearer");
    // oidc-provider drops offline_access without prompt=consent; the refresh token comes from the client's grant.
    expect(tokens.scope).toBe("oxp:tools:read oxp:tools:call");

    expect(server.requests.map(({ method, endpoint, status }) => `${method} ${endpoint} ${status}`)).toEqual([
      "GET authorization 303",
      "GET interaction 200",
      "POST interaction 303",
      "GET resume 303",
      "GET interaction 200",
      "POST interaction 303",
      "GET resume 303",
      "POST token 200",
    ]);

    const { payload } = await jwtVerify(tokens.accessToken, jwksOf(server), {
      issuer: server.issuer,
      audience: RESOURCE,
      typ: "at+jwt",
    });
    expect(payload).toMatchObject({ sub: "alice", client_id: "spa", scope: "oxp:tools:read oxp:tools:call" });
  });

  it("refreshes once; the rotated-out refresh token is refused the second time, and its grant goes with it", async () => {
    const first = await server.authorizationCodeFlow({
      clientId: "spa",
      redirectUri: REDIRECT_URI,
      resource: RESOURCE,
      scope: "oxp:tools:read offline_access",
      user: ALICE,
    });
    server.clearRequests();
    const refreshToken = first.refreshToken ?? "";
    const second = await server.refresh({ clientId: "spa", refreshToken, resource: RESOURCE });
    expect(second.refreshToken).toEqual(expect.any(String));
    expect(second.refreshToken).not.toBe(refreshToken);
    const { payload } = await jwtVerify(second.accessToken, jwksOf(server), { audience: RESOURCE });
    expect(payload).toMatchObject({ sub: "alice", scope: "oxp:tools:read" });

    await expect(server.refresh({ clientId: "spa", refreshToken })).rejects.toMatchObject({
      status: 400,
      error: "invalid_grant",
    });
    // Reuse of a rotated-out token revokes the grant: the newer refresh token is dead too.
    await expect(server.refresh({ clientId: "spa", refreshToken: second.refreshToken ?? "" })).rejects.toMatchObject({
      error: "invalid_grant",
    });
    expect(server.count("token", "refresh_token")).toBe(3);
    const refreshes = server.requests.filter(({ grantType }) => grantType === "refresh_token");
    expect(refreshes.map(({ status }) => status)).toEqual([200, 400, 400]);
  });

  it("introspects and revokes a refresh token (RFC 7662, RFC 7009)", async () => {
    const tokens = await server.authorizationCodeFlow({
      clientId: "spa",
      redirectUri: REDIRECT_URI,
      resource: RESOURCE,
      scope: "oxp:tools:read offline_access",
      user: ALICE,
    });
    const token = tokens.refreshToken ?? "";
    const asResourceServer = { clientId: "resource-server", clientSecret: "rs-secret" };
    expect(await server.introspect({ ...asResourceServer, token })).toEqual({
      active: true,
      sub: "alice",
      client_id: "spa",
      scope: "oxp:tools:read",
      iss: server.issuer,
      iat: expect.any(Number),
      exp: expect.any(Number),
    });
    expect(await server.revoke({ clientId: "spa", token, tokenTypeHint: "refresh_token" })).toBe(200);
    expect(await server.introspect({ ...asResourceServer, token })).toEqual({ active: false });
    expect(server.count("introspection")).toBe(2);
    expect(server.count("revocation")).toBe(1);
  });

  it("refuses to introspect its JWT access tokens: a resource server verifies them itself", async () => {
    const token = await server.clientCredentialsToken({
      clientId: "agent",
      clientSecret: "agent secret & more",
      resource: RESOURCE,
      scope: "oxp:tools:read",
    });
    const answer = server.introspect({ clientId: "resource-server", clientSecret: "rs-secret", token });
    await expect(answer).rejects.toMatchObject({ status: 400, error: "unsupported_token_type" });
  });

  it.each(["spa", "webapp"])("requires PKCE S256 of every client, public or confidential: %s", async (clientId) => {
    const { url } = server.authorizationUrl({ clientId, redirectUri: REDIRECT_URI, scope: "oxp:tools:read" });
    const withoutPkce = new URL(url);
    withoutPkce.searchParams.delete("code_challenge");
    withoutPkce.searchParams.delete("code_challenge_method");
    const refused = await completeAuthorization(withoutPkce.href, { user: ALICE });
    expect(refused.error).toBe("invalid_request");

    const plain = new URL(url);
    plain.searchParams.set("code_challenge_method", "plain");
    expect((await completeAuthorization(plain.href, { user: ALICE })).error).toBe("invalid_request");
  });

  it("runs the flow for a confidential client too, authenticated at the token endpoint", async () => {
    const tokens = await server.authorizationCodeFlow({
      clientId: "webapp",
      clientSecret: "webapp-secret",
      redirectUri: REDIRECT_URI,
      resource: RESOURCE,
      scope: "oxp:tools:read",
      user: ALICE,
    });
    expect((await jwtVerify(tokens.accessToken, jwksOf(server))).payload).toMatchObject({ client_id: "webapp" });
    const refreshToken = tokens.refreshToken ?? "";
    const unauthenticated = server.refresh({ clientId: "webapp", refreshToken });
    await expect(unauthenticated).rejects.toMatchObject({ status: 401, error: "invalid_client" });
    const refreshed = await server.refresh({ clientId: "webapp", clientSecret: "webapp-secret", refreshToken });
    expect(refreshed.refreshToken).not.toBe(refreshToken);
  });

  it("refuses a code with the wrong verifier", async () => {
    const prepared = server.authorizationUrl({
      clientId: "spa",
      redirectUri: REDIRECT_URI,
      resource: RESOURCE,
      scope: "oxp:tools:read",
    });
    expect(new URL(prepared.url).searchParams.get("code_challenge")).toBe(codeChallengeOf(prepared.codeVerifier));
    const { code } = await completeAuthorization(prepared.url, { user: ALICE });
    const exchange = server.exchangeCode({
      clientId: "spa",
      code: code ?? "",
      redirectUri: REDIRECT_URI,
      codeVerifier: `${prepared.codeVerifier}x`,
    });
    await expect(exchange).rejects.toMatchObject({ error: "invalid_grant" });
  });

  it("refuses a wrong password on its login page, and reports a denied consent to the client", async () => {
    const { url } = server.authorizationUrl({ clientId: "spa", redirectUri: REDIRECT_URI, scope: "oxp:tools:read" });
    await expect(completeAuthorization(url, { user: { id: "alice", password: "wrong" } })).rejects.toThrow(
      /login was refused: Wrong account or password/,
    );

    const denied = server.authorizationUrl({ clientId: "spa", redirectUri: REDIRECT_URI, scope: "oxp:tools:read" });
    const answer = await completeAuthorization(denied.url, { user: ALICE, deny: true });
    expect(answer).toMatchObject({ error: "access_denied", state: denied.state, iss: server.issuer, code: undefined });
    expect(answer.redirectUrl.startsWith(`${REDIRECT_URI}?`)).toBe(true);
  });

  it("serves plain HTML forms a browser can fill in", async () => {
    const { url } = server.authorizationUrl({ clientId: "spa", redirectUri: REDIRECT_URI, scope: "oxp:tools:read" });
    const authorization = await fetch(url, { redirect: "manual" });
    expect(authorization.status).toBe(303);
    const interaction = new URL(authorization.headers.get("location") ?? "", server.issuer);
    const cookie = authorization.headers
      .getSetCookie()
      .map((line) => line.split(";")[0])
      .join("; ");
    const login = await fetch(interaction, { headers: { cookie } });
    expect(login.headers.get("content-type")).toMatch(/^text\/html/);
    const html = await login.text();
    for (const id of ["login", "password", "submit"]) {
      expect(html).toContain(`id="${id}"`);
    }
    expect(html).toContain(`action="${interaction.pathname}/login"`);
  });

  it("lets a native client's loopback redirect URI take any port (RFC 8252)", async () => {
    const redirectUri = "http://127.0.0.1:53123/callback";
    const tokens = await server.authorizationCodeFlow({
      clientId: "cli",
      redirectUri,
      resource: RESOURCE,
      scope: "oxp:tools:call offline_access",
      user: ALICE,
    });
    expect(tokens.refreshToken).toEqual(expect.any(String));
    const { url } = server.authorizationUrl({
      clientId: "spa",
      redirectUri: "http://127.0.0.1:53124/callback",
      scope: "",
    });
    // A web client's redirect URI must match exactly: the server shows an error page instead of redirecting.
    await expect(completeAuthorization(url, { user: ALICE })).rejects.toThrow(/redirect_uri did not match/);
  });

  it("mints tokens with its own key that verify but for what a test changed", async () => {
    const jwks = jwksOf(server);
    const valid = await server.mintAccessToken({ sub: "alice" });
    expect(
      (await jwtVerify(valid, jwks, { issuer: server.issuer, audience: RESOURCE, typ: "at+jwt" })).payload,
    ).toMatchObject({ sub: "alice", client_id: "agent", scope: "oxp:tools:read oxp:tools:call" });

    const now = Math.floor(Date.now() / 1000);
    const expired = await server.mintAccessToken({ iat: now - 600, exp: now - 300 });
    await expect(jwtVerify(expired, jwks)).rejects.toBeInstanceOf(errors.JWTExpired);
    const elsewhere = await server.mintAccessToken({ aud: OTHER_RESOURCE });
    await expect(jwtVerify(elsewhere, jwks, { audience: RESOURCE })).rejects.toBeInstanceOf(
      errors.JWTClaimValidationFailed,
    );
    const later = await server.mintAccessToken({ nbf: now + 600 });
    await expect(jwtVerify(later, jwks)).rejects.toBeInstanceOf(errors.JWTClaimValidationFailed);
    const withoutScope = await server.mintAccessToken({ scope: undefined });
    expect((await jwtVerify(withoutScope, jwks)).payload).not.toHaveProperty("scope");

    const raw = await server.sign({ hello: "world" }, { typ: "JWT" });
    expect(decodeProtectedHeader(raw)).toEqual({ alg: "ES256", kid: server.privateJwk.kid, typ: "JWT" });
    expect((await jwtVerify(raw, jwks)).payload).toEqual({ hello: "world" });
    expect(server.jwks.keys[0]).not.toHaveProperty("d");
  });

  it("signs with RS256 when asked", async () => {
    const rsa = await startAuthorizationServer({
      resources: [{ url: RESOURCE, scopes: ["oxp:tools:read"] }],
      clients: [{ clientId: "agent", clientSecret: "s" }],
      signingAlgorithm: "RS256",
    });
    try {
      const token = await rsa.clientCredentialsToken({ clientId: "agent", clientSecret: "s", resource: RESOURCE });
      const { protectedHeader } = await jwtVerify(token, jwksOf(rsa), { algorithms: ["RS256"], audience: RESOURCE });
      expect(protectedHeader.alg).toBe("RS256");
      expect(rsa.privateJwk.kty).toBe("RSA");
    } finally {
      await rsa.stop();
    }
  });

  // Last: every test above went through the server.
  it("printed nothing on the console on the way", () => {
    for (const spy of consoleSpies) {
      expect(spy.mock.calls).toEqual([]);
    }
  });
});

// A real OAuth 2.1 authorization server (oidc-provider) on a loopback port, with scripted login and consent, for the suites that test OAuth resource servers and clients.
import { createHash, randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { calculateJwkThumbprint, exportJWK, generateKeyPair, type JWK, type JWTPayload, SignJWT } from "jose";

/** A protected resource the server issues access tokens for (RFC 8707). */
export interface ResourceOptions {
  /** The resource indicator: the resource server's canonical URL, and the `aud` of its tokens, exactly as written. */
  url: string;
  /** The scopes it defines, e.g. `oxp:tools:read`; a token for it carries only these. */
  scopes: string[];
  /**
   * The form of its access tokens: `jwt` (RFC 9068, the default) or `opaque`, a random string that says nothing
   * itself, which the resource server asks about at the introspection endpoint (RFC 7662).
   */
  accessTokenFormat?: "jwt" | "opaque";
}

/** The grant types a client may use. */
export type ClientGrantType = "authorization_code" | "refresh_token" | "client_credentials";

/** A registered client. */
export interface ClientOptions {
  clientId: string;
  /** Makes the client confidential; without it the client is public (no authentication at the token endpoint). */
  clientSecret?: string;
  redirectUris?: string[];
  /**
   * Defaults to `client_credentials` for a confidential client and `authorization_code` + `refresh_token` for a
   * public one. An empty list makes a client that only introspects and revokes (a resource server).
   */
  grantTypes?: ClientGrantType[];
  /**
   * The resource scopes the client may be given (space-separated); a resource's scopes outside it are left out of
   * the client's tokens for it. `openid`, `offline_access`, `email` and `profile` stay open to every client.
   */
  scope?: string;
  /** Defaults to `client_secret_basic` with a secret, `none` without. */
  tokenEndpointAuthMethod?: "client_secret_basic" | "client_secret_post" | "none";
  /**
   * `native` lets an `http://127.0.0.1/...` redirect URI match on any port (RFC 8252's loopback redirect, as a CLI
   * login uses), and asks for consent on every authorization. Defaults to `web`.
   */
  applicationType?: "web" | "native";
}

/** An end user who can sign in on the login page. */
export interface UserOptions {
  /** The account id: what the login form takes, and the `sub` of the user's tokens. */
  id: string;
  password: string;
  email?: string;
  name?: string;
}

/** What {@link startAuthorizationServer} takes. */
export interface AuthorizationServerOptions {
  resources?: ResourceOptions[];
  clients?: ClientOptions[];
  users?: UserOptions[];
  /** The lifetime of access tokens, both grants; 300 by default. */
  accessTokenTtlSeconds?: number;
  /** The lifetime of a refresh token (rotation gives each new one this again); a day by default. */
  refreshTokenTtlSeconds?: number;
  /** The JWS algorithm of access tokens and ID tokens; ES256 by default. */
  signingAlgorithm?: "ES256" | "RS256";
  /**
   * Opens dynamic client registration (RFC 7591, `registration_endpoint` in the metadata) to public native clients
   * with loopback redirect URIs and the authorization_code and refresh_token grants only, as `otc login` registers
   * itself (and as the demo's Example Accounts allows). Off by default: the server then lists no registration
   * endpoint.
   */
  dynamicRegistration?: boolean;
}

/** One request the server received. */
export interface AuthorizationServerRequest {
  method: string;
  /** The path, without the query. */
  path: string;
  /**
   * oidc-provider's name for the endpoint (`discovery`, `jwks`, `token`, `authorization`, `resume`, `introspection`,
   * `revocation`, `userinfo`, `cors.token`, ...), `interaction` for the login and consent pages, or undefined.
   */
  endpoint: string | undefined;
  /** The `grant_type` of a token request. */
  grantType: string | undefined;
  /** The `redirect_uri` an authorization or token request carried. */
  redirectUri: string | undefined;
  /** The `code_verifier` a token request carried (PKCE, RFC 7636). */
  codeVerifier: string | undefined;
  status: number;
  /** The OAuth error code of an error answer (`invalid_grant`, `invalid_redirect_uri`, ...), or undefined. */
  error: string | undefined;
}

/** What the token endpoint answered, in TypeScript's words. */
export interface TokenSet {
  accessToken: string;
  refreshToken: string | undefined;
  idToken: string | undefined;
  expiresIn: number;
  scope: string | undefined;
  tokenType: string;
}

/** An authorization request (the client's side of RFC 6749 4.1.1, with PKCE and a resource indicator). */
export interface AuthorizationRequest {
  clientId: string;
  redirectUri: string;
  /** Space-separated, e.g. `oxp:tools:read offline_access`. */
  scope: string;
  resource?: string;
  /** Generated when left out. */
  state?: string;
  /** Generated when left out; the challenge sent is its S256. */
  codeVerifier?: string;
  /** `consent` asks for consent again even when granted before; any value is sent as is. */
  prompt?: string;
}

/** An authorization URL with the secrets its client keeps. */
export interface PreparedAuthorization {
  url: string;
  state: string;
  codeVerifier: string;
}

/** The authorization response the server redirected the user agent to (not followed). */
export interface AuthorizationResponse {
  /** The client's redirect URI with the response in its query. */
  redirectUrl: string;
  code: string | undefined;
  state: string | undefined;
  /** RFC 9207's issuer parameter. */
  iss: string | undefined;
  /** An error response's code, e.g. `access_denied`. */
  error: string | undefined;
}

/** How {@link completeAuthorization} signs in and answers the consent page. */
export interface CompleteAuthorizationOptions {
  user: { id: string; password: string };
  /** Press "Deny" on the consent page instead of "Allow". */
  deny?: boolean;
}

/** A client's credentials for the token, introspection and revocation endpoints. */
export interface ClientCredentials {
  clientId: string;
  clientSecret?: string;
}

/** The whole authorization code flow with PKCE, and the token exchange. */
export interface AuthorizationCodeFlowOptions extends ClientCredentials {
  redirectUri: string;
  resource?: string;
  scope: string;
  user: { id: string; password: string };
  codeVerifier?: string;
}

/** A running authorization server. */
export interface AuthorizationServer {
  /** `http://127.0.0.1:<port>`, also the `iss` of every token it issues. */
  issuer: string;
  /** An absolute URL on the server. */
  url(path: string): string;
  /** The JWKS the server publishes (public keys only). */
  jwks: { keys: JWK[] };
  /** The server's signing key, private part included. */
  privateJwk: JWK;
  /** Every request so far, oldest first; the array is live, and {@link clearRequests} empties it. */
  requests: AuthorizationServerRequest[];
  /** How many requests reached `endpoint`, and had `grantType` when given. */
  count(endpoint: string, grantType?: string): number;
  clearRequests(): void;
  /**
   * Signs `payload` as it is (no claim added) with the server's own key; the header defaults to the server's alg,
   * kid and `typ: at+jwt`, and `header` adds to or replaces it.
   */
  sign(payload: JWTPayload, header?: Record<string, unknown>): Promise<string>;
  /**
   * An access token like the ones the server issues, signed with its key: `iss`, `aud` (the first resource),
   * `sub`, `client_id`, `scope`, `iat`, `exp` and `jti` filled in, then `claims` laid over them (a claim given as
   * `undefined` is left out). For tokens that are valid but for one thing: expired, another audience, `nbf` ahead.
   */
  mintAccessToken(claims?: Record<string, unknown>, header?: Record<string, unknown>): Promise<string>;
  /** A client_credentials access token from the token endpoint. */
  clientCredentialsToken(options: ClientCredentials & { resource: string; scope?: string }): Promise<string>;
  /** The authorization URL for `request`, with the state and PKCE verifier to finish it with. */
  authorizationUrl(request: AuthorizationRequest): PreparedAuthorization;
  /** Drives `url` through login and consent over HTTP; see the exported {@link completeAuthorization}. */
  completeAuthorization(url: string, options: CompleteAuthorizationOptions): Promise<AuthorizationResponse>;
  /** Exchanges an authorization code at the token endpoint. */
  exchangeCode(
    options: ClientCredentials & { code: string; redirectUri: string; codeVerifier: string; resource?: string },
  ): Promise<TokenSet>;
  /** Uses a refresh token once (the server rotates it: the answer carries the next one). */
  refresh(options: ClientCredentials & { refreshToken: string; resource?: string; scope?: string }): Promise<TokenSet>;
  /** The authorization code flow with PKCE, from the authorization URL to the token response. */
  authorizationCodeFlow(options: AuthorizationCodeFlowOptions): Promise<TokenSet>;
  /** RFC 7662: what the server says about `token`. */
  introspect(options: ClientCredentials & { token: string; tokenTypeHint?: string }): Promise<Record<string, unknown>>;
  /** RFC 7009: revokes `token`; resolves with the endpoint's status (200 even for a token it does not know). */
  revoke(options: ClientCredentials & { token: string; tokenTypeHint?: string }): Promise<number>;
  /** Stops listening and drops open connections. */
  stop(): Promise<void>;
}

/** A token, introspection or revocation endpoint's error answer. */
export class TokenEndpointError extends Error {
  readonly status: number;
  /** The OAuth error code, e.g. `invalid_grant`. */
  readonly error: string | undefined;
  readonly errorDescription: string | undefined;

  constructor(endpoint: string, status: number, body: Record<string, unknown>) {
    const error = typeof body.error === "string" ? body.error : undefined;
    const errorDescription = typeof body.error_description === "string" ? body.error_description : undefined;
    super(
      `${endpoint} answered ${status}: ${error ?? "no error code"}${errorDescription ? ` (${errorDescription})` : ""}`,
    );
    this.name = "TokenEndpointError";
    this.status = status;
    this.error = error;
    this.errorDescription = errorDescription;
  }
}

// The little of oidc-provider's API this module uses: the package ships no types (DefinitelyTyped's lag behind 9.x).
interface KoaContext {
  method: string;
  path: string;
  req: IncomingMessage;
  res: ServerResponse;
  status: number;
  type: string;
  body: unknown;
  state: Record<string, unknown>;
  oidc?: { route?: string; params?: Record<string, unknown> };
}
interface ProviderClient {
  clientId: string;
  clientAuthMethod: string;
  redirectUris: string[];
  grantTypeAllowed(grantType: string): boolean;
}
interface ProviderToken {
  clientId?: string;
}
interface Grant {
  addOIDCScope(scope: string): void;
  addOIDCClaims(claims: string[]): void;
  addResourceScope(resource: string, scope: string): void;
  save(): Promise<string>;
}
interface InteractionDetails {
  uid: string;
  prompt: { name: string; details: Record<string, unknown> };
  params: Record<string, unknown> & { client_id: string };
  session?: { accountId: string };
  grantId?: string;
}
interface Provider {
  callback(): (req: IncomingMessage, res: ServerResponse) => void;
  use(middleware: (ctx: KoaContext, next: () => Promise<void>) => Promise<void>): void;
  interactionDetails(req: IncomingMessage, res: ServerResponse): Promise<InteractionDetails>;
  interactionFinished(
    req: IncomingMessage,
    res: ServerResponse,
    result: Record<string, unknown>,
    options?: { mergeWithLastSubmission: boolean },
  ): Promise<void>;
  Grant: {
    new (init: { accountId: string; clientId: string }): Grant;
    find(id: string): Promise<Grant | undefined>;
  };
  on(event: string, listener: (...args: unknown[]) => void): void;
}
interface ProviderModule {
  Provider: new (issuer: string, configuration: Record<string, unknown>) => Provider;
  errors: {
    InvalidTarget: new (description?: string) => Error;
    InvalidClientMetadata: new (description?: string) => Error;
  };
}

let loaded: Promise<ProviderModule> | undefined;

/**
 * Imports oidc-provider once. Its 9.x line prints, on import, that it wants Node 22 or later; the suites run on
 * Node 20, where it works (this module's tests are the check), so that one line is kept out of the test output.
 */
function loadProvider(): Promise<ProviderModule> {
  loaded ??= (async () => {
    // biome-ignore lint/suspicious/noConsole: the one warning oidc-provider prints on import is filtered, others pass
    const warn = console.warn;
    console.warn = (...args: unknown[]) => {
      if (!(typeof args[0] === "string" && args[0].includes("oidc-provider WARNING: Unsupported runtime"))) {
        warn(...args);
      }
    };
    try {
      // A specifier the type checker does not resolve: the package has no types, ProviderModule stands in for them.
      const specifier: string = "oidc-provider";
      return (await import(specifier)) as ProviderModule;
    } finally {
      console.warn = warn;
    }
  })();
  return loaded;
}

interface Stored {
  payload: Record<string, unknown>;
  expiresAt: number;
}

/**
 * oidc-provider's storage, one per server: its own in-memory adapter is shared by every provider in the process,
 * bounded to 1,000 entries, and announces itself with a warning.
 */
class MemoryStore {
  readonly #entries = new Map<string, Stored>();
  readonly #grants = new Map<string, Set<string>>();
  readonly #uids = new Map<string, string>();
  readonly #userCodes = new Map<string, string>();

  adapter(model: string) {
    const key = (id: string) => `${model}:${id}`;
    return {
      upsert: async (id: string, payload: Record<string, unknown>, expiresIn?: number) => {
        const expiresAt = typeof expiresIn === "number" ? Date.now() + expiresIn * 1000 : Number.POSITIVE_INFINITY;
        this.#entries.set(key(id), { payload, expiresAt });
        if (typeof payload.grantId === "string") {
          const members = this.#grants.get(payload.grantId) ?? new Set<string>();
          members.add(key(id));
          this.#grants.set(payload.grantId, members);
        }
        if (typeof payload.uid === "string") {
          this.#uids.set(payload.uid, id);
        }
        if (typeof payload.userCode === "string") {
          this.#userCodes.set(payload.userCode, id);
        }
      },
      find: async (id: string) => this.#find(key(id)),
      findByUid: async (uid: string) => {
        const id = this.#uids.get(uid);
        return id === undefined ? undefined : this.#find(key(id));
      },
      findByUserCode: async (userCode: string) => {
        const id = this.#userCodes.get(userCode);
        return id === undefined ? undefined : this.#find(key(id));
      },
      consume: async (id: string) => {
        const stored = this.#entries.get(key(id));
        if (stored) {
          stored.payload.consumed = Math.floor(Date.now() / 1000);
        }
      },
      destroy: async (id: string) => {
        this.#entries.delete(key(id));
      },
      revokeByGrantId: async (grantId: string) => {
        for (const member of this.#grants.get(grantId) ?? []) {
          this.#entries.delete(member);
        }
        this.#grants.delete(grantId);
      },
    };
  }

  #find(key: string): Record<string, unknown> | undefined {
    const stored = this.#entries.get(key);
    if (stored && stored.expiresAt <= Date.now()) {
      this.#entries.delete(key);
      return undefined;
    }
    return stored?.payload;
  }
}

/**
 * Why a client registering itself is refused, or undefined: it must be public, native, with one to four loopback
 * redirect URIs and the authorization_code and refresh_token grants only (RFC 8252's native app, as `otc login` is).
 */
function registrationProblem(metadata: Record<string, unknown>): string | undefined {
  if (metadata.token_endpoint_auth_method !== "none") {
    return "only public clients (token_endpoint_auth_method none) may register here";
  }
  if (metadata.application_type !== "native") {
    return "only native clients (application_type native) may register here";
  }
  const uris = Array.isArray(metadata.redirect_uris) ? metadata.redirect_uris : [];
  if (uris.length === 0 || uris.length > 4) {
    return "give one to four redirect_uris";
  }
  for (const uri of uris) {
    const url = typeof uri === "string" ? URL.parse(uri) : null;
    if (url?.protocol !== "http:" || !["127.0.0.1", "[::1]", "localhost"].includes(url.hostname)) {
      return "redirect_uris must be loopback addresses (http://127.0.0.1/...), as RFC 8252 has native clients use";
    }
  }
  const grants = Array.isArray(metadata.grant_types) ? metadata.grant_types : [];
  if (!grants.every((grant) => grant === "authorization_code" || grant === "refresh_token")) {
    return "grant_types may be authorization_code and refresh_token only";
  }
  return undefined;
}

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`);

function page(title: string, body: string): string {
  return `<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><title>${escapeHtml(title)}</title></head>
<body>
<h1>${escapeHtml(title)}</h1>
${body}
</body>
</html>
`;
}

function loginPage(uid: string, clientId: string, error?: string): string {
  return page(
    "Sign in",
    `<p>to continue to <strong id="client">${escapeHtml(clientId)}</strong></p>
${error ? `<p id="error" role="alert">${escapeHtml(error)}</p>\n` : ""}<form id="login-form" method="post" action="/interaction/${escapeHtml(uid)}/login">
<label for="login">Account</label> <input id="login" name="login" type="text" autocomplete="username" required autofocus>
<label for="password">Password</label> <input id="password" name="password" type="password" autocomplete="current-password" required>
<button id="submit" type="submit">Sign in</button>
</form>`,
  );
}

function consentPage(uid: string, clientId: string, scopes: string[]): string {
  const items = scopes.map((scope) => `<li>${escapeHtml(scope)}</li>`).join("");
  return page(
    "Authorize",
    `<p><strong id="client">${escapeHtml(clientId)}</strong> asks for:</p>
<ul id="scopes">${items}</ul>
<form id="consent-form" method="post" action="/interaction/${escapeHtml(uid)}/confirm">
<button id="submit" type="submit" name="decision" value="allow">Allow</button>
<button id="deny" type="submit" name="decision" value="deny">Deny</button>
</form>`,
  );
}

/** A posted form, bounded: the pages post two short fields. */
async function readForm(request: IncomingMessage): Promise<URLSearchParams> {
  let body = "";
  for await (const chunk of request) {
    body += chunk;
    if (body.length > 16_384) {
      throw new Error("form body too large");
    }
  }
  return new URLSearchParams(body);
}

const base64url = (bytes: Buffer) => bytes.toString("base64url");

/** A PKCE code verifier (RFC 7636 4.1): 43 characters of base64url. */
export function createCodeVerifier(): string {
  return base64url(randomBytes(32));
}

/** The S256 challenge of a PKCE code verifier. */
export function codeChallengeOf(codeVerifier: string): string {
  return createHash("sha256").update(codeVerifier).digest("base64url");
}

/** Cookies by name and path, for one origin: enough for oidc-provider's interaction and session cookies. */
class CookieJar {
  readonly #cookies = new Map<string, { name: string; value: string; path: string }>();

  header(url: URL): string | undefined {
    const matching = [...this.#cookies.values()].filter(
      ({ path }) => url.pathname === path || url.pathname.startsWith(path.endsWith("/") ? path : `${path}/`),
    );
    return matching.length > 0 ? matching.map(({ name, value }) => `${name}=${value}`).join("; ") : undefined;
  }

  store(response: Response, url: URL): void {
    for (const line of response.headers.getSetCookie()) {
      const [pair = "", ...attributes] = line.split(";").map((part) => part.trim());
      const equals = pair.indexOf("=");
      const name = pair.slice(0, equals);
      const value = pair.slice(equals + 1);
      let path = url.pathname.slice(0, url.pathname.lastIndexOf("/")) || "/";
      let expired = value === "";
      for (const attribute of attributes) {
        const [key = "", attributeValue = ""] = attribute.split("=");
        if (key.toLowerCase() === "path") {
          path = attributeValue;
        } else if (key.toLowerCase() === "expires" && Date.parse(attributeValue) <= Date.now()) {
          expired = true;
        } else if (key.toLowerCase() === "max-age" && Number(attributeValue) <= 0) {
          expired = true;
        }
      }
      const id = `${name};${path}`;
      if (expired) {
        this.#cookies.delete(id);
      } else {
        this.#cookies.set(id, { name, value, path });
      }
    }
  }

  async fetch(url: URL, init: RequestInit = {}): Promise<Response> {
    const headers = new Headers(init.headers);
    const cookie = this.header(url);
    if (cookie) {
      headers.set("cookie", cookie);
    }
    const response = await fetch(url, { ...init, headers, redirect: "manual" });
    this.store(response, url);
    return response;
  }
}

/**
 * Takes an authorization URL of one of these servers through its pages as a browser would, over HTTP with a cookie
 * jar: follows the redirects, signs in as `user` on the login page, allows (or denies) on the consent page, and
 * stops at the redirect to the client's redirect URI, which it returns without following (a loopback listener, a
 * test's own server, may not be there). Throws when the login is refused or a page is not one it knows.
 *
 * @example
 * const { url, codeVerifier } = server.authorizationUrl({ clientId: "cli", redirectUri, scope: "oxp:tools:read" });
 * const { code } = await completeAuthorization(url, { user: { id: "alice", password: "secret" } });
 */
export async function completeAuthorization(
  url: string,
  options: CompleteAuthorizationOptions,
): Promise<AuthorizationResponse> {
  const authorization = new URL(url);
  const redirectUri = authorization.searchParams.get("redirect_uri");
  const jar = new CookieJar();
  let next = authorization;
  let response = await jar.fetch(next);
  for (let step = 0; step < 20; step++) {
    const location = response.headers.get("location");
    if (response.status >= 300 && response.status < 400 && location) {
      next = new URL(location, next);
      if (next.origin !== authorization.origin || (redirectUri && next.href.startsWith(redirectUri))) {
        await response.body?.cancel();
        return {
          redirectUrl: next.href,
          code: next.searchParams.get("code") ?? undefined,
          state: next.searchParams.get("state") ?? undefined,
          iss: next.searchParams.get("iss") ?? undefined,
          error: next.searchParams.get("error") ?? undefined,
        };
      }
      await response.body?.cancel();
      response = await jar.fetch(next);
      continue;
    }
    const html = await response.text();
    const action = /<form id="(?:login|consent)-form" method="post" action="([^"]+)"/.exec(html)?.[1];
    if (!action) {
      const error = /<p id="error"[^>]*>([^<]*)<\/p>/.exec(html)?.[1];
      throw new Error(`the authorization stopped at ${next.href} (${response.status})${error ? `: ${error}` : ""}`);
    }
    const form = html.includes('id="login-form"')
      ? new URLSearchParams({ login: options.user.id, password: options.user.password })
      : new URLSearchParams({ decision: options.deny ? "deny" : "allow" });
    next = new URL(action.replaceAll("&#38;", "&"), next);
    response = await jar.fetch(next, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: form,
    });
    if (response.status === 401) {
      const error = /<p id="error"[^>]*>([^<]*)<\/p>/.exec(await response.text())?.[1];
      throw new Error(`the login was refused: ${error ?? response.status}`);
    }
  }
  throw new Error(`the authorization of ${url} did not reach its redirect URI in 20 steps`);
}

async function jsonOf(response: Response): Promise<Record<string, unknown>> {
  const text = await response.text();
  try {
    const parsed: unknown = JSON.parse(text);
    return typeof parsed === "object" && parsed !== null ? (parsed as Record<string, unknown>) : {};
  } catch {
    return { error_description: text.slice(0, 200) };
  }
}

function tokenSetOf(body: Record<string, unknown>): TokenSet {
  const text = (name: string) => (typeof body[name] === "string" ? (body[name] as string) : undefined);
  const accessToken = text("access_token");
  if (!accessToken) {
    throw new Error(`the token response has no access_token: ${JSON.stringify(body)}`);
  }
  return {
    accessToken,
    refreshToken: text("refresh_token"),
    idToken: text("id_token"),
    expiresIn: Number(body.expires_in),
    scope: text("scope"),
    tokenType: text("token_type") ?? "",
  };
}

const ENDPOINTS = {
  authorization: "/auth",
  token: "/token",
  jwks: "/jwks",
  introspection: "/token/introspection",
  revocation: "/token/revocation",
  userinfo: "/me",
} as const;

/**
 * Starts oidc-provider on a free loopback port as an OAuth 2.1 authorization server: JWT access tokens (RFC 9068,
 * `typ: at+jwt`) for each resource with that resource's URL as audience, signed ES256 (or RS256), or opaque ones
 * for a resource that asks for them (`accessTokenFormat: "opaque"`); authorization
 * code with PKCE S256 required of every client; refresh tokens for `offline_access`, rotated on each use (a used one
 * is refused and revokes its grant); client credentials; introspection and revocation; with `dynamicRegistration`,
 * dynamic registration (RFC 7591) of public native loopback clients. Login and consent are plain
 * HTML forms (`#login`, `#password`, `#submit`; `#deny` on consent) served by this module.
 *
 * oidc-provider reads the wall clock (`Date.now`) for every time it stamps or checks: it takes no clock, so its
 * tokens carry real time. {@link AuthorizationServer.mintAccessToken} makes tokens with any time a test needs.
 *
 * @example
 * const server = await startAuthorizationServer({
 *   resources: [{ url: resourceUrl, scopes: ["oxp:tools:read", "oxp:tools:call"] }],
 *   clients: [{ clientId: "agent", clientSecret: "s3cret" }],
 * });
 * const token = await server.clientCredentialsToken({
 *   clientId: "agent", clientSecret: "s3cret", resource: resourceUrl, scope: "oxp:tools:read",
 * });
 * await server.stop();
 */
export async function startAuthorizationServer(options: AuthorizationServerOptions = {}): Promise<AuthorizationServer> {
  const { Provider, errors } = await loadProvider();
  const resources = options.resources ?? [];
  const clients = options.clients ?? [];
  const users = new Map((options.users ?? []).map((user) => [user.id, user]));
  const accessTokenTtl = options.accessTokenTtlSeconds ?? 300;
  const refreshTokenTtl = options.refreshTokenTtlSeconds ?? 86_400;
  const alg = options.signingAlgorithm ?? "ES256";

  const { privateKey } = await generateKeyPair(alg, { extractable: true });
  const exported = await exportJWK(privateKey);
  const kid = await calculateJwkThumbprint(exported);
  const privateJwk: JWK = { ...exported, kid, alg, use: "sig" };
  const { d: _d, p: _p, q: _q, dp: _dp, dq: _dq, qi: _qi, ...publicJwk } = privateJwk;

  const http = createServer();
  await new Promise<void>((resolve, reject) => {
    http.once("error", reject);
    http.listen(0, "127.0.0.1", () => resolve());
  });
  const issuer = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  const store = new MemoryStore();
  const registered = new Map(clients.map((client) => [client.clientId, client]));

  const provider = new Provider(issuer, {
    adapter: (model: string) => store.adapter(model),
    jwks: { keys: [privateJwk] },
    cookies: { keys: [base64url(randomBytes(32))] },
    clients: clients.map((client) => {
      const grantTypes =
        client.grantTypes ?? (client.clientSecret ? ["client_credentials"] : ["authorization_code", "refresh_token"]);
      return {
        client_id: client.clientId,
        ...(client.clientSecret ? { client_secret: client.clientSecret } : {}),
        redirect_uris: client.redirectUris ?? [],
        grant_types: grantTypes,
        response_types: grantTypes.includes("authorization_code") ? ["code"] : [],
        token_endpoint_auth_method:
          client.tokenEndpointAuthMethod ?? (client.clientSecret ? "client_secret_basic" : "none"),
        application_type: client.applicationType ?? "web",
      };
    }),
    clientDefaults: { id_token_signed_response_alg: alg },
    async findAccount(_ctx: unknown, sub: string) {
      const user = users.get(sub);
      return user
        ? {
            accountId: user.id,
            claims: async () => ({
              sub: user.id,
              ...(user.email ? { email: user.email } : {}),
              ...(user.name ? { name: user.name } : {}),
            }),
          }
        : undefined;
    },
    claims: { openid: ["sub"], email: ["email"], profile: ["name"] },
    scopes: ["openid", "offline_access", "email", "profile"],
    // PKCE for every client, public or confidential (OAuth 2.1); oidc-provider 9 knows only S256.
    pkce: { required: () => true },
    // oidc-provider keeps `offline_access` only with `prompt=consent` (OpenID Connect Core 11), which OAuth clients
    // do not send: a refresh token goes instead to every client registered for the refresh_token grant, and lives
    // its own lifetime rather than the login session's.
    issueRefreshToken: async (_ctx: unknown, client: ProviderClient) => client.grantTypeAllowed("refresh_token"),
    expiresWithSession: async () => false,
    // Rotate on every use, so a suite can see a used refresh token refused (and its grant revoked with it).
    rotateRefreshToken: true,
    ttl: {
      AccessToken: accessTokenTtl,
      ClientCredentials: accessTokenTtl,
      AuthorizationCode: 60,
      IdToken: 3600,
      RefreshToken: refreshTokenTtl,
      Interaction: 600,
      Session: 3600,
      Grant: refreshTokenTtl,
      DeviceCode: 600,
      BackchannelAuthenticationRequest: 600,
      PreAuthorizedCode: 600,
    },
    interactions: { url: (_ctx: unknown, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
    // A browser test's pages call the token endpoint from the client's redirect origin.
    clientBasedCORS: (_ctx: unknown, origin: string, client: ProviderClient) =>
      origin !== "null" && client.redirectUris.some((uri) => URL.parse(uri)?.origin === origin),
    async renderError(ctx: KoaContext, out: Record<string, string>) {
      // For the request log: an error page's code is not in a JSON body.
      ctx.state.oauthError = out.error;
      ctx.type = "html";
      ctx.body = page(
        "Error",
        `<p id="error">${escapeHtml(out.error ?? "error")}: ${escapeHtml(out.error_description ?? "")}</p>`,
      );
    },
    ...(options.dynamicRegistration
      ? {
          // A hook on every client's metadata: a client registered by anyone must be one `otc login` would register.
          extraClientMetadata: {
            properties: ["oxp_registration_policy"],
            validator(_ctx: unknown, _key: string, _value: unknown, metadata: Record<string, unknown>) {
              if (typeof metadata.client_id === "string" && registered.has(metadata.client_id)) {
                return;
              }
              const problem = registrationProblem(metadata);
              if (problem) {
                throw new errors.InvalidClientMetadata(problem);
              }
            },
          },
        }
      : {}),
    features: {
      devInteractions: { enabled: false },
      rpInitiatedLogout: { enabled: false },
      registration: { enabled: options.dynamicRegistration === true },
      clientCredentials: { enabled: true },
      // A public client may look at and revoke only its own tokens; a confidential one (a resource server), any.
      introspection: {
        enabled: true,
        allowedPolicy: async (_ctx: unknown, client: ProviderClient, token: ProviderToken) =>
          client.clientAuthMethod !== "none" || token.clientId === client.clientId,
      },
      revocation: {
        enabled: true,
        allowedPolicy: async (_ctx: unknown, client: ProviderClient, token: ProviderToken) =>
          client.clientAuthMethod !== "none" || token.clientId === client.clientId,
      },
      resourceIndicators: {
        enabled: true,
        // The token endpoint may leave `resource` out when the grant holds one resource only.
        useGrantedResource: async () => true,
        async getResourceServerInfo(_ctx: unknown, indicator: string, client: ProviderClient) {
          const resource = resources.find(({ url }) => url === indicator);
          if (!resource) {
            throw new errors.InvalidTarget(`${indicator} is not a resource this server issues tokens for`);
          }
          // Here rather than as the client's `scope` metadata, which oidc-provider holds to its own (OpenID) scopes.
          const scope = registered.get(client.clientId)?.scope;
          const allowed = scope ? new Set(scope.split(" ")) : undefined;
          const scopes = resource.scopes.filter((scope) => !allowed || allowed.has(scope)).join(" ");
          if (resource.accessTokenFormat === "opaque") {
            return {
              scope: scopes,
              audience: resource.url,
              accessTokenTTL: accessTokenTtl,
              accessTokenFormat: "opaque",
            };
          }
          return {
            scope: scopes,
            audience: resource.url,
            accessTokenTTL: accessTokenTtl,
            accessTokenFormat: "jwt",
            jwt: { sign: { alg } },
          };
        },
      },
    },
  });

  const requests: AuthorizationServerRequest[] = [];

  provider.use(async (ctx, next) => {
    const interaction = /^\/interaction\/([^/]+)(?:\/(login|confirm))?$/.exec(ctx.path);
    try {
      if (interaction) {
        await interact(ctx, interaction[2]).catch((error: unknown) => {
          // An interaction that expired or was finished already (oidc-provider's SessionNotFound): a page, not a
          // stack trace from Koa.
          const status = (error as { status?: number }).status ?? 500;
          ctx.status = status;
          ctx.type = "html";
          ctx.body = page("Error", `<p id="error">${escapeHtml(String((error as Error).message ?? error))}</p>`);
        });
      } else {
        await next();
      }
    } finally {
      const parameter = (name: string) => {
        const value = ctx.oidc?.params?.[name];
        return typeof value === "string" ? value : undefined;
      };
      const answered = ctx.body as { error?: unknown } | undefined;
      const error = typeof answered?.error === "string" ? answered.error : ctx.state?.oauthError;
      requests.push({
        method: ctx.method,
        path: ctx.path,
        endpoint: interaction ? "interaction" : ctx.oidc?.route,
        grantType: parameter("grant_type"),
        redirectUri: parameter("redirect_uri"),
        codeVerifier: parameter("code_verifier"),
        status: ctx.res.headersSent ? ctx.res.statusCode : ctx.status,
        error: typeof error === "string" ? error : undefined,
      });
    }
  });

  /** The login and consent pages, after oidc-provider's example: the interaction's prompt says which one is due. */
  async function interact(ctx: KoaContext, action: string | undefined): Promise<void> {
    ctx.res.setHeader("cache-control", "no-store");
    const details = await provider.interactionDetails(ctx.req, ctx.res);
    const { uid, prompt, params } = details;
    if (ctx.method === "GET" && action === undefined) {
      ctx.type = "html";
      if (prompt.name === "login") {
        ctx.body = loginPage(uid, params.client_id);
      } else {
        const scope = typeof params.scope === "string" ? params.scope.split(" ") : [];
        ctx.body = consentPage(uid, params.client_id, scope);
      }
      return;
    }
    if (ctx.method !== "POST" || action === undefined) {
      ctx.status = 405;
      return;
    }
    const form = await readForm(ctx.req);
    if (action === "login" && prompt.name === "login") {
      const user = users.get(form.get("login") ?? "");
      if (!user || user.password !== form.get("password")) {
        ctx.status = 401;
        ctx.type = "html";
        ctx.body = loginPage(uid, params.client_id, "Wrong account or password.");
        return;
      }
      await provider.interactionFinished(
        ctx.req,
        ctx.res,
        { login: { accountId: user.id } },
        { mergeWithLastSubmission: false },
      );
      return;
    }
    if (action === "confirm" && prompt.name === "consent") {
      if (form.get("decision") !== "allow") {
        await provider.interactionFinished(
          ctx.req,
          ctx.res,
          { error: "access_denied", error_description: "the user denied the request" },
          { mergeWithLastSubmission: false },
        );
        return;
      }
      await provider.interactionFinished(ctx.req, ctx.res, { consent: { grantId: await grantConsent(details) } });
      return;
    }
    ctx.status = 400;
    ctx.type = "html";
    ctx.body = page(
      "Error",
      `<p id="error">the ${escapeHtml(prompt.name)} prompt is due, not ${escapeHtml(action)}</p>`,
    );
  }

  /** Grants what the consent prompt found missing, to the grant the interaction has or a new one. */
  async function grantConsent(details: InteractionDetails): Promise<string> {
    const accountId = details.session?.accountId;
    if (!accountId) {
      throw new Error("consent without a signed-in user");
    }
    const grant =
      (details.grantId ? await provider.Grant.find(details.grantId) : undefined) ??
      new provider.Grant({ accountId, clientId: details.params.client_id });
    const missing = details.prompt.details as {
      missingOIDCScope?: string[];
      missingOIDCClaims?: string[];
      missingResourceScopes?: Record<string, string[]>;
    };
    if (missing.missingOIDCScope) {
      grant.addOIDCScope(missing.missingOIDCScope.join(" "));
    }
    if (missing.missingOIDCClaims) {
      grant.addOIDCClaims(missing.missingOIDCClaims);
    }
    for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes ?? {})) {
      grant.addResourceScope(indicator, scopes.join(" "));
    }
    return grant.save();
  }

  http.on("request", provider.callback());

  const url = (path: string) => new URL(path, issuer).href;

  /** A POST to one of the client-authenticated endpoints, authenticated the way the client is registered. */
  async function clientPost(path: string, credentials: ClientCredentials, fields: Record<string, string | undefined>) {
    const body = new URLSearchParams();
    for (const [name, value] of Object.entries(fields)) {
      if (value !== undefined) {
        body.set(name, value);
      }
    }
    const headers: Record<string, string> = { "content-type": "application/x-www-form-urlencoded" };
    const method =
      registered.get(credentials.clientId)?.tokenEndpointAuthMethod ??
      (credentials.clientSecret ? "client_secret_basic" : "none");
    if (method === "client_secret_basic" && credentials.clientSecret !== undefined) {
      // RFC 6749 2.3.1: each part form-encoded before the Basic encoding.
      const user = encodeURIComponent(credentials.clientId);
      const password = encodeURIComponent(credentials.clientSecret);
      headers.authorization = `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`;
    } else {
      body.set("client_id", credentials.clientId);
      if (credentials.clientSecret !== undefined) {
        body.set("client_secret", credentials.clientSecret);
      }
    }
    return fetch(url(path), { method: "POST", headers, body });
  }

  async function tokenRequest(credentials: ClientCredentials, fields: Record<string, string | undefined>) {
    const response = await clientPost(ENDPOINTS.token, credentials, fields);
    const body = await jsonOf(response);
    if (!response.ok) {
      throw new TokenEndpointError("the token endpoint", response.status, body);
    }
    return tokenSetOf(body);
  }

  const header = (extra?: Record<string, unknown>) => ({ alg, kid, typ: "at+jwt", ...extra });
  const sign = (payload: JWTPayload, extra?: Record<string, unknown>) =>
    new SignJWT(payload).setProtectedHeader(header(extra)).sign(privateKey);

  const handle: AuthorizationServer = {
    issuer,
    url,
    jwks: { keys: [publicJwk] },
    privateJwk,
    requests,
    count: (endpoint, grantType) =>
      requests.filter(
        (request) => request.endpoint === endpoint && (grantType === undefined || request.grantType === grantType),
      ).length,
    clearRequests: () => {
      requests.length = 0;
    },
    sign,
    mintAccessToken(claims = {}, extra) {
      const iat = Math.floor(Date.now() / 1000);
      const firstClient = clients[0]?.clientId ?? "client";
      const defaults: Record<string, unknown> = {
        iss: issuer,
        aud: resources[0]?.url,
        sub: firstClient,
        client_id: firstClient,
        scope: resources[0]?.scopes.join(" "),
        iat,
        exp: iat + accessTokenTtl,
        jti: base64url(randomBytes(16)),
      };
      const payload = Object.fromEntries(
        Object.entries({ ...defaults, ...claims }).filter(([, value]) => value !== undefined),
      );
      return sign(payload, extra);
    },
    async clientCredentialsToken({ resource, scope, ...credentials }) {
      const tokens = await tokenRequest(credentials, { grant_type: "client_credentials", resource, scope });
      return tokens.accessToken;
    },
    authorizationUrl(request) {
      const state = request.state ?? base64url(randomBytes(16));
      const codeVerifier = request.codeVerifier ?? createCodeVerifier();
      const authorization = new URL(ENDPOINTS.authorization, issuer);
      const query: Record<string, string | undefined> = {
        response_type: "code",
        client_id: request.clientId,
        redirect_uri: request.redirectUri,
        scope: request.scope,
        resource: request.resource,
        state,
        code_challenge: codeChallengeOf(codeVerifier),
        code_challenge_method: "S256",
        prompt: request.prompt,
      };
      for (const [name, value] of Object.entries(query)) {
        if (value !== undefined) {
          authorization.searchParams.set(name, value);
        }
      }
      return { url: authorization.href, state, codeVerifier };
    },
    completeAuthorization: (authorizationUrl, completion) => completeAuthorization(authorizationUrl, completion),
    exchangeCode: ({ code, redirectUri, codeVerifier, resource, ...credentials }) =>
      tokenRequest(credentials, {
        grant_type: "authorization_code",
        code,
        redirect_uri: redirectUri,
        code_verifier: codeVerifier,
        resource,
      }),
    refresh: ({ refreshToken, resource, scope, ...credentials }) =>
      tokenRequest(credentials, { grant_type: "refresh_token", refresh_token: refreshToken, resource, scope }),
    async authorizationCodeFlow({ user, clientId, clientSecret, redirectUri, resource, scope, codeVerifier }) {
      const prepared = handle.authorizationUrl({ clientId, redirectUri, resource, scope, codeVerifier });
      const answer = await completeAuthorization(prepared.url, { user });
      if (answer.error || !answer.code) {
        throw new Error(`the authorization ended in ${answer.redirectUrl}`);
      }
      if (answer.state !== prepared.state || answer.iss !== issuer) {
        throw new Error(`the authorization response's state or iss is not this request's: ${answer.redirectUrl}`);
      }
      return handle.exchangeCode({
        clientId,
        clientSecret,
        code: answer.code,
        redirectUri,
        codeVerifier: prepared.codeVerifier,
        resource,
      });
    },
    async introspect({ token, tokenTypeHint, ...credentials }) {
      const response = await clientPost(ENDPOINTS.introspection, credentials, {
        token,
        token_type_hint: tokenTypeHint,
      });
      const body = await jsonOf(response);
      if (!response.ok) {
        throw new TokenEndpointError("the introspection endpoint", response.status, body);
      }
      return body;
    },
    async revoke({ token, tokenTypeHint, ...credentials }) {
      const response = await clientPost(ENDPOINTS.revocation, credentials, { token, token_type_hint: tokenTypeHint });
      if (!response.ok) {
        throw new TokenEndpointError("the revocation endpoint", response.status, await jsonOf(response));
      }
      await response.body?.cancel();
      return response.status;
    },
    async stop() {
      await new Promise<void>((resolve) => {
        http.close(() => resolve());
        http.closeAllConnections();
      });
    },
  };
  return handle;
}

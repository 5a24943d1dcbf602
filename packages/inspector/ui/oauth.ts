/** The page's Sign in (docs/protocol.md 9.6): the server's resource metadata, the chosen authorization server's, the authorization code flow with PKCE and the refresh token grant, run in the browser as a public client. */

/** The scopes the page asks for: to list the tools and to call them. */
export const INSPECTOR_SCOPES = ["oxp:tools:read", "oxp:tools:call"] as const;

/** The scope that asks for a refresh token (OpenID Connect Core 11): asked for only where the server lists it. */
export const OFFLINE_ACCESS = "offline_access";

/** The client id the form starts with: register a public client by this id (or type yours) at the authorization server. */
export const DEFAULT_CLIENT_ID = "oxp-inspector";

/** The most bytes of a metadata document or token answer the page reads: they are a few hundred. */
const MAX_DOCUMENT_BYTES = 64 * 1024;

/** The authorization response's parameters, taken out of the page's URL on return. */
const RESPONSE_PARAMETERS = ["code", "state", "iss", "error", "error_description", "error_uri", "session_state"];

/**
 * Where sessionStorage keeps a sign-in across the page's reloads: its verifier and state, and for one reload the
 * code (good once, and only with the verifier). No token is ever kept there.
 */
export const PENDING_KEY = "oxp-inspector.sign-in";

/**
 * Where sessionStorage keeps, for each resource whose metadata names several authorization servers, the one the user
 * chose: a JSON object from resource to issuer. Issuers only, never a token.
 */
export const AUTHORIZATION_SERVER_KEY = "oxp-inspector.authorization-servers";

/** What the server's protected resource metadata (RFC 9728) tells the page. */
export interface ResourceMetadata {
  resource: string;
  authorizationServers: string[];
}

/** What the page needs of an authorization server's metadata (RFC 8414, or OpenID Connect discovery). */
export interface AuthorizationServerMetadata {
  issuer: string;
  authorizationEndpoint: string;
  tokenEndpoint: string;
  /** Its `scopes_supported`, when it lists them. */
  scopesSupported?: string[];
}

/** A sign-in the page started, kept in sessionStorage across the redirect to the authorization server. */
export interface PendingSignIn {
  /**
   * `reload`: the page reloads with `?auth=` to be let call the authorization server, then goes on; `authorize`: it
   * went to the authorization endpoint; `exchange`: back with a code, the page reloads with `?auth=` naming the token
   * endpoint's origin (its redirect URI has none), then exchanges it.
   */
  phase: "reload" | "authorize" | "exchange";
  serverUrl: string;
  clientId: string;
  state?: string;
  codeVerifier?: string;
  redirectUri?: string;
  resource?: string;
  issuer?: string;
  tokenEndpoint?: string;
  /** The authorization response, in the `exchange` phase. */
  response?: AuthorizationResponse;
}

/** The tokens the token endpoint answered. */
export interface SignedIn {
  accessToken: string;
  /** The refresh token, when the server issued one: kept in the page's memory only, like the access token. */
  refreshToken?: string;
  /** Seconds, when the answer said. */
  expiresIn?: number;
  /** The scopes granted, when the answer said. */
  scope?: string;
}

/** A step of the sign-in that failed, with a message for the page. */
export class SignInError extends Error {
  override readonly name = "SignInError";
}

/** The JSON object `url` answers, read within {@link MAX_DOCUMENT_BYTES}; a fetch failure (CORS, network) as is. */
async function readJson(response: Response, what: string): Promise<Record<string, unknown>> {
  const length = Number(response.headers.get("content-length") ?? "0");
  if (length > MAX_DOCUMENT_BYTES) {
    await response.body?.cancel();
    throw new SignInError(`${what} is larger than ${MAX_DOCUMENT_BYTES} bytes`);
  }
  const text = await response.text();
  if (text.length > MAX_DOCUMENT_BYTES) {
    throw new SignInError(`${what} is larger than ${MAX_DOCUMENT_BYTES} bytes`);
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new SignInError(`${what} is not JSON (HTTP ${response.status})`);
  }
  if (!body || typeof body !== "object" || Array.isArray(body)) {
    throw new SignInError(`${what} is not a JSON object (HTTP ${response.status})`);
  }
  return body as Record<string, unknown>;
}

const isHttpUrl = (value: unknown): value is string => {
  if (typeof value !== "string") {
    return false;
  }
  try {
    const { protocol } = new URL(value);
    return protocol === "http:" || protocol === "https:";
  } catch {
    return false;
  }
};

/**
 * Reads the server's protected resource metadata from the URL its discovery document names
 * (`extension_info.oauth.resource_metadata`).
 *
 * @example
 * const { resource, authorizationServers } = await readResourceMetadata(discovery.extension_info.oauth.resource_metadata);
 */
export async function readResourceMetadata(url: string, doFetch: typeof fetch = fetch): Promise<ResourceMetadata> {
  let response: Response;
  try {
    response = await doFetch(url, { headers: { accept: "application/json" } });
  } catch (error) {
    throw new SignInError(`Could not read the server's resource metadata at ${url}: ${messageOf(error)}`);
  }
  if (!response.ok) {
    await response.body?.cancel();
    throw new SignInError(`The server's resource metadata at ${url} answered HTTP ${response.status}`);
  }
  const body = await readJson(response, `The resource metadata at ${url}`);
  const servers = Array.isArray(body.authorization_servers) ? body.authorization_servers.filter(isHttpUrl) : [];
  if (!isHttpUrl(body.resource) || servers.length === 0) {
    throw new SignInError(`The resource metadata at ${url} names no resource or no authorization server`);
  }
  return { resource: body.resource, authorizationServers: servers };
}

/** RFC 8414's metadata URL for an issuer (the well-known segment before the issuer's path), then OpenID Connect's. */
export function metadataUrls(issuer: string): string[] {
  const url = new URL(issuer);
  const path = url.pathname === "/" ? "" : url.pathname.replace(/\/$/, "");
  return [
    `${url.origin}/.well-known/oauth-authorization-server${path}`,
    `${url.origin}${path}/.well-known/openid-configuration`,
  ];
}

/**
 * Reads an authorization server's metadata: RFC 8414's document, else OpenID Connect's. Its `issuer` must be the one
 * asked for, exactly (a document that names another is someone else's), and it must offer S256 PKCE where it lists
 * its methods.
 */
export async function readAuthorizationServer(
  issuer: string,
  doFetch: typeof fetch = fetch,
): Promise<AuthorizationServerMetadata> {
  const failures: string[] = [];
  for (const url of metadataUrls(issuer)) {
    let response: Response;
    try {
      response = await doFetch(url, { headers: { accept: "application/json" } });
    } catch (error) {
      // A 404 without CORS headers reads as a network error in a browser: try the next document.
      failures.push(`${url}: ${messageOf(error)}`);
      continue;
    }
    if (!response.ok) {
      await response.body?.cancel();
      failures.push(`${url}: HTTP ${response.status}`);
      continue;
    }
    const body = await readJson(response, `The authorization server's metadata at ${url}`);
    if (body.issuer !== issuer) {
      throw new SignInError(`The metadata at ${url} names the issuer ${String(body.issuer)}, not ${issuer}`);
    }
    if (!isHttpUrl(body.authorization_endpoint) || !isHttpUrl(body.token_endpoint)) {
      throw new SignInError(`The metadata at ${url} has no http(s) authorization_endpoint or token_endpoint`);
    }
    const methods = body.code_challenge_methods_supported;
    if (Array.isArray(methods) && !methods.includes("S256")) {
      throw new SignInError(`${issuer} does not offer PKCE with S256, which the page needs`);
    }
    const metadata: AuthorizationServerMetadata = {
      issuer,
      authorizationEndpoint: body.authorization_endpoint,
      tokenEndpoint: body.token_endpoint,
    };
    if (Array.isArray(body.scopes_supported)) {
      metadata.scopesSupported = body.scopes_supported.filter((scope) => typeof scope === "string");
    }
    return metadata;
  }
  throw new SignInError(
    `Could not read ${issuer}'s metadata (the authorization server must allow this page's origin with CORS): ${failures.join("; ")}`,
  );
}

/**
 * The scopes the page asks `server` for: its own, and `offline_access` where the server lists it (an OpenID
 * Provider's way to a refresh token; a server that does not list it may still issue one, or may refuse the scope).
 */
export function scopesFor(server: AuthorizationServerMetadata): string[] {
  const scopes: string[] = [...INSPECTOR_SCOPES];
  if (server.scopesSupported?.includes(OFFLINE_ACCESS)) {
    scopes.push(OFFLINE_ACCESS);
  }
  return scopes;
}

/** The choices kept in `storage`, resource to issuer; none when it holds nothing readable. */
function readChoices(storage: Storage): Record<string, string> {
  try {
    const parsed: unknown = JSON.parse(storage.getItem(AUTHORIZATION_SERVER_KEY) ?? "{}");
    return parsed && typeof parsed === "object" && !Array.isArray(parsed) ? (parsed as Record<string, string>) : {};
  } catch {
    return {};
  }
}

/**
 * The authorization server to sign in at for `metadata`'s resource: the one chosen for it this session when the
 * metadata still names it, else the first it names.
 */
export function chosenAuthorizationServer(metadata: ResourceMetadata, storage: Storage | undefined): string {
  const chosen = storage ? readChoices(storage)[metadata.resource] : undefined;
  return chosen !== undefined && metadata.authorizationServers.includes(chosen)
    ? chosen
    : (metadata.authorizationServers[0] as string);
}

/** Keeps `issuer` as the choice for `resource` for the rest of the session (sessionStorage). */
export function rememberAuthorizationServer(storage: Storage, resource: string, issuer: string): void {
  storage.setItem(AUTHORIZATION_SERVER_KEY, JSON.stringify({ ...readChoices(storage), [resource]: issuer }));
}

const base64url = (bytes: Uint8Array) =>
  btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "");

/** 32 random bytes, base64url: a PKCE verifier (43 characters) or a state. */
export function randomToken(): string {
  return base64url(crypto.getRandomValues(new Uint8Array(32)));
}

/** The S256 code challenge of a verifier (RFC 7636 4.2), with Web Crypto. */
export async function codeChallengeOf(verifier: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier));
  return base64url(new Uint8Array(digest));
}

/** What {@link authorizationUrl} builds the request from. */
export interface AuthorizationUrlOptions {
  authorizationEndpoint: string;
  clientId: string;
  redirectUri: string;
  /** The resource indicator (RFC 8707): the server's `resource` from its metadata. */
  resource: string;
  state: string;
  codeChallenge: string;
  scopes?: readonly string[];
}

/** The authorization request's URL: the code flow, S256 PKCE, the resource, the page's scopes. */
export function authorizationUrl(options: AuthorizationUrlOptions): string {
  const url = new URL(options.authorizationEndpoint);
  const query: Record<string, string> = {
    response_type: "code",
    client_id: options.clientId,
    redirect_uri: options.redirectUri,
    scope: (options.scopes ?? INSPECTOR_SCOPES).join(" "),
    resource: options.resource,
    state: options.state,
    code_challenge: options.codeChallenge,
    code_challenge_method: "S256",
  };
  for (const [name, value] of Object.entries(query)) {
    url.searchParams.set(name, value);
  }
  return url.href;
}

/** The authorization response in a page's URL, when it has one. */
export interface AuthorizationResponse {
  code?: string;
  state?: string;
  iss?: string;
  error?: string;
  errorDescription?: string;
}

/** The authorization response carried by `href`'s query: undefined when it carries none. */
export function readAuthorizationResponse(href: string): AuthorizationResponse | undefined {
  const query = new URL(href).searchParams;
  const code = query.get("code");
  const error = query.get("error");
  if (code === null && error === null) {
    return undefined;
  }
  const response: AuthorizationResponse = {};
  for (const [field, name] of [
    ["code", "code"],
    ["state", "state"],
    ["iss", "iss"],
    ["error", "error"],
    ["errorDescription", "error_description"],
  ] as const) {
    const value = query.get(name);
    if (value !== null) {
      response[field] = value;
    }
  }
  return response;
}

/** `href` without an authorization response's parameters and without a fragment: the address the page shows. */
export function withoutResponse(href: string): string {
  const url = new URL(href);
  for (const name of RESPONSE_PARAMETERS) {
    url.searchParams.delete(name);
  }
  url.hash = "";
  return url.href;
}

/**
 * The page's redirect URI: its address without an authorization response and without `auth` (which only widens the
 * page's policy), so that it stays the same one to register whether or not the page reloaded for a sign-in.
 */
export function redirectUriOf(href: string): string {
  const url = new URL(withoutResponse(href));
  url.searchParams.delete("auth");
  return url.href;
}

/** `href` without a response, with `auth` naming `origin`: the page again, let call that origin too. */
export function withAuthOrigin(href: string, origin: string): string {
  const url = new URL(withoutResponse(href));
  url.searchParams.set("auth", origin);
  return url.href;
}

/** Reads the pending sign-in and removes it: it is good for one return. */
export function takePendingSignIn(storage: Storage): PendingSignIn | undefined {
  const raw = storage.getItem(PENDING_KEY);
  storage.removeItem(PENDING_KEY);
  if (!raw) {
    return undefined;
  }
  try {
    const pending = JSON.parse(raw) as PendingSignIn;
    return typeof pending?.serverUrl === "string" && typeof pending.clientId === "string" ? pending : undefined;
  } catch {
    return undefined;
  }
}

export function savePendingSignIn(storage: Storage, pending: PendingSignIn): void {
  storage.setItem(PENDING_KEY, JSON.stringify(pending));
}

/**
 * Checks an authorization response against the sign-in that asked for it: the same state, the same issuer where the
 * server names it (RFC 9207), no error. Returns the code.
 */
export function codeOf(response: AuthorizationResponse, pending: PendingSignIn | undefined): string {
  if (!pending || pending.phase === "reload" || !pending.state) {
    throw new SignInError("This page started no sign-in that this answer could finish: sign in again");
  }
  if (response.state !== pending.state) {
    throw new SignInError("The authorization answer's state is not the one this page sent: sign in again");
  }
  if (response.iss !== undefined && response.iss !== pending.issuer) {
    throw new SignInError(`The authorization answer comes from ${response.iss}, not ${pending.issuer}`);
  }
  if (response.error !== undefined) {
    throw new SignInError(
      `The authorization server answered ${response.error}${response.errorDescription ? `: ${response.errorDescription}` : ""}`,
    );
  }
  if (!response.code) {
    throw new SignInError("The authorization answer has no code");
  }
  return response.code;
}

/** What {@link exchangeCode} sends. */
export interface ExchangeOptions {
  tokenEndpoint: string;
  clientId: string;
  code: string;
  redirectUri: string;
  codeVerifier: string;
  resource?: string;
  /** The page's origin, for the message when the authorization server's CORS policy refuses it. */
  origin: string;
  fetch?: typeof fetch;
}

/** Exchanges the code at the token endpoint, as a public client (its id, no secret). */
export function exchangeCode(options: ExchangeOptions): Promise<SignedIn> {
  const body = new URLSearchParams({
    grant_type: "authorization_code",
    code: options.code,
    redirect_uri: options.redirectUri,
    code_verifier: options.codeVerifier,
    client_id: options.clientId,
  });
  if (options.resource) {
    body.set("resource", options.resource);
  }
  return tokenRequest(options, body, "the code");
}

/** What {@link refreshTokens} sends. */
export interface RefreshOptions {
  tokenEndpoint: string;
  clientId: string;
  refreshToken: string;
  resource?: string;
  /** The page's origin, for the message when the authorization server's CORS policy refuses it. */
  origin: string;
  fetch?: typeof fetch;
}

/**
 * Uses the refresh token once at the token endpoint (RFC 6749 6), as a public client, for the same resource. The
 * answer's refresh token, when it has one, replaces the one used (rotation, as OAuth 2.1 asks of public clients).
 */
export function refreshTokens(options: RefreshOptions): Promise<SignedIn> {
  const body = new URLSearchParams({
    grant_type: "refresh_token",
    refresh_token: options.refreshToken,
    client_id: options.clientId,
  });
  if (options.resource) {
    body.set("resource", options.resource);
  }
  return tokenRequest(options, body, "the refresh token");
}

/** A token request, its answer read: `grant` names what was sent, for the message of a refusal. */
async function tokenRequest(
  options: { tokenEndpoint: string; clientId: string; origin: string; fetch?: typeof fetch },
  body: URLSearchParams,
  grant: string,
): Promise<SignedIn> {
  let response: Response;
  try {
    response = await (options.fetch ?? fetch)(options.tokenEndpoint, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json" },
      body,
    });
  } catch (error) {
    throw new SignInError(
      `Could not reach the token endpoint ${options.tokenEndpoint} (${messageOf(error)}): the authorization server must allow this page's origin, ${options.origin}, with CORS for client ${options.clientId}`,
    );
  }
  const answer = await readJson(response, "The token endpoint's answer");
  if (!response.ok) {
    const description = typeof answer.error_description === "string" ? `: ${answer.error_description}` : "";
    throw new SignInError(
      `The token endpoint refused ${grant} (${String(answer.error ?? response.status)}${description})`,
    );
  }
  const visible = (value: unknown): value is string => typeof value === "string" && /^[\x21-\x7e]+$/.test(value);
  if (!visible(answer.access_token)) {
    throw new SignInError("The token endpoint's answer has no access token");
  }
  const signedIn: SignedIn = { accessToken: answer.access_token };
  if (visible(answer.refresh_token)) {
    signedIn.refreshToken = answer.refresh_token;
  }
  if (typeof answer.expires_in === "number" && Number.isFinite(answer.expires_in) && answer.expires_in >= 0) {
    signedIn.expiresIn = answer.expires_in;
  }
  if (typeof answer.scope === "string") {
    signedIn.scope = answer.scope;
  }
  return signedIn;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

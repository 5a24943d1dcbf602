/** The page's Sign in (docs/protocol.md 9.6): the server's resource metadata, the chosen authorization server's, the authorization code flow with PKCE and the refresh token grant, run in the browser as a public client over oauth4webapi. */
import * as oauth from "oauth4webapi";

/** The scopes the page asks for: to list the tools and to call them. */
export const INSPECTOR_SCOPES = ["oxp:tools:read", "oxp:tools:call"] as const;

/** The scope that asks for a refresh token (OpenID Connect Core 11): asked for only where the server lists it. */
export const OFFLINE_ACCESS = "offline_access";

/** The client id the form starts with: register a public client by this id (or type yours) at the authorization server. */
export const DEFAULT_CLIENT_ID = "oxp-inspector";

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
  /** Its `authorization_response_iss_parameter_supported` (RFC 9207): its answers then must carry `iss`. */
  issParameterSupported?: boolean;
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
  /** The issuer's metadata said its answers carry `iss` (RFC 9207): an answer without it is refused. */
  issParameterSupported?: boolean;
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

/** A fetch that got no answer (the authorization server's CORS policy refused the page, or it is down): not oauth4webapi's refusal. */
class Unreachable extends Error {
  override readonly name = "Unreachable";
}

/** `value` as an http(s) URL; undefined when it is none. */
function httpUrl(value: unknown): URL | undefined {
  if (typeof value !== "string") {
    return undefined;
  }
  try {
    const url = new URL(value);
    return url.protocol === "http:" || url.protocol === "https:" ? url : undefined;
  } catch {
    return undefined;
  }
}

/** Plain http to this machine (`localhost`, 127.x, `::1`): the one place codes and tokens may travel without TLS. */
const isLoopbackHttp = (url: URL | undefined) =>
  url?.protocol === "http:" && /^(localhost|127(\.\d{1,3}){3}|\[::1\])$/.test(url.hostname);

/**
 * oauth4webapi's options for a request to `url`: the page's fetch, whose failures become {@link Unreachable} and
 * whose URL `sent` hears of; plain http allowed for a loopback address only.
 */
function requestOptions(url: URL | undefined, doFetch: typeof fetch = fetch, sent?: (href: string) => void) {
  return {
    [oauth.customFetch]: (href: string, init: RequestInit) => {
      sent?.(href);
      return doFetch(href, init).catch((error: unknown) => {
        throw new Unreachable(messageOf(error), { cause: error });
      });
    },
    [oauth.allowInsecureRequests]: isLoopbackHttp(url),
  };
}

/** Why oauth4webapi would not send a request: plain http off loopback (or not http at all), else its own words. */
function refusalOf(error: unknown): string {
  return error instanceof oauth.OperationProcessingError &&
    (error.code === oauth.HTTP_REQUEST_FORBIDDEN || error.code === oauth.REQUEST_PROTOCOL_FORBIDDEN)
    ? "the page uses https:// (http:// on a loopback address only)"
    : messageOf(error);
}

/**
 * Reads the server's protected resource metadata from the URL its discovery document names
 * (`extension_info.oauth.resource_metadata`). oauth4webapi's resource discovery asks at the well-known URL it derives
 * from a resource identifier the page does not know before it reads this document, so the page reads it itself.
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
  const body: unknown = await response.json().catch(() => undefined);
  if (!body || typeof body !== "object" || Array.isArray(body)) {
    throw new SignInError(`The resource metadata at ${url} is not a JSON object (HTTP ${response.status})`);
  }
  const { resource, authorization_servers: named } = body as Record<string, unknown>;
  const servers = Array.isArray(named) ? named.filter((issuer): issuer is string => httpUrl(issuer) !== undefined) : [];
  if (typeof resource !== "string" || !httpUrl(resource) || servers.length === 0) {
    throw new SignInError(`The resource metadata at ${url} names no resource or no authorization server`);
  }
  return { resource, authorizationServers: servers };
}

/**
 * Reads an authorization server's metadata with oauth4webapi: RFC 8414's document, else OpenID Connect's (a document
 * that cannot be fetched or answers an error, the next). Its `issuer` must be the one asked for, exactly (a document
 * that names another is someone else's), its endpoints https (http on a loopback address), and it must offer S256
 * PKCE where it lists its methods.
 */
export async function readAuthorizationServer(
  issuer: string,
  doFetch: typeof fetch = fetch,
): Promise<AuthorizationServerMetadata> {
  const issuerUrl = new URL(issuer);
  const failures: string[] = [];
  for (const algorithm of ["oauth2", "oidc"] as const) {
    let url = issuer;
    let response: Response;
    try {
      response = await oauth.discoveryRequest(issuerUrl, {
        algorithm,
        ...requestOptions(issuerUrl, doFetch, (href) => {
          url = href;
        }),
      });
    } catch (error) {
      if (!(error instanceof Unreachable)) {
        throw new SignInError(`Could not read ${issuer}'s metadata: ${refusalOf(error)}`);
      }
      // A 404 without CORS headers reads as a network error in a browser: try the next document.
      failures.push(`${url}: ${error.message}`);
      continue;
    }
    if (!response.ok) {
      await response.body?.cancel();
      failures.push(`${url}: HTTP ${response.status}`);
      continue;
    }
    let metadata: oauth.AuthorizationServer;
    try {
      metadata = await oauth.processDiscoveryResponse(issuerUrl, response);
    } catch (error) {
      if (error instanceof oauth.OperationProcessingError && error.code === oauth.JSON_ATTRIBUTE_COMPARISON) {
        throw otherIssuer(url, (error.cause as { body?: { issuer?: unknown } } | undefined)?.body?.issuer, issuer);
      }
      throw new SignInError(`The authorization server's metadata at ${url} is not usable: ${messageOf(error)}`);
    }
    // oauth4webapi compares the issuers as URLs ("http://as" is "http://as/"); an authorization answer's `iss` and a
    // token's must equal it exactly, so the page asks as much of the document.
    if (metadata.issuer !== issuer) {
      throw otherIssuer(url, metadata.issuer, issuer);
    }
    const endpoints = [metadata.authorization_endpoint, metadata.token_endpoint].map(httpUrl);
    if (!endpoints.every((url) => url?.protocol === "https:" || isLoopbackHttp(url))) {
      throw new SignInError(
        `The metadata at ${url} has no https authorization_endpoint or token_endpoint (http only on a loopback address)`,
      );
    }
    const methods: unknown = metadata.code_challenge_methods_supported;
    if (Array.isArray(methods) && !methods.includes("S256")) {
      throw new SignInError(`${issuer} does not offer PKCE with S256, which the page needs`);
    }
    const server: AuthorizationServerMetadata = {
      issuer,
      authorizationEndpoint: metadata.authorization_endpoint as string,
      tokenEndpoint: metadata.token_endpoint as string,
    };
    const scopes: unknown = metadata.scopes_supported;
    if (Array.isArray(scopes)) {
      server.scopesSupported = scopes.filter((scope) => typeof scope === "string");
    }
    if (metadata.authorization_response_iss_parameter_supported === true) {
      server.issParameterSupported = true;
    }
    return server;
  }
  throw new SignInError(
    `Could not read ${issuer}'s metadata (the authorization server must allow this page's origin with CORS): ${failures.join("; ")}`,
  );
}

const otherIssuer = (url: string, named: unknown, issuer: string) =>
  new SignInError(`The metadata at ${url} names the issuer ${String(named)}, not ${issuer}`);

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

/** A PKCE code verifier (43 characters, 32 random bytes base64url): oauth4webapi's. A state is made the same way. */
export const randomToken = (): string => oauth.generateRandomCodeVerifier();

/** The S256 code challenge of a verifier (RFC 7636 4.2): oauth4webapi's, with Web Crypto. */
export const codeChallengeOf = (verifier: string): Promise<string> => oauth.calculatePKCECodeChallenge(verifier);

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

/** The authorization request's URL (oauth4webapi leaves it to the caller): the code flow, S256 PKCE, the resource, the page's scopes. */
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

/** The fields of an {@link AuthorizationResponse}, by their names in the response. */
const RESPONSE_FIELDS = [
  ["code", "code"],
  ["state", "state"],
  ["iss", "iss"],
  ["error", "error"],
  ["errorDescription", "error_description"],
] as const;

/** The authorization response carried by `href`'s query: undefined when it carries none. */
export function readAuthorizationResponse(href: string): AuthorizationResponse | undefined {
  const query = new URL(href).searchParams;
  if (!query.has("code") && !query.has("error")) {
    return undefined;
  }
  const response: AuthorizationResponse = {};
  for (const [field, name] of RESPONSE_FIELDS) {
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
 * Checks an authorization response against the sign-in that asked for it with oauth4webapi's validateAuthResponse:
 * the same state, the same issuer where the answer names it (and its presence where the metadata says the server
 * sends it, RFC 9207), no error. Returns the code.
 */
export function codeOf(response: AuthorizationResponse, pending: PendingSignIn | undefined): string {
  if (!pending || pending.phase === "reload" || !pending.state || !pending.issuer) {
    throw new SignInError("This page started no sign-in that this answer could finish: sign in again");
  }
  const parameters = new URLSearchParams();
  for (const [field, name] of RESPONSE_FIELDS) {
    const value = response[field];
    if (value !== undefined) {
      parameters.set(name, value);
    }
  }
  const as: oauth.AuthorizationServer = {
    issuer: pending.issuer,
    ...(pending.issParameterSupported ? { authorization_response_iss_parameter_supported: true } : {}),
  };
  try {
    oauth.validateAuthResponse(as, { client_id: pending.clientId }, parameters, pending.state);
  } catch (error) {
    if (error instanceof oauth.AuthorizationResponseError) {
      throw new SignInError(
        `The authorization server answered ${error.error}${error.error_description ? `: ${error.error_description}` : ""}`,
      );
    }
    // oauth4webapi's message names the parameter that failed.
    const message = messageOf(error);
    if (message.includes('"iss"')) {
      throw new SignInError(
        response.iss === undefined
          ? `The authorization answer does not say it comes from ${pending.issuer} (no iss, which its metadata promises): sign in again`
          : `The authorization answer comes from ${response.iss}, not ${pending.issuer}`,
      );
    }
    if (message.includes('"state"')) {
      throw new SignInError("The authorization answer's state is not the one this page sent: sign in again");
    }
    throw new SignInError(`The authorization answer is not usable: ${message}`);
  }
  if (!response.code) {
    throw new SignInError("The authorization answer has no code");
  }
  return response.code;
}

/** What a token request needs: the endpoint, the public client, the resource, and the page's origin for messages. */
interface TokenEndpointOptions {
  tokenEndpoint: string;
  /**
   * The authorization server's issuer, oauth4webapi's `as.issuer` (it checks an ID token's `iss` against it, were one
   * to come: the page asks for none). The token endpoint's origin stands in when it is not given.
   */
  issuer?: string;
  clientId: string;
  /** The resource indicator (RFC 8707), sent again with the grant. */
  resource?: string;
  /** The page's origin, for the message when the authorization server's CORS policy refuses it. */
  origin: string;
  fetch?: typeof fetch;
}

/** What {@link exchangeCode} sends. */
export interface ExchangeOptions extends TokenEndpointOptions {
  /** The code {@link codeOf} gave: the answer it came in already checked. */
  code: string;
  redirectUri: string;
  codeVerifier: string;
}

/** Exchanges the code at the token endpoint, as a public client (its id, no secret), with oauth4webapi. */
export async function exchangeCode(options: ExchangeOptions): Promise<SignedIn> {
  const { as, client, request } = tokenEndpointOf(options);
  // codeOf checked the answer with validateAuthResponse; here it only hands the code on in the form the grant request
  // takes (the parameters validateAuthResponse returns), with nothing left to check.
  const callback = oauth.validateAuthResponse(
    as,
    client,
    new URLSearchParams({ code: options.code }),
    oauth.skipStateCheck,
  );
  const { redirectUri, codeVerifier } = options;
  const response = await answerOf(
    options,
    "the code",
    oauth.authorizationCodeGrantRequest(as, client, oauth.None(), callback, redirectUri, codeVerifier, request),
  );
  return tokensOf("the code", response, oauth.processAuthorizationCodeResponse(as, client, response));
}

/** What {@link refreshTokens} sends. */
export interface RefreshOptions extends TokenEndpointOptions {
  refreshToken: string;
}

/**
 * Uses the refresh token once at the token endpoint (RFC 6749 6), as a public client, for the same resource, with
 * oauth4webapi. The answer's refresh token, when it has one, replaces the one used (rotation, as OAuth 2.1 asks of
 * public clients).
 */
export async function refreshTokens(options: RefreshOptions): Promise<SignedIn> {
  const { as, client, request } = tokenEndpointOf(options);
  const response = await answerOf(
    options,
    "the refresh token",
    oauth.refreshTokenGrantRequest(as, client, oauth.None(), options.refreshToken, request),
  );
  return tokensOf("the refresh token", response, oauth.processRefreshTokenResponse(as, client, response));
}

/** oauth4webapi's view of the token endpoint: the authorization server, the public client, the request's options. */
function tokenEndpointOf(options: TokenEndpointOptions) {
  const endpoint = httpUrl(options.tokenEndpoint);
  const as: oauth.AuthorizationServer = {
    issuer: options.issuer ?? endpoint?.origin ?? options.tokenEndpoint,
    token_endpoint: options.tokenEndpoint,
  };
  const client: oauth.Client = { client_id: options.clientId };
  const request: oauth.TokenEndpointRequestOptions = {
    ...requestOptions(endpoint, options.fetch),
    ...(options.resource ? { additionalParameters: { resource: options.resource } } : {}),
  };
  return { as, client, request };
}

/** The answer to a token request `sending`: no answer (CORS, network) or a request not sent, in the page's words. */
async function answerOf(options: TokenEndpointOptions, grant: string, sending: Promise<Response>): Promise<Response> {
  try {
    return await sending;
  } catch (error) {
    const { tokenEndpoint, origin, clientId } = options;
    if (error instanceof Unreachable) {
      throw new SignInError(
        `Could not reach the token endpoint ${tokenEndpoint} (${error.message}): the authorization server must allow this page's origin, ${origin}, with CORS for client ${clientId}`,
      );
    }
    throw new SignInError(`The page did not send ${grant} to the token endpoint ${tokenEndpoint}: ${refusalOf(error)}`);
  }
}

/** The tokens `reading` (oauth4webapi's processing of `response`) gives, or its refusal in the page's words. */
async function tokensOf(
  grant: string,
  response: Response,
  reading: Promise<oauth.TokenEndpointResponse>,
): Promise<SignedIn> {
  let answer: oauth.TokenEndpointResponse;
  try {
    answer = await reading;
  } catch (error) {
    throw tokenFailure(error, grant, response);
  }
  if (answer.token_type !== "bearer") {
    throw new SignInError(`The token endpoint issued a ${answer.token_type} token; the page sends bearer tokens only`);
  }
  // The access token goes into an Authorization header: visible ASCII only.
  if (!/^[\x21-\x7e]+$/.test(answer.access_token)) {
    throw new SignInError("The token endpoint's answer has no access token");
  }
  const signedIn: SignedIn = { accessToken: answer.access_token };
  if (answer.refresh_token !== undefined) {
    signedIn.refreshToken = answer.refresh_token;
  }
  if (answer.expires_in !== undefined) {
    signedIn.expiresIn = answer.expires_in;
  }
  if (answer.scope !== undefined) {
    signedIn.scope = answer.scope;
  }
  return signedIn;
}

/** The page's message for oauth4webapi's refusal of a token answer: the server's error where it sent one. */
function tokenFailure(error: unknown, grant: string, response: Response): SignInError {
  const refused = (code: string, description?: string) =>
    new SignInError(`The token endpoint refused ${grant} (${code}${description ? `: ${description}` : ""})`);
  if (error instanceof oauth.ResponseBodyError) {
    return refused(error.error, error.error_description);
  }
  if (error instanceof oauth.WWWAuthenticateChallengeError) {
    const parameters = error.cause[0]?.parameters;
    return refused(parameters?.error ?? `HTTP ${response.status}`, parameters?.error_description);
  }
  if (response.status !== 200) {
    return refused(`HTTP ${response.status}`);
  }
  const body = (error as { cause?: { body?: Record<string, unknown> } } | undefined)?.cause?.body;
  if (body && typeof body.access_token !== "string") {
    return new SignInError("The token endpoint's answer has no access token");
  }
  return new SignInError(`The token endpoint's answer is not usable: ${messageOf(error)}`);
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

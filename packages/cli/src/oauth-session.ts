/** The OAuth side of a stored sign-in, over oauth4webapi: where a server says to sign in, its authorization server's metadata, and the access token kept fresh. */
import type { AccessTokenProvider } from "@otc/client";
import { createClient } from "@otc/client";
import * as oauth from "oauth4webapi";
import { resourceKey, type StoredSignIn, withCredentialsLock } from "./credentials.js";

/** A sign-in that cannot go on: the user must run `otc login` (again). Its message says so. */
export class SignInError extends Error {
  override name = "SignInError";
}

/** A sign-in step that could not reach its server (the Tool Server or the authorization server). */
export class SignInUnreachableError extends SignInError {
  override name = "SignInUnreachableError";
}

/** fetch's own failure (undici's "fetch failed", why in its cause): the server was not reached. */
function isNetworkFailure(error: unknown): boolean {
  return error instanceof TypeError && error.message === "fetch failed";
}

/** A SignInError for `error`, of the unreachable kind when the server was not reached. */
function failure(message: string, error: unknown): SignInError {
  const Kind = isNetworkFailure(error) ? SignInUnreachableError : SignInError;
  return new Kind(`${message}: ${oauthMessage(error)}`, { cause: error });
}

/** The time `otc` reads, and the timers it sets: a test's manual clock stands in for them. */
export interface Clock {
  now(): number;
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(timer: unknown): void;
}

/** The wall clock. */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (timer) => clearTimeout(timer as ReturnType<typeof setTimeout>),
};

/** A loopback host: the one place plain http is allowed for OAuth (a local server, a test's authorization server). */
export function isLoopback(url: string | URL): boolean {
  const { hostname } = new URL(url);
  return hostname === "localhost" || hostname === "[::1]" || /^127(\.\d{1,3}){3}$/.test(hostname);
}

/** What {@link requestOptions} gives: the signal, and oauth4webapi's switch for plain http. */
export interface RequestOptions {
  signal?: AbortSignal;
  [oauth.allowInsecureRequests]?: boolean;
}

/** The options of every oauth4webapi request to `url`: http allowed for loopback only, and the caller's signal. */
export function requestOptions(url: string | URL, signal?: AbortSignal): RequestOptions {
  const options: RequestOptions = signal ? { signal } : {};
  if (isLoopback(url)) {
    options[oauth.allowInsecureRequests] = true;
  }
  return options;
}

/** Refuses an http:// URL that is not loopback: tokens and codes travel only over TLS. */
function checkScheme(url: string, what: string): void {
  const { protocol } = new URL(url);
  if (protocol !== "https:" && !(protocol === "http:" && isLoopback(url))) {
    throw new SignInError(`${what} (${url}) must be an https:// URL (http:// only on a loopback address)`);
  }
}

/** What an oauth4webapi error says, in one line, without the response body it may carry. */
export function oauthMessage(error: unknown): string {
  if (error instanceof oauth.ResponseBodyError) {
    return `${error.error}${error.error_description ? ` (${error.error_description})` : ""}`;
  }
  if (error instanceof oauth.AuthorizationResponseError) {
    return `${error.error}${error.error_description ? ` (${error.error_description})` : ""}`;
  }
  if (isNetworkFailure(error) && (error as Error).cause instanceof Error) {
    return `${(error as Error).message} (${((error as Error).cause as Error).message})`;
  }
  return error instanceof Error ? error.message : String(error);
}

/**
 * The protected resource metadata (RFC 9728) of the server at `serverUrl`: from the URL its discovery document names
 * (`extension_info.oauth.resource_metadata`), else the well-known path. Its `resource` must be `serverUrl`: a token
 * is asked for the server it will be sent to, never for another one a server names.
 */
export async function discoverResource(serverUrl: string, signal?: AbortSignal): Promise<oauth.ResourceServer> {
  const expected = new URL(resourceKey(serverUrl));
  let metadataUrl: string | undefined;
  try {
    // One attempt: a server that cannot be reached is said so at once, by the request below.
    const client = createClient({ baseUrl: serverUrl, retry: { maxAttempts: 1 } });
    const discovery = await client.discover(signal ? { signal } : {});
    metadataUrl = discovery.extension_info?.oauth?.resource_metadata;
  } catch (error) {
    if (signal?.aborted) {
      throw error;
    }
    // A server without discovery may still serve the well-known document.
  }
  let response: Response;
  try {
    if (metadataUrl !== undefined) {
      checkScheme(metadataUrl, "the server's resource metadata URL");
      response = await fetch(metadataUrl, {
        headers: { accept: "application/json" },
        redirect: "manual",
        ...(signal ? { signal } : {}),
      });
    } else {
      response = await oauth.resourceDiscoveryRequest(expected, requestOptions(expected, signal));
    }
  } catch (error) {
    if (error instanceof SignInError || signal?.aborted) {
      throw error;
    }
    throw failure(`cannot read the resource metadata of ${serverUrl}`, error);
  }
  if (response.status === 404) {
    await response.body?.cancel();
    throw new SignInError(
      `${serverUrl} offers no OAuth sign-in (no protected resource metadata): use --api-key or --jwt-secret`,
    );
  }
  try {
    const metadata = await oauth.processResourceDiscoveryResponse(expected, response);
    if (!Array.isArray(metadata.authorization_servers) || typeof metadata.authorization_servers[0] !== "string") {
      throw new SignInError(`${serverUrl}'s resource metadata names no authorization server`);
    }
    return metadata;
  } catch (error) {
    if (error instanceof SignInError) {
      throw error;
    }
    if (error instanceof oauth.OperationProcessingError && error.code === oauth.JSON_ATTRIBUTE_COMPARISON) {
      const named = (error.cause as { body?: { resource?: unknown } } | undefined)?.body?.resource;
      throw new SignInError(
        `the server at ${serverUrl} says its canonical URL is ${String(named)}: sign in to that URL (otc login ${String(named)})`,
      );
    }
    throw new SignInError(`${serverUrl}'s resource metadata is not usable: ${oauthMessage(error)}`, { cause: error });
  }
}

/** The metadata of the authorization server `issuer`: RFC 8414's document, else OpenID Connect's; its issuer checked. */
export async function discoverIssuer(issuer: string, signal?: AbortSignal): Promise<oauth.AuthorizationServer> {
  checkScheme(issuer, "the authorization server");
  const url = new URL(issuer);
  let lastError: unknown;
  for (const algorithm of ["oauth2", "oidc"] as const) {
    try {
      const response = await oauth.discoveryRequest(url, { ...requestOptions(url, signal), algorithm });
      if (response.status === 404 && algorithm === "oauth2") {
        await response.body?.cancel();
        continue;
      }
      return await oauth.processDiscoveryResponse(url, response);
    } catch (error) {
      if (signal?.aborted) {
        throw error;
      }
      lastError = error;
    }
  }
  throw failure(`cannot read the metadata of the authorization server ${issuer}`, lastError);
}

/** A token response as the sign-in keeps it; the refresh token kept when a refresh gives none (no rotation). */
export function signInFrom(
  base: Pick<StoredSignIn, "resource" | "issuer" | "client_id" | "refresh_token" | "scope">,
  tokens: oauth.TokenEndpointResponse,
  now: number,
): StoredSignIn {
  if (tokens.token_type !== "bearer") {
    throw new SignInError(`the authorization server issued a ${tokens.token_type} token; otc sends bearer tokens only`);
  }
  const refreshToken = tokens.refresh_token ?? base.refresh_token;
  const scope = tokens.scope ?? base.scope;
  return {
    resource: base.resource,
    issuer: base.issuer,
    client_id: base.client_id,
    access_token: tokens.access_token,
    ...(refreshToken !== undefined ? { refresh_token: refreshToken } : {}),
    ...(typeof tokens.expires_in === "number"
      ? { expires_at: new Date(now + tokens.expires_in * 1000).toISOString() }
      : {}),
    ...(scope !== undefined ? { scope } : {}),
  };
}

/** How long before its expiry a stored access token is refreshed rather than sent. */
export const REFRESH_MARGIN_MS = 30_000;

/** What {@link storedSignInProvider} takes. */
export interface StoredSignInOptions {
  /** Where the credentials file is (OTC_CONFIG_DIR, XDG_CONFIG_HOME). */
  env: Record<string, string | undefined>;
  /** The sign-in as read from the file. */
  signIn: StoredSignIn;
  /** Default: the wall clock. */
  now?: () => number;
}

/**
 * An AccessTokenProvider over a stored sign-in: the stored access token while it is not about to expire, else (and
 * after a 401) a refresh with the refresh token, whose result (the rotated refresh token too) is stored. Concurrent
 * asks share one refresh; across otc processes the refresh runs under the credentials file's lock, and one that
 * finds the file renewed meanwhile by another process takes that token instead of refreshing again. A refresh that
 * fails, or a sign-in without a refresh token, is a SignInError telling the user to run `otc login` again.
 *
 * @example
 * const signIn = await findSignIn(process.env, "https://tools.example.com");
 * const client = createClient({ baseUrl, ...(signIn ? { accessToken: storedSignInProvider({ env, signIn }) } : {}) });
 */
export function storedSignInProvider(options: StoredSignInOptions): AccessTokenProvider {
  const { env } = options;
  const now = options.now ?? Date.now;
  let current = options.signIn;
  let refreshing: Promise<string> | undefined;
  const again = `run otc login ${current.resource} again`;
  const fresh = (signIn: StoredSignIn) =>
    signIn.expires_at === undefined || Date.parse(signIn.expires_at) - now() > REFRESH_MARGIN_MS;

  const key = resourceKey(current.resource);
  // Under the credentials file's lock: another otc renewing this sign-in at the same time waits, then finds the
  // tokens this one stored instead of spending the refresh token again (which a rotating server punishes).
  const refresh = (refused: string | undefined, signal: AbortSignal | undefined): Promise<string> =>
    withCredentialsLock(env, async (credentials) => {
      // Another otc may have refreshed since this one read the file: its token is taken, its refresh token not
      // reused.
      const { servers } = await credentials.read();
      const stored = Object.hasOwn(servers, key) ? servers[key] : undefined;
      if (stored && stored.access_token !== refused && stored.access_token !== current.access_token && fresh(stored)) {
        current = stored;
        return current.access_token;
      }
      if (stored) {
        current = stored;
      }
      if (current.refresh_token === undefined) {
        throw new SignInError(`the sign-in to ${current.resource} has expired and cannot be renewed: ${again}`);
      }
      const as = await discoverIssuer(current.issuer, signal);
      const client: oauth.Client = { client_id: current.client_id };
      let tokens: oauth.TokenEndpointResponse;
      try {
        const response = await oauth.refreshTokenGrantRequest(as, client, oauth.None(), current.refresh_token, {
          ...requestOptions(as.token_endpoint ?? current.issuer, signal),
          additionalParameters: { resource: current.resource },
        });
        tokens = await oauth.processRefreshTokenResponse(as, client, response);
      } catch (error) {
        if (signal?.aborted) {
          throw error;
        }
        throw new SignInError(
          `the sign-in to ${current.resource} could not be renewed (${oauthMessage(error)}): ${again}`,
          { cause: error },
        );
      }
      const renewed = signInFrom(current, tokens, now());
      current = renewed;
      await credentials.update((file) => {
        file.servers[key] = renewed;
      });
      return renewed.access_token;
    });

  const shared = (refused: string | undefined, signal: AbortSignal | undefined) => {
    refreshing ??= refresh(refused, signal).finally(() => {
      refreshing = undefined;
    });
    return refreshing;
  };

  return ({ reason, challenge, signal }) => {
    if (reason === "insufficient_scope") {
      const scopes = challenge?.scopes.length ? challenge.scopes.join(" ") : undefined;
      throw new SignInError(
        `the server needs scopes your sign-in does not hold${scopes ? ` (${scopes})` : ""}: run otc login ${current.resource}${scopes ? ` --scope "${scopes}"` : ""}`,
      );
    }
    if (reason === "initial") {
      if (refreshing) {
        return refreshing;
      }
      return fresh(current) ? current.access_token : shared(undefined, signal);
    }
    return shared(current.access_token, signal);
  };
}

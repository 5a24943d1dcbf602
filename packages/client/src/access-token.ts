/** Bearer access tokens from the app (an OAuth client, stored sign-ins): asked per request, again once after a 401 or a 403. */
import { type BearerChallenge, parseBearerChallenge } from "./bearer-challenge.js";
import { OxpAccessTokenError } from "./errors.js";
import type { OutgoingRequest } from "./guarded-fetch.js";

/** Why the client asks for a token: for a request, after a 401, or after a 403 for too few scopes. */
export type AccessTokenReason = "initial" | "unauthorized" | "insufficient_scope";

/** What the client tells an {@link AccessTokenProvider} when it asks. */
export interface AccessTokenRequest {
  /**
   * `initial`: a request is about to be sent (each request, each of its attempts): give the token you hold, quickly.
   * `unauthorized`: the server refused the token with a 401 (expired, revoked): refresh it. `insufficient_scope`:
   * the server answered 403 for too few scopes: get one that holds `challenge.scopes` (every scope the request needs,
   * to add to those you hold), signing the user in again if need be.
   */
  reason: AccessTokenReason;
  /** The 401's or 403's Bearer challenge (`scopes`, `resourceMetadata`, `error`); undefined for `initial`. */
  challenge?: BearerChallenge;
  /** Aborts with the request (the caller's signal, or the attempt's time limit). */
  signal?: AbortSignal;
}

/**
 * Where the client's access tokens come from. It owns caching and refreshing: called with `initial` for every
 * request, it should answer its cached token at once. Return the same token as before when you have no better one
 * (the client then throws the 401's or 403's error), or throw (an OxpAccessTokenError carries your error as `cause`).
 * Concurrent requests that all meet a 401 each ask with `unauthorized`: share one refresh among them.
 *
 * @example
 * let token = await signIn();
 * const accessToken: AccessTokenProvider = async ({ reason, challenge }) => {
 *   if (reason === "unauthorized") token = await refresh(token);
 *   if (reason === "insufficient_scope") token = await signIn({ scopes: challenge?.scopes });
 *   return token.access_token;
 * };
 */
export type AccessTokenProvider = (request: AccessTokenRequest) => string | Promise<string>;

/** What a token may hold: visible ASCII, no spaces (RFC 6750's b64token and every JWT fit); anything else breaks the header. */
const TOKEN_SHAPE = /^[\x21-\x7e]+$/;

/** Settles as `work` does, or rejects with the signal's reason once it aborts: a provider that ignores it holds no request. */
function unlessAborted<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) {
    return work;
  }
  if (signal.aborted) {
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

/** The provider's token for `request`, checked; its failures become OxpAccessTokenErrors, an abort stays one. */
async function ask(provider: AccessTokenProvider, request: AccessTokenRequest): Promise<string> {
  const { reason, challenge, signal } = request;
  let token: unknown;
  try {
    token = await unlessAborted(
      Promise.resolve().then(() => provider(request)),
      signal,
    );
  } catch (error) {
    if (signal?.aborted) {
      throw error;
    }
    const why = error instanceof Error ? error.message : String(error);
    throw new OxpAccessTokenError(`The accessToken provider failed (reason: ${reason}): ${why}`, reason, challenge, {
      cause: error,
    });
  }
  if (typeof token !== "string" || !TOKEN_SHAPE.test(token)) {
    throw new OxpAccessTokenError(
      `The accessToken provider gave no token (reason: ${reason}): a non-empty string of visible ASCII characters is needed`,
      reason,
      challenge,
    );
  }
  return token;
}

/** Why a refused answer calls for another token, or undefined when it does not. */
function reasonToAskAgain(response: Response, challenge: BearerChallenge | undefined): AccessTokenReason | undefined {
  if (response.status === 401) {
    return "unauthorized";
  }
  if (response.status === 403 && challenge?.error === "insufficient_scope") {
    return "insufficient_scope";
  }
  return undefined;
}

/**
 * Wraps the client's way to the network so that every request carries `Authorization: Bearer <token>` from `source`
 * (a fixed token, or a provider asked per request), and a request refused with a 401, or with a 403 for too few
 * scopes, is sent again once with the token the provider gives for that reason. Each reason is asked at most once
 * per request, so a request is sent at most three times (a 401, then a 403 for the refreshed token's scopes); a
 * provider that gives back the token just refused ends it there, with that answer. Sending again is safe: a 401
 * or 403 is answered before the server runs anything, and the request is the same one, byte for byte (for
 * POST /tools/call its body and call_id: the body was read once, and each try sends those bytes). Any other answer,
 * and the last one, is returned as it came.
 */
export function withAccessToken(
  send: (request: OutgoingRequest) => Promise<Response>,
  source: string | AccessTokenProvider,
): (request: OutgoingRequest) => Promise<Response> {
  const provider: AccessTokenProvider = typeof source === "string" ? () => source : source;
  return async (request) => {
    const { signal } = request;
    // Each try is the same request with its own headers: the body read once goes again as it is, not copied.
    const sendWith = (token: string) => {
      const headers = new Headers(request.headers);
      headers.set("Authorization", `Bearer ${token}`);
      return send({ ...request, headers });
    };
    let token = await ask(provider, { reason: "initial", signal });
    let response = await sendWith(token);
    const asked = new Set<AccessTokenReason>();
    // Only a refusal's header is read: a success costs nothing more than the token's lookup.
    while (response.status === 401 || response.status === 403) {
      const challenge = parseBearerChallenge(response.headers.get("www-authenticate"));
      const reason = reasonToAskAgain(response, challenge);
      if (reason === undefined || asked.has(reason)) {
        return response;
      }
      asked.add(reason);
      let next: string;
      try {
        next = await ask(provider, { reason, ...(challenge ? { challenge } : {}), signal });
      } catch (error) {
        await response.body?.cancel().catch(() => undefined);
        throw error;
      }
      if (next === token) {
        return response;
      }
      await response.body?.cancel().catch(() => undefined);
      token = next;
      response = await sendWith(token);
    }
    return response;
  };
}

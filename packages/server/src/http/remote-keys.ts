/** What the server fetches to check tokens (JSON Web Key Sets, an authorization server's metadata): each fetch bounded in bytes and time, paused after a failure. */
import {
  type CryptoKey,
  createRemoteJWKSet,
  customFetch,
  errors as joseErrors,
  type ProtectedHeaderParameters,
} from "jose";
import {
  type AuthorizationServer,
  allowInsecureRequests,
  discoveryRequest,
  customFetch as oauthFetch,
  processDiscoveryResponse,
} from "oauth4webapi";
import type { CoreLogger } from "../core/call-log.js";
import type { Clock } from "../core/clock.js";
import { ServerConfigError, WireError } from "../core/errors.js";

/** The largest document read: a key set of a few dozen keys with their certificates fits many times over. */
export const FETCHED_MAX_BYTES = 128 * 1024;
/** After a failed fetch, new tokens needing the document get a 503 for this long instead of another fetch. */
export const FETCH_RETRY_AFTER_SECONDS = 5;

/**
 * The parsed URL of something the server fetches to check tokens (`name` is the option it came from, for the
 * message): https, or http to a loopback address, since a key set or metadata read in the clear could be replaced.
 */
export function outboundUrlOf(raw: string, name: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ServerConfigError(`${name} is not a URL`);
  }
  if (url.protocol !== "https:" && !(url.protocol === "http:" && isLoopbackHost(url))) {
    throw new ServerConfigError(`${name} must be an https URL (http only to a loopback address)`);
  }
  if (url.username || url.password) {
    throw new ServerConfigError(`${name} must not carry credentials`);
  }
  return url;
}

/** A non-negative number from the option `name`, or its default; anything else is a ServerConfigError. */
export function nonNegativeOption(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) {
    return fallback;
  }
  if (!Number.isFinite(value) || value < 0) {
    throw new ServerConfigError(`${name} must be a non-negative number`);
  }
  return value;
}

/**
 * The timing of a {@link remoteKeySet} from its options (each named as the caller's configuration names it): the
 * refetch cooldown (default 30 s), the most a set is kept (600 s) and a fetch's time limit (3 s).
 */
export function keySetTiming(
  options: { cooldownSeconds?: number | undefined; maxAgeSeconds?: number | undefined; timeoutMs?: number | undefined },
  names: { cooldownSeconds: string; maxAgeSeconds: string; timeoutMs: string },
): { cooldownMs: number; maxAgeMs: number; timeoutMs: number } {
  return {
    cooldownMs: nonNegativeOption(options.cooldownSeconds, 30, names.cooldownSeconds) * 1000,
    maxAgeMs: nonNegativeOption(options.maxAgeSeconds, 600, names.maxAgeSeconds) * 1000,
    timeoutMs: Math.ceil(nonNegativeOption(options.timeoutMs, 3_000, names.timeoutMs)),
  };
}

/** Whether a URL's host is this machine's loopback (`localhost`, 127.x, `::1`). */
export function isLoopbackHost(url: URL): boolean {
  const host = url.hostname.replace(/^\[|\]$/g, "");
  // The URL parser writes an IPv4 host in its canonical dotted form: no other spelling of 127.x reaches here.
  return host === "localhost" || /^127(\.\d{1,3}){3}$/.test(host) || host === "::1";
}

/** The 503 for a document that cannot be read: the server's own dependency failed, not the client's token. */
export function credentialsUnavailable(what: string): WireError {
  return new WireError("unavailable", "The server cannot check credentials right now", {
    developerMessage: `The server could not fetch ${what}; retry shortly.`,
    headers: { "Retry-After": String(FETCH_RETRY_AFTER_SECONDS) },
  });
}

/** The statuses a Response cannot carry a body with. */
const NULL_BODY_STATUSES = new Set([101, 103, 204, 205, 304]);

/** Thrown by a {@link BoundedFetch} while its last failure is recent: no new request goes out. */
export class FetchBackoff extends Error {}

/** A fetch as jose's and oauth4webapi's `customFetch` options both take one. */
export type FetchLike = (href: string, init?: RequestInit) => Promise<Response>;

/** A fetch for token checks: bounded in size, and refusing to go out for a few seconds after a failure. */
export interface BoundedFetch {
  readonly fetch: FetchLike;
  /** Records a failure (once per pause): true when it is the first since the last pause ended, for one log line. */
  failed(): boolean;
}

/**
 * A fetch whose answers are read whole up to {@link FETCHED_MAX_BYTES} (past it: an error), with their status, media
 * type and challenge, and which throws {@link FetchBackoff} while a failure is recent.
 */
export function boundedFetch(clock: Clock): BoundedFetch {
  let failedUntil = 0;
  const fetchBounded: FetchLike = async (href, init) => {
    if (clock.now() < failedUntil) {
      throw new FetchBackoff();
    }
    const response = await fetch(href, init);
    // What a reader of the answer needs: its media type, and an OAuth error's challenge.
    const headers: Record<string, string> = {};
    for (const name of ["content-type", "www-authenticate"]) {
      const value = response.headers.get(name);
      if (value !== null) {
        headers[name] = value;
      }
    }
    if (!response.body || NULL_BODY_STATUSES.has(response.status)) {
      await response.body?.cancel();
      return new Response(null, { status: response.status === 200 ? 502 : response.status, headers });
    }
    const chunks: Uint8Array[] = [];
    let size = 0;
    // A reader, not `for await`: DOM's ReadableStream type (which a page's type check brings in) has no async iterator.
    const reader = response.body.getReader();
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
      size += chunk.value.byteLength;
      if (size > FETCHED_MAX_BYTES) {
        await reader.cancel().catch(() => {});
        throw new Error(`the answer is larger than ${FETCHED_MAX_BYTES} bytes`);
      }
      chunks.push(chunk.value);
    }
    const body = new Uint8Array(size);
    let offset = 0;
    for (const chunk of chunks) {
      body.set(chunk, offset);
      offset += chunk.byteLength;
    }
    // Error answers keep their bodies too: an OAuth server's error (invalid_grant) is JSON the client reads.
    return new Response(body, { status: response.status, headers });
  };
  return {
    fetch: fetchBounded,
    failed() {
      if (clock.now() < failedUntil) {
        return false;
      }
      failedUntil = clock.now() + FETCH_RETRY_AFTER_SECONDS * 1000;
      return true;
    },
  };
}

/**
 * The key set at `url` through jose's createRemoteJWKSet (caching, refetch on an unknown `kid` after the
 * cooldown), its fetch bounded in bytes and time, and paused for a few seconds after a failure.
 * `keysFor` answers the keys that may have signed a token: none for an unknown `kid`; a 503 when the
 * set cannot be read.
 */
export function remoteKeySet(
  url: URL,
  timing: { cooldownMs: number; maxAgeMs: number; timeoutMs: number },
  logger: Pick<CoreLogger, "warn"> | undefined,
  clock: Clock,
) {
  const bounded = boundedFetch(clock);
  const keySet = createRemoteJWKSet(url, {
    cooldownDuration: timing.cooldownMs,
    cacheMaxAge: timing.maxAgeMs,
    timeoutDuration: timing.timeoutMs,
    [customFetch]: bounded.fetch,
  });
  const where = `${url.origin}${url.pathname}`;

  return {
    async keysFor(header: ProtectedHeaderParameters): Promise<CryptoKey[]> {
      try {
        return [await keySet(header)];
      } catch (error) {
        if (error instanceof joseErrors.JWKSNoMatchingKey) {
          return [];
        }
        if (error instanceof joseErrors.JWKSMultipleMatchingKeys) {
          // No `kid`, several keys of its `alg`: each is tried.
          const keys: CryptoKey[] = [];
          for await (const key of error) {
            keys.push(key);
          }
          return keys;
        }
        // Logged once per failure, not once per request that waited for it.
        if (!(error instanceof FetchBackoff) && bounded.failed()) {
          const reason = error instanceof Error ? error.message : String(error);
          logger?.warn({ jwks_url: where, err: reason }, "the JWT key set could not be fetched");
        }
        throw credentialsUnavailable("the JSON Web Key Set its JWTs are verified with");
      }
    },
  };
}

/**
 * An authorization server's metadata: RFC 8414's `/.well-known/oauth-authorization-server`, else OpenID Connect's
 * `/.well-known/openid-configuration`, read with oauth4webapi through `fetch`. Its `issuer` must be `name` exactly
 * (oauth4webapi compares the two as URLs; the rule is exact, as `iss` is compared).
 */
export async function issuerMetadata(
  name: string,
  issuer: URL,
  fetch: FetchLike,
  timeoutMs: number,
): Promise<AuthorizationServer> {
  const options = {
    [oauthFetch]: fetch,
    [allowInsecureRequests]: issuer.protocol === "http:" && isLoopbackHost(issuer),
    signal: AbortSignal.timeout(timeoutMs),
  };
  let response = await discoveryRequest(issuer, { ...options, algorithm: "oauth2" });
  if (response.status === 404) {
    response = await discoveryRequest(issuer, { ...options, algorithm: "oidc" });
  }
  const metadata = await processDiscoveryResponse(issuer, response);
  if (metadata.issuer !== name) {
    throw new Error(`the metadata names the issuer ${metadata.issuer}, not ${name}`);
  }
  return metadata;
}

/**
 * `make`'s promise, made on the first call and kept while it holds; one that rejects is dropped, so that a later call
 * makes it again (a document fetched once, fetched again after a failure).
 */
export function keptUnlessFailed<T>(make: () => Promise<T>): () => Promise<T> {
  let kept: Promise<T> | undefined;
  return () => {
    if (!kept) {
      const made = make();
      kept = made;
      made.catch(() => {
        if (kept === made) {
          kept = undefined;
        }
      });
    }
    return kept;
  };
}

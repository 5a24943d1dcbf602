/** Server authentication (docs/protocol.md section 5): API keys and HS256 JWTs; any one valid credential admits. */
import { createSecretKey, hash, timingSafeEqual } from "node:crypto";
import { errors as joseErrors, jwtVerify } from "jose";
import { setBounded } from "../core/bounded-map.js";
import { ServerConfigError, WireError } from "../core/errors.js";

/** How the server authenticates clients. Both methods may be on; with neither, authentication is off. */
export interface AuthenticationOptions {
  /** Accepted API keys, sent in `OXP-API-Key` (or as a bearer token, as the draft's clients do). */
  apiKeys?: readonly string[];
  jwt?: {
    /** The shared HS256 secret. */
    secret: string;
    /** Audiences a token's `aud` may name; a token with an `aud` outside them is refused. */
    audiences?: readonly string[];
    /** How far ahead `exp` may be, in seconds. Default 900 (15 minutes). */
    maxLifetimeSeconds?: number;
    /** Clock skew allowed on `exp`/`nbf`/`iat`, in seconds. Default 60. */
    clockToleranceSeconds?: number;
  };
}

/** How many verified JWTs are remembered (each until its `exp`), so an agent's reused token is checked once. */
const VERIFIED_JWT_CACHE_SIZE = 10_000;
/** Longer tokens are verified every time, not remembered: the cache stays within a few megabytes. */
const VERIFIED_JWT_MAX_LENGTH = 2_048;

/** Who a request was admitted as; part of every idempotency key. */
export type Principal = string;

// The one-shot hash: no Hash object per request.
const digest = (value: string) => hash("sha256", value, "buffer");

function unauthorized(developerMessage: string): WireError {
  return new WireError("unauthorized", "Authentication required", {
    developerMessage,
    headers: { "WWW-Authenticate": "Bearer" },
  });
}

/** Builds the check run on every authenticated request; undefined when authentication is off. */
export function createAuthenticator(
  options: AuthenticationOptions | undefined,
): ((headers: { apiKey?: string; authorization?: string }) => Principal | Promise<Principal>) | undefined {
  const keys = (options?.apiKeys ?? []).map((key) => {
    if (key.length === 0) throw new ServerConfigError("API keys must not be empty");
    return digest(key);
  });
  const jwt = options?.jwt;
  if (jwt && jwt.secret.length === 0) throw new ServerConfigError("The JWT secret must not be empty");
  if (keys.length === 0 && !jwt) return undefined;
  // The key is prepared once; jose would otherwise import the raw secret on every verification.
  const secret = jwt ? createSecretKey(Buffer.from(jwt.secret, "utf8")) : undefined;
  /** Tokens that passed every check, with their principal and `exp`: a hit only needs `exp` checked again. */
  const verified = new Map<string, { principal: Principal; exp: number }>();
  const maxLifetime = jwt?.maxLifetimeSeconds ?? 900;
  const tolerance = jwt?.clockToleranceSeconds ?? 60;
  const audiences = new Set(jwt?.audiences ?? []);

  /** The index of the matching API key, comparing against every key in constant time. */
  const matchKey = (candidate: string): number => {
    const hashed = digest(candidate);
    let found = -1;
    keys.forEach((key, index) => {
      if (timingSafeEqual(key, hashed) && found === -1) found = index;
    });
    return found;
  };

  /** A remembered token's principal, while its `exp` holds; undefined when it is not remembered. */
  const knownJwt = (token: string): Principal | undefined => {
    const known = verified.get(token);
    if (!known) return undefined;
    // Every other check depends only on the token; `exp` is the one that time can break.
    if (known.exp > Date.now() / 1000 - tolerance) return known.principal;
    verified.delete(token);
    throw unauthorized("the JWT has expired");
  };

  const verifyNewJwt = async (token: string): Promise<Principal> => {
    if (!secret) throw unauthorized("JWT authentication is not enabled on this server");
    let payload: Awaited<ReturnType<typeof jwtVerify>>["payload"];
    try {
      ({ payload } = await jwtVerify(token, secret, {
        algorithms: ["HS256"],
        requiredClaims: ["exp"],
        clockTolerance: tolerance,
      }));
    } catch (error) {
      const reason =
        error instanceof joseErrors.JWTExpired
          ? "the JWT has expired"
          : error instanceof joseErrors.JWTClaimValidationFailed
            ? `the JWT's ${error.claim} claim is not acceptable`
            : "the bearer token is not a valid HS256 JWT signed with this server's secret";
      throw unauthorized(reason);
    }
    const now = Math.floor(Date.now() / 1000);
    if (typeof payload.exp !== "number" || payload.exp - now > maxLifetime + tolerance) {
      throw unauthorized(`the JWT's exp is more than ${maxLifetime} seconds ahead`);
    }
    if (payload.aud !== undefined) {
      const named = Array.isArray(payload.aud) ? payload.aud : [payload.aud];
      if (!named.some((aud) => audiences.has(aud))) throw unauthorized("the JWT's aud is not an allowed audience");
    }
    const principal = `jwt:${typeof payload.sub === "string" ? payload.sub : ""}`;
    if (token.length <= VERIFIED_JWT_MAX_LENGTH) {
      setBounded(verified, token, { principal, exp: payload.exp }, VERIFIED_JWT_CACHE_SIZE);
    }
    return principal;
  };

  // Throws (synchronously, or through the promise of a first-seen JWT) a 401 for refused credentials.
  return ({ apiKey, authorization }) => {
    if (apiKey !== undefined && keys.length > 0) {
      const index = matchKey(apiKey);
      if (index !== -1) return `api-key:${index}`;
    }
    const bearer = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization ?? "")?.[1];
    if (bearer !== undefined) {
      // A remembered JWT first (synchronously: the common case costs no hash and no promise). Only a token that
      // matched no API key is ever remembered, and the keys never change: the answer is the one the keys would give.
      const known = jwt ? knownJwt(bearer) : undefined;
      if (known !== undefined) return known;
      if (keys.length > 0) {
        const index = matchKey(bearer);
        if (index !== -1) return `api-key:${index}`;
      }
      if (jwt) return verifyNewJwt(bearer);
    }
    if (apiKey !== undefined || bearer !== undefined) throw unauthorized("the credentials sent are not valid");
    throw unauthorized("send an API key in OXP-API-Key or a bearer JWT in Authorization");
  };
}

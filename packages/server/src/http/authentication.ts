/** Server authentication (docs/protocol.md section 5): API keys and HS256 JWTs; any one valid credential admits. */
import { createHash, timingSafeEqual } from "node:crypto";
import { errors as joseErrors, jwtVerify } from "jose";
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

/** Who a request was admitted as; part of every idempotency key. */
export type Principal = string;

const digest = (value: string) => createHash("sha256").update(value).digest();

function unauthorized(developerMessage: string): WireError {
  return new WireError("unauthorized", "Authentication required", {
    developerMessage,
    headers: { "WWW-Authenticate": "Bearer" },
  });
}

/** Builds the check run on every authenticated request; undefined when authentication is off. */
export function createAuthenticator(
  options: AuthenticationOptions | undefined,
): ((headers: { apiKey?: string; authorization?: string }) => Promise<Principal>) | undefined {
  const keys = (options?.apiKeys ?? []).map((key) => {
    if (key.length === 0) throw new ServerConfigError("API keys must not be empty");
    return digest(key);
  });
  const jwt = options?.jwt;
  if (jwt && jwt.secret.length === 0) throw new ServerConfigError("The JWT secret must not be empty");
  if (keys.length === 0 && !jwt) return undefined;
  const secret = jwt ? new TextEncoder().encode(jwt.secret) : undefined;
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

  const verifyJwt = async (token: string): Promise<Principal> => {
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
    return `jwt:${typeof payload.sub === "string" ? payload.sub : ""}`;
  };

  return async ({ apiKey, authorization }) => {
    if (apiKey !== undefined && keys.length > 0) {
      const index = matchKey(apiKey);
      if (index !== -1) return `api-key:${index}`;
    }
    const bearer = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization ?? "")?.[1];
    if (bearer !== undefined) {
      if (keys.length > 0) {
        const index = matchKey(bearer);
        if (index !== -1) return `api-key:${index}`;
      }
      if (jwt) return verifyJwt(bearer);
    }
    if (apiKey !== undefined || bearer !== undefined) throw unauthorized("the credentials sent are not valid");
    throw unauthorized("send an API key in OXP-API-Key or a bearer JWT in Authorization");
  };
}

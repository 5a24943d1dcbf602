/**
 * Server authentication (docs/protocol.md section 5): API keys, HS256 JWTs and public-key JWTs; any one valid
 * credential admits. Web APIs only (Web Crypto, fetch), so that it runs on every runtime the fetch handler does.
 */
import { constantTimeEqual, parseBearer } from "@otc/types";
import {
  type CryptoKey,
  decodeProtectedHeader,
  type JWTPayload,
  type JWTVerifyOptions,
  errors as joseErrors,
  jwtVerify,
  type ProtectedHeaderParameters,
} from "jose";
import { setBounded } from "../core/bounded-map.js";
import { type Clock, systemClock } from "../core/clock.js";
import { ServerConfigError, WireError } from "../core/errors.js";
import type { OrPromise } from "../core/fast-path.js";
import { sha256Base64url } from "../core/fingerprint.js";
import type { CoreLogger } from "../core/oxp-core.js";
import type { OAuthGrant, OAuthOptions, OAuthResource } from "./oauth.js";
import { PUBLIC_KEY_ALGORITHMS, type PublicKeyAlgorithm, publicKeyOf } from "./public-key.js";
import { keySetTiming, outboundUrlOf, remoteKeySet } from "./remote-keys.js";

/** The JWT algorithms a server can accept: HS256 with the shared secret, the others with public keys. */
export type JwtAlgorithm = "HS256" | "RS256" | "ES256" | "EdDSA";

/** How the server authenticates clients. Several methods may be on at once; with none, authentication is off. */
export interface AuthenticationOptions {
  /**
   * The oauth extension (docs/protocol.md 9.6): OAuth 2.1 access tokens from these authorization servers, with
   * scopes, a user bound to the token's subject, and the protected resource metadata that says where to sign in.
   */
  oauth?: OAuthOptions;
  /** Accepted API keys, sent in `OXP-API-Key` (or as a bearer token, as the draft's clients do). */
  apiKeys?: readonly string[];
  /** JWTs, sent as bearer tokens. At least one of `secret`, `publicKeys` and `jwksUrl`; several may be on at once. */
  jwt?: {
    /** The shared HS256 secret (the protocol's baseline). */
    secret?: string;
    /**
     * Public keys in PEM (SPKI, `-----BEGIN PUBLIC KEY-----`; a PKCS#1 `RSA PUBLIC KEY` or an X.509 `CERTIFICATE`,
     * whose key is taken, also do). Each key verifies one algorithm, from its type:
     * RSA (2048 bits or more) RS256, EC P-256 ES256, Ed25519 EdDSA. Every key of a token's `alg` is tried.
     */
    publicKeys?: readonly string[];
    /**
     * A JSON Web Key Set's URL (https; http only to a loopback address), e.g. an identity provider's
     * `jwks_uri`. Fetched on the first token, cached, fetched again for an unknown `kid` (at most once per
     * `jwksCooldownSeconds`) or once the set is older than `jwksMaxAgeSeconds`. Requires `issuer`.
     */
    jwksUrl?: string;
    /** How long after a fetch an unknown `kid` cannot cause another, in seconds. Default 30. */
    jwksCooldownSeconds?: number;
    /** How long a fetched key set is used before it is fetched again, in seconds. Default 600. */
    jwksMaxAgeSeconds?: number;
    /** How long a fetch of the key set may take, body included, in milliseconds. Default 3000. */
    jwksTimeoutMs?: number;
    /**
     * The `iss` a token verified with a public key must carry (one, or any of a list); such a token without
     * `iss` is refused. HS256 tokens are the secret holder's own and are not checked against it.
     */
    issuer?: string | readonly string[];
    /** The algorithms accepted. Default: HS256 with a `secret`, RS256, ES256 and EdDSA with public keys. */
    algorithms?: readonly JwtAlgorithm[];
    /** The claim naming the client, a non-empty string of at most 256 characters. Default `sub`. */
    principalClaim?: string;
    /**
     * Audiences a token's `aud` may name; a token with an `aud` outside them is refused, and so is one without
     * `aud` while `requireAudience` holds. Without audiences, a token with any `aud` is refused.
     */
    audiences?: readonly string[];
    /**
     * With `audiences` configured, a token without `aud` is refused. Default true; `false` admits it, as OXP 1.0
     * does (its `aud` is checked only when present), e.g. for clients that cannot set one yet.
     */
    requireAudience?: boolean;
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
/** The longest principal claim and `iss` admitted, as for the protocol's other identifiers. */
const CLAIM_MAX_LENGTH = 256;
/**
 * What no principal holds: C0, DEL and C1 controls, and the bidirectional controls (U+061C, U+200E, U+200F,
 * U+202A-U+202E, U+2066-U+2069), which make a principal read differently wherever it is shown or logged. A
 * principal is a key part in stores and may be logged.
 */
const UNSAFE_IN_PRINCIPAL = /[\p{Cc}\p{Bidi_Control}]/u;

/** Who a request was admitted as; part of every idempotency key. */
export type Principal = string;

/** A request's admission: who it is, and what its OAuth access token grants when one admitted it (9.6). */
export interface Admission {
  readonly principal: Principal;
  /** Set for an OAuth access token alone: API keys and section 5's JWTs are not limited by scopes. */
  readonly grant?: OAuthGrant;
}

/** The admission of a request when authentication is off. */
export const ANONYMOUS: Admission = Object.freeze({ principal: "anonymous" });

/**
 * The payload when `key` signed the token and its claims hold under `options`; undefined when another key signed it
 * (the caller tries the next); a 401 naming what failed otherwise. `kind` names the token in messages.
 */
export async function verifiedPayload(
  token: string,
  key: CryptoKey,
  options: JWTVerifyOptions,
  kind: "JWT" | "access token",
): Promise<JWTPayload | undefined> {
  try {
    return (await jwtVerify(token, key, options)).payload;
  } catch (error) {
    if (error instanceof joseErrors.JWSSignatureVerificationFailed) {
      return undefined;
    }
    throw unauthorized(
      error instanceof joseErrors.JWTExpired
        ? `the ${kind} has expired`
        : error instanceof joseErrors.JWTClaimValidationFailed
          ? `the ${kind}'s ${error.claim} claim is missing or not acceptable`
          : `the bearer token is not a valid ${kind}`,
    );
  }
}

/** Whether a bearer token is shaped as a JWS JWT (its header reads), without verifying anything. */
function isJwt(token: string): boolean {
  try {
    decodeProtectedHeader(token);
    return true;
  } catch {
    return false;
  }
}

/** The 401 of refused credentials (docs/protocol.md 5, `[auth.401-response]`). */
export function unauthorized(developerMessage: string): WireError {
  return new WireError("unauthorized", "Authentication required", {
    developerMessage,
    headers: { "WWW-Authenticate": "Bearer" },
  });
}

/** Up to this many API keys, a key is compared with each; past it, found by its digest. */
const KEYS_COMPARED = 8;

/**
 * Builds the check run on every authenticated request; undefined when authentication is off. Throws a
 * ServerConfigError for unusable options; `logger` hears of a key set that cannot be fetched. A JWT's `exp`, `nbf`
 * and `iat`, a remembered token's expiry and the key set's pause after a failure follow `clock` (jose's own cache
 * of a key set does not: it reads `Date.now()`).
 */
export function createAuthenticator(
  options: AuthenticationOptions | undefined,
  logger?: Pick<CoreLogger, "warn">,
  clock: Clock = systemClock,
  oauth?: OAuthResource,
): ((headers: { apiKey?: string; authorization?: string }) => OrPromise<Admission>) | undefined {
  const keys = [...(options?.apiKeys ?? [])];
  if (keys.some((key) => key.length === 0)) {
    throw new ServerConfigError("API keys must not be empty");
  }
  const keyAdmissions = keys.map((_key, index): Admission => Object.freeze({ principal: `api-key:${index}` }));
  const jwt = options?.jwt;
  if (keys.length === 0 && !jwt && !oauth) {
    return undefined;
  }
  if (jwt?.secret !== undefined && jwt.secret.length === 0) {
    throw new ServerConfigError("The JWT secret must not be empty");
  }
  const secret = jwt?.secret ? new TextEncoder().encode(jwt.secret) : undefined;
  // Imported once, for the first HS256 token: jose would otherwise import the raw secret on every verification.
  let secretKey: Promise<CryptoKey> | undefined;
  const hmacKey = (bytes: Uint8Array<ArrayBuffer>) =>
    (secretKey ??= crypto.subtle.importKey("raw", bytes, { name: "HMAC", hash: "SHA-256" }, false, ["verify"]));
  const publicKeys = (jwt?.publicKeys ?? []).map(publicKeyOf);
  const jwksUrl = jwt?.jwksUrl === undefined ? undefined : outboundUrlOf(jwt.jwksUrl, "jwt.jwksUrl");
  if (jwt && !secret && publicKeys.length === 0 && !jwksUrl) {
    throw new ServerConfigError("jwt needs a secret, publicKeys or a jwksUrl");
  }
  const withPublicKeys = publicKeys.length > 0 || jwksUrl !== undefined;

  const issuers = jwt?.issuer === undefined ? undefined : [jwt.issuer].flat();
  if (
    issuers?.length === 0 ||
    issuers?.some((iss) => typeof iss !== "string" || iss.length === 0 || iss.length > CLAIM_MAX_LENGTH)
  ) {
    throw new ServerConfigError(
      `jwt.issuer must be a string of 1 to ${CLAIM_MAX_LENGTH} characters, or a non-empty list of them`,
    );
  }
  if (issuers && !withPublicKeys) {
    throw new ServerConfigError("jwt.issuer checks tokens signed with a public key: set publicKeys or jwksUrl");
  }
  if (jwksUrl && !issuers) {
    // A provider's key set signs tokens for every one of its tenants: `iss` says whose this one is.
    throw new ServerConfigError("jwt.jwksUrl needs jwt.issuer, the iss its tokens must carry");
  }

  const algorithms = new Set<string>(
    jwt?.algorithms ?? [...(secret ? ["HS256"] : []), ...(withPublicKeys ? PUBLIC_KEY_ALGORITHMS : [])],
  );
  for (const alg of algorithms) {
    // `none`, and HS256 with anything but the secret, are never accepted: nothing here can name them.
    if (alg !== "HS256" && !(PUBLIC_KEY_ALGORITHMS as readonly string[]).includes(alg)) {
      throw new ServerConfigError(`jwt.algorithms: ${alg} is not supported (HS256, RS256, ES256, EdDSA)`);
    }
    if (alg === "HS256" ? !secret : !withPublicKeys) {
      throw new ServerConfigError(
        `jwt.algorithms: ${alg} needs ${alg === "HS256" ? "a secret" : "publicKeys or a jwksUrl"}`,
      );
    }
  }
  if (jwt && algorithms.size === 0) {
    throw new ServerConfigError("jwt.algorithms must not be empty");
  }
  if (secret && !algorithms.has("HS256")) {
    throw new ServerConfigError("jwt.secret is set but HS256 is not in jwt.algorithms");
  }
  publicKeys.forEach(({ alg }, index) => {
    if (!algorithms.has(alg)) {
      throw new ServerConfigError(`jwt.publicKeys[${index}] is an ${alg} key, and ${alg} is not in jwt.algorithms`);
    }
  });

  const principalClaim = jwt?.principalClaim ?? "sub";
  if (typeof principalClaim !== "string" || principalClaim.length === 0) {
    throw new ServerConfigError("jwt.principalClaim must be a non-empty claim name");
  }
  const keySet =
    jwksUrl &&
    remoteKeySet(
      jwksUrl,
      keySetTiming(
        {
          cooldownSeconds: jwt?.jwksCooldownSeconds,
          maxAgeSeconds: jwt?.jwksMaxAgeSeconds,
          timeoutMs: jwt?.jwksTimeoutMs,
        },
        {
          cooldownSeconds: "jwt.jwksCooldownSeconds",
          maxAgeSeconds: "jwt.jwksMaxAgeSeconds",
          timeoutMs: "jwt.jwksTimeoutMs",
        },
      ),
      logger,
      clock,
    );

  /** Tokens that passed every check, with their admission and `exp`: a hit only needs `exp` checked again. */
  const verified = new Map<string, { admission: Admission; exp: number }>();
  const maxLifetime = jwt?.maxLifetimeSeconds ?? 900;
  const tolerance = jwt?.clockToleranceSeconds ?? 60;
  const audiences = new Set(jwt?.audiences ?? []);
  if (jwt?.requireAudience !== undefined && typeof jwt.requireAudience !== "boolean") {
    throw new ServerConfigError("jwt.requireAudience must be true or false");
  }
  // OXP 1.0 checks `aud` only when present; a server that names its audiences wants tokens minted for it.
  const audienceRequired = audiences.size > 0 && jwt?.requireAudience !== false;

  // Past a few keys, a key is found by its digest: one hash a request, where comparing with each key in turn costs
  // in proportion to the keys (101 keys: 4 us a request). A lookup by digest tells a timing attacker nothing of a
  // key's characters; the first of two equal keys is the one found, as in the comparisons.
  const byDigest = keys.length > KEYS_COMPARED ? new Map<string, number>() : undefined;
  if (byDigest) {
    keys.forEach((key, index) => {
      const digest = sha256Base64url(key);
      if (!byDigest.has(digest)) {
        byDigest.set(digest, index);
      }
    });
  }

  /** The index of the matching API key: by its digest, or comparing against every key in constant time. */
  const matchKey = (candidate: string): number => {
    if (byDigest) {
      return byDigest.get(sha256Base64url(candidate)) ?? -1;
    }
    let found = -1;
    keys.forEach((key, index) => {
      if (constantTimeEqual(candidate, key) && found === -1) {
        found = index;
      }
    });
    return found;
  };

  /** A remembered token's admission, while its `exp` holds; undefined when it is not remembered. */
  const knownJwt = (token: string): Admission | undefined => {
    const known = verified.get(token);
    if (!known) {
      return undefined;
    }
    // Every other check depends only on the token; `exp` is the one that time can break.
    if (known.exp > clock.now() / 1000 - tolerance) {
      return known.admission;
    }
    verified.delete(token);
    throw unauthorized("the JWT has expired");
  };

  const verifyWith = (token: string, key: CryptoKey, options: JWTVerifyOptions) =>
    verifiedPayload(token, key, { ...options, currentDate: new Date(clock.now()) }, "JWT");

  /** The verified payload of a public-key token: this server's PEM keys of its `alg` first, then the key set's. */
  const verifyWithPublicKey = async (
    token: string,
    header: ProtectedHeaderParameters,
    alg: PublicKeyAlgorithm,
  ): Promise<JWTPayload | undefined> => {
    const options: JWTVerifyOptions = {
      algorithms: [alg],
      requiredClaims: ["exp"],
      clockTolerance: tolerance,
      ...(issuers ? { issuer: issuers } : {}),
    };
    for (const entry of publicKeys) {
      if (entry.alg !== alg) {
        continue;
      }
      const payload = await verifyWith(token, await entry.key(), options);
      if (payload) {
        return payload;
      }
    }
    for (const key of keySet ? await keySet.keysFor(header) : []) {
      const payload = await verifyWith(token, key, options);
      if (payload) {
        return payload;
      }
    }
    return undefined;
  };

  /** Who a verified payload names: its principal claim, qualified by `iss` for a public-key token. */
  const principalOf = (payload: JWTPayload, publicKey: boolean, claim = principalClaim): Principal => {
    const name = payload[claim];
    if (typeof name !== "string" || name.length === 0) {
      throw unauthorized(`the JWT has no ${claim} claim: a non-empty string naming the client is required`);
    }
    if (name.length > CLAIM_MAX_LENGTH) {
      throw unauthorized(`the JWT's ${claim} claim is longer than ${CLAIM_MAX_LENGTH} characters`);
    }
    if (UNSAFE_IN_PRINCIPAL.test(name)) {
      throw unauthorized(`the JWT's ${claim} claim has control or bidirectional characters`);
    }
    // The secret holder names its clients alone: `jwt:<sub>`, as the protocol's HS256 baseline has it.
    if (!publicKey) {
      return `jwt:${name}`;
    }
    const { iss } = payload;
    if (iss !== undefined && (typeof iss !== "string" || iss.length > CLAIM_MAX_LENGTH)) {
      throw unauthorized(`the JWT's iss claim must be a string of at most ${CLAIM_MAX_LENGTH} characters`);
    }
    // Part of the principal as the subject is (an issuer outside jwt.issuer gets here when none is configured).
    if (iss !== undefined && UNSAFE_IN_PRINCIPAL.test(iss)) {
      throw unauthorized("the JWT's iss claim has control or bidirectional characters");
    }
    // Each issuer names its own clients: two issuers' `alice` are two principals, and adding an issuer
    // renames nobody. JSON keeps the pair unambiguous; the prefix keeps it apart from `jwt:` and `api-key:`.
    return `jwt-iss:${JSON.stringify([iss ?? null, name])}`;
  };

  /** Remembers a verified token's admission until its `exp`, unless the token is too long to keep. */
  const remember = (token: string, admission: Admission, exp: number): Admission => {
    // A token signed with a key its set has since dropped stays admitted until its `exp`.
    if (token.length <= VERIFIED_JWT_MAX_LENGTH) {
      setBounded(verified, token, { admission, exp }, VERIFIED_JWT_CACHE_SIZE);
    }
    return admission;
  };

  /** An OAuth access token (docs/protocol.md 9.6): its issuer's checks, then (`iss`, `sub`) as its principal. */
  const verifyAccessToken = async (resource: OAuthResource, token: string, issuer: string): Promise<Admission> => {
    const { payload, grant } = await resource.verify(token, issuer);
    const admission: Admission = Object.freeze({ principal: principalOf(payload, true, "sub"), grant });
    return remember(token, admission, payload.exp as number);
  };

  /**
   * An opaque access token, asked about at the authorization server (docs/protocol.md 9.6, `[oauth.introspection]`):
   * the same principal and grant as a JWT of that issuer and subject. Never remembered here: the introspection cache
   * keeps it for a short while only, so that a revoked token stops working.
   */
  const introspectAccessToken = async (resource: OAuthResource, token: string): Promise<Admission> => {
    const { subject, grant } = await resource.introspect(token);
    return Object.freeze({ principal: principalOf({ iss: grant.issuer, sub: subject }, true, "sub"), grant });
  };

  const verifyNewJwt = async (token: string): Promise<Admission> => {
    let header: ProtectedHeaderParameters;
    try {
      header = decodeProtectedHeader(token);
    } catch {
      throw unauthorized("the bearer token is not a valid JWT");
    }
    const { alg } = header;
    // The token's `alg` picks the key kind, and only among those configured: an HS256 token is only ever
    // checked with the secret, never with a public key taken as one.
    if (typeof alg !== "string" || !algorithms.has(alg)) {
      throw unauthorized(`the JWT's alg is not one this server accepts (${[...algorithms].join(", ")})`);
    }
    const publicKey = alg !== "HS256";
    const payload = publicKey
      ? await verifyWithPublicKey(token, header, alg as PublicKeyAlgorithm)
      : secret &&
        (await verifyWith(token, await hmacKey(secret), {
          algorithms: ["HS256"],
          requiredClaims: ["exp"],
          clockTolerance: tolerance,
        }));
    if (!payload) {
      throw unauthorized(
        publicKey
          ? "the JWT's signature does not verify with any of this server's public keys"
          : "the JWT's signature does not verify with this server's secret",
      );
    }
    const now = Math.floor(clock.now() / 1000);
    if (typeof payload.exp !== "number" || payload.exp - now > maxLifetime + tolerance) {
      throw unauthorized(`the JWT's exp is more than ${maxLifetime} seconds ahead`);
    }
    if (payload.aud !== undefined) {
      const named = Array.isArray(payload.aud) ? payload.aud : [payload.aud];
      if (!named.some((aud) => audiences.has(aud))) {
        throw unauthorized("the JWT's aud is not an allowed audience");
      }
    } else if (audienceRequired) {
      throw unauthorized("the JWT has no aud claim: this server requires one of its allowed audiences");
    }
    return remember(token, Object.freeze({ principal: principalOf(payload, publicKey) }), payload.exp);
  };

  // Throws (synchronously, or through the promise of a first-seen JWT) a 401 for refused credentials.
  return ({ apiKey, authorization }) => {
    if (apiKey !== undefined && keys.length > 0) {
      const index = matchKey(apiKey);
      if (index !== -1) {
        return keyAdmissions[index] as Admission;
      }
    }
    const bearer = parseBearer(authorization);
    if (bearer !== undefined) {
      // A remembered JWT first (synchronously: the common case costs no hash and no promise). Only a token that
      // matched no API key is ever remembered, and the keys never change: the answer is the one the keys would give.
      const known = jwt || oauth ? knownJwt(bearer) : undefined;
      if (known !== undefined) {
        return known;
      }
      if (keys.length > 0) {
        const index = matchKey(bearer);
        if (index !== -1) {
          return keyAdmissions[index] as Admission;
        }
      }
      // A token whose `iss` names one of the authorization servers is an access token; any other, section 5's.
      const issuer = oauth?.issuerOf(bearer);
      if (oauth && issuer !== undefined) {
        return verifyAccessToken(oauth, bearer, issuer);
      }
      // Any other token goes to introspection where it is on, but a JWT that section 5 checks: a secret holder's
      // tokens are never sent to the authorization server.
      if (oauth?.introspects && !(jwt && isJwt(bearer))) {
        return introspectAccessToken(oauth, bearer);
      }
      if (jwt) {
        return verifyNewJwt(bearer);
      }
    }
    if (apiKey !== undefined || bearer !== undefined) {
      throw unauthorized("the credentials sent are not valid");
    }
    throw unauthorized(
      oauth
        ? "send an OAuth access token (or another credential this server accepts) in Authorization"
        : "send an API key in OXP-API-Key or a bearer JWT in Authorization",
    );
  };
}

/** HS256 JWTs for server authentication: signed with jose, cached, re-signed shortly before they expire. */
import { SignJWT } from "jose";

/** How the client signs its JWTs. */
export interface JwtOptions {
  /** The secret shared with the server. */
  secret: string;
  /**
   * The `sub` claim: who is calling, e.g. `billing-agent`. Required and not empty: a server keys each
   * caller's stored results and held tokens by it (a JWT's principal), and refuses a JWT without one.
   */
  subject: string;
  /** The `aud` claim, when the server checks one. */
  audience?: string;
  /** Lifetime in seconds: at most 900 (servers refuse more), default 300. */
  ttlSeconds?: number;
}

/** Returns a function giving a valid token, signing a new one when the cached one has under 30 s (or a fifth of its life) left. */
export function jwtSigner(options: JwtOptions, now: () => number = Date.now): () => Promise<string> {
  const ttl = options.ttlSeconds ?? 300;
  if (!(ttl > 0 && ttl <= 900)) {
    throw new RangeError("jwt.ttlSeconds must be between 1 and 900 (15 minutes)");
  }
  if (options.secret.length === 0) {
    throw new RangeError("jwt.secret must not be empty");
  }
  // Checked at run time too: JavaScript callers, and `as` casts, skip the type.
  if (typeof options.subject !== "string" || options.subject.length === 0) {
    throw new RangeError("jwt.subject must be a non-empty string: servers refuse JWTs without a sub");
  }
  const key = new TextEncoder().encode(options.secret);
  const margin = Math.min(30, ttl / 5);
  let cached: { token: string; expiresAt: number } | undefined;
  let signing: Promise<string> | undefined;
  return () => {
    const seconds = now() / 1000;
    if (cached && cached.expiresAt - seconds > margin) {
      return Promise.resolve(cached.token);
    }
    signing ??= (async () => {
      const issuedAt = Math.floor(now() / 1000);
      const jwt = new SignJWT({})
        .setProtectedHeader({ alg: "HS256", typ: "JWT" })
        .setIssuedAt(issuedAt)
        .setExpirationTime(issuedAt + ttl)
        .setSubject(options.subject);
      if (options.audience !== undefined) {
        jwt.setAudience(options.audience);
      }
      const token = await jwt.sign(key);
      cached = { token, expiresAt: issuedAt + ttl };
      return token;
    })().finally(() => {
      signing = undefined;
    });
    return signing;
  };
}

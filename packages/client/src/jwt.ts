/** HS256 JWTs for server authentication: signed with jose, cached, re-signed shortly before they expire. */
import { SignJWT } from "jose";

/** How the client signs its JWTs. */
export interface JwtOptions {
  /** The secret shared with the server. */
  secret: string;
  /** The `aud` claim, when the server checks one. */
  audience?: string;
  /** Lifetime in seconds: at most 900 (servers refuse more), default 300. */
  ttlSeconds?: number;
  /** The `sub` claim, naming the agent. */
  subject?: string;
}

/** Returns a function giving a valid token, signing a new one when the cached one has under 30 s (or a fifth of its life) left. */
export function jwtSigner(options: JwtOptions, now: () => number = Date.now): () => Promise<string> {
  const ttl = options.ttlSeconds ?? 300;
  if (!(ttl > 0 && ttl <= 900)) throw new RangeError("jwt.ttlSeconds must be between 1 and 900 (15 minutes)");
  if (options.secret.length === 0) throw new RangeError("jwt.secret must not be empty");
  const key = new TextEncoder().encode(options.secret);
  const margin = Math.min(30, ttl / 5);
  let cached: { token: string; expiresAt: number } | undefined;
  let signing: Promise<string> | undefined;
  return () => {
    const seconds = now() / 1000;
    if (cached && cached.expiresAt - seconds > margin) return Promise.resolve(cached.token);
    signing ??= (async () => {
      const issuedAt = Math.floor(now() / 1000);
      const jwt = new SignJWT({})
        .setProtectedHeader({ alg: "HS256", typ: "JWT" })
        .setIssuedAt(issuedAt)
        .setExpirationTime(issuedAt + ttl);
      if (options.audience !== undefined) jwt.setAudience(options.audience);
      if (options.subject !== undefined) jwt.setSubject(options.subject);
      const token = await jwt.sign(key);
      cached = { token, expiresAt: issuedAt + ttl };
      return token;
    })().finally(() => {
      signing = undefined;
    });
    return signing;
  };
}

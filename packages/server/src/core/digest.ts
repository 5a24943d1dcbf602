/**
 * @otc/server/digest where the runtime has node:crypto (Node, Bun, Deno): SHA-256 in native code. The workerd, worker,
 * edge-light and browser export conditions select digest-web.ts instead (package.json `exports`).
 */
import { hash } from "node:crypto";

/**
 * The SHA-256 of a string's UTF-8 bytes (a lone surrogate as U+FFFD, as TextEncoder writes it), as unpadded
 * base64url (43 characters). Synchronous: it fingerprints every call that carries a call_id and tags every answer
 * that has an ETag, where Web Crypto's digest is a hop to a thread pool and back. node:crypto's one-shot `hash`
 * (Node 20.12 onward, Bun, Deno) costs 0.3 us for a fingerprint's few dozen characters and 4 us for a 3 KB answer;
 * `createHash` 0.8 us (its Hash object is most of that, more when the caches are cold, as between two requests);
 * @noble/hashes' (digest-web.ts) 4.6 and 23 us on Node.
 *
 * @example
 * sha256Base64url(""); // "47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU"
 */
export function sha256Base64url(text: string): string {
  return hash("sha256", text, "base64url");
}

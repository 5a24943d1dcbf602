/** SHA-256 and base64url for every runtime (Node, Bun, Deno, workerd), without node:crypto or Buffer. */
import { sha256 } from "@noble/hashes/sha2.js";

const encoder = new TextEncoder();

/** Bytes as unpadded base64url (RFC 4648 section 5), without Buffer. */
export function base64url(bytes: Uint8Array): string {
  let binary = "";
  for (const byte of bytes) {
    binary += String.fromCharCode(byte);
  }
  return btoa(binary).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

/**
 * The SHA-256 of a string's UTF-8 bytes, as unpadded base64url (43 characters). Synchronous, through
 * @noble/hashes: it fingerprints every call that carries a call_id, where Web Crypto's digest cost about 22 us of
 * CPU on Node (a hop to libuv's thread pool and back) against 2 us here.
 *
 * @example
 * sha256Base64url(""); // "47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU"
 */
export function sha256Base64url(text: string): string {
  return base64url(sha256(encoder.encode(text)));
}

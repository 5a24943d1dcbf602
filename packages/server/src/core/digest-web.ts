/**
 * @otc/server/digest under the workerd, worker, edge-light and browser export conditions: SHA-256 in JavaScript
 * (@noble/hashes), for runtimes without node:crypto, where Web Crypto's digest would make every fingerprint a promise.
 */
import { sha256 } from "@noble/hashes/sha2.js";
import { encode as base64url } from "jose/base64url";

const encoder = new TextEncoder();

/** The SHA-256 of a string's UTF-8 bytes, as unpadded base64url: the same bytes as digest.ts's. */
export function sha256Base64url(text: string): string {
  return base64url(sha256(encoder.encode(text)));
}

/** Hashes through Web Crypto, which every runtime has (Node, Bun, Deno, workerd), unlike node:crypto. */

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
 * The SHA-256 of a string's UTF-8 bytes, as unpadded base64url (43 characters).
 *
 * @example
 * await sha256Base64url(""); // "47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU"
 */
export async function sha256Base64url(text: string): Promise<string> {
  return base64url(new Uint8Array(await crypto.subtle.digest("SHA-256", encoder.encode(text))));
}

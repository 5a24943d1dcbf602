/** Sealing a connection's tokens at rest (docs/protocol.md 9.7, `[connections.sealed]`): AES-256-GCM under key-encryption keys with ids, bound to the connection as additional data. Web Crypto only. */
import type { CryptoKey } from "jose";
import * as base64url from "jose/base64url";
import type { SealedTokens } from "../core/connection-store.js";
import { ServerConfigError } from "../core/errors.js";

/** A key-encryption key: its id (stored beside what it sealed) and 32 random bytes, base64url. */
export interface VaultKey {
  id: string;
  /** 32 bytes, base64url (e.g. `openssl rand 32 | basenc --base64url`). Keep it out of the code and the store. */
  key: string;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Seals and opens token sets; the first key seals, every key opens what it sealed. */
export class TokenSeal {
  private readonly keys: Map<string, Promise<CryptoKey>>;
  private readonly sealingId: string;

  constructor(keys: readonly VaultKey[]) {
    if (!Array.isArray(keys) || keys.length === 0) {
      throw new ServerConfigError("connections.keys must hold at least one key (an id and 32 random bytes, base64url)");
    }
    this.keys = new Map();
    for (const { id, key } of keys) {
      if (typeof id !== "string" || !/^[A-Za-z0-9._-]{1,64}$/.test(id)) {
        throw new ServerConfigError("connections.keys: each id is 1 to 64 letters, digits, '.', '_' or '-'");
      }
      if (this.keys.has(id)) {
        throw new ServerConfigError(`connections.keys: the id ${id} is given twice`);
      }
      let bytes: Uint8Array;
      try {
        bytes = base64url.decode(key);
      } catch {
        throw new ServerConfigError(`connections.keys: the key ${id} is not base64url`);
      }
      if (bytes.byteLength !== 32) {
        throw new ServerConfigError(
          `connections.keys: the key ${id} must be 32 bytes (AES-256), not ${bytes.byteLength}`,
        );
      }
      this.keys.set(
        id,
        crypto.subtle.importKey("raw", bytes as Uint8Array<ArrayBuffer>, { name: "AES-GCM" }, false, [
          "encrypt",
          "decrypt",
        ]),
      );
    }
    this.sealingId = keys[0]?.id as string;
  }

  /** Seals `value` (JSON) under the first key, bound to `context` (the connection's id, owner and provider). */
  async seal(value: unknown, context: string): Promise<SealedTokens> {
    const iv = crypto.getRandomValues(new Uint8Array(12));
    const key = await (this.keys.get(this.sealingId) as Promise<CryptoKey>);
    const data = await crypto.subtle.encrypt(
      { name: "AES-GCM", iv, additionalData: encoder.encode(context) },
      key,
      encoder.encode(JSON.stringify(value)),
    );
    return { kid: this.sealingId, iv: base64url.encode(iv), data: base64url.encode(new Uint8Array(data)) };
  }

  /** Opens what {@link seal} sealed with the same `context`; throws when the key is unknown or anything differs. */
  async open(sealed: SealedTokens, context: string): Promise<unknown> {
    const key = this.keys.get(sealed.kid);
    if (!key) {
      throw new Error(`the tokens were sealed with the key ${sealed.kid}, which is not configured`);
    }
    const plain = await crypto.subtle.decrypt(
      {
        name: "AES-GCM",
        iv: base64url.decode(sealed.iv) as Uint8Array<ArrayBuffer>,
        additionalData: encoder.encode(context),
      },
      await key,
      base64url.decode(sealed.data) as Uint8Array<ArrayBuffer>,
    );
    return JSON.parse(decoder.decode(plain));
  }
}

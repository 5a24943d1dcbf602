/**
 * PEM public keys for JWTs (docs/protocol.md section 5): each checked when the server is built and given the one
 * algorithm it verifies, then imported by jose on first use.
 *
 * Why a DER reader here: jose's key imports (importSPKI, importX509) are asynchronous and take the algorithm as an
 * argument, and jose reads no PKCS#1 `RSA PUBLIC KEY`. createServer is synchronous and Web Crypto alone runs on every
 * runtime, so this reads, at once, what they cannot give: a key's algorithm from its type, the RSA modulus's size,
 * the EC curve, a certificate's key, and a PKCS#1 key as an SPKI. An unusable key is a ServerConfigError at start.
 */
import { type CryptoKey, importSPKI } from "jose";
import { ServerConfigError } from "../core/errors.js";

/** The JWT algorithms verified with public keys. */
export const PUBLIC_KEY_ALGORITHMS = ["RS256", "ES256", "EdDSA"] as const;
/** One of {@link PUBLIC_KEY_ALGORITHMS}. */
export type PublicKeyAlgorithm = (typeof PUBLIC_KEY_ALGORITHMS)[number];

/** A DER element: its tag, where it starts, and where its contents start and end. */
interface Der {
  tag: number;
  offset: number;
  start: number;
  end: number;
}

/** The DER element at `offset` of `bytes`; throws on a malformed or truncated one. */
function readDer(bytes: Uint8Array, offset: number, limit = bytes.length): Der {
  const tag = bytes[offset];
  let length = bytes[offset + 1];
  let start = offset + 2;
  if (tag === undefined || length === undefined) {
    throw new RangeError("truncated DER");
  }
  if (length & 0x80) {
    const octets = length & 0x7f;
    if (octets === 0 || octets > 3) {
      throw new RangeError("unsupported DER length");
    }
    length = 0;
    for (let i = 0; i < octets; i++) {
      length = length * 256 + (bytes[start++] ?? Number.NaN);
    }
  }
  const end = start + length;
  if (!(end <= limit)) {
    throw new RangeError("truncated DER");
  }
  return { tag, offset, start, end };
}

/** The elements inside a constructed DER element (a SEQUENCE's members). */
function derChildren(bytes: Uint8Array, parent: Der): Der[] {
  const children: Der[] = [];
  for (let offset = parent.start; offset < parent.end; ) {
    const child = readDer(bytes, offset, parent.end);
    children.push(child);
    offset = child.end;
  }
  return children;
}

const SEQUENCE = 0x30;
/** An element's contents as hex, to compare object identifiers; `""` for none. */
const hexOf = (bytes: Uint8Array, element: Der | undefined) =>
  element
    ? [...bytes.subarray(element.start, element.end)].map((byte) => byte.toString(16).padStart(2, "0")).join("")
    : "";
const hexBytes = (hex: string) => (hex.match(/../g) ?? []).map((pair) => Number.parseInt(pair, 16));
// Object identifiers, as the hex of their DER contents.
const RSA_ENCRYPTION = "2a864886f70d010101"; // 1.2.840.113549.1.1.1
const EC_PUBLIC_KEY = "2a8648ce3d0201"; // 1.2.840.10045.2.1
const P256 = "2a8648ce3d030107"; // 1.2.840.10045.3.1.7 (prime256v1)
const ED25519 = "2b6570"; // 1.3.101.112

/** A DER element of `tag` around `contents`. */
function derElement(tag: number, contents: readonly number[]): number[] {
  const n = contents.length;
  const length =
    n < 0x80
      ? [n]
      : n < 0x100
        ? [0x81, n]
        : n < 0x10000
          ? [0x82, n >> 8, n & 0xff]
          : [0x83, n >> 16, (n >> 8) & 0xff, n & 0xff];
  return [tag, ...length, ...contents];
}

/**
 * The SubjectPublicKeyInfo (DER) of a PEM public key: SPKI (`PUBLIC KEY`), PKCS#1 (`RSA PUBLIC KEY`) or an X.509
 * certificate's (`CERTIFICATE`), the forms node:crypto's createPublicKey took.
 */
function spkiOf(pem: string): Uint8Array {
  const block = /-----BEGIN ([A-Z0-9 ]+)-----([\s\S]*?)-----END \1-----/.exec(pem);
  if (!block) {
    throw new RangeError("no PEM block");
  }
  const bytes = Uint8Array.from(atob((block[2] as string).replace(/\s+/g, "")), (char) => char.charCodeAt(0));
  const outer = readDer(bytes, 0);
  if (outer.tag !== SEQUENCE || outer.end !== bytes.length) {
    throw new RangeError("not one DER SEQUENCE");
  }
  switch (block[1]) {
    case "PUBLIC KEY":
      return bytes;
    case "RSA PUBLIC KEY": {
      // SEQUENCE { AlgorithmIdentifier { rsaEncryption, NULL }, BIT STRING (no unused bits) { the PKCS#1 key } }.
      const algorithm = derElement(SEQUENCE, [...derElement(0x06, [...hexBytes(RSA_ENCRYPTION)]), 0x05, 0x00]);
      return Uint8Array.from(derElement(SEQUENCE, [...algorithm, ...derElement(0x03, [0, ...bytes])]));
    }
    case "CERTIFICATE": {
      const tbs = derChildren(bytes, outer)[0];
      if (tbs?.tag !== SEQUENCE) {
        throw new RangeError("not a certificate");
      }
      const fields = derChildren(bytes, tbs);
      // version [0] is optional; then serial, signature, issuer, validity, subject, subjectPublicKeyInfo.
      const spki = fields[fields[0]?.tag === 0xa0 ? 6 : 5];
      if (spki?.tag !== SEQUENCE) {
        throw new RangeError("not a certificate");
      }
      return bytes.slice(spki.offset, spki.end);
    }
    default:
      throw new RangeError(`a PEM ${block[1]}, not a public key`);
  }
}

/**
 * The one algorithm a SubjectPublicKeyInfo's key verifies: RS256 (RSA of 2048 bits or more), ES256 (EC P-256) or
 * EdDSA (Ed25519); undefined for another key; throws for bytes that are no SubjectPublicKeyInfo.
 */
function algorithmOf(spki: Uint8Array): PublicKeyAlgorithm | undefined {
  const [algorithm, key] = derChildren(spki, readDer(spki, 0));
  if (algorithm?.tag !== SEQUENCE || key?.tag !== 0x03) {
    throw new RangeError("not a SubjectPublicKeyInfo");
  }
  const [oid, parameters] = derChildren(spki, algorithm);
  switch (hexOf(spki, oid)) {
    case RSA_ENCRYPTION: {
      // The BIT STRING holds RSAPublicKey { modulus, publicExponent } after its unused-bits octet.
      const rsa = readDer(spki, key.start + 1, key.end);
      const modulus = rsa.tag === SEQUENCE ? derChildren(spki, rsa)[0] : undefined;
      if (modulus?.tag !== 0x02) {
        throw new RangeError("not an RSA public key");
      }
      let first = modulus.start;
      while (first < modulus.end && spki[first] === 0) {
        first++;
      }
      const bits =
        first === modulus.end ? 0 : (modulus.end - first - 1) * 8 + (spki[first] as number).toString(2).length;
      return bits >= 2048 ? "RS256" : undefined;
    }
    case EC_PUBLIC_KEY:
      return hexOf(spki, parameters) === P256 ? "ES256" : undefined;
    case ED25519:
      return "EdDSA";
    default:
      return undefined;
  }
}

/** A configured public key: the one algorithm it verifies, and the key itself, imported on first use. */
export interface PublicKey {
  alg: PublicKeyAlgorithm;
  key(): Promise<CryptoKey>;
}

/** A PEM public key, checked at once (a ServerConfigError when unusable) and imported by Web Crypto on first use. */
export function publicKeyOf(pem: string, index: number): PublicKey {
  const where = `jwt.publicKeys[${index}]`;
  // A private key has no place in a server's config (node:crypto quietly derived the public half of one).
  if (typeof pem !== "string" || /PRIVATE KEY-----/.test(pem)) {
    throw new ServerConfigError(`${where} must be a PEM public key, not a private key`);
  }
  let spki: Uint8Array;
  let alg: PublicKeyAlgorithm | undefined;
  try {
    spki = spkiOf(pem);
    alg = algorithmOf(spki);
  } catch {
    throw new ServerConfigError(`${where} is not a PEM public key`);
  }
  if (!alg) {
    throw new ServerConfigError(
      `${where} is not a usable key: RSA of 2048 bits or more (RS256), EC P-256 (ES256) or Ed25519 (EdDSA)`,
    );
  }
  let binary = "";
  for (const byte of spki) {
    binary += String.fromCharCode(byte);
  }
  const spkiPem = `-----BEGIN PUBLIC KEY-----\n${btoa(binary)}\n-----END PUBLIC KEY-----`;
  const verified = alg;
  // Web Crypto imports asynchronously, and a module's top level (where a worker builds its handler) should not
  // start such work: the key is imported for the first token that names its algorithm, then kept.
  let imported: Promise<CryptoKey> | undefined;
  return {
    alg,
    key: () =>
      (imported ??= importSPKI(spkiPem, verified).catch((error: unknown) => {
        imported = undefined;
        const reason = error instanceof Error ? error.message : String(error);
        throw new ServerConfigError(`${where} could not be imported: ${reason}`);
      })),
  };
}

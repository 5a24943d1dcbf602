/** A call's fingerprint on every runtime (Node, Bun, Deno, workerd): canonical JSON, SHA-256, base64url. */
// The digest is the runtime's: node:crypto where it has it, @noble/hashes where not (package.json `exports`).
export { sha256Base64url } from "@otc/server/digest";

/**
 * JSON with object keys sorted (by UTF-16 code units, as `sort()` does), so equal values fingerprint equally
 * whatever their key order. An `undefined` anywhere is written `null`, an array's hole as nothing. Stored
 * fingerprints depend on every byte of it: a change here makes records already kept (in a shared store too)
 * refuse their own retries.
 */
export function canonicalJson(value: unknown): string {
  if (typeof value !== "object" || value === null) {
    return JSON.stringify(value) ?? "null";
  }
  if (Array.isArray(value)) {
    let out = "[";
    for (let i = 0; i < value.length; i++) {
      // A hole (never in parsed JSON) is written as nothing, as the first implementation's map and join did.
      out += `${i === 0 ? "" : ","}${i in value ? canonicalJson(value[i]) : ""}`;
    }
    return `${out}]`;
  }
  const keys = Object.keys(value).sort();
  let out = "{";
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i] as string;
    out += `${i === 0 ? "" : ","}${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`;
  }
  return `${out}}`;
}

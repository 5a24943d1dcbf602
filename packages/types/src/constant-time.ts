/** Constant-time comparison of a secret with what a request sent, the same on every runtime (no `node:crypto`). */

/**
 * Whether `candidate` (what a request sent) equals `secret` (what the server holds), as `===` would say, in a time
 * set by the secret's length alone: neither where the first difference is nor how long the candidate is shows in
 * it, and a huge candidate costs no more than a short one. Synchronous, so an API key check costs no promise.
 */
export function constantTimeEqual(candidate: string, secret: string): boolean {
  let difference = candidate.length ^ secret.length;
  // Every read of the candidate stays in bounds, whatever its length (an empty one reads NaN, which XORs as 0).
  const wrap = candidate.length || 1;
  for (let i = 0; i < secret.length; i++) {
    difference |= secret.charCodeAt(i) ^ candidate.charCodeAt(i % wrap);
  }
  return difference === 0;
}
